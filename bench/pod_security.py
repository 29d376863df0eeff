#!/usr/bin/env python3
"""Benchmark: the lint rule pod-security against the Pod Security admission library's own test data.

    .venv/bin/python bench/pod_security.py [--ref v0.37.0-alpha.2] [--only 1.35]

Reads kubernetes/pod-security-admission at a pinned tag (through bench/repos.py: a snapshot fetched
with the search tool, `fetch github:kubernetes/pod-security-admission`): every Pod of
test/testdata/{baseline,restricted}/v1.NN/{pass,fail}/*.yaml, the cases the library's own tests
(test/fixtures*.go, test/run.go) hold the admission plugin to: at that level and policy version,
a `fail` Pod is rejected and a `pass` Pod admitted. Each Pod goes, metadata and spec, into the pod
template of five wrapper kinds, and the rule (kdt/lint/rules/pod_security.py, options `profile` =
the level, `version` = v1.NN) judges the stream:

| wrapper | where the Pod goes |
| --- | --- |
| Pod | itself |
| PyTorchJob | the template of replica Worker (no Master, so no injected init container) |
| JobSet | the template of a replicated job |
| ClusterTrainingRuntime | the template of its `node` job |
| StatefulSet | spec.template (the training overlays' StatefulSet) |

A fail case counts as flagged when the rule reports at least one finding on its document; a pass
case as clean when it reports none. Printed per level and policy version: fail cases flagged and
pass cases clean, per wrapper, then the totals and the time. Exit 1 when any figure is below 100 %.

Then, for the Training Operator releases the project supports (kubeflow/trainer v1.8.1 and
v1.9.4, fetched likewise), deploy/cluster/training-operator is applied to upstream's
manifests/overlays/standalone with the pinned kubectl: the operator's Deployment must mount the
template's ConfigMap and pass --pytorch-init-container-template-file (the flag main.go defines).
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(HERE))

import repos  # noqa: E402
from kdt.documents import load_stream  # noqa: E402
from kdt.lint.engine import Context  # noqa: E402
from kdt.lint.rules import pod_security  # noqa: E402
from kdt.operators.training_operator_v1 import pytorch_init  # noqa: E402

PSA = "kubernetes/pod-security-admission"
PSA_REF = "v0.37.0-alpha.2"      # policy versions v1.0 ... v1.37
OPERATOR = "kubeflow/trainer"
OPERATOR_REFS = ("v1.8.1", "v1.9.4")
WRAPPERS = ("Pod", "PyTorchJob", "JobSet", "ClusterTrainingRuntime", "StatefulSet")


def _template(pod: dict) -> dict:
    meta = {k: v for k, v in (pod.get("metadata") or {}).items() if k in ("labels", "annotations")}
    return {**({"metadata": meta} if meta else {}), "spec": pod.get("spec") or {}}


def wrap(kind: str, name: str, pod: dict) -> dict:
    """`pod` as the pod template of a `kind` named `name`."""
    t = _template(pod)
    rjob = {"name": "node", "template": {"spec": {"template": t}}}
    if kind == "Pod":
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, **t.get("metadata", {})}, "spec": t["spec"]}
    if kind == "PyTorchJob":
        return {"apiVersion": "kubeflow.org/v1", "kind": kind, "metadata": {"name": name},
                "spec": {"pytorchReplicaSpecs": {"Worker": {"replicas": 1, "template": t}}}}
    if kind == "JobSet":
        return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": kind, "metadata": {"name": name},
                "spec": {"replicatedJobs": [rjob]}}
    if kind == "ClusterTrainingRuntime":
        return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": kind, "metadata": {"name": name},
                "spec": {"mlPolicy": {"numNodes": 1, "torch": {}}, "template": {"spec": {"replicatedJobs": [rjob]}}}}
    return {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": name},
            "spec": {"serviceName": name, "replicas": 1, "selector": {"matchLabels": {"app": name}},
                     "template": {**t, "metadata": {**t.get("metadata", {}), "labels": {"app": name}}}}}


def cases(testdata: Path) -> dict[tuple[str, int], list[tuple[str, bool, dict]]]:
    """(level, minor) -> [(file, must fail, pod)]."""
    out: dict = {}
    for level in ("baseline", "restricted"):
        for folder in sorted((testdata / level).glob("v1.*"), key=lambda p: int(p.name.split(".")[1])):
            minor = int(folder.name.split(".")[1])
            for outcome in ("fail", "pass"):
                for f in sorted((folder / outcome).glob("*.yaml")):
                    out.setdefault((level, minor), []).append((f.name, outcome == "fail", yaml.safe_load(f.read_text())))
    return out


def flagged(level: str, minor: int, kind: str, items) -> list[bool]:
    """For each pod: whether the rule reports a finding on its document."""
    text = "---\n".join(yaml.safe_dump(wrap(kind, f"case-{i}", pod), sort_keys=False)
                        for i, (_, _, pod) in enumerate(items))
    docs, problems = load_stream(text, f"{level}-v1.{minor}-{kind}.yaml")
    assert not problems, problems[:3]
    ctx = Context(options={"profile": level, "version": f"v1.{minor}"}, kubernetes_version=f"1.{minor}")
    hit = {f.doc for f in pod_security.check(docs, ctx)}
    return [i in hit for i in range(len(items))]


def conformance(ref: str, only: int | None) -> bool:
    folder = repos.checkout(PSA, ref)
    if folder is None:
        print(repos.missing(PSA, ref))
        return False
    print(f"# {PSA} {ref}: test/testdata, read through the lint rule pod-security in each wrapper kind")
    print(f"{'level':<10} {'version':<7} " + " ".join(f"{w:>22}" for w in WRAPPERS))
    started = time.perf_counter()
    ok = True
    totals = {w: [0, 0, 0, 0] for w in WRAPPERS}       # fail flagged, fails, pass clean, passes
    for (level, minor), items in cases(folder / "test" / "testdata").items():
        if only is not None and minor != only:
            continue
        cells = []
        for kind in WRAPPERS:
            got = flagged(level, minor, kind, items)
            fails = [g for g, (_, must, _) in zip(got, items) if must]
            passes = [not g for g, (_, must, _) in zip(got, items) if not must]
            t = totals[kind]
            t[0] += sum(fails); t[1] += len(fails); t[2] += sum(passes); t[3] += len(passes)
            ok &= all(fails) and all(passes)
            cells.append(f"{sum(fails):>3}/{len(fails):<3} {sum(passes):>3}/{len(passes):<3}")
            for (name, must, _), g in zip(items, got):
                if g != must:
                    print(f"  MISSED {level} v1.{minor} {kind} {name}: expected {'rejected' if must else 'admitted'}")
        print(f"{level:<10} v1.{minor:<5} " + " ".join(f"{c:>22}" for c in cells))
    print("(each cell: fail cases flagged / fail cases, pass cases clean / pass cases)")
    for kind, (ff, nf, pc, np_) in totals.items():
        print(f"total {kind:<24} fail flagged {ff}/{nf} ({100 * ff / max(nf, 1):.1f} %), "
              f"pass clean {pc}/{np_} ({100 * pc / max(np_, 1):.1f} %)")
    print(f"{sum(t[1] + t[3] for t in totals.values())} judgements in {time.perf_counter() - started:.1f} s")
    return ok


def operator_component() -> bool:
    """deploy/cluster/training-operator on upstream's standalone overlay, per supported release."""
    kubectl = str(ROOT / ".venv" / "bin" / "kubectl")
    ok = True
    print(f"\n# deploy/cluster/training-operator applied to {OPERATOR} manifests/overlays/standalone")
    for ref in OPERATOR_REFS:
        folder = repos.checkout(OPERATOR, ref)
        if folder is None:
            print(repos.missing(OPERATOR, ref))
            ok = False
            continue
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            shutil.copytree(folder / "manifests", work / "upstream")
            shutil.copytree(ROOT / "deploy" / "cluster" / "training-operator", work / "component")
            (work / "kustomization.yaml").write_text(
                "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
                "resources: [upstream/overlays/standalone]\ncomponents: [component]\n")
            proc = subprocess.run([kubectl, "kustomize", str(work)], capture_output=True, text=True)
        if proc.returncode != 0:
            print(f"{ref}: kubectl kustomize failed: {proc.stderr.strip().splitlines()[0]}")
            ok = False
            continue
        objs = [o for o in yaml.safe_load_all(proc.stdout) if o]
        (dep,) = [o for o in objs if o["kind"] == "Deployment" and o["metadata"]["name"] == "training-operator"]
        cms = {o["metadata"]["name"]: o for o in objs if o["kind"] == "ConfigMap"}
        spec = dep["spec"]["template"]["spec"]
        (c,) = [c for c in spec["containers"] if c["name"] == "training-operator"]
        vol = {v["name"]: v for v in spec.get("volumes", [])}.get("pytorch-init-container", {})
        cm = cms.get(vol.get("configMap", {}).get("name"), {})
        path = f"{pytorch_init.FLAG}={pytorch_init.DEFAULT_FILE}"
        checks = {
            "flag": path in c.get("args", []),
            "mounted at /etc/config": any(m["name"] == "pytorch-init-container" and m["mountPath"] == "/etc/config"
                                          for m in c.get("volumeMounts", [])),
            "ConfigMap holds the template": cm.get("data", {}).get("initContainer.yaml")
            == (ROOT / "deploy/cluster/training-operator/initContainer.yaml").read_text(),
            "same namespace": cm.get("metadata", {}).get("namespace") == dep["metadata"].get("namespace"),
        }
        ok &= all(checks.values())
        print(f"{ref}: " + ", ".join(f"{k} {'yes' if v else 'NO'}" for k, v in checks.items()))
    return ok


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ref", default=PSA_REF, help=f"tag of {PSA} (default {PSA_REF})")
    p.add_argument("--only", metavar="1.NN", help="one policy version only")
    args = p.parse_args()
    only = int(args.only.split(".")[-1]) if args.only else None
    ok = conformance(args.ref, only)
    ok = operator_component() and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
