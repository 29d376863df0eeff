"""The torchft-* rules on the project's own replica-group targets: clean as shipped, and each mistake they
are for, made on a copy of the rendered objects, is reported on the object and field that carries it."""
from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest

from lint_support import ROOT
from kdt import render as R
from kdt import targets as T
from kdt.documents import load_stream
from kdt.lint import lint_documents
import yaml

TORCHFT_RULES = ("torchft-group-id", "torchft-min-groups", "torchft-lighthouse-service", "torchft-failure-policy")


@pytest.fixture(scope="module")
def rendered():
    out = {}
    for name in ("torchft-pytorchjob", "torchft-trainjob", "torchft-statefulset"):
        r = R.render(T.Target(f"overlays/{name}", T.KUSTOMIZE, ROOT / "overlays" / name))
        assert r.ok, r.findings
        out[name] = [d.data for d in r.documents]
    return out


def lint(objs, tmp_path: Path):
    path = tmp_path / "stream.yaml"
    path.write_text(yaml.safe_dump_all(objs, sort_keys=False))
    docs, problems = load_stream(path.read_text(), str(path))
    assert not problems
    return [f for f in lint_documents(docs, trainer_version="2.3") if f.rule in TORCHFT_RULES]


def obj(objs, kind, name=None):
    return next(o for o in objs if o["kind"] == kind and (name is None or o["metadata"]["name"] == name))


def env(container, name):
    return next(e for e in container["env"] if e["name"] == name)


@pytest.mark.parametrize("name", ["torchft-pytorchjob", "torchft-trainjob", "torchft-statefulset"])
def test_shipped_targets_are_clean(rendered, name, tmp_path):
    assert lint(rendered[name], tmp_path) == []


def test_trainjob_mistakes_are_located(rendered, tmp_path):
    base = rendered["torchft-trainjob"]
    objs = copy.deepcopy(base)
    obj(objs, "ClusterTrainingRuntime")["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"][
        "backoffLimit"] = 0
    (f,) = lint(objs, tmp_path)
    assert (f.rule, f.kind, f.path) == ("torchft-failure-policy", "ClusterTrainingRuntime",
                                       "spec.template.spec.replicatedJobs[0].template.spec.backoffLimit")
    objs = copy.deepcopy(base)
    obj(objs, "Service", "torchft-lighthouse")["metadata"]["name"] = "lh"        # a prefix on the Service only
    (f,) = lint(objs, tmp_path)
    assert (f.rule, f.kind, f.level) == ("torchft-lighthouse-service", "TrainJob", "error")
    assert "no Service 'torchft-lighthouse'" in f.message
    objs = copy.deepcopy(base)
    env(obj(objs, "Deployment")["spec"]["template"]["spec"]["containers"][0], "MIN_REPLICA_GROUPS")["value"] = "3"
    (f,) = lint(objs, tmp_path)
    assert (f.rule, f.kind) == ("torchft-min-groups", "Deployment") and "--min_replicas 3" in f.message
    objs = copy.deepcopy(base)
    gid = env(obj(objs, "TrainJob")["spec"]["trainer"], "REPLICA_GROUP_ID")
    gid.pop("valueFrom")
    gid["value"] = "0"                           # one id for both pods
    (f,) = lint(objs, tmp_path)
    assert (f.rule, f.kind, f.path) == ("torchft-group-id", "TrainJob", "spec.trainer")
    assert "literal '0' in every pod of 2" in f.message


def test_pytorchjob_with_a_master_repeats_an_index(rendered, tmp_path):
    objs = copy.deepcopy(rendered["torchft-pytorchjob"])
    job = obj(objs, "PyTorchJob")
    job["spec"]["pytorchReplicaSpecs"]["Master"] = copy.deepcopy(job["spec"]["pytorchReplicaSpecs"]["Worker"])
    job["spec"]["pytorchReplicaSpecs"]["Master"]["replicas"] = 1
    found = [f for f in lint(objs, tmp_path) if f.rule == "torchft-group-id"]
    assert len(found) == 2 and all("Master and Worker" in f.message for f in found)


def test_statefulset_without_a_lighthouse_in_the_stream_is_a_warning(rendered, tmp_path):
    objs = [o for o in copy.deepcopy(rendered["torchft-statefulset"]) if o["kind"] not in ("Deployment",)
            and o["metadata"]["name"] != "torchft-lighthouse"]
    (f,) = lint(objs, tmp_path)
    assert (f.rule, f.level) == ("torchft-lighthouse-service", "warning") and "deployed elsewhere" in f.message


def test_the_names_agree_with_trainkit():
    """kdt.operators.torchft.facts restates trainkit's names (training/ and src/ never import each other)."""
    from kdt.operators.torchft import facts as TFT
    args = (ROOT / "training" / "trainkit" / "args.py").read_text()
    for const in ("ENV_MODE", "ENV_GROUP_ID", "ENV_NUM_GROUPS", "ENV_MIN_GROUPS"):
        assert f'"{getattr(TFT, const)}"' in args, const
    assert re.search(r'MODES = \("off", "torchft"\)', args) and TFT.MODE_TORCHFT == "torchft"
    assert '"--fault-tolerance"' in args and TFT.FLAG_MODE == "--fault-tolerance"
    assert 'LIGHTHOUSE_ENV = "TORCHFT_LIGHTHOUSE"' in args
