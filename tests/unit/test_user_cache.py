"""What a pass keeps in the user's cache directory, and when it will not use one.

``collection_files.user_cache_dir`` gives ``${XDG_CACHE_HOME:-~/.cache}/c5c3-glance/<sub>``
only where it is the user's own and no one else may write to it: the CEL parser is cached
there as a pickle (``cel_validation``) and the role templates as compiled code
(``role_templates``), both loaded as code. The caches are proven in fresh processes, as
each ``ansible-playbook`` is one: the first builds and writes, the second loads, and both
give the same results.
"""

from __future__ import annotations

import json
import stat
import subprocess
import sys

from support.python_env import collection_python_env

from ansible_collections.c5c3.glance.plugins.module_utils.admission import cel_validation as cel
from ansible_collections.c5c3.glance.plugins.module_utils.admission import collection_files as cf

CEL_PROBE = """
import json
from ansible_collections.c5c3.glance.plugins.module_utils.admission import cel_validation as cel
from ansible_collections.c5c3.glance.plugins.module_utils.admission.collection_files import (
    load_crds,
)
rules = sorted({r for crd in load_crds().values() for r in cel.crd_rules(crd)})
for rule in rules:
    cel.compile_rule(rule)
value = cel.evaluate("self.a > 1 && size(self.b) == 2", {"a": 2, "b": "xy"})
print(json.dumps([len(rules), bool(value)]))
"""


def probe(code: str, cache_home) -> str:
    """``code`` run in a new Python with ``XDG_CACHE_HOME`` at ``cache_home``: its stdout."""
    env = collection_python_env(XDG_CACHE_HOME=str(cache_home))
    return subprocess.run(
        [sys.executable, "-c", code], env=env, check=True, capture_output=True, text=True
    ).stdout


def test_the_cel_parser_is_built_once_then_loaded_from_the_users_cache(tmp_path):
    first = json.loads(probe(CEL_PROBE, tmp_path))
    cache = tmp_path / "c5c3-glance" / "cel" / cel.PARSER_CACHE_NAME
    assert cache.stat().st_size > 0
    for directory in (tmp_path / "c5c3-glance", cache.parent):
        assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    written = cache.stat().st_mtime_ns
    # A second process compiles every CRD rule with the loaded parser, to the same results;
    # lark writes the file again when it cannot use it, so an unchanged file is one it loaded.
    assert json.loads(probe(CEL_PROBE, tmp_path)) == first
    assert first[0] > 20 and first[1] is True
    assert cache.stat().st_mtime_ns == written


def test_a_damaged_cel_parser_cache_costs_a_build_not_a_pass(tmp_path):
    cache = tmp_path / "c5c3-glance" / "cel" / cel.PARSER_CACHE_NAME
    cache.parent.mkdir(mode=0o700, parents=True)
    (tmp_path / "c5c3-glance").chmod(0o700)
    cache.write_bytes(b"not a parser\n")
    assert json.loads(probe(CEL_PROBE, tmp_path))[1] is True
    assert cache.read_bytes() != b"not a parser\n"


def test_a_cache_directory_others_can_write_is_not_used(tmp_path, monkeypatch):
    env = {"XDG_CACHE_HOME": str(tmp_path)}
    top = tmp_path / "c5c3-glance"
    assert cf.user_cache_dir("cel", env) == top / "cel"
    for shared in (top, top / "cel"):
        shared.chmod(0o777)
        assert cf.user_cache_dir("cel", env) is None
        shared.chmod(0o700)
    assert cf.user_cache_dir("cel", env) == top / "cel"
    monkeypatch.setattr(cf.os, "getuid", lambda: top.stat().st_uid + 1)
    assert cf.user_cache_dir("cel", env) is None


def test_no_home_and_no_writable_cache_mean_no_cache(tmp_path):
    assert cf.user_cache_dir("cel", {}) is None
    assert cf.user_cache_dir("cel", {"HOME": str(tmp_path)}) == tmp_path / ".cache/c5c3-glance/cel"
    blocked = tmp_path / "file"
    blocked.write_text("")
    assert cf.user_cache_dir("cel", {"XDG_CACHE_HOME": str(blocked)}) is None
