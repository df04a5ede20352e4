"""``make kind-node-image`` (hack/kind_node.py): its decisions, without Docker.

Which images the node holds under which names (kubeadm's own list for the Kubernetes release
of hack/kube/go.mod, ours under localhost/), that the versions kubeadm wants are the ones
built here, the manifests kind reads from /kind/manifests (kind's markers, our images filled
in, nothing left unfilled), the node's own files, the Debian bases and the Dockerfiles of
the component images. The build itself runs where Docker does: docs/molecule.md, `kind`.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from support.hack_scripts import hack_script

kind_node = hack_script("kind_node")

ROOT = Path(__file__).resolve().parents[2]
# What `kubeadm config images list --kubernetes-version v1.36.3` printed here.
KUBEADM_LIST = """registry.k8s.io/kube-apiserver:v1.36.3
registry.k8s.io/kube-controller-manager:v1.36.3
registry.k8s.io/kube-scheduler:v1.36.3
registry.k8s.io/kube-proxy:v1.36.3
registry.k8s.io/coredns/coredns:v1.14.2
registry.k8s.io/pause:3.10.2
registry.k8s.io/etcd:3.6.8-0
"""


@pytest.fixture
def wanted() -> dict[str, str]:
    return kind_node.kubeadm_images(KUBEADM_LIST.splitlines())


@pytest.fixture
def versions():
    return kind_node.versions()


@pytest.fixture
def values(wanted, versions) -> dict[str, str]:
    return kind_node.placeholders(wanted, kind_node.our_images(versions))


# --- names and versions ----------------------------------------------------------------------


def test_the_versions_are_the_pinned_modules():
    v = kind_node.versions()
    assert v.kubernetes == "v1.36.3"
    assert v.etcd == "v3.6.8"
    assert v.coredns == "v1.14.2"
    assert v.local_path == "v0.0.30"
    assert kind_node.node_image(v) == "localhost/c5c3-kind-node:v1.36.3"


def test_each_tool_is_its_own_module_pinning_its_upstream():
    labels = {t.name: kind_node.tool_build(t).label for t in kind_node.TOOLS}
    assert labels == {
        "kind": "kind-v0.33.0",
        "crictl": "crictl-v1.37.0",
        "coredns": "coredns-v1.14.2",
        "local-path-provisioner": "local-path-provisioner-v0.0.30",
    }
    dirs = {kind_node.tool_build(t).module_dir for t in kind_node.TOOLS}
    assert len(dirs) == len(kind_node.TOOLS)
    for directory in dirs:
        # No module holds another (a module's digest covers every file below it).
        assert not any(d != directory and directory in d.parents for d in dirs)
        assert (directory / "go.sum").is_file()


def test_the_control_plane_images_are_kubeadms_names(wanted):
    assert wanted == {
        "kube-apiserver": "registry.k8s.io/kube-apiserver:v1.36.3",
        "kube-controller-manager": "registry.k8s.io/kube-controller-manager:v1.36.3",
        "kube-scheduler": "registry.k8s.io/kube-scheduler:v1.36.3",
        "kube-proxy": "registry.k8s.io/kube-proxy:v1.36.3",
        "coredns": "registry.k8s.io/coredns/coredns:v1.14.2",
        "pause": "registry.k8s.io/pause:3.10.2",
        "etcd": "registry.k8s.io/etcd:3.6.8-0",
    }


def test_a_list_without_a_component_is_refused_naming_it():
    lines = [line for line in KUBEADM_LIST.splitlines() if "etcd" not in line]
    with pytest.raises(kind_node.KindNodeError, match="etcd"):
        kind_node.kubeadm_images(lines)


def test_the_versions_kubeadm_wants_are_the_ones_built(wanted):
    kind_node.check_versions(wanted, "v1.36.3", "v3.6.8", "v1.14.2")


@pytest.mark.parametrize(
    ("kubernetes", "etcd", "coredns", "named"),
    [
        ("v1.36.4", "v3.6.8", "v1.14.2", "kube-apiserver"),
        ("v1.36.3", "v3.6.9", "v1.14.2", "hack/kube/go.mod"),
        ("v1.36.3", "v3.6.8", "v1.14.1", "hack/kind/coredns/go.mod"),
    ],
)
def test_a_version_other_than_kubeadms_is_refused_naming_the_module(
    wanted, kubernetes, etcd, coredns, named
):
    with pytest.raises(kind_node.KindNodeError, match=named):
        kind_node.check_versions(wanted, kubernetes, etcd, coredns)


def test_our_images_are_local_names_that_no_registry_serves(versions):
    ours = kind_node.our_images(versions)
    assert ours == {
        "cni": "localhost/c5c3-kind/cni:v1.36.3",
        "local-path-provisioner": "localhost/c5c3-kind/local-path-provisioner:v0.0.30",
        "local-path-helper": "localhost/c5c3-kind/local-path-helper:v0.0.30",
    }


def test_kubeadms_names_are_given_only_inside_the_node(wanted):
    # In Docker the control plane's images are ours, never the registry's names.
    assert (
        kind_node.docker_ref(wanted["kube-apiserver"])
        == "localhost/c5c3-kind/kube-apiserver:v1.36.3"
    )
    assert kind_node.docker_ref(wanted["coredns"]) == "localhost/c5c3-kind/coredns:v1.14.2"
    assert kind_node.docker_ref("localhost/c5c3-kind/cni:v1") == "localhost/c5c3-kind/cni:v1"
    renamed = dict(kind_node.renames([wanted["etcd"], "localhost/c5c3-kind/cni:v1"]))
    assert renamed == {"localhost/c5c3-kind/etcd:3.6.8-0": "registry.k8s.io/etcd:3.6.8-0"}


def test_image_tag():
    assert kind_node.image_tag("registry.k8s.io/etcd:3.6.8-0") == "3.6.8-0"
    assert kind_node.image_tag("localhost:5000/x") == "latest"


# --- the component images --------------------------------------------------------------------


def test_every_component_but_pause_is_built_on_the_component_base(wanted, versions, tmp_path):
    tools = {name: tmp_path / name for name in ("coredns", "local-path-provisioner")}
    built = kind_node.components(wanted, kind_node.our_images(versions), tmp_path, tools)
    refs = {c.ref for c in built}
    assert refs == (set(wanted.values()) - {wanted["pause"]}) | set(
        kind_node.our_images(versions).values()
    )
    by_ref = {c.ref: c for c in built}
    # kubeadm's manifests run the programs by name or at these paths.
    proxy = by_ref[wanted["kube-proxy"]]
    assert proxy.files == ((tmp_path / "kube-proxy", "/usr/local/bin/kube-proxy"),)
    assert by_ref[wanted["etcd"]].files == ((tmp_path / "etcd", "/usr/local/bin/etcd"),)
    # kubeadm's CoreDNS Deployment gives only args: the image's entrypoint runs.
    assert by_ref[wanted["coredns"]].entrypoint == ("/coredns",)
    cni = by_ref["localhost/c5c3-kind/cni:v1.36.3"]
    assert {dest for _src, dest in cni.files} == {
        "/usr/local/bin/c5c3-kind-cni",
        "/usr/local/bin/kubectl",
    }


def test_a_component_dockerfile_copies_its_files_and_labels_the_image():
    component = kind_node.Component("x:1", ((Path("/a"), "/usr/local/bin/a"),), ("/a",), "x")
    text = kind_node.component_dockerfile(component, "base:1")
    assert text.splitlines()[0] == "FROM base:1"
    assert "COPY rootfs/ /" in text
    assert f'{kind_node.VENDOR_LABEL}="{kind_node.VENDOR}"' in text
    assert 'ENTRYPOINT ["/a"]' in text
    helper = kind_node.Component("h:1", (), ("/bin/sh",), "helper")
    assert "COPY" not in kind_node.component_dockerfile(helper, "base:1")


def test_the_bases_are_tagged_by_their_package_lists():
    component, node = kind_node.BASES
    assert component.ref.startswith("localhost/c5c3-kind-component-base:bookworm-")
    assert node.ref.startswith("localhost/c5c3-kind-node-base:bookworm-")
    other = kind_node.Base("node", (*node.packages, "vim"))
    assert other.ref != node.ref
    # What kube-proxy and the CNI run; what the node runs.
    assert {"iptables", "conntrack", "containernetworking-plugins"} <= set(component.packages)
    assert {"systemd", "dbus", "containerd", "runc", "iptables"} <= set(node.packages)


# --- the manifests and the node's files ------------------------------------------------------


def test_the_cni_manifest_carries_kinds_markers_and_our_image(values):
    text = kind_node.manifests(values)["default-cni.yaml"]
    # kind templates ({{ .PodSubnet }}) and patches (CONTROL_PLANE_ENDPOINT) only on these.
    assert "would you kindly template this file" in text
    assert "would you kindly patch this file" in text
    assert '"{{ .PodSubnet }}"' in text
    docs = [d for d in yaml.safe_load_all(text) if d]
    (daemonset,) = [d for d in docs if d["kind"] == "DaemonSet"]
    spec = daemonset["spec"]["template"]["spec"]
    assert spec["hostNetwork"] is True
    assert spec["tolerations"] == [{"operator": "Exists"}]
    first = spec["containers"][0]
    assert first["image"] == "localhost/c5c3-kind/cni:v1.36.3"
    # kind's patch appends to this list: it must be there.
    assert [e["name"] for e in first["env"]] == ["NODE_NAME", "POD_SUBNET"]
    mounts = {m["mountPath"] for m in first["volumeMounts"]}
    assert mounts == {"/host/opt/cni/bin", "/host/etc/cni/net.d"}


def test_the_storage_manifest_is_the_default_class_on_our_images(values):
    docs = [d for d in yaml.safe_load_all(kind_node.manifests(values)["default-storage.yaml"]) if d]
    (storage_class,) = [d for d in docs if d["kind"] == "StorageClass"]
    assert storage_class["metadata"]["name"] == "standard"
    default = "storageclass.kubernetes.io/is-default-class"
    assert storage_class["metadata"]["annotations"][default] == "true"
    (deployment,) = [d for d in docs if d["kind"] == "Deployment"]
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == "localhost/c5c3-kind/local-path-provisioner:v0.0.30"
    assert "localhost/c5c3-kind/local-path-helper:v0.0.30" in container["command"]
    (config,) = [d for d in docs if d["kind"] == "ConfigMap"]
    helper = yaml.safe_load(config["data"]["helperPod.yaml"])
    assert (
        helper["spec"]["containers"][0]["image"] == "localhost/c5c3-kind/local-path-helper:v0.0.30"
    )
    assert json.loads(config["data"]["config.json"])["nodePathMap"]


def test_a_placeholder_left_unfilled_is_an_error_naming_it():
    with pytest.raises(kind_node.KindNodeError, match="@@NOPE@@"):
        kind_node.render("image: @@NOPE@@", {"@@CNI_IMAGE@@": "x"}, "f.yaml")


def test_the_node_files_name_the_pause_image_and_keep_their_modes(values):
    files = kind_node.node_files(values)
    config, _mode = files["/etc/containerd/config.toml"]
    assert b'sandbox_image = "registry.k8s.io/pause:3.10.2"' in config
    assert b"restrict_oom_score_adj = true" in config
    assert b"SystemdCgroup = true" in config
    assert files["/usr/local/bin/entrypoint"][1] == 0o755
    assert files["/usr/local/bin/kubeadm"][1] == 0o755
    # kind waits for these words in the node's log on cgroup v1.
    assert b"detected cgroup v1" in files["/usr/local/bin/entrypoint"][0]
    assert b"--fail-cgroupv1=false" in files["/etc/default/kubelet"][0]
    dropin = files["/etc/systemd/system/kubelet.service.d/10-kubeadm.conf"][0].decode()
    for contract in (
        "/var/lib/kubelet/kubeadm-flags.env",
        "/var/lib/kubelet/config.yaml",
        "/etc/kubernetes/bootstrap-kubelet.conf",
        "/etc/kubernetes/kubelet.conf",
    ):
        assert contract in dropin


def test_the_node_image_has_its_version_manifests_and_programs(values, versions, tmp_path):
    tools = {"crictl": tmp_path / "crictl"}
    files = kind_node.stage_files(versions, values, tmp_path, tools)
    assert files["rootfs/kind/version"] == b"v1.36.3\n"
    assert {
        "rootfs/kind/manifests/default-cni.yaml",
        "rootfs/kind/manifests/default-storage.yaml",
    } <= set(files)
    for program in (
        "/usr/bin/kubelet",
        "/usr/bin/kubeadm",
        "/usr/bin/kubectl",
        "/usr/local/bin/crictl",
    ):
        assert f"rootfs{program}" in files
    dockerfile = kind_node.stage_dockerfile("base:1")
    assert 'ENTRYPOINT ["/usr/local/bin/entrypoint", "/sbin/init"]' in dockerfile
    assert "systemctl enable containerd.service kubelet.service" in dockerfile
    assert "STOPSIGNAL SIGRTMIN+3" in dockerfile


def test_the_inputs_digest_changes_with_any_input():
    one = kind_node.inputs_digest(["stage sha256:1", "a sha256:2"])
    assert one == kind_node.inputs_digest(["stage sha256:1", "a sha256:2"])
    assert one != kind_node.inputs_digest(["stage sha256:1", "a sha256:3"])


def test_the_dry_run_names_the_node_image_last(capsys):
    assert kind_node.main(["--dry-run"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == "localhost/c5c3-kind-node:v1.36.3"


def test_the_mariadb_image_starts_from_an_empty_data_directory_with_our_entrypoint():
    assert kind_node.MARIADB_IMAGE == "localhost/c5c3-kind/mariadb:bookworm"
    assert kind_node.MARIADB_BASE.packages == ("mariadb-server",)
    text = kind_node.mariadb_dockerfile("base:1")
    # Debian's post-installation made a data directory; the entrypoint makes its own.
    assert "RUN rm -rf /var/lib/mysql/*" in text
    assert 'ENTRYPOINT ["/usr/local/bin/c5c3-mariadb"]' in text
    entrypoint = (ROOT / "hack/kind/mariadb/entrypoint").read_text()
    for variable in (
        "MARIADB_DATABASE",
        "MARIADB_USER",
        "MARIADB_PASSWORD",
        "MARIADB_ROOT_PASSWORD",
        "MARIADB_RANDOM_ROOT_PASSWORD",
    ):
        assert variable in entrypoint


def test_the_scenario_builds_and_names_the_same_mariadb_image():
    settings = yaml.safe_load((ROOT / "molecule/kind/vars/main.yml").read_text())
    assert settings["glance_molecule_mariadb_built"] == kind_node.MARIADB_IMAGE


def test_programs_are_linked_to_their_resolved_paths(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (real / "kind").write_text("")
    (tmp_path / "home").symlink_to(real)
    kind_node.link_programs(tmp_path / "bin", {"kind": tmp_path / "home" / "kind"})
    assert (tmp_path / "bin" / "kind").readlink() == real / "kind"
    kind_node.link_programs(tmp_path / "bin", {"kind": tmp_path / "home" / "kind"})
