"""IP addresses and CIDRs of the API's legacy fields, strict from Kubernetes 1.36 (StrictIPCIDRValidation).

References: k8s.io/apimachinery v0.36.3 pkg/util/validation/ip.go (IsValidIPForLegacyField,
IsValidCIDRForLegacyField) over k8s.io/utils net ParseIPSloppy / ParseCIDRSloppy and Go's net/netip;
kubernetes v1.36.3 pkg/features/kube_features.go (the gate: alpha 1.33, beta and on 1.36), and the
validators that call the legacy forms: pkg/apis/core/validation/validation.go ValidateNode (podCIDRs),
ValidateService (externalIPs, loadBalancerSourceRanges and its annotation), ValidateHostAliases,
validatePodDNSConfig, pkg/apis/networking/validation/validation.go ValidateIPBlock. The messages are those the
API server gave for these objects (Kubernetes v1.36.3, kdt.live, dry-run creates).
"""
from __future__ import annotations

import pytest

from kdt import formats as F
from kdt.documents import load_stream
from kdt.validate import validate_documents


def api(text: str, version: str = "1.36"):
    docs, problems = load_stream(text, "t.yaml")
    assert not problems, problems
    return [(f.rule, f.path, f.message) for f in validate_documents(docs, kubernetes_version=version)]


@pytest.mark.parametrize("value,lax,strict", [
    ("10.0.0.0/24", [], []),
    ("fd00::/64", [], []),
    ("FD00:0::/64", [], []),                                   # not canonical: a warning only, upstream
    ("0.0.0.0/0", [], []),
    ("10.0.0.1/24", [], [F.CIDR_HOST_BITS]),
    ("fd00::1/64", [], [F.CIDR_HOST_BITS]),
    ("010.0.0.0/24", [], [F.CIDR_LEADING_ZEROS]),
    ("10.0.0.0/024", [], [F.CIDR_LEADING_ZEROS]),
    ("fd00:00000::/64", [], [F.CIDR_LEADING_ZEROS]),           # a group of 5 digits: netip refuses it
    ("::ffff:10.0.0.0/120", [], [F.CIDR_4IN6]),
    ("10.0.0.0/33", [F.CIDR_INVALID], [F.CIDR_INVALID]),
    ("10.0.0.0", [F.CIDR_INVALID], [F.CIDR_INVALID]),
    ("10.0.0.256/24", [F.CIDR_INVALID], [F.CIDR_INVALID]),
    ("10.0.0.0/-1", [F.CIDR_INVALID], [F.CIDR_INVALID]),
    ("fe80::1%eth0/64", [F.CIDR_INVALID], [F.CIDR_INVALID]),
    (" 10.0.0.0/24", [F.CIDR_INVALID], [F.CIDR_INVALID]),
])
def test_cidrs(value, lax, strict):
    assert F.is_valid_cidr_for_legacy_field(value, False) == lax
    assert F.is_valid_cidr_for_legacy_field(value, True) == strict


@pytest.mark.parametrize("value,lax,strict", [
    ("1.2.3.4", [], []),
    ("2001:db8::ffff", [], []),
    ("::", [], []),
    ("::1.2.3.4", [], []),
    ("010.1.2.3", [], [F.IP_LEADING_ZEROS]),
    ("::ffff:1.2.3.4", [], [F.IP_4IN6]),
    ("::ffff:0102:0304", [], [F.IP_4IN6]),
    ("::ffff:01.2.3.4", [], [F.IP_LEADING_ZEROS]),
    ("1.2.3", [F.IP_INVALID], [F.IP_INVALID]),
    ("1:2:3:4:5:6:7:8:9", [F.IP_INVALID], [F.IP_INVALID]),
    ("1::2::3", [F.IP_INVALID], [F.IP_INVALID]),
    ("nope", [F.IP_INVALID], [F.IP_INVALID]),
    ("", [F.IP_INVALID], [F.IP_INVALID]),
])
def test_ips(value, lax, strict):
    assert F.is_valid_ip_for_legacy_field(value, False) == lax
    assert F.is_valid_ip_for_legacy_field(value, True) == strict


NODE = """\
apiVersion: v1
kind: Node
metadata: {{name: n1}}
spec:
{spec}"""


def test_a_nodes_pod_cidr_with_host_bits_is_refused_from_1_36():
    # kueue's vendored test object (apimachinery pkg/util/managedfields/node.yaml) writes podCIDR 10.0.0.1/24
    node = NODE.format(spec="  podCIDR: 10.0.0.1/24\n")
    assert api(node) == [("api-node", "spec.podCIDR", 'Invalid value: "10.0.0.1/24": must not have bits set beyond '
                                                      "the prefix length (the API server names it spec.podCIDRs[0], "
                                                      "where it reads spec.podCIDR)")]
    assert api(node, "1.35") == []                             # the gate is off before 1.36
    assert api(NODE.format(spec="  podCIDR: 10.0.0.0/24\n")) == []


def test_a_nodes_pod_cidrs():
    dual = NODE.format(spec="  podCIDRs: [10.0.0.1/24, 'fd00::1/64']\n")
    assert [p for _, p, _ in api(dual)] == ["spec.podCIDRs[0]", "spec.podCIDRs[1]"]
    assert api(NODE.format(spec="  podCIDRs: [10.0.0.0/24, 'fd00::/64']\n")) == []
    assert api(NODE.format(spec="  podCIDRs: [10.0.0.0/24, 10.1.0.0/24]\n")) == [
        ("api-node", "spec.podCIDRs", 'Invalid value: ["10.0.0.0/24","10.1.0.0/24"]: may specify no more than one '
                                      "CIDR for each IP family")]
    # podCIDR wins over a podCIDRs it differs from (v1 conversion): only podCIDR is judged
    both = NODE.format(spec="  podCIDR: 10.1.0.1/24\n  podCIDRs: [10.0.0.0/24, 10.2.0.0/24]\n")
    assert [p for _, p, _ in api(both)] == ["spec.podCIDR"]
    bad = api(NODE.format(spec="  podCIDRs: [10.0.0.0/33, nope]\n"))
    assert [(p, m.split(":")[0]) for _, p, m in bad] == [
        ("spec.podCIDRs[0]", "Invalid value"), ("spec.podCIDRs[1]", "Invalid value"),
        ("spec.podCIDRs", "Internal error"), ("spec.podCIDRs", "Invalid value")]


def test_a_node_name_is_a_subdomain():
    assert [(r, p) for r, p, _ in api(NODE.format(spec="  podCIDR: 10.0.0.0/24\n").replace("n1", "N_1"))] == [
        ("api-name", "metadata.name")]


SERVICE = """\
apiVersion: v1
kind: Service
metadata:
  name: lb
  annotations: {{service.beta.kubernetes.io/load-balancer-source-ranges: "{annotation}"}}
spec:
  type: {type}
  ports: [{{port: 80}}]
{spec}"""


def test_service_source_ranges_and_external_ips():
    spec = ("  loadBalancerSourceRanges: ['10.0.0.1/8', ' 192.168.1.0/24 ']\n"
            "  externalIPs: ['010.1.2.3', '::ffff:1.2.3.4', '127.0.0.1']\n")
    got = api(SERVICE.format(annotation="10.0.0.1/8", type="LoadBalancer", spec=spec))
    assert got == [
        ("api-service", "spec.externalIPs[0]", 'Invalid value: "010.1.2.3": must not have leading 0s'),
        ("api-service", "spec.externalIPs[1]", 'Invalid value: "::ffff:1.2.3.4": must not be an IPv4-mapped IPv6 '
                                               "address"),
        ("api-service", "spec.externalIPs[2]", 'Invalid value: "127.0.0.1": may not be in the loopback range '
                                               "(127.0.0.0/8, ::1/128)"),
        ("api-service", "spec.loadBalancerSourceRanges[0]", 'Invalid value: "10.0.0.1/8": must not have bits set '
                                                            "beyond the prefix length"),
    ]   # the annotation is read only when the field is empty; space padding is allowed
    annotated = api(SERVICE.format(annotation="10.0.0.0/8, 10.0.0.1/16", type="ClusterIP", spec=""))
    key = 'metadata.annotations["service.beta.kubernetes.io/load-balancer-source-ranges"]'
    assert annotated == [
        ("api-service", key, "Forbidden: may only be used when `type` is 'LoadBalancer'"),
        ("api-service", key, 'Invalid value: "10.0.0.1/16": must not have bits set beyond the prefix length')]
    assert api(SERVICE.format(annotation="10.0.0.1/16", type="LoadBalancer", spec=""), "1.35") == []


def test_pod_template_host_aliases_and_nameservers():
    deployment = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: d}
spec:
  selector: {matchLabels: {app: d}}
  template:
    metadata: {labels: {app: d}}
    spec:
      hostAliases:
        - {ip: 010.1.2.3, hostnames: [a.example]}
        - {ip: 10.1.2.3, hostnames: [Not_A_Host]}
      dnsPolicy: None
      dnsConfig: {nameservers: ['::ffff:1.2.3.4', 1.1.1.1, 8.8.8.8, 9.9.9.9]}
      containers: [{name: c, image: example.org/x:1}]
"""
    got = api(deployment)
    assert len(got) == 4 and all(m.startswith(start) and p == "spec.template.spec." + where
                                 for (_, p, m), (where, start) in zip(got, [
        ("hostAliases[0].ip", 'Invalid value: "010.1.2.3": must not have leading 0s'),
        ("hostAliases[1].hostnames[0]", 'Invalid value: "Not_A_Host": a lowercase RFC 1123 subdomain must '),
        ("dnsConfig.nameservers", 'Invalid value: ["::ffff:1.2.3.4","1.1.1.1","8.8.8.8","9.9.9.9"'),
        ("dnsConfig.nameservers[0]", 'Invalid value: "::ffff:1.2.3.4": must not be an IPv4-mapped I'),
    ]))
    assert [p for _, p, _ in api(deployment, "1.35")] == ["spec.template.spec.hostAliases[1].hostnames[0]",
                                                          "spec.template.spec.dnsConfig.nameservers"]


NETWORK_POLICY = """\
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {{name: np}}
spec:
  podSelector: {{}}
  ingress:
    - from:
        - ipBlock: {{cidr: {cidr}, except: {excepts}}}
      ports: [{{port: 29500, endPort: 29400}}, {{port: http, endPort: 90}}]
  egress:
    - to: [{{}}, {{ipBlock: {{cidr: 10.0.0.0/8}}, podSelector: {{}}}}]
  policyTypes: [Ingress, Sideways]
"""


def test_network_policy_ip_blocks():
    got = api(NETWORK_POLICY.format(cidr="10.0.0.1/8", excepts="[10.1.0.1/16, 11.0.0.0/16, 10.0.0.0/8]"))
    assert len(got) == 9 and all(p == path and m.startswith(start) for (_, p, m), (path, start) in zip(got, [
        ("spec.ingress[0].ports[0].endPort", "Invalid value: 29500: must be greater than or e"),
        ("spec.ingress[0].ports[1].endPort", "Invalid value: 90: may not be specified when `p"),
        ("spec.ingress[0].from[0].ipBlock.cidr", 'Invalid value: "10.0.0.1/8": must not have bits'),
        ("spec.ingress[0].from[0].ipBlock.except[0]", 'Invalid value: "10.1.0.1/16": must not have bit'),
        ("spec.ingress[0].from[0].ipBlock.except[1]", 'Invalid value: "11.0.0.0/16": must be a strict'),
        ("spec.ingress[0].from[0].ipBlock.except[2]", 'Invalid value: "10.0.0.0/8": must be a strict s'),
        ("spec.egress[0].to[0]", "Required value: must specify a peer"),
        ("spec.egress[0].to[1]", "Forbidden: may not specify both ipBlock and anot"),
        ("spec.policyTypes[1]", 'Unsupported value: "Sideways": supported values'),
    ])), got
    good = NETWORK_POLICY.format(cidr="10.0.0.0/8", excepts="[10.1.0.0/16]").replace(
        "[{port: 29500, endPort: 29400}, {port: http, endPort: 90}]", "[{port: 29500, endPort: 29600}, {port: http}]"
    ).replace("[{}, {ipBlock: {cidr: 10.0.0.0/8}, podSelector: {}}]", "[{ipBlock: {cidr: 10.0.0.0/8}}]").replace(
        "Sideways", "Egress")
    assert api(good) == []
