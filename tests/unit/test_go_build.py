"""hack/go_build.py and hack/kube_assets.py: what is built, where it goes, when it is reused.

The build itself runs on a module of our own (one ``main`` package, no dependencies, so
no download): a real ``go build`` into a cache under the test's temporary directory.
"""

from __future__ import annotations

import fcntl
import os
import re
import subprocess
import threading
import time
from pathlib import Path

import pytest
from support.hack_scripts import hack_script

kube_assets = hack_script("kube_assets")
helm_tool = hack_script("helm_tool")
go_build = kube_assets.go_build

ROOT = Path(__file__).resolve().parents[2]
KUBE_MODULE = ROOT / "hack" / "kube"


def test_the_kubernetes_pins_agree_with_each_other():
    """Every staging module is replaced by the published version of the pinned release:
    Kubernetes v1.X.Y publishes them as v0.X.Y."""
    text = (KUBE_MODULE / "go.mod").read_text()
    kubernetes = go_build.required_version(KUBE_MODULE, "k8s.io/kubernetes")
    staging = re.findall(r"^\s*(k8s\.io/\S+) => (\S+) (v\S+)$", text, re.M)
    assert len(staging) >= 30, staging
    expected = "v0." + kubernetes.removeprefix("v1.")
    assert {(name, target, version) for name, target, version in staging} == {
        (name, name, expected) for name, _, _ in staging
    }


def test_the_kubernetes_build_names_every_program_and_stamps_the_release():
    build = kube_assets.kube_build()
    assert build.packages[-1] == "./etcd"
    programs = {p.rsplit("/", 1)[-1] for p in build.packages[:-1]}
    assert programs | {"etcd"} == set(kube_assets.BINARIES)
    assert build.label == "kubernetes-v1.36.3-etcd-v3.6.8"
    assert "-X k8s.io/component-base/version.gitVersion=v1.36.3" in build.ldflags
    assert "-X k8s.io/client-go/pkg/version.gitMinor=36" in build.ldflags
    assert build.ldflags.startswith("-s -w ")


def test_the_helm_build_is_its_module_s_tool_stamped_with_its_version():
    build = helm_tool.helm_build()
    assert build.packages == ("helm.sh/helm/v4/cmd/helm",)
    assert build.binaries == ("helm",)
    version = go_build.required_version(helm_tool.MODULE_DIR, "helm.sh/helm/v4")
    assert build.label == f"helm-{version}"
    assert f"-X helm.sh/helm/v4/internal/version.version={version}" in build.ldflags
    assert build.kind == "helm" and build.ldflags.startswith("-s -w ")


@pytest.mark.parametrize("version", ["v1.36", "1.36.3", "v1.36.3-rc.0"])
def test_only_a_release_version_is_stamped(version):
    with pytest.raises(go_build.BuildError, match="not a Kubernetes release version"):
        kube_assets.ldflags(version)


def test_tools_reads_the_block_and_single_lines(tmp_path):
    (tmp_path / "go.mod").write_text(
        "module x\n\ngo 1.26.0\n\ntool (\n\texample.com/a/cmd/one\n\texample.com/b\n)\n\n"
        "tool example.com/c/cmd/three\n"
    )
    assert go_build.tools(tmp_path) == (
        "example.com/a/cmd/one",
        "example.com/b",
        "example.com/c/cmd/three",
    )
    (tmp_path / "go.mod").write_text("module x\n\ngo 1.26.0\n")
    with pytest.raises(go_build.BuildError, match="names no tool"):
        go_build.tools(tmp_path)


@pytest.mark.parametrize(
    ("version", "ok"),
    [
        ("go1.26", True),
        ("go1.26.8", True),
        ("go1.27.3", False),
        ("go1.2", False),
        ("go1.260", False),
    ],
)
def test_the_go_series_is_checked(version, ok):
    if ok:
        go_build.check_go(version)
    else:
        with pytest.raises(go_build.BuildError, match=r"built with go1\.26\.x"):
            go_build.check_go(version)


def test_the_cache_root_follows_the_variables():
    assert go_build.cache_root({"C5C3_CACHE_DIR": "/c", "HOME": "/h"}) == Path("/c")
    assert go_build.cache_root({"XDG_CACHE_HOME": "/x", "HOME": "/h"}) == Path("/x/c5c3-glance")
    assert go_build.cache_root({"HOME": "/h"}) == Path("/h/.cache/c5c3-glance")


def hello_module(directory: Path) -> go_build.GoBuild:
    """A module of one program, ``hello``, that needs nothing from the proxy."""
    (directory / "hello").mkdir(parents=True)
    (directory / "go.mod").write_text("module example.com/hello\n\ngo 1.26.0\n")
    (directory / "hello" / "main.go").write_text(
        'package main\n\nimport "fmt"\n\nfunc main() { fmt.Println("hello") }\n'
    )
    return go_build.GoBuild(
        kind="test-tools",
        label="hello-v1",
        module_dir=directory,
        packages=("./hello",),
        binaries=("hello",),
    )


def test_a_build_is_made_once_then_reused_and_made_anew_when_its_module_changes(tmp_path):
    build = hello_module(tmp_path / "module")
    env = {"C5C3_CACHE_DIR": str(tmp_path / "cache"), "HOME": str(tmp_path)}
    env["PATH"] = os.environ["PATH"]
    env["GOCACHE"] = str(tmp_path / "gocache")
    said: list[str] = []

    first = go_build.ensure(build, said.append, env)
    assert first.parent == tmp_path / "cache" / "test-tools"
    assert re.fullmatch(r"hello-v1-go1\.26(\.\d+)?-linux-\w+-[0-9a-f]{12}", first.name), first.name
    assert subprocess.run([first / "hello"], capture_output=True, text=True).stdout == "hello\n"
    assert go_build.complete(build, first)
    assert '"label": "hello-v1"' in (first / go_build.RECORD).read_text()
    assert [p.name for p in first.parent.iterdir()] == [first.name]  # no staging left

    said.clear()
    assert go_build.ensure(build, said.append, env) == first
    assert said == [f"reusing {first}"]

    (build.module_dir / "hello" / "main.go").write_text(
        'package main\n\nimport "fmt"\n\nfunc main() { fmt.Println("hello again") }\n'
    )
    second = go_build.ensure(build, said.append, env)
    assert second != first
    assert (
        subprocess.run([second / "hello"], capture_output=True, text=True).stdout == "hello again\n"
    )


def test_a_directory_without_its_record_is_not_complete(tmp_path):
    build = hello_module(tmp_path / "module")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "hello").write_text("#!/bin/sh\n")
    (tmp_path / "out" / "hello").chmod(0o755)
    assert not go_build.complete(build, tmp_path / "out")
    (tmp_path / "out" / go_build.RECORD).write_text("{}")
    assert go_build.complete(build, tmp_path / "out")


def test_a_failed_build_leaves_nothing_behind(tmp_path):
    build = hello_module(tmp_path / "module")
    (build.module_dir / "hello" / "main.go").write_text("package main\n\nfunc main() { x }\n")
    env = {"C5C3_CACHE_DIR": str(tmp_path / "cache"), "HOME": str(tmp_path)}
    env["PATH"] = os.environ["PATH"]
    env["GOCACHE"] = str(tmp_path / "gocache")
    with pytest.raises(go_build.BuildError, match="go build failed"):
        go_build.ensure(build, lambda _: None, env)
    assert list((tmp_path / "cache" / "test-tools").iterdir()) == []


def test_a_second_caller_waits_for_the_build_under_way_and_takes_what_it_made(tmp_path):
    """hack/prebuild.py builds in the background while a test may need the same program:
    the test waits on the directory's lock, then reuses the directory, building nothing."""
    build = hello_module(tmp_path / "module")
    env = {"C5C3_CACHE_DIR": str(tmp_path / "cache"), "HOME": str(tmp_path)}
    env["PATH"] = os.environ["PATH"]
    env["GOCACHE"] = str(tmp_path / "gocache")
    full_env = go_build.build_env(env)
    target = go_build.output_dir(build, full_env)
    lock = go_build.lock_path(target, full_env)
    lock.parent.mkdir(parents=True)
    target.parent.mkdir(parents=True)
    said: list[str] = []
    got: list[Path] = []
    waiting = f"waiting for the build of {build.label} under way"
    with lock.open("a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # the builder in the background
        second = threading.Thread(
            target=lambda: got.append(go_build.ensure(build, said.append, env))
        )
        second.start()
        deadline = time.monotonic() + 30
        while waiting not in said and time.monotonic() < deadline:
            time.sleep(0.05)
        assert said == [waiting]
        made = go_build._build(build, lambda _: None, full_env, target)  # the builder's work
    second.join(60)
    assert got == [made] and said == [waiting, f"reusing {made}, built meanwhile"]
    assert [p.name for p in target.parent.iterdir()] == [target.name]
