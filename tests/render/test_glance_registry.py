"""The rendered configuration loads with the real Glance of its release.

Every render input (both samples, every fixture), and both samples re-rendered for each
other supported release, is planned with ``render_plan.build_plan``; the config
ConfigMap's files go to ``glance-api.conf.d/`` and the backends Secret's
``backends.conf`` to ``backends.conf.d/``, as the pod mounts them. Then
``tests/support/check_glance_config.py`` runs with the python of
``.venv-glance/<release>`` (the pinned package set of
``images/glance/requirements/<release>.txt``): it loads the files as glance-api does,
with glance's real option registry, and reports unknown sections and options and every
value that fails its type. The negative cases prove that it does.

The environments are built on demand by ``hack/glance_venv.py`` (idempotent; about 30-45 s
per release the first time). A test fails when its environment cannot be built, unless
``C5C3_SKIP_GLANCE_VENV=1``, which skips them.
"""

from __future__ import annotations

import base64
import copy
import json
import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, SAMPLES, inputs
from support.hack_scripts import hack_script

from ansible_collections.c5c3.glance.plugins.module_utils.admission.collection_files import (
    load_catalogs,
    load_crds,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.input_documents import (
    parse_documents,
    split_documents,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.render_plan import build_plan

CHECKER = ROOT / "tests" / "support" / "check_glance_config.py"
SKIP_ENV = "C5C3_SKIP_GLANCE_VENV"
CONFIG_DIR = "glance-api.conf.d"
BACKENDS_DIR = "backends.conf.d"
BACKENDS_CONF = "backends.conf"
GLANCE_API_CONF = "glance-api.conf"
LOGGING_CONF = "logging.conf"
PASTE_INI = "glance-api-paste.ini"

pytestmark = pytest.mark.glance_venv


glance_venv = hack_script("glance_venv")
glance_requirements = hack_script("glance_requirements")
RELEASES = glance_venv.releases()
SAMPLE_NAMES = sorted(p.stem.replace("_", "-") for p in SAMPLES.glob("*.yaml"))


# ---------------------------------------------------------------------------------------
# cases: one rendered configuration each


@dataclass
class Case:
    name: str
    source: Path
    release_override: str | None = None
    release: str = ""
    dirs: list[Path] = field(default_factory=list)
    no_config: str = ""  # why nothing was rendered


def case_names() -> list[str]:
    names = sorted(inputs())
    for sample in SAMPLE_NAMES:
        names += [f"{sample}@{release}" for release in RELEASES]
    return names


def _override_release(docs: list[Any], release: str) -> list[Any]:
    """The documents with the Glance moved to ``release`` (and its image tag with it)."""
    docs = copy.deepcopy(docs)
    for doc in docs:
        if doc and doc.get("kind") == "Glance":
            doc["spec"]["openStackRelease"] = release
            image = doc["spec"].get("image") or {}
            if "tag" in image:
                image["tag"] = release
    return docs


def render_case(case: Case, target: Path) -> Case:
    docs = parse_documents(case.source.read_text())  # as the render_plan filter does
    if case.release_override:
        docs = _override_release(docs, case.release_override)
    found = split_documents(docs)
    configmaps = {
        cm["metadata"]["name"]: {k: str(v) for k, v in (cm.get("data") or {}).items()}
        for cm in found.configmaps
    }
    plan = build_plan(found, load_crds(), load_catalogs(), configmaps)
    assert not plan.errors, f"{case.name}: the input is refused: {plan.errors}"
    case.release = plan.glance["spec"]["openStackRelease"]
    config_map = plan.desired.get("config_map")
    if config_map is None:
        not_ready = [
            f"{c['type']}={c['status']}({c['reason']})"
            for c in plan.glance_conditions
            if c["status"] != "True"
        ]
        case.no_config = ", ".join(not_ready) or "no config ConfigMap"
        return case
    secret = plan.desired["backends_secret"]
    config_dir, backends_dir = target / CONFIG_DIR, target / BACKENDS_DIR
    config_dir.mkdir(parents=True)
    backends_dir.mkdir(parents=True)
    for key, text in config_map["data"].items():
        (config_dir / key).write_text(text)
    for key, encoded in secret["data"].items():
        (backends_dir / key).write_bytes(base64.b64decode(encoded, validate=True))
    assert (config_dir / GLANCE_API_CONF).is_file() and (backends_dir / BACKENDS_CONF).is_file()
    case.dirs = [config_dir, backends_dir]
    return case


# ---------------------------------------------------------------------------------------
# the release environments and the checker


class GlanceChecks:
    """Renders every case once and runs the checker once per release (one batch)."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.cases: dict[str, Case] = {}
        self.results: dict[str, dict[str, Any]] = {}
        self.pythons: dict[str, Path | str] = {}  # release -> python, or why there is none
        self.batches: dict[str, dict[str, Any]] = {}

    def case(self, name: str) -> Case:
        if name not in self.cases:
            sample, _, release = name.partition("@")
            source = inputs()[sample]
            self.cases[name] = render_case(
                Case(name, source, release_override=release or None), self.base / "cases" / name
            )
        return self.cases[name]

    def python(self, release: str) -> Path:
        if os.environ.get(SKIP_ENV) == "1":
            pytest.skip(f"{SKIP_ENV}=1: the Glance {release} environment is not built or used")
        if release not in self.pythons:
            try:
                self.pythons[release] = glance_venv.ensure_venv(release, log=lambda _: None)
            except glance_venv.GlanceVenvError as exc:
                self.pythons[release] = str(exc)
        python = self.pythons[release]
        if isinstance(python, str):
            pytest.fail(
                f"cannot build .venv-glance/{release} (make glance-venvs; or set "
                f"{SKIP_ENV}=1 to skip these tests): {python}",
                pytrace=False,
            )
        return python

    def run(self, release: str, cases: dict[str, list[Path]]) -> dict[str, Any]:
        """Check ``cases`` (name -> config dirs) with the real Glance of ``release``."""
        python = self.python(release)
        batch = self.base / f"batch-{release}-{len(self.batches)}.json"
        self.batches[batch.name] = cases
        batch.write_text(json.dumps({n: [str(d) for d in dirs] for n, dirs in cases.items()}))
        proc = subprocess.run(
            [str(python), str(CHECKER), "--batch", str(batch)],
            capture_output=True,
            text=True,
            check=False,
            cwd=self.base,
            env={k: v for k, v in os.environ.items() if not k.startswith(("OS_", "PYTHON"))},
        )
        try:
            results = json.loads(proc.stdout)
        except ValueError:
            pytest.fail(f"the checker failed (exit {proc.returncode}):\n{proc.stderr[-4000:]}")
        assert set(results) == set(cases), proc.stderr[-4000:]
        return results

    def result(self, name: str) -> dict[str, Any]:
        """The report of case ``name``; every case of its release is checked in one go."""
        case = self.case(name)
        if name not in self.results:
            names = [n for n in case_names() if self.case(n).release == case.release]
            todo = {n: self.case(n).dirs for n in names if self.case(n).dirs}
            self.results.update(self.run(case.release, todo))
        return self.results[name]


@pytest.fixture(scope="session")
def glance_checks(tmp_path_factory) -> GlanceChecks:
    return GlanceChecks(tmp_path_factory.mktemp("glance-registry"))


def _describe(entries: list[dict[str, Any]]) -> str:
    return "\n".join(
        f"  {e['kind']}: {e['message']}"
        + (f" ({e['file']})" if e.get("file") else "")
        + (f" value={e['value']!r}" if "value" in e else "")
        for e in entries
    )


# ---------------------------------------------------------------------------------------
# the pinned package sets


@pytest.mark.parametrize("release", RELEASES)
def test_requirements_file_is_the_catalogs_package_set(release):
    path = glance_requirements.requirements_path(release)
    assert path.read_text() == glance_requirements.render(release), (
        f"{path.relative_to(ROOT)} is stale: run python3 hack/glance_requirements.py"
    )


def test_every_catalog_release_has_a_requirements_file():
    assert sorted(load_catalogs()) == RELEASES


# ---------------------------------------------------------------------------------------
# every render loads with the real registry


@pytest.mark.parametrize("name", case_names())
def test_rendered_configuration_loads_with_the_real_glance_registry(glance_checks, name):
    case = glance_checks.case(name)
    if case.no_config:
        pytest.skip(f"{name} renders no configuration ({case.no_config})")
    result = glance_checks.result(name)
    assert result["glance"] == load_catalogs()[case.release]["glance"]
    loaded = [Path(f).name for f in result["files"]]
    assert GLANCE_API_CONF in loaded and BACKENDS_CONF in loaded, loaded
    assert result["problems"] == [], (
        f"{name} (glance {result['glance']}):\n{_describe(result['problems'])}"
    )
    assert result["warnings"] == [], (
        f"{name} (glance {result['glance']}) uses deprecated options:\n"
        f"{_describe(result['warnings'])}"
    )


def test_the_inputs_without_a_configuration_are_only_the_expected_ones(glance_checks):
    without = sorted(n for n in case_names() if glance_checks.case(n).no_config)
    assert without == ["missing-db-credentials", "no-default-backend"]


# ---------------------------------------------------------------------------------------
# the check can fail


def _set_in_section(text: str, section: str, line: str) -> str:
    header = f"[{section}]\n"
    assert header in text, f"no [{section}] to edit"
    return text.replace(header, header + line + "\n", 1)


def _replace(text: str, old: str, new: str) -> str:
    assert old in text, f"{old!r} is not in the rendered file any more"
    return text.replace(old, new, 1)


# name -> (file, edit, expected problems as (kind, section, option) with None = any)
MUTATIONS: dict[str, tuple[str, Any, list[tuple[str, str | None, str | None]]]] = {
    "wrong-option-name": (
        GLANCE_API_CONF,
        lambda t: _set_in_section(t, "DEFAULT", "image_cache_max_sise = 1024"),
        [("unknown-option", "DEFAULT", "image_cache_max_sise")],
    ),
    "option-in-the-wrong-group": (
        GLANCE_API_CONF,
        # a single-store option: glance-api registers none of them with enabled_backends
        lambda t: _set_in_section(t, "glance_store", "s3_store_host = http://s3.example.com"),
        [("unknown-option", "glance_store", "s3_store_host")],
    ),
    "wrong-section": (
        GLANCE_API_CONF,
        lambda t: t + "\n[keystone_auth_token]\nauth_type = password\n",
        [("unknown-section", "keystone_auth_token", None)],
    ),
    "wrong-type-integer": (
        GLANCE_API_CONF,
        lambda t: _replace(t, "image_cache_max_size = 17179869184", "image_cache_max_size = lots"),
        [("bad-value", "DEFAULT", "image_cache_max_size")],
    ),
    "wrong-type-boolean": (
        GLANCE_API_CONF,
        # debug is also a command-line option: oslo.config's argument parser exits
        lambda t: _replace(t, "debug = false", "debug = maybe"),
        [("load", None, None)],
    ),
    "unbracketed-list": (
        GLANCE_API_CONF,
        lambda t: _replace(t, "allowed_ports = [443]", "allowed_ports = 443"),
        [("bad-value", "import_filtering_opts", "allowed_ports")],
    ),
    "wrong-type-in-backends-conf": (
        BACKENDS_CONF,
        lambda t: _replace(
            t, "s3_store_large_object_size = 200", "s3_store_large_object_size = big"
        ),
        [("bad-value", "s3-archive", "s3_store_large_object_size")],
    ),
    "unknown-store-option": (
        BACKENDS_CONF,
        lambda t: _set_in_section(t, "s3-default", "s3_store_bucket_name = glance"),
        [("unknown-option", "s3-default", "s3_store_bucket_name")],
    ),
    "unknown-auth-plugin-option": (
        GLANCE_API_CONF,
        lambda t: _set_in_section(t, "keystone_authtoken", "pasword = secret"),
        [("unknown-option", "keystone_authtoken", "pasword")],
    ),
    "logging-formatter-class": (
        LOGGING_CONF,
        lambda t: _replace(
            t, "oslo_log.formatters.JSONFormatter", "oslo_log.formatters.JsonFormatter"
        ),
        [("logging", None, None)],
    ),
    "paste-factory": (
        PASTE_INI,
        lambda t: _replace(
            t, "oslo_middleware:RequestId.factory", "oslo_middleware:RequestID.factory"
        ),
        [("paste", None, None)],
    ),
}
MUTATED = "glance-full"  # 2026.2, every optional file rendered


@pytest.fixture(scope="session")
def mutation_results(glance_checks) -> dict[str, Any]:
    base = glance_checks.case(MUTATED)
    assert base.dirs, f"{MUTATED} renders no configuration"
    cases: dict[str, list[Path]] = {}
    for name, (filename, edit, _) in MUTATIONS.items():
        target = glance_checks.base / "mutations" / name
        dirs = []
        for src in base.dirs:
            dst = target / src.name
            dst.mkdir(parents=True)
            for f in src.iterdir():
                text = f.read_text()
                (dst / f.name).write_text(edit(text) if f.name == filename else text)
            dirs.append(dst)
        cases[name] = dirs
    return glance_checks.run(base.release, cases)


@pytest.mark.parametrize("mutation", sorted(MUTATIONS))
def test_the_check_reports_a_broken_configuration(mutation_results, mutation):
    problems = mutation_results[mutation]["problems"]
    _, _, expected = MUTATIONS[mutation]
    for kind, section, option in expected:
        found = [
            p
            for p in problems
            if p["kind"] == kind
            and (section is None or p.get("section") == section)
            and (option is None or p.get("option") == option)
        ]
        assert found, f"{mutation}: no {kind} [{section}] {option} in:\n{_describe(problems)}"
    # and nothing but the broken part: the rest of the file still loads
    kinds = {kind for kind, _, _ in expected}
    assert {p["kind"] for p in problems} <= kinds | {"store"}, _describe(problems)


def test_the_checker_exits_1_with_problems_and_0_without(glance_checks, mutation_results):
    python = glance_checks.python(glance_checks.case(MUTATED).release)
    ok = glance_checks.case(MUTATED).dirs
    broken = glance_checks.base / "mutations" / "wrong-section"
    for dirs, code in ((ok, 0), ([broken / CONFIG_DIR, broken / BACKENDS_DIR], 1)):
        args = [str(python), str(CHECKER), "--json"]
        for d in dirs:
            args += ["--config-dir", str(d)]
        proc = subprocess.run(args, capture_output=True, text=True, check=False)
        assert proc.returncode == code, proc.stderr[-2000:]
        report = json.loads(proc.stdout)
        assert bool(report["problems"]) == bool(code)
