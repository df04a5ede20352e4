"""The ``c5c3-bounded`` runtime (hack/runc_bounded.py) and its registration by ``make
docker-engine`` (hack/docker_engine.py): which capabilities it takes out of which spec, and
the daemon configuration that makes it the default, without Docker."""

from __future__ import annotations

import json

from support.hack_scripts import hack_script

runc_bounded = hack_script("runc_bounded")
docker_engine = hack_script("docker_engine")

# Every capability up to CAP_CHECKPOINT_RESTORE (40) but CAP_SYS_RESOURCE (24), as here.
STATUS = "Name:\tx\nCapBnd:\t000001fffeffffff\n"


def test_the_capabilities_outside_the_bounding_set_are_the_missing_ones():
    mask = runc_bounded.bounding_set(STATUS)
    assert runc_bounded.outside(mask) == {"CAP_SYS_RESOURCE"}
    assert runc_bounded.outside((1 << 41) - 1) == set()
    assert docker_engine.capabilities_missing(STATUS, 40) == [24]
    assert docker_engine.capabilities_missing("CapBnd:\t000001ffffffffff\n", 40) == []


def test_a_privileged_spec_loses_only_what_cannot_be_held():
    caps = {key: ["CAP_CHOWN", "CAP_SYS_RESOURCE"] for key in runc_bounded.SETS}
    assert runc_bounded.bound(caps, {"CAP_SYS_RESOURCE"}) is True
    assert all(caps[key] == ["CAP_CHOWN"] for key in runc_bounded.SETS)
    assert runc_bounded.bound(caps, {"CAP_SYS_RESOURCE"}) is False


def test_create_rewrites_the_bundles_config_and_exec_its_process_file():
    create = ["--root", "/r", "--log", "l", "create", "--bundle", "/b", "--pid-file", "p", "id"]
    assert runc_bounded.spec_to_bound(create) == (runc_bounded.Path("/b/config.json"), True)
    exec_ = ["--root", "/r", "exec", "--process", "/tmp/p.json", "--detach", "id"]
    assert runc_bounded.spec_to_bound(exec_) == (runc_bounded.Path("/tmp/p.json"), False)
    assert runc_bounded.spec_to_bound(["--root", "/r", "kill", "id", "9"]) is None


def test_rewrite_keeps_the_rest_of_the_spec(tmp_path):
    config = tmp_path / "config.json"
    spec = {
        "ociVersion": "1.0.2",
        "process": {"args": ["sh"], "capabilities": {"bounding": ["CAP_KILL", "CAP_SYS_RESOURCE"]}},
    }
    config.write_text(json.dumps(spec))
    runc_bounded.rewrite(config, True, {"CAP_SYS_RESOURCE"})
    spec["process"]["capabilities"]["bounding"] = ["CAP_KILL"]
    assert json.loads(config.read_text()) == spec


def test_the_daemon_configuration_keeps_other_settings_and_makes_it_default():
    config = {"debug": True, "runtimes": {"other": {"path": "/x"}}}
    wanted = docker_engine.with_runtime(config)
    assert wanted["debug"] is True
    assert wanted["default-runtime"] == "c5c3-bounded"
    assert wanted["runtimes"] == {
        "other": {"path": "/x"},
        "c5c3-bounded": {"path": "/usr/local/libexec/c5c3/runc-bounded"},
    }
    assert docker_engine.with_runtime(wanted) == wanted
