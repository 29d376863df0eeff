"""Never a traceback on manifests of the wrong shape (#13): every stage on mutated copies of what we ship."""
from __future__ import annotations

import random

import pytest

from kdt import summary, targets
from kdt.documents import load_stream
from kdt.merge_preview import expand_documents
from kdt.lint import lint_documents
from kdt.render import render
from kdt.validate import validate_documents

ODD = ["5", "true", "~", "[]", "{}", "-1", '"x"', "1.5", "[a, b]", "{a: 1}", "null", "'2'", "99999999999999999999"]


def _every_stage(text: str) -> None:
    docs, _ = load_stream(text, "m.yaml")
    for version in ("2.1", "2.3"):
        validate_documents(docs, trainer_version=version)
        lint_documents(docs, trainer_version=version)
        expand_documents(docs, trainer_version=version)
    summary.summarize("m", docs)


@pytest.mark.parametrize("text", [
    "apiVersion:\nkind:\nmetadata: {name: x}\n",
    "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {name: j}\nspec:\n  pytorchReplicaSpecs: []\n",
    "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {name: j}\nspec:\n  pytorchReplicaSpecs:\n    Worker: []\n",
    "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: s}\nspec:\n  template: []\n",
    "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: s}\nspec:\n  template:\n    metadata: []\n    spec: {containers: 5}\n",
    "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\nmetadata: {name: t}\nspec:\n  runtimeRef: {name: r}\n  runtimePatches: 1.5\n"
    "---\napiVersion: trainer.kubeflow.org/v1alpha1\nkind: ClusterTrainingRuntime\nmetadata: {name: r}\nspec:\n  template: []\n",
    "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, labels: []}\ndata:\n  1.5: x\n  k: 1\n",
    "apiVersion: v1\nkind: {a: 1}\nmetadata:\n  name: x\n  name: y\n",
])
def test_malformed_objects_are_findings_not_tracebacks(text):
    _every_stage(text)


def test_mutated_copies_of_every_shipped_target_never_raise():
    texts = [render(t).text for t in targets.discover()]
    rng = random.Random(0)
    for _ in range(150):
        lines = rng.choice(texts).splitlines()
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(len(lines))
            line, op = lines[i], rng.random()
            indent = " " * (len(line) - len(line.lstrip()))
            if op < 0.35 and ":" in line:
                lines[i] = line.split(":", 1)[0] + ": " + rng.choice(ODD)
            elif op < 0.5:
                del lines[i]
            elif op < 0.7:
                lines.insert(i, indent + rng.choice(ODD) + ": " + rng.choice(ODD))
            elif op < 0.85 and ":" in line:
                lines[i] = line.split(":", 1)[0] + ":"
            else:
                lines.insert(i, lines[rng.randrange(len(lines))])
        _every_stage("\n".join(lines) + "\n")
