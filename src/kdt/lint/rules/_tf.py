"""Where TensorFlow's TF_CONFIG and worker counts appear in the documents (not a rule).

Each site is an env entry with a literal value, located in the document that
holds it: a pod template's container (any workload kind), a TrainJob's
trainer.env, or a runtime's `node` container that a TrainJob runs. `pods` is
how many pods get that same value (None when the document alone cannot say).
"""
from __future__ import annotations

from dataclasses import dataclass

from ... import kinds as K
from ...documents import Document
from ...operators import tensorflow as TF
from ...operators.trainer_v2 import facts as TV2
from ..pods import as_int, containers, image_of, pod_templates, runtime_for, trainer_pod
from ._util import d, lst, trainjobs


@dataclass
class EnvSite:
    doc: Document       # where the entry is written
    path: tuple         # path of the entry's `value`
    name: str
    value: str
    pods: int | None    # pods that get this value


def _literal(e) -> str | None:
    e = d(e)
    return None if "valueFrom" in e or e.get("value") is None else str(e.get("value"))


def env_sites(docs, names: tuple[str, ...]) -> list[EnvSite]:
    """Literal env entries named `names` in every pod template and TrainJob trainer.env of `docs`."""
    out = []
    for doc in docs:
        for pt in pod_templates(doc):
            pods = None if K.of(doc) in K.RUNTIMES else pt.replicas
            for path, c in containers(pt):
                for i, e in enumerate(lst(c.get("env"))):
                    if d(e).get("name") in names and _literal(e) is not None:
                        out.append(EnvSite(doc, path + ("env", i, "value"), d(e)["name"], _literal(e), pods))
        if K.TRAINJOB.matches(doc):
            nodes = as_int(doc.get(("spec", "trainer", "numNodes")))
            for i, e in enumerate(lst(doc.get(("spec", "trainer", "env")))):
                if d(e).get("name") in names and _literal(e) is not None:
                    out.append(EnvSite(doc, ("spec", "trainer", "env", i, "value"), d(e)["name"], _literal(e), nodes))
    return out


def runtime_env_path(rt: Document, container: str, name: str) -> tuple | None:
    """Path of env entry `name`'s value in a container of the runtime's trainer job, if the runtime writes it."""
    for pt in pod_templates(rt):
        for path, c in containers(pt):
            if c.get("name") != container:
                continue
            for i, e in enumerate(lst(c.get("env"))):
                if d(e).get("name") == name:
                    return path + ("env", i, "value")
    return None


@dataclass
class TrainJobView:
    job: Document
    runtime: Document
    nodes: int | None
    pod: dict           # the trainer pod spec as the operator runs it
    node: dict          # its `node` container


def trainjob_views(docs, ctx) -> list[TrainJobView]:
    """Every TrainJob whose runtime resolves, with its trainer pod as the merge preview builds it."""
    out = []
    pool = ctx.pool(docs)
    for job in trainjobs(docs):
        rt = runtime_for(job, pool)
        if rt is None:
            continue
        merged = trainer_pod(job, rt)
        if merged is None:
            continue
        nodes = as_int(job.get(("spec", "trainer", "numNodes")))
        if nodes is None:
            nodes = as_int(rt.get(("spec", "mlPolicy", "numNodes")))
        out.append(TrainJobView(job, rt, nodes, merged[0], merged[1]))
    return out


def env_of(container: dict) -> dict:
    """name -> literal value (None for valueFrom) of a container's env."""
    return {d(e).get("name"): _literal(e) for e in lst(container.get("env")) if isinstance(e, dict)}


def runs_tensorflow(runtime: Document) -> str | None:
    """Why a runtime runs TensorFlow (its framework label, its image, its TF env), or None."""
    labels = d(runtime.get(("metadata", "labels")))
    if str(labels.get(TV2.FRAMEWORK_LABEL, "")).lower() == TF.FRAMEWORK:
        return f"its label {TV2.FRAMEWORK_LABEL}: {TF.FRAMEWORK}"
    for pt in pod_templates(runtime):
        for _, c in containers(pt):
            if TF.FRAMEWORK in image_of(c).lower().rsplit("/", 1)[-1]:
                return f"its image {image_of(c)}"
            names = set(env_of(c))
            if TF.TF_CONFIG in names or set(TF.RUNTIME_CONVENTION_ENV) <= names:
                return "its TF_CONFIG env"
    return None
