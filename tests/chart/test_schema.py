"""values.schema.json rejects bad values with Helm's own message, naming the path."""
from __future__ import annotations

import json

import pytest

from chart_support import CHART, template

SCHEMA_HEAD = "values don't meet the specifications of the schema(s)"


def schema_error(*sets: str) -> str:
    proc = template(*sets)
    assert proc.returncode != 0, f"helm template accepted {sets}"
    assert SCHEMA_HEAD in proc.stderr, proc.stderr
    return proc.stderr


@pytest.mark.parametrize("flag,message", [
    # a misspelt key, at the top and nested, with its JSON path
    (("--set", "nodess=3"), "at '': additional properties 'nodess' not allowed"),
    (("--set", "image.repostory=x"), "at '/image': additional properties 'repostory' not allowed"),
    (("--set", "torchrun.maxRestart=1"), "at '/torchrun': additional properties 'maxRestart' not allowed"),
    (("--set", "volumes[0].mountpath=/x"), "at '/volumes/0': additional properties 'mountpath' not allowed"),
    # a wrong type
    (("--set-string", "nodes=two"), "at '/nodes': got string, want integer"),
    (("--set", "trainJob.runtime.create=yes"), "at '/trainJob/runtime/create': got string, want boolean"),
    # an out-of-range node count, GPU count, and an unknown mode
    (("--set", "nodes=0"), "at '/nodes': minimum: got 0, want 1"),
    (("--set", "nodes=-2"), "at '/nodes': minimum: got -2, want 1"),
    (("--set", "gpusPerNode=-1"), "at '/gpusPerNode': minimum: got -1, want 0"),
    (("--set", "mode=mpijob"), "at '/mode': value must be one of"),
    # pass-through pod fields, checked against Kubernetes' strict definitions (scripts/gen_chart_schema.py)
    (("--set", "podSecurityContext.runAsUsr=1"), "at '/podSecurityContext': additional properties 'runAsUsr' not allowed"),
    (("--set", "podSecurityContext.runAsUser=abc"), "at '/podSecurityContext/runAsUser': got string, want null or integer"),
    (("--set", "tolerations[0].operatr=Exists"), "at '/tolerations/0': additional properties 'operatr' not allowed"),
    (("--set", "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
               ".matchExpressions[0].key=x"),
     "at '/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms/0/"
     "matchExpressions/0': missing property 'operator'"),
    (("--set", "affinity.podAntiAfinity.x=1"), "at '/affinity': additional properties 'podAntiAfinity' not allowed"),
    (("--set", "env[0].name=A", "--set", "env[0].valueFrom.secretKeyRef.nam=x"),
     "at '/env/0/valueFrom/secretKeyRef': additional properties 'nam' not allowed"),
])
def test_schema_rejects_with_path(flag, message):
    assert message in schema_error(*flag)


def test_every_object_of_the_schema_is_closed():
    """additionalProperties: false wherever the schema lists properties (the strictness the issue asks)."""
    schema = json.loads((CHART / "values.schema.json").read_text())
    open_objects = []

    def walk(node, path):
        if isinstance(node, dict):
            if "properties" in node and node.get("additionalProperties") is not False:
                open_objects.append(path or "/")
            for k, v in node.items():
                walk(v, f"{path}/{k}")
        elif isinstance(node, list):
            for i, v in enumerate(node):
                walk(v, f"{path}/{i}")
    walk(schema, "")
    assert not open_objects


@pytest.mark.parametrize("sets,message", [
    (("--set", "resources.limits.nvidia\\.com/gpu=2"), "resources.limits.nvidia.com/gpu: set the GPU count once, in gpusPerNode"),
    (("--set", "mode=elastic", "--set", "elastic.minNodes=3"), "elastic.minNodes (3) is more than nodes (2)"),
    (("--set", "mode=trainjob", "--set", "trainJob.runtime.create=false"), "trainJob.runtime.name: name the existing runtime"),
    (("--set", "mode=statefulset", "--set", "fullnameOverride=" + "a" * 53), "longer than 52 characters"),
])
def test_contradictions_fail_with_the_value_named(sets, message):
    proc = template(*sets)
    assert proc.returncode != 0
    assert message in proc.stderr, proc.stderr


def test_pass_through_definitions_are_current_and_accept_real_values():
    import subprocess
    import sys
    proc = subprocess.run([sys.executable, str(CHART.parents[1] / "scripts" / "gen_chart_schema.py"), "--check"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    ok = template("--set-json", 'affinity={"podAntiAffinity":{"preferredDuringSchedulingIgnoredDuringExecution":'
                  '[{"weight":100,"podAffinityTerm":{"topologyKey":"kubernetes.io/hostname",'
                  '"labelSelector":{"matchLabels":{"app":"x"}}}}]}}',
                  "--set-json", 'podSecurityContext={"runAsUser":1000,"fsGroup":1000,'
                  '"seccompProfile":{"type":"RuntimeDefault"}}',
                  "--set-json", 'tolerations=[{"key":"k","operator":"Exists","effect":"NoSchedule"}]')
    assert ok.returncode == 0, ok.stderr
    assert "podAntiAffinity" in ok.stdout and "RuntimeDefault" in ok.stdout
