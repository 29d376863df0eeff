"""lint: rules that know training workloads (PyTorchJob, TrainJob and runtimes, JobSet, StatefulSet).

    lint_documents(docs, trainer_version=..., config=..., strict=False) -> list[Finding]
    lint_target(target, docs=None, trainer_version=None, config=None, strict=False) -> list[Finding]

Both take `kubernetes_version` (the release the run targets, "1.35") and `cluster`
(kdt.cluster_file.Cluster: what the cluster runs that manifests cannot say; None: the operators' defaults).

Rules live in kdt/lint/rules/, one module each (see engine.py for their shape);
docs/rules.md is generated from their docstrings (scripts/gen_rules_doc.py).
"""
from __future__ import annotations

from .. import targets as T
from .. import versions
from ..documents import Document
from ..findings import Finding
from .config import Config
from .engine import IGNORE_ANNOTATION_PREFIX, Rule, all_rules, apply_ignores, run_rules

__all__ = ["lint_documents", "lint_target", "all_rules", "Rule", "Config", "IGNORE_ANNOTATION_PREFIX",
           "target_trainer_version"]


def lint_documents(docs: list[Document], trainer_version: str = versions.TRAINER_DEFAULT,
                   config: Config | None = None, strict: bool = False,
                   kubernetes_version: str = versions.KUBERNETES_DEFAULT, cluster=None) -> list[Finding]:
    """Findings of every document-scope rule over one stream (cross-document rules see the whole list)."""
    found = run_rules(docs, trainer_version, config, "documents", kubernetes_version=kubernetes_version,
                      cluster=cluster)
    return apply_ignores(found, docs, config, strict)


def lint_target(target: T.Target, docs: list[Document] | None = None, trainer_version: str | None = None,
                config: Config | None = None, strict: bool = False,
                run_docs: list[Document] | None = None,
                kubernetes_version: str = versions.KUBERNETES_DEFAULT, cluster=None) -> list[Finding]:
    """Document rules over the target's rendered stream, plus the kustomization (overlay hygiene) rules.

    `run_docs`: every document of the run, so that references resolve across files and targets.
    """
    if docs is None:
        from ..render import render
        docs = render(target).documents
    version = trainer_version or target_trainer_version(target, docs)
    found = run_rules(docs, version, config, "documents", target=target, run_docs=run_docs,
                      kubernetes_version=kubernetes_version, cluster=cluster)
    if target.kind == T.KUSTOMIZE:
        found += run_rules(docs, version, config, "target", target=target)
    return apply_ignores(found, docs, config, strict)


def target_trainer_version(target: T.Target, docs: list[Document] | None = None) -> str:
    """The Trainer release a target is written for: the same answer as `validate` (kdt.trainer_release)."""
    from ..trainer_release import decide
    return decide(target, docs).release
