"""A file's Trainer release is the same whether it is named alone or walked with its folder (issue 43, Also found).

Found on the corpus: kubeflow/trainer v2.1.0 `manifests/base/runtimes/deepspeed_distributed.yaml` fits both
releases' schemas; walked with its folder, the folder's kustomization is the target and a sibling runtime's
2.1-only shape decided 2.1; named alone, the file's own shape decided nothing and the default (2.3) applied.
A kustomization's marker was lost the same way. Now a file that a kustomization builds is decided as that
kustomization (kdt.targets.including_kustomization, kdt.trainer_release.decide `build`), and the note says so.
The fixtures are scratch repositories written here.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from kdt import targets as T
from kdt import trainer_release as TR
from kdt.render import built_documents, render

TRAINJOB = "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\nmetadata: {{name: {name}}}\nspec:\n" \
           "  runtimeRef: {{name: torch-distributed}}\n{extra}"
LEGACY = TRAINJOB.format(name="legacy", extra="  podTemplateOverrides: []\n")        # Trainer 2.1's shape only
PLAIN = TRAINJOB.format(name="plain", extra="  trainer: {numNodes: 2}\n")           # every release's
PATCHED = TRAINJOB.format(name="patched", extra="  runtimePatches: []\n")           # Trainer 2.2 and later only


def _repo(root: Path, kustomization: str, files: dict[str, str]) -> Path:
    (root / "jobs").mkdir()
    (root / "jobs" / "kustomization.yaml").write_text(kustomization)
    for name, text in files.items():
        (root / "jobs" / name).write_text(text)
    return root


def _kdt(root: Path, *args: str) -> tuple[int, dict]:
    proc = subprocess.run([sys.executable, "-m", "kdt", *args, "-o", "json"], cwd=root, capture_output=True,
                          text=True, timeout=120, env={**os.environ, "KDT_ROOT": str(root)})
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def test_a_file_named_alone_gets_the_release_its_folder_walk_gives(tmp_path, monkeypatch):
    monkeypatch.setattr(TR, "ROOT", tmp_path)        # the scratch repository's pin (none), not this checkout's
    root = _repo(tmp_path, "resources:\n- legacy.yaml\n- plain.yaml\n", {"legacy.yaml": LEGACY, "plain.yaml": PLAIN})
    alone = T.Target("jobs/plain.yaml", T.FILE, root / "jobs" / "plain.yaml")
    walked = T.Target("jobs", T.KUSTOMIZE, root / "jobs")
    k = T.including_kustomization(alone)
    assert (k.kind, k.path) == (T.KUSTOMIZE, walked.path)
    # Without the kustomization's documents the file's own shape decides nothing: the default (what happened).
    assert TR.decide(alone, render(alone).documents).how == "default"
    got = TR.decide(alone, render(alone).documents, build=built_documents)
    assert (got.release, got.how, got.via) == ("2.1", "shape", k.name)
    assert (got.release, got.how, got.evidence) == (lambda d: (d.release, d.how, d.evidence))(
        TR.decide(walked, render(walked).documents, build=built_documents))
    # The command says which release and why, whichever way the file is reached.
    for args in (("jobs/plain.yaml",), ("jobs",)):
        code, report = _kdt(root, "validate", *args)
        assert code == 0 and report["findings"] == []
        assert report["notes"][0].startswith(f"Trainer 2.1 for {args[0]} (the shape of its Trainer objects: "
                                             "TrainJob/legacy in jobs/legacy.yaml fits Trainer 2.1 only")
    code, report = _kdt(root, "validate", "jobs/plain.yaml")
    assert "decided as jobs, the kustomization that builds it" in report["notes"][0]


def test_a_kustomizations_marker_holds_for_its_files_named_alone(tmp_path):
    # The overlay says 2.1; its resource uses 2.3's runtimePatches: an error either way (it was none named alone,
    # where the file's own shape chose 2.3).
    root = _repo(tmp_path, "# kdt:trainer-version=2.1\nresources:\n- patched.yaml\n", {"patched.yaml": PATCHED})
    found = {}
    for args in (("jobs/patched.yaml",), ("jobs",)):
        code, report = _kdt(root, "validate", *args)
        found[args] = [(f["path"], f["message"]) for f in report["findings"]]
        assert code == 1 and [p for p, _ in found[args]] == ["spec.runtimePatches"], report
    assert found[("jobs/patched.yaml",)] == found[("jobs",)]


def test_files_no_kustomization_builds_keep_their_own_evidence(tmp_path):
    # A file beside a kustomization that does not list it, a Component's resource, standard input: each as itself.
    root = _repo(tmp_path, "resources:\n- legacy.yaml\n", {"legacy.yaml": LEGACY, "other.yaml": PLAIN})
    assert T.including_kustomization(T.Target("jobs/other.yaml", T.FILE, root / "jobs" / "other.yaml")) is None
    (root / "comp").mkdir()
    (root / "comp" / "kustomization.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nresources:\n- job.yaml\n")
    (root / "comp" / "job.yaml").write_text(PLAIN)
    assert T.including_kustomization(T.Target("comp/job.yaml", T.FILE, root / "comp" / "job.yaml")) is None
    assert T.including_kustomization(T.Target("-", T.FILE, Path("-"))) is None
    # Through a base the kustomization includes, the file is still built by the nearest kustomization above it.
    (root / "jobs" / "base").mkdir()
    (root / "jobs" / "base" / "kustomization.yaml").write_text("resources:\n- deep.yaml\n")
    (root / "jobs" / "base" / "deep.yaml").write_text(PLAIN)
    deep = T.Target("jobs/base/deep.yaml", T.FILE, root / "jobs" / "base" / "deep.yaml")
    assert T.including_kustomization(deep).path == root / "jobs" / "base"
