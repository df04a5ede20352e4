"""The CEL verdicts of stored objects, kept between passes (``admission.cel_verdicts``).

A pass judges what it read back from the cluster as a no-op update of itself; the verdict is
kept in the user's cache directory, so the next pass of an unchanged object neither
evaluates a rule nor imports cel-python. Proven in fresh processes, as each
``ansible-playbook`` is one, with the real CRDs and the real cel-python: the second process
gets the same verdict without loading celpy, a changed object is evaluated again, and a
damaged or foreign cache costs an evaluation, never a wrong verdict.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest
from support.python_env import collection_python_env

from ansible_collections.c5c3.glance.plugins.module_utils.admission import cel_validation
from ansible_collections.c5c3.glance.plugins.module_utils.admission import cel_verdicts as cv
from ansible_collections.c5c3.glance.plugins.module_utils.admission import field_errors as fe

SAMPLE = Path(__file__).resolve().parents[2] / "config/samples/glance_full.yaml"

# A pass's judge of the full sample, as stored objects, with a per-logger level the CRD's
# CEL rule refuses when LEVEL is set: what it found, and whether celpy was loaded.
PASS_PROBE = """
import json, sys
from pathlib import Path
from ansible_collections.c5c3.glance.plugins.module_utils.admission.collection_files import (
    load_catalogs,
    load_crds,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.input_documents import (
    judge_documents,
    read_input,
)
found = read_input(Path(sys.argv[1]).read_text())
if sys.argv[2]:
    found.glance["spec"].setdefault("logging", {})["perLoggerLevels"] = {"glance": sys.argv[2]}
verdicts = judge_documents(found, load_crds(), load_catalogs(), stored=True)
print(json.dumps({
    "errors": [str(e) for v in verdicts for e in v.errors],
    "judged": [v.kind for v in verdicts],
    "celpy": "celpy" in sys.modules,
}))
"""


def judge_in_a_new_process(cache_home: Path, level: str = "") -> dict:
    env = collection_python_env(XDG_CACHE_HOME=str(cache_home))
    out = subprocess.run(
        [sys.executable, "-c", PASS_PROBE, str(SAMPLE), level],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return json.loads(out)


def kept_files(cache_home: Path) -> list[Path]:
    return sorted((cache_home / "c5c3-glance" / cv.CACHE_NAME).glob("*.json"))


def test_an_unchanged_object_is_judged_from_its_kept_verdict_without_cel_python(tmp_path):
    first = judge_in_a_new_process(tmp_path)
    assert first["judged"] == ["Glance", "GlanceBackend", "GlanceBackend"]
    assert first["errors"] == [] and first["celpy"] is True
    assert len(kept_files(tmp_path)) == 3
    second = judge_in_a_new_process(tmp_path)
    assert second == {**first, "celpy": False}


def test_a_refused_value_is_kept_with_its_message_and_a_change_is_judged_again(tmp_path):
    refused = judge_in_a_new_process(tmp_path, "LOUD")
    assert refused["celpy"] is True
    assert len(refused["errors"]) == 1 and "spec.logging.perLoggerLevels" in refused["errors"][0]
    assert judge_in_a_new_process(tmp_path, "LOUD") == {**refused, "celpy": False}
    # Only the Glance changed: its verdict is evaluated, the backends' are the kept ones.
    fixed = judge_in_a_new_process(tmp_path, "DEBUG")
    assert fixed["errors"] == [] and fixed["celpy"] is True
    assert len(kept_files(tmp_path)) == 4


SCHEMA = {
    "type": "object",
    "properties": {
        "a": {"type": "integer"},
        "b": {"type": "string"},
    },
    "x-kubernetes-validations": [
        {"rule": "self.a > 1", "message": "a must be more than 1"},
        {"rule": "self.b != 'x'", "message": "b must not be x", "reason": "FieldValueForbidden"},
        {"rule": "self.a == oldSelf.a", "message": "a is immutable"},
    ],
}


class Counting:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, schema, obj, old):
        self.calls += 1
        return cel_validation.validate(schema, obj, old)


def test_kept_errors_equal_evaluated_ones_with_and_without_a_value(tmp_path):
    evaluate = Counting()
    obj, old = {"a": 1, "b": "x"}, {"a": 2, "b": "y"}
    evaluated = cel_validation.validate(SCHEMA, obj, old)
    assert [e.type for e in evaluated] == [fe.INVALID, fe.FORBIDDEN, fe.INVALID]
    for _ in range(3):
        kept = cv.remembered_validate(SCHEMA, obj, old, evaluate, tmp_path)
        assert kept == evaluated
        assert [str(e) for e in kept] == [str(e) for e in evaluated]
        assert [e.has_value for e in kept] == [e.has_value for e in evaluated]
    assert evaluate.calls == 1
    # The old object is part of the key: a transition rule's verdict depends on it.
    assert cv.remembered_validate(SCHEMA, obj, obj, evaluate, tmp_path) != evaluated
    assert evaluate.calls == 2


@pytest.mark.parametrize("damage", ["not json", "{}", '[{"type": 1}]', '["x"]'])
def test_a_damaged_verdict_is_evaluated_again_and_written_anew(tmp_path, damage):
    evaluate = Counting()
    obj = {"a": 1, "b": "y"}
    expected = cv.remembered_validate(SCHEMA, obj, obj, evaluate, tmp_path)
    (path,) = tmp_path.glob("*.json")
    path.write_text(damage)
    assert cv.remembered_validate(SCHEMA, obj, obj, evaluate, tmp_path) == expected
    assert evaluate.calls == 2
    assert [e["detail"] for e in json.loads(path.read_text())] == ["a must be more than 1"]
    assert cv.remembered_validate(SCHEMA, obj, obj, evaluate, tmp_path) == expected
    assert evaluate.calls == 2


def test_no_usable_cache_directory_means_every_verdict_is_evaluated(tmp_path, monkeypatch):
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "c5c3-glance").mkdir(mode=0o777)
    (shared / "c5c3-glance").chmod(0o777)
    monkeypatch.setenv("XDG_CACHE_HOME", str(shared))
    evaluate = Counting()
    obj = {"a": 2, "b": "y"}
    for _ in range(2):
        assert cv.remembered_validate(SCHEMA, obj, obj, evaluate) == []
    assert evaluate.calls == 2
    assert not list((shared / "c5c3-glance").glob("*/*.json"))


def test_the_oldest_verdicts_go_beyond_the_limit(tmp_path, monkeypatch):
    monkeypatch.setattr(cv, "KEEP", 3)
    evaluate = Counting()
    names = []
    for a in range(2, 7):
        obj = {"a": a, "b": "y"}
        cv.remembered_validate(SCHEMA, obj, obj, evaluate, tmp_path)
        names.append(f"{cv.verdict_key(SCHEMA, obj, obj)}.json")
    assert sorted(p.name for p in tmp_path.glob("*.json")) == sorted(names[-3:])
    assert not list(tmp_path.glob(".*.tmp"))


def test_a_status_write_does_not_cost_the_kept_verdict_but_a_new_name_does(tmp_path):
    evaluate = Counting()
    obj = {"metadata": {"name": "g", "resourceVersion": "1", "managedFields": []}, "a": 2, "b": ""}
    cv.remembered_validate(SCHEMA, obj, obj, evaluate, tmp_path)
    written = {**obj, "metadata": {**obj["metadata"], "resourceVersion": "2", "generation": 3}}
    assert cv.remembered_validate(SCHEMA, written, written, evaluate, tmp_path) == []
    assert evaluate.calls == 1
    renamed = {**obj, "metadata": {"name": "h"}}
    cv.remembered_validate(SCHEMA, renamed, renamed, evaluate, tmp_path)
    assert evaluate.calls == 2


def test_the_key_covers_every_module_of_the_collection_a_verdict_comes_from():
    # A change to the CEL walk or to what it imports from the collection must change the key;
    # collection_files only gives the parser's cache directory.
    source = Path(cel_validation.__file__).read_text()
    imported = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module.startswith("ansible_collections"):
            module = node.module.rsplit(".", 1)[-1]
            names = [alias.name for alias in node.names]
            imported.update(names if module == "admission" else [module])
    assert imported - {"collection_files"} == {Path(f).stem for f in cv.CODE_FILES} - {
        "cel_validation"
    }
