"""watches.yaml: ansible-operator's schema and defaults, our stricter checks, the overrides."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path
from types import MappingProxyType

import pytest

from runner.kube.watches import (
    DEFAULT_MAX_RUNNER_ARTIFACTS,
    Finalizer,
    GroupVersionKind,
    LabelRequirement,
    LabelSelector,
    Target,
    Watch,
    WatchesError,
    ansible_verbosity,
    expand_env,
    load_watches,
    max_concurrent_reconciles,
    max_runner_artifacts,
    parse_watches,
    reconcile_period,
)

REPO = Path(__file__).resolve().parents[2]
GLANCE = GroupVersionKind("glance.openstack.c5c3.io", "v1alpha1", "Glance")
BACKEND = GroupVersionKind("glance.openstack.c5c3.io", "v1alpha1", "GlanceBackend")

# The content the lead asked the runner to parse (the repo's watches.yaml, comments aside).
LEAD_WATCHES = """\
- version: v1alpha1
  group: glance.openstack.c5c3.io
  kind: Glance
  playbook: playbooks/glance.yml
  manageStatus: false
  snakeCaseParameters: false
  markUnsafe: true
  watchDependentResources: true
  finalizer:
    name: glance.openstack.c5c3.io/finalizer
    vars:
      glance_finalizing: true
- version: v1alpha1
  group: glance.openstack.c5c3.io
  kind: GlanceBackend
  playbook: playbooks/glancebackend.yml
  manageStatus: false
  snakeCaseParameters: false
  markUnsafe: true
"""


def expected_watches(base: Path) -> tuple[Watch, ...]:
    return (
        Watch(
            gvk=GLANCE,
            playbook=base / "playbooks/glance.yml",
            manage_status=False,
            snake_case_parameters=False,
            mark_unsafe=True,
            watch_dependent_resources=True,
            finalizer=Finalizer(
                name="glance.openstack.c5c3.io/finalizer",
                vars=MappingProxyType({"glance_finalizing": True}),
            ),
        ),
        Watch(
            gvk=BACKEND,
            playbook=base / "playbooks/glancebackend.yml",
            manage_status=False,
            snake_case_parameters=False,
            mark_unsafe=True,
        ),
    )


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A directory with the files watches.yaml entries point at."""
    for playbook in ("glance.yml", "glancebackend.yml", "finalize.yml"):
        (tmp_path / "playbooks").mkdir(exist_ok=True)
        (tmp_path / "playbooks" / playbook).write_text("---\n")
    (tmp_path / "roles" / "glance").mkdir(parents=True)
    return tmp_path


def one(tree: Path, body: str, environ: dict[str, str] | None = None) -> Watch:
    """The single watch of an entry whose GVK is Glance's, plus ``body``."""
    head = "- group: glance.openstack.c5c3.io\n  version: v1alpha1\n  kind: Glance\n"
    text = head + textwrap.indent(textwrap.dedent(body), "  ")
    (watch,) = parse_watches(text, tree, environ or {})
    return watch


def problems(tree: Path, text: str, environ: dict[str, str] | None = None) -> list[str]:
    with pytest.raises(WatchesError) as caught:
        parse_watches(textwrap.dedent(text), tree, environ or {})
    assert str(caught.value) == "\n".join(caught.value.problems)
    return list(caught.value.problems)


# -- the project's file ---------------------------------------------------------------


def test_the_repository_watches_yaml_parses_to_the_lead_s_two_watches():
    path = REPO / "watches.yaml"
    if not path.exists():
        pytest.skip("watches.yaml is not written yet")
    assert load_watches(path, environ={}) == expected_watches(REPO)


def test_the_lead_s_content_parses_with_paths_taken_from_the_file_s_directory(tree):
    (tree / "watches.yaml").write_text(LEAD_WATCHES)
    assert load_watches(tree / "watches.yaml", environ={}) == expected_watches(tree)


def test_a_relative_watches_file_gives_absolute_paths(tree, monkeypatch):
    """`make run` passes ``--watches-file ./watches.yaml``: the paths must not stay relative
    to ``.``, because ansible-runner runs each pass from another directory."""
    (tree / "watches.yaml").write_text(LEAD_WATCHES)
    (tree / "sub").mkdir()
    monkeypatch.chdir(tree / "sub")
    glance, backend = load_watches("../watches.yaml", environ={})
    assert (glance, backend) == expected_watches(tree)
    assert glance.playbook.is_absolute() and backend.playbook.is_absolute()
    monkeypatch.chdir(tree)
    assert load_watches("./watches.yaml", environ={}) == expected_watches(tree)
    assert parse_watches(LEAD_WATCHES, ".", {}) == expected_watches(tree)


def test_a_relative_roles_path_gives_an_absolute_role(tree, monkeypatch):
    (tree / "elsewhere/roles/pass").mkdir(parents=True)
    monkeypatch.chdir(tree)
    environ = {"ANSIBLE_ROLES_PATH": "elsewhere"}
    assert one(Path("."), "role: pass\n", environ).role == tree / "elsewhere/roles/pass"
    assert one(Path("."), "role: glance\n").role == tree / "roles/glance"


def test_a_finalizer_with_only_vars_reruns_the_main_playbook(tree):
    glance, backend = parse_watches(LEAD_WATCHES, tree, {})
    assert glance.target(finalizing=True) == Target(playbook=tree / "playbooks/glance.yml")
    assert glance.target(finalizing=False) == Target(playbook=tree / "playbooks/glance.yml")
    assert backend.target(finalizing=True) == Target(playbook=tree / "playbooks/glancebackend.yml")


def test_a_finalizer_playbook_runs_instead_of_the_main_one_on_deletion(tree):
    watch = one(
        tree,
        "playbook: playbooks/glance.yml\nfinalizer: {name: f, playbook: playbooks/finalize.yml}\n",
    )
    assert watch.target(finalizing=True) == Target(playbook=tree / "playbooks/finalize.yml")
    assert watch.target(finalizing=False) == Target(playbook=tree / "playbooks/glance.yml")


# -- defaults and fields ---------------------------------------------------------------


def test_an_entry_with_only_gvk_and_playbook_gets_ansible_operator_s_defaults(tree):
    watch = one(tree, "playbook: playbooks/glance.yml\n")
    assert watch == Watch(gvk=GLANCE, playbook=tree / "playbooks/glance.yml")
    assert (
        watch.manage_status,
        watch.watch_dependent_resources,
        watch.watch_cluster_scoped_resources,
        watch.watch_annotations_changes,
        watch.snake_case_parameters,
        watch.mark_unsafe,
        watch.max_runner_artifacts,
        watch.reconcile_period,
        watch.max_concurrent_reconciles,
        watch.finalizer,
        watch.blacklist,
        dict(watch.vars),
    ) == (True, True, False, False, True, False, 20, None, None, None, (), {})
    assert watch.selector == LabelSelector()


FIELD_CASES = [
    ("reconcilePeriod: 1m30s", "reconcile_period", 90.0),
    ("reconcilePeriod: 250ms", "reconcile_period", 0.25),
    ("reconcilePeriod: 0s", "reconcile_period", None),
    ("reconcilePeriod: null", "reconcile_period", None),
    ("maxRunnerArtifacts: 0", "max_runner_artifacts", DEFAULT_MAX_RUNNER_ARTIFACTS),
    ("maxRunnerArtifacts: 3", "max_runner_artifacts", 3),
    ("maxConcurrentReconciles: 2", "max_concurrent_reconciles", 2),
    ("manageStatus: False", "manage_status", False),
    ("watchDependentResources: false", "watch_dependent_resources", False),
    ("watchClusterScopedResources: true", "watch_cluster_scoped_resources", True),
    ("watchAnnotationsChanges: yes", "watch_annotations_changes", True),
    ("snakeCaseParameters: false", "snake_case_parameters", False),
    ("markUnsafe: true", "mark_unsafe", True),
    (
        "vars: {meta: '{{ ansible_operator_meta }}', n: 1}",
        "vars",
        {"meta": "{{ ansible_operator_meta }}", "n": 1},
    ),
    (
        "blacklist: [{group: '', version: v1, kind: Secret}, {group: apps, version: v1, kind: Deployment}]",
        "blacklist",
        (GroupVersionKind("", "v1", "Secret"), GroupVersionKind("apps", "v1", "Deployment")),
    ),
    (
        "selector: {matchLabels: {app.kubernetes.io/part-of: glance}, matchExpressions: [{key: tier, operator: NotIn, values: [test]}]}",
        "selector",
        LabelSelector(
            MappingProxyType({"app.kubernetes.io/part-of": "glance"}),
            (LabelRequirement("tier", "NotIn", ("test",)),),
        ),
    ),
]


@pytest.mark.parametrize(
    ("line", "attribute", "expected"), FIELD_CASES, ids=[c[0][:40] for c in FIELD_CASES]
)
def test_a_field_sets_its_attribute(tree, line, attribute, expected):
    watch = one(tree, f"playbook: playbooks/glance.yml\n{line}\n")
    value = getattr(watch, attribute)
    assert (dict(value) if attribute == "vars" else value) == expected


def test_an_absolute_playbook_path_is_kept(tree):
    watch = one(tree, f"playbook: {tree}/playbooks/glance.yml\n")
    assert watch.playbook == tree / "playbooks/glance.yml"


def test_environment_variables_are_expanded_before_parsing(tree):
    watch = one(
        tree,
        "playbook: ${PLAYBOOKS}/glance.yml\nreconcilePeriod: ${PERIOD}\n",
        {"PLAYBOOKS": str(tree / "playbooks"), "PERIOD": "10m"},
    )
    assert (watch.playbook, watch.reconcile_period) == (tree / "playbooks/glance.yml", 600.0)


def test_an_unset_variable_is_left_literally(tree):
    assert problems(tree, "- {version: v1, kind: K, playbook: '${NOWHERE}/p.yml'}\n") == [
        f"watches.yaml:1: entry 1 (/v1, Kind=K): playbook: {tree}/${{NOWHERE}}/p.yml was not found"
    ]


# Outputs of Go's os.Expand with ansible-operator's mapping (unset -> "${NAME}"), with
# HOME=/opt/ansible, NS=glance, EMPTY="", 1=one, A_B=ab.
EXPAND_CASES = [
    ("plain", "plain"),
    ("${HOME}/x", "/opt/ansible/x"),
    ("$HOME/x", "/opt/ansible/x"),
    ("${UNSET}", "${UNSET}"),
    ("$UNSET", "${UNSET}"),
    ("${EMPTY}x", "x"),
    ("$", "$"),
    ("a$", "a$"),
    ("$$", "${$}"),
    ("${}", ""),
    ("${", ""),
    ("${HOME", "HOME"),
    ("${1}", "one"),
    ("$1x", "onex"),
    ("$10", "one0"),
    ("${10}", "${10}"),
    ("$A_B-c", "ab-c"),
    ("${NS}-${UNSET}-$NS", "glance-${UNSET}-glance"),
    ("price: 5$ ok", "price: 5$ ok"),
    ("${FOO BAR}", "${FOO BAR}"),
    ("$-x", "${-}x"),
    ("${*}", "${*}"),
    ("$é", "$é"),
    ("x${}y", "xy"),
    ("${HOME}}", "/opt/ansible}"),
]


@pytest.mark.parametrize(("text", "expected"), EXPAND_CASES)
def test_expansion_is_go_s_os_expand(text, expected):
    environ = {"HOME": "/opt/ansible", "NS": "glance", "EMPTY": "", "1": "one", "A_B": "ab"}
    assert expand_env(text, environ) == expected


# -- roles ----------------------------------------------------------------------------


def test_a_role_name_is_found_under_roles_next_to_the_watches_file(tree):
    assert one(tree, "role: glance\n").role == tree / "roles/glance"


def test_a_role_is_searched_in_ansible_roles_path_with_and_without_roles(tree):
    (tree / "elsewhere/roles/pass").mkdir(parents=True)
    (tree / "direct/pass").mkdir(parents=True)
    environ = {"ANSIBLE_ROLES_PATH": f"{tree}/elsewhere:{tree}/direct"}
    assert one(tree, "role: pass\n", environ).role == tree / "elsewhere/roles/pass"


def test_an_fqcn_role_is_searched_in_ansible_collections_path(tree):
    role = tree / "collections/ansible_collections/c5c3/glance/roles/pass"
    role.mkdir(parents=True)
    environ = {"ANSIBLE_COLLECTIONS_PATH": f"/nowhere:{tree}/collections"}
    assert one(tree, "role: c5c3.glance.pass\n", environ).role == role


def test_an_fqcn_role_defaults_to_the_home_collections(tree):
    role = tree / "home/.ansible/collections/ansible_collections/c5c3/glance/roles/pass"
    role.mkdir(parents=True)
    assert one(tree, "role: c5c3.glance.pass\n", {"HOME": str(tree / "home")}).role == role


# -- problems ---------------------------------------------------------------------------

PROBLEM_CASES = [
    (
        "missing playbook and role",
        "- {group: g, version: v1, kind: K}\n",
        ["watches.yaml:1: entry 1 (g/v1, Kind=K): must specify role or playbook"],
    ),
    (
        "playbook and role together",
        "- {group: g, version: v1, kind: K, playbook: playbooks/glance.yml, role: glance}\n",
        ["watches.yaml:1: entry 1 (g/v1, Kind=K): playbook and role are mutually exclusive"],
    ),
    (
        "missing version and kind",
        "- group: g\n  playbook: playbooks/glance.yml\n",
        [
            "watches.yaml:1: entry 1: version: must not be empty",
            "watches.yaml:1: entry 1: kind: must not be empty",
        ],
    ),
    (
        "missing playbook file",
        "- version: v1\n  kind: K\n  playbook: playbooks/nope.yml\n",
        [
            "watches.yaml:3: entry 1 (/v1, Kind=K): playbook: {tree}/playbooks/nope.yml was not found"
        ],
    ),
    (
        "missing role",
        "- version: v1\n  kind: K\n  role: nope\n",
        ["watches.yaml:3: entry 1 (/v1, Kind=K): role: nope was not found"],
    ),
    (
        "unknown key",
        "- version: v1\n  kind: K\n  playbook: playbooks/glance.yml\n  reconcilePeriods: 1m\n",
        [
            "watches.yaml:4: entry 1 (/v1, Kind=K): reconcilePeriods: unknown field (known: blacklist, finalizer, group, kind, manageStatus, markUnsafe, maxConcurrentReconciles, maxRunnerArtifacts, playbook, reconcilePeriod, role, selector, snakeCaseParameters, vars, version, watchAnnotationsChanges, watchClusterScopedResources, watchDependentResources)"
        ],
    ),
    (
        "bad duration",
        "- {version: v1, kind: K, playbook: playbooks/glance.yml, reconcilePeriod: 5x}\n",
        [
            'watches.yaml:1: entry 1 (/v1, Kind=K): reconcilePeriod: time: unknown unit "x" in duration "5x"'
        ],
    ),
    (
        "duration as a number",
        "- {version: v1, kind: K, playbook: playbooks/glance.yml, reconcilePeriod: 30}\n",
        [
            'watches.yaml:1: entry 1 (/v1, Kind=K): reconcilePeriod: must be a duration such as "30s", not 30'
        ],
    ),
    (
        "negative duration",
        "- {version: v1, kind: K, playbook: playbooks/glance.yml, reconcilePeriod: -1m}\n",
        ["watches.yaml:1: entry 1 (/v1, Kind=K): reconcilePeriod: must not be negative, not '-1m'"],
    ),
    (
        "boolean as a string",
        "- {version: v1, kind: K, playbook: playbooks/glance.yml, markUnsafe: 'true'}\n",
        ["watches.yaml:1: entry 1 (/v1, Kind=K): markUnsafe: must be true or false, not 'true'"],
    ),
    (
        "negative artifacts",
        "- {version: v1, kind: K, playbook: playbooks/glance.yml, maxRunnerArtifacts: -1}\n",
        ["watches.yaml:1: entry 1 (/v1, Kind=K): maxRunnerArtifacts: must be at least 0, not -1"],
    ),
    (
        "zero concurrency",
        "- {version: v1, kind: K, playbook: playbooks/glance.yml, maxConcurrentReconciles: 0}\n",
        [
            "watches.yaml:1: entry 1 (/v1, Kind=K): maxConcurrentReconciles: must be at least 1, not 0"
        ],
    ),
    (
        "vars not a mapping",
        "- {version: v1, kind: K, playbook: playbooks/glance.yml, vars: [a]}\n",
        [
            "watches.yaml:1: entry 1 (/v1, Kind=K): vars: must be a mapping of variable names to values"
        ],
    ),
    (
        "finalizer without a name",
        "- version: v1\n  kind: K\n  playbook: playbooks/glance.yml\n  finalizer:\n    vars: {x: 1}\n",
        ["watches.yaml:5: entry 1 (/v1, Kind=K): finalizer.name: must not be empty"],
    ),
    (
        "finalizer with nothing to run",
        "- version: v1\n  kind: K\n  playbook: playbooks/glance.yml\n  finalizer:\n    name: f\n",
        ["watches.yaml:5: entry 1 (/v1, Kind=K): finalizer: needs a playbook, a role or vars"],
    ),
    (
        "finalizer playbook missing even with vars",
        "- version: v1\n  kind: K\n  playbook: playbooks/glance.yml\n  finalizer:\n    name: f\n    playbook: gone.yml\n    vars: {x: 1}\n",
        [
            "watches.yaml:6: entry 1 (/v1, Kind=K): finalizer.playbook: {tree}/gone.yml was not found"
        ],
    ),
    (
        "finalizer with playbook and role",
        "- version: v1\n  kind: K\n  playbook: playbooks/glance.yml\n  finalizer: {name: f, playbook: playbooks/finalize.yml, role: glance}\n",
        [
            "watches.yaml:4: entry 1 (/v1, Kind=K): finalizer.playbook and finalizer.role are mutually exclusive"
        ],
    ),
    (
        "selector operator",
        "- version: v1\n  kind: K\n  playbook: playbooks/glance.yml\n  selector:\n    matchExpressions:\n    - {key: tier, operator: Equals, values: [a]}\n",
        [
            'watches.yaml:6: entry 1 (/v1, Kind=K): selector.matchExpressions[0].operator: "Equals" is not a valid label selector operator'
        ],
    ),
    (
        "selector In without values",
        "- version: v1\n  kind: K\n  playbook: playbooks/glance.yml\n  selector:\n    matchExpressions:\n    - {key: tier, operator: In}\n",
        [
            "watches.yaml:6: entry 1 (/v1, Kind=K): selector.matchExpressions[0].values: must not be empty for operator In"
        ],
    ),
    (
        "selector Exists with values",
        "- version: v1\n  kind: K\n  playbook: playbooks/glance.yml\n  selector:\n    matchExpressions:\n    - key: tier\n      operator: Exists\n      values: [a]\n",
        [
            "watches.yaml:8: entry 1 (/v1, Kind=K): selector.matchExpressions[0].values: must be empty for operator Exists"
        ],
    ),
    (
        "selector label key",
        "- version: v1\n  kind: K\n  playbook: playbooks/glance.yml\n  selector:\n    matchLabels: {-bad: x}\n",
        [
            "watches.yaml:5: entry 1 (/v1, Kind=K): selector.matchLabels: '-bad': the name must be 1-63 characters, alphanumeric, '-', '_' or '.', starting and ending with an alphanumeric character"
        ],
    ),
    (
        "selector label value",
        "- version: v1\n  kind: K\n  playbook: playbooks/glance.yml\n  selector:\n    matchLabels: {app: 'a b'}\n",
        [
            "watches.yaml:5: entry 1 (/v1, Kind=K): selector.matchLabels: 'a b': a label value must be at most 63 characters, alphanumeric, '-', '_' or '.', starting and ending with an alphanumeric character"
        ],
    ),
    (
        "blacklist entry without version",
        "- version: v1\n  kind: K\n  playbook: playbooks/glance.yml\n  blacklist:\n  - kind: Secret\n",
        ["watches.yaml:5: entry 1 (/v1, Kind=K): blacklist[0].version: must not be empty"],
    ),
    (
        "duplicate GVK",
        "- {version: v1, kind: K, playbook: playbooks/glance.yml}\n- {version: v1, kind: K, playbook: playbooks/glancebackend.yml}\n",
        ["watches.yaml:2: entry 2 (/v1, Kind=K): duplicate GVK (also entry 1)"],
    ),
    (
        "same kind in another version is no duplicate, but every entry is checked",
        "- {version: v1, kind: K, playbook: playbooks/glance.yml}\n- {version: v2, kind: K}\n- {version: v3, kind: K, role: nope}\n",
        [
            "watches.yaml:2: entry 2 (/v2, Kind=K): must specify role or playbook",
            "watches.yaml:3: entry 3 (/v3, Kind=K): role: nope was not found",
        ],
    ),
    (
        "entry not a mapping",
        "- just a string\n",
        ["watches.yaml:1: entry 1: entry: must be a mapping"],
    ),
    ("empty file", "", ["watches.yaml: lists no watches"]),
    ("empty list", "[]\n", ["watches.yaml: lists no watches"]),
    ("not a list", "group: g\n", ["watches.yaml:1: must be a list of watches"]),
]


@pytest.mark.parametrize(
    ("text", "expected"), [c[1:] for c in PROBLEM_CASES], ids=[c[0] for c in PROBLEM_CASES]
)
def test_a_problem_names_file_line_entry_and_field(tree, text, expected):
    assert problems(tree, text) == [line.format(tree=tree) for line in expected]


def test_invalid_yaml_is_one_problem(tree):
    (found,) = problems(tree, "- {version: v1\n")
    assert found.startswith("watches.yaml: not valid YAML: ")


def test_a_loaded_file_names_itself_in_problems(tree):
    (tree / "watches.yaml").write_text("- {version: v1, kind: K}\n")
    with pytest.raises(WatchesError, match=f"^{re.escape(str(tree))}/watches.yaml:1: entry 1 "):
        load_watches(tree / "watches.yaml", environ={})


# -- selector -------------------------------------------------------------------------

SELECTOR = LabelSelector(
    MappingProxyType({"app": "glance"}),
    (
        LabelRequirement("tier", "In", ("api", "worker")),
        LabelRequirement("canary", "NotIn", ("true",)),
        LabelRequirement("owner", "Exists"),
        LabelRequirement("paused", "DoesNotExist"),
    ),
)
MATCH_CASES = [
    ({"app": "glance", "tier": "api", "owner": "x"}, True),
    ({"app": "glance", "tier": "worker", "owner": "", "canary": "false"}, True),
    ({"app": "glance", "tier": "api", "owner": "x", "canary": "true"}, False),
    ({"app": "glance", "tier": "db", "owner": "x"}, False),
    ({"app": "glance", "owner": "x"}, False),
    ({"app": "other", "tier": "api", "owner": "x"}, False),
    ({"app": "glance", "tier": "api"}, False),
    ({"app": "glance", "tier": "api", "owner": "x", "paused": ""}, False),
]


@pytest.mark.parametrize(("labels", "expected"), MATCH_CASES)
def test_a_selector_matches_as_apimachinery_s(labels, expected):
    assert SELECTOR.matches(labels) is expected


def test_the_empty_selector_matches_everything():
    assert LabelSelector().matches(None) and LabelSelector().matches({"a": "b"})


# -- per-CR and per-process overrides ---------------------------------------------------

PERIOD = "ansible.sdk.operatorframework.io/reconcile-period"


@pytest.mark.parametrize(
    ("from_file", "annotations", "expected"),
    [
        (None, None, 36000.0),  # the runner's flag (ansible-operator's default 10h)
        (60.0, None, 60.0),
        (60.0, {PERIOD: "5m"}, 300.0),
        (None, {PERIOD: "0s"}, 0.0),
        (60.0, {PERIOD: "-5m"}, 0.0),
        (None, {"other": "1s"}, 36000.0),
    ],
)
def test_the_reconcile_period_annotation_beats_the_file_which_beats_the_flag(
    from_file, annotations, expected
):
    watch = Watch(gvk=GLANCE, reconcile_period=from_file)
    assert reconcile_period(watch, annotations, default=36000.0) == expected


def test_a_bad_reconcile_period_annotation_fails_with_go_s_message():
    with pytest.raises(ValueError, match=r'^time: invalid duration "soon"$'):
        reconcile_period(Watch(gvk=GLANCE), {PERIOD: "soon"}, default=0.0)


@pytest.mark.parametrize(
    ("annotation", "expected"), [(None, 3), ("7", 7), ("0", 0), ("seven", 3), ("+2", 2), (" 2", 3)]
)
def test_max_runner_artifacts_annotation_overrides_when_an_integer(annotation, expected):
    annotations = (
        {}
        if annotation is None
        else {"ansible.sdk.operatorframework.io/max-runner-artifacts": annotation}
    )
    assert max_runner_artifacts(Watch(gvk=GLANCE, max_runner_artifacts=3), annotations) == expected


@pytest.mark.parametrize(
    ("environ", "annotation", "expected"),
    [
        ({}, None, 2),
        ({"ANSIBLE_VERBOSITY_GLANCE_GLANCE_OPENSTACK_C5C3_IO": "4"}, None, 4),
        ({"ANSIBLE_VERBOSITY_GLANCE_GLANCE_OPENSTACK_C5C3_IO": "8"}, None, 2),
        ({"ANSIBLE_VERBOSITY_GLANCE_GLANCE_OPENSTACK_C5C3_IO": "x"}, None, 2),
        ({"ANSIBLE_VERBOSITY_GLANCE_GLANCE_OPENSTACK_C5C3_IO": "4"}, "1", 1),
        ({}, "loud", 2),
    ],
)
def test_verbosity_comes_from_annotation_then_environment_then_flag(environ, annotation, expected):
    annotations = (
        {} if annotation is None else {"ansible.sdk.operatorframework.io/verbosity": annotation}
    )
    assert ansible_verbosity(Watch(gvk=GLANCE), annotations, environ, default=2) == expected


@pytest.mark.parametrize(
    ("from_file", "environ", "expected"),
    [
        (None, {}, 2),
        (3, {}, 3),
        (3, {"MAX_CONCURRENT_RECONCILES_GLANCE_GLANCE_OPENSTACK_C5C3_IO": "5"}, 5),
        (3, {"WORKER_GLANCE_GLANCE_OPENSTACK_C5C3_IO": "4"}, 4),
        (
            3,
            {
                "MAX_CONCURRENT_RECONCILES_GLANCE_GLANCE_OPENSTACK_C5C3_IO": "5",
                "WORKER_GLANCE_GLANCE_OPENSTACK_C5C3_IO": "4",
            },
            5,
        ),
        (3, {"MAX_CONCURRENT_RECONCILES_GLANCE_GLANCE_OPENSTACK_C5C3_IO": "0"}, 3),
        (None, {"MAX_CONCURRENT_RECONCILES_GLANCE_GLANCE_OPENSTACK_C5C3_IO": "many"}, 2),
        (None, {"MAX_CONCURRENT_RECONCILES_GLANCEBACKEND_GLANCE_OPENSTACK_C5C3_IO": "9"}, 2),
    ],
)
def test_concurrency_comes_from_environment_then_file_then_flag(from_file, environ, expected):
    watch = Watch(gvk=GLANCE, max_concurrent_reconciles=from_file)
    assert max_concurrent_reconciles(watch, environ, default=2) == expected
