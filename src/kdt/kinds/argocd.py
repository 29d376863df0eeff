"""Argo CD (`argoproj.io/v1alpha1`): Application, ApplicationSet, AppProject.

Read by kdt.argocd (the ApplicationSet generators expanded offline, each Application rendered and checked
against its AppProject); schemas from the Argo CD CRDs (kdt/schemas/argocd.json, kdt.schemas).
"""
from __future__ import annotations

from ..operators.framework.kind import DATA, Kind


class _ArgoCD(Kind):
    group, versions = "argoproj.io", ("v1alpha1",)
    role = DATA
    operator = "Argo CD"
    schema_source = "Argo CD's CRDs (kdt/schemas/argocd.json)"


class Application(_ArgoCD):
    kind = "Application"


class ApplicationSet(_ArgoCD):
    kind = "ApplicationSet"


class AppProject(_ArgoCD):
    kind = "AppProject"


KINDS = (Application(), ApplicationSet(), AppProject())
