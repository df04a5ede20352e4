"""The second operator image, on operator-framework's ansible-operator base
(images/ansible-operator/Dockerfile), checked statically against ansible-operator's
documented contract; no container engine is needed.

The contract facts checked here, and where they come from:

1. The base is ``quay.io/operator-framework/ansible-operator:<release>``, the image
   operator-sdk scaffolds an Ansible operator on (operator-framework/ansible-operator-plugins,
   ``pkg/plugins/ansible/v1/scaffolds/internal/templates/dockerfile.go``; v1.42.3).
2. The base sets ``HOME=/opt/ansible``, ``WORKDIR ${HOME}``, ``USER 1001`` and the
   entrypoint ``ansible-operator run --watches-file=./watches.yaml``
   (``images/ansible-operator/Dockerfile`` there): watches.yaml belongs at
   ``${HOME}/watches.yaml``, and a relative ``playbook`` of a watch resolves against the
   watches file's directory (``internal/ansible/watches/watches.go``, ``getFullPath``).
3. Galaxy collections come from ``${HOME}/requirements.yml`` through
   ``ansible-galaxy collection install -r`` (the scaffolded Dockerfile).
4. The keys a watch may carry are the fields of ``watches.go``: group, version, kind,
   playbook, role, vars, maxRunnerArtifacts, reconcilePeriod, manageStatus,
   watchDependentResources, watchClusterScopedResources, snakeCaseParameters,
   watchAnnotationsChanges, markUnsafe, blacklist, finalizer (name, playbook, role, vars),
   selector.
5. The extra variables of a run are ``ansible_operator_meta`` (name, namespace) and
   ``_<group>_<kind lowercased>`` with ``.`` and ``-`` replaced by ``_``
   (``internal/ansible/runner/runner.go``, ``makeParameters``/``escapeAnsibleKey``); the
   kubeconfig comes in ``KUBECONFIG`` and ``K8S_AUTH_KUBECONFIG``.
6. A requeue is read only from a task whose action is ``operator_sdk.util.requeue_after``
   (or ``requeue_after``): its result's ``period``, parsed with Go's
   ``time.ParseDuration`` (``internal/ansible/controller/reconcile.go``); ``set_stats`` is
   not read, and a ``RequeueAfter`` of 0 is no requeue to controller-runtime. The module
   takes ``time`` (a string of digits and h/m/s) and returns it as ``period``
   (operator-framework/operator-sdk-ansible-util, ``plugins/modules/requeue_after.py``).
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
import yaml
from support.api_env import sample_documents
from support.dockerfiles import ignore_patterns, ignored
from support.fake_apiserver import FakeAPIServer
from support.playbook_run import run_playbook

from ansible_collections.c5c3.glance.plugins.module_utils.kube.kube_client import KubeClient

ROOT = Path(__file__).resolve().parents[2]
IMAGE_DIR = ROOT / "images" / "ansible-operator"
DOCKERFILE = IMAGE_DIR / "Dockerfile"
# Its build context is the repository root: the root .dockerignore applies (both builders).
DOCKERIGNORE = ROOT / ".dockerignore"
REQUIREMENTS = IMAGE_DIR / "requirements.yml"
HOME = "/opt/ansible"  # fact 2
BASE = re.compile(
    r"quay\.io/operator-framework/ansible-operator:v\d+\.\d+\.\d+(@sha256:[0-9a-f]{64})?"
)
WATCH_KEYS = {  # fact 4
    "group",
    "version",
    "kind",
    "playbook",
    "role",
    "vars",
    "maxRunnerArtifacts",
    "reconcilePeriod",
    "manageStatus",
    "watchDependentResources",
    "watchClusterScopedResources",
    "snakeCaseParameters",
    "watchAnnotationsChanges",
    "markUnsafe",
    "blacklist",
    "finalizer",
    "selector",
}
FINALIZER_KEYS = {"name", "playbook", "role", "vars"}
REQUEUE_MODULE = "operator_sdk.util.requeue_after"
GO_DURATION = re.compile(r"^(\d+h)?(\d+m)?(\d+s)$")


def instructions() -> list[tuple[int, str, str]]:
    """(stage, keyword, arguments) of each instruction, continuations joined."""
    found, stage, pending = [], -1, ""
    for line in DOCKERFILE.read_text().splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        keyword, _, arguments = (pending + line).strip().partition(" ")
        pending = ""
        if keyword.upper() == "FROM":
            stage += 1
        found.append((stage, keyword.upper(), " ".join(arguments.split())))
    return found


INSTRUCTIONS = instructions()
FINAL = max(stage for stage, _, _ in INSTRUCTIONS)


def final(keyword: str) -> list[str]:
    return [args for stage, kw, args in INSTRUCTIONS if stage == FINAL and kw == keyword]


def arg_default(name: str) -> str:
    for _, keyword, arguments in INSTRUCTIONS:
        if keyword == "ARG" and arguments.startswith(f"{name}="):
            return arguments.split("=", 1)[1]
    raise AssertionError(f"no ARG {name} with a default")


def context_copies() -> dict[str, str]:
    """Destination -> source of each final-stage COPY from the build context."""
    out = {}
    for arguments in final("COPY"):
        words = arguments.split()
        if any(w.startswith("--from=") for w in words):
            continue
        out[words[-1].replace("${HOME}", HOME)] = words[0]
    return out


def test_the_base_is_a_pinned_ansible_operator_release():
    (base,) = [args for stage, kw, args in INSTRUCTIONS if kw == "FROM" and stage == FINAL]
    assert base == "${ANSIBLE_OPERATOR_IMAGE}"
    assert BASE.fullmatch(arg_default("ANSIBLE_OPERATOR_IMAGE"))


def test_watches_and_playbooks_land_where_ansible_operator_reads_them():
    copied = context_copies()
    assert copied[f"{HOME}/watches.yaml"] == "watches.yaml"
    watches = yaml.safe_load((ROOT / "watches.yaml").read_text())
    for watch in watches:
        playbook = watch["playbook"]
        assert not playbook.startswith("/"), "relative to the watches file (fact 2)"
        top = playbook.split("/")[0]
        assert copied[f"{HOME}/{top}/"] == f"{top}/", f"{playbook} is not copied under {HOME}"
        assert (ROOT / playbook).is_file()
    # The base's entrypoint and user stay (fact 2): none is set here.
    assert not final("ENTRYPOINT") and not final("CMD") and not final("WORKDIR")
    assert not final("USER")


def test_the_watches_use_only_fields_ansible_operator_knows():
    for watch in yaml.safe_load((ROOT / "watches.yaml").read_text()):
        assert set(watch) <= WATCH_KEYS, set(watch) - WATCH_KEYS
        assert set(watch.get("finalizer") or {}) <= FINALIZER_KEYS


def test_galaxy_collections_are_installed_as_the_scaffold_does():
    requirements = yaml.safe_load(REQUIREMENTS.read_text())
    pinned = {c["name"]: c["version"] for c in requirements["collections"]}
    assert re.fullmatch(r"\d+\.\d+\.\d+", pinned["operator_sdk.util"])
    assert (
        context_copies()[f"{HOME}/requirements.yml"] == "images/ansible-operator/requirements.yml"
    )
    commands = [shlex.split(run) for run in final("RUN")]
    assert any(
        c[:4] == ["ansible-galaxy", "collection", "install", "-r"]
        and c[4] == "${HOME}/requirements.yml"
        for c in commands
    )


def test_the_build_context_holds_what_the_dockerfile_copies():
    patterns = ignore_patterns(DOCKERIGNORE)
    for source in context_copies().values():
        assert not ignored(source.rstrip("/"), patterns), source
    for path in ("requirements-runtime.txt", "galaxy.yml", "plugins/modules/apply.py"):
        assert not ignored(path, patterns), path
    for path in ("tests/unit", ".venv/bin/python", "molecule/default", "images/glance/Dockerfile"):
        assert ignored(path, patterns), path


def test_the_playbooks_read_the_variables_ansible_operator_passes():
    for watch in yaml.safe_load((ROOT / "watches.yaml").read_text()):
        key = f"_{watch['group']}_{watch['kind'].lower()}"
        for c in ".-":
            key = key.replace(c, "_")
        text = (ROOT / watch["playbook"]).read_text()
        assert key in text, (watch["playbook"], key)
        assert "ansible_operator_meta.name" in text and "ansible_operator_meta.namespace" in text


def test_the_image_switches_the_playbooks_to_the_requeue_ansible_operator_reads():
    env = " ".join(final("ENV"))
    assert f"C5C3_GLANCE_REQUEUE_MODULE={REQUEUE_MODULE}" in env
    for playbook in ("glance.yml", "glancebackend.yml"):
        text = (ROOT / "playbooks" / playbook).read_text()
        assert f"== '{REQUEUE_MODULE}'" in text
    tasks = yaml.safe_load((ROOT / "playbooks" / "tasks" / "requeue_operator_sdk.yml").read_text())
    assert [t for t in tasks if REQUEUE_MODULE in t] and all(
        set(t[REQUEUE_MODULE]) == {"time"} for t in tasks if REQUEUE_MODULE in t
    )


# A stand-in of operator_sdk.util.requeue_after with its documented interface (fact 6),
# installed in a temporary collection path: the module is not part of the pinned stack.
STAND_IN = """#!/usr/bin/python
import re
from ansible.module_utils.basic import AnsibleModule


def main():
    module = AnsibleModule(argument_spec={"time": {"type": "str", "required": True}})
    if not re.match(r"^[hms0-9]*$", module.params["time"]):
        module.fail_json(msg="invalid time input")
    module.exit_json(period=module.params["time"])


if __name__ == "__main__":
    main()
"""


@pytest.fixture
def operator_sdk_util(tmp_path) -> Path:
    modules = tmp_path / "collections" / "ansible_collections" / "operator_sdk" / "util"
    (modules / "plugins" / "modules").mkdir(parents=True)
    (modules / "meta").mkdir()
    (modules / "meta" / "runtime.yml").write_text("---\nrequires_ansible: '>=2.16'\n")
    (modules / "plugins" / "modules" / "requeue_after.py").write_text(STAND_IN)
    return tmp_path / "collections"


def _requeue_periods(run) -> list[str]:
    return [
        e["event_data"]["res"]["period"]
        for e in run.events
        if e.get("event") == "runner_on_ok" and e["event_data"].get("task_action") == REQUEUE_MODULE
    ]


def test_an_immediate_requeue_is_asked_for_as_1s(operator_sdk_util, tmp_path):
    """A requeue of 0 s (upgrade steps, abort) is sent as 1s: a period of 0 means no
    requeue to controller-runtime (fact 6). The playbooks' own task file, included as
    glance.yml includes it."""
    playbook = tmp_path / "requeue.yml"
    task_file = ROOT / "playbooks" / "tasks" / "requeue_operator_sdk.yml"
    playbook.write_text(
        "---\n- name: Requeue\n  hosts: localhost\n  connection: local\n"
        "  gather_facts: false\n  tasks:\n    - name: Ask\n"
        f"      ansible.builtin.include_tasks: {task_file}\n"
        "      vars:\n        requeue_operator_sdk_seconds: 0\n"
    )
    env = {"ANSIBLE_COLLECTIONS_PATH": f"{ROOT / '.collections'}:{operator_sdk_util}"}
    run = run_playbook(str(playbook), {}, env=env)
    assert run.ok, run.failures
    assert _requeue_periods(run) == ["1s"]


def test_a_pass_asks_ansible_operator_for_its_requeue_as_a_go_duration(operator_sdk_util, tmp_path):
    """Two passes of the minimal sample, given the variables ansible-operator passes (fact
    5): each waits for db-sync (30 s; the first adds the finalizer with its writes) and asks
    for it as a Go duration; each time the set_stats request stays for the runner."""
    paths = f"{ROOT / '.collections'}:{operator_sdk_util}"
    env = {"C5C3_GLANCE_REQUEUE_MODULE": REQUEUE_MODULE, "ANSIBLE_COLLECTIONS_PATH": paths}
    with FakeAPIServer() as double:
        kubeconfig = double.write_kubeconfig(tmp_path / "kubeconfig")
        client = KubeClient.from_environment(str(kubeconfig))
        client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "openstack"}})
        for doc in sample_documents():
            client.create(doc)
        asked = []
        for _ in range(2):
            glance = client.get(
                "glance.openstack.c5c3.io/v1alpha1", "Glance", "glance", "openstack"
            )
            extravars = {
                "ansible_operator_meta": {"name": "glance", "namespace": "openstack"},
                "_glance_openstack_c5c3_io_glance": glance,
            }
            run = run_playbook("glance.yml", extravars, kubeconfig=kubeconfig, env=env)
            assert run.ok, run.failures
            (period,) = _requeue_periods(run)
            assert GO_DURATION.fullmatch(period)
            asked.append((period, run.requeue_after))
        assert asked == [("30s", 30), ("30s", 30)]
        # Without the image's variable (the default image, a workstation) nothing changes.
        plain = run_playbook(
            "glance.yml",
            {"glance_name": "glance", "glance_namespace": "openstack"},
            kubeconfig=kubeconfig,
        )
        assert plain.ok and _requeue_periods(plain) == [] and plain.requeue_after is not None
