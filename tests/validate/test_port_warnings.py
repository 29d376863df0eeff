"""The API server's warnings on a pod's ports, for a Pod and every pod template (#43).

kubernetes v1.36.3 pkg/api/pod/warnings.go warningsForPodSpecAndMeta (called by GetWarningsForPod and
GetWarningsForPodTemplate): across the init, regular and ephemeral containers, a containerPort/protocol listed
twice (the protocol defaulted to TCP first, pkg/apis/core/v1 defaults) is a `duplicate`, `overlapping` or
`dangerously ambiguous port definition`; a hostIP without hostPort and a port name used in two containers
are warnings too. The object is created: `kdt validate` exits 0 and says it.

kubernetes-sigs/kubectl-validate (commit a97ccfac) testcases/manifests/error_x_list_map_duplicate_key.yaml
expects an error, `spec.containers[0].ports[2]: Duplicate value: {"containerPort":88,"protocol":"TCP"}`:
kubectl-validate applies the OpenAPI `x-kubernetes-list-type: map` of Container.ports to built-in kinds,
which the API server does not (its Pod validation, pkg/apis/core/validation validateContainerPorts, checks
names and numbers, never duplicates; only the warning above sees them). Here the API server's behaviour is
the reference: a warning at the same place. (A custom resource's list-type maps are refused:
tests/validate/test_list_types.py.)
"""
from __future__ import annotations

import pytest

from kdt.documents import load_stream
from kdt.findings import WARNING
from kdt.validate import validate_documents

POD = "apiVersion: v1\nkind: Pod\nmetadata: {name: nginx-pod}\nspec:\n"


def found(text: str) -> list[tuple[str, str, str]]:
    docs, problems = load_stream(text, "o.yaml")
    assert problems == []
    return [(f.level, f.path, f.message) for f in validate_documents(docs)]


def test_kubectl_validates_duplicate_ports_case_is_a_warning_at_the_same_place():
    # error_x_list_map_duplicate_key.yaml: UDP/88, TCP/88, TCP/88
    got = found(POD + "  containers:\n  - name: nginx\n    image: nginx\n    ports:\n    - {protocol: UDP, containerPort: 88}\n"
                "    - {containerPort: 88, protocol: TCP}\n    - {protocol: TCP, containerPort: 88}\n")
    assert got == [(WARNING, "spec.containers[0].ports[2]",
                    "duplicate port definition with spec.containers[0].ports[1]")]


def test_kubectl_validates_distinct_ports_case_says_nothing():
    # x_list_map_nonduplicate_key.yaml: UDP/88 and TCP/88
    assert found(POD + "  containers:\n  - name: nginx\n    image: nginx\n    ports:\n"
                 "    - {protocol: UDP, containerPort: 88}\n    - {containerPort: 88, protocol: TCP}\n") == []


def test_the_protocol_is_defaulted_before_ports_are_compared_across_containers_of_a_template():
    dep = ("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec:\n  selector: {matchLabels: {a: b}}\n"
           "  template:\n    metadata: {labels: {a: b}}\n    spec:\n      initContainers:\n"
           "      - {name: i, image: x, ports: [{containerPort: 80}]}\n      containers:\n"
           "      - {name: c, image: x, ports: [{containerPort: 80, protocol: TCP}]}\n")
    assert found(dep) == [(WARNING, "spec.template.spec.containers[0].ports[0]",
                           "duplicate port definition with spec.template.spec.initContainers[0].ports[0]")]


@pytest.mark.parametrize("ports,message", [
    ("[{containerPort: 80, hostPort: 8080}, {containerPort: 80}]", "overlapping port definition with spec.containers[0].ports[0]"),
    ("[{containerPort: 80, hostPort: 8080, hostIP: 10.0.0.1}, {containerPort: 80, hostPort: 8080}]",
     "dangerously ambiguous port definition with spec.containers[0].ports[0]"),
])
def test_overlapping_and_ambiguous_definitions(ports, message):
    got = found(POD + f"  containers:\n  - name: c\n    image: x\n    ports: {ports}\n")
    assert got == [(WARNING, "spec.containers[0].ports[1]", message)]


def test_other_port_warnings_and_distinct_host_ports():
    got = found(POD + "  containers:\n  - name: a\n    image: x\n    ports: [{containerPort: 80, name: http, hostIP: 10.0.0.1}]\n"
                "  - name: b\n    image: x\n    ports: [{containerPort: 81, name: http}]\n"
                "  - name: c\n    image: x\n    ports: [{containerPort: 82, hostPort: 9000}, {containerPort: 82, hostPort: 9001}]\n")
    assert got == [
        (WARNING, "spec.containers[0].ports[0]", "hostIP set without hostPort"),
        (WARNING, "spec.containers[1].ports[0]", 'duplicate port name "http" with spec.containers[0].ports[0], services '
                                                 "and probes that select ports by name will use spec.containers[0].ports[0]"),
    ]


def test_a_warning_is_no_failure(validate_cli, tmp_path):
    path = tmp_path / "pod.yaml"
    path.write_text(POD + "  containers:\n  - name: c\n    image: x\n    ports: [{containerPort: 80}, {containerPort: 80}]\n")
    code, out, err = validate_cli(str(path))
    assert code == 0 and "warning [api-port]" in out and "duplicate port definition" in out, (out, err)
