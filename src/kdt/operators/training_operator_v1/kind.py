"""Kubeflow Training Operator v1 (`kubeflow.org/v1`): PyTorchJob, and the other job kinds it serves.

PyTorchJob is a training path of this project: its schema is generated (kdt.schemas.generate), the
merge preview expands it (kdt.operators.training_operator_v1.expand), `kdt run` drives its pods
(kdt.operators.training_operator_v1.controller.PyTorchJobController). TFJob, MPIJob, PaddleJob, XGBoostJob and JAXJob share the
replica-spec shape and the pod labels (pkg/controller.v1/common/pod.go), so lint reads their pods;
the merge preview does not model their operators and says so.
Facts: kdt.operators.training_operator_v1.facts and kdt.operators.injection.
"""
from __future__ import annotations

from typing import Iterator

from ... import versions as V
from ..kueue import expand as XK
from . import expand as expand_to1
from ...fields import as_dict, as_int
from . import migrate as migrate_to1
from .. import injection as INJ
from ..kueue import facts as KQ
from ..mpi import facts as MPI
from . import facts as TO1
from .controller import PyTorchJobController
from ..framework.pods import LocalPod, pod_containers
from ...resources import pod_gpus, pod_requests, procs_per_node
from ..framework.kind import JOB, Kind, PodTemplate, Workload, is_pod

RELEASES = tuple(V.TRAINING_OPERATOR_RELEASES.values())


class TrainingOperatorJob(Kind):
    """A `kubeflow.org/v1` job: replica types mapped to replica specs, one pod per replica."""
    group, versions = TO1.GROUP, ("v1",)
    role = JOB
    ends = TO1.JOB_ENDS
    operator = "Kubeflow Training Operator v1"
    releases = RELEASES
    schema_source = ("the official CRDs of each release (kubeflow/training-operator manifests/base/crds at v1.8.1, "
                     "v1.9.4; kdt.schemas.crd_sets), pod templates Kubernetes'")

    def __init__(self, kind: str):
        self.kind = kind
        self.replica_specs, self.controller_name = TO1.V1_KINDS[kind]

    def served_elsewhere(self, api_version: str) -> str:
        return TO1.SERVED_ELSEWHERE.get((self.kind, api_version), "")

    def pod_templates(self, doc) -> Iterator[PodTemplate]:
        spec = as_dict(doc.data.get("spec")) if isinstance(doc.data, dict) else {}
        for key, rs in as_dict(spec.get(self.replica_specs)).items():
            rs = as_dict(rs)
            base = ("spec", self.replica_specs, key, "template")
            yield PodTemplate(doc, base + ("spec",), as_dict(as_dict(rs.get("template")).get("spec")), key,
                              as_int(rs.get("replicas", 1)), base + ("metadata",))

    def pod_additions(self, doc, tmpl):
        # An MPIJob's pods get the hostfile ConfigMap and (v2beta1) the SSH Secret from its operator; the
        # Training Operator's other kinds add no volumes (only mpijob_controller.go writes any, v1.8.1, v1.9.4).
        if self.kind != MPI.KIND or not isinstance(doc.data, dict):
            return None
        if doc.api_version == MPI.API_VERSION:
            return MPI.pod_additions(doc.data, str(tmpl.role))
        return INJ.v1_mpi_pod_additions(doc.data, str(tmpl.role))

    def own_pod_labels(self, doc, tmpl) -> dict:
        # pkg/controller.v1/common/job_controller.go GenLabels, common/pod.go createNewPod.
        return {INJ.V1_LABEL_JOB_NAME: doc.name, INJ.V1_LABEL_REPLICA_TYPE: str(tmpl.role).lower(),
                INJ.V1_LABEL_OPERATOR: self.controller_name}


class PyTorchJob(TrainingOperatorJob):
    def __init__(self):
        super().__init__(TO1.KIND)

    def pod_additions(self, doc, tmpl):
        return INJ.v1_pytorch_pod_additions(doc.data, str(tmpl.role)) if isinstance(doc.data, dict) else None

    def expand(self, doc, ctx):
        return expand_to1.expand(doc, ctx.load, ctx.options)

    def describe(self, items) -> str:
        extra = [e for e in items if not is_pod(e.obj)]
        items = [e for e in items if is_pod(e.obj)]
        if not items:
            return ""
        total = sum(n for n in _totals(items).values())
        names = ", ".join(e.name for e in items[:4]) + (f", ... {items[-1].name}" if len(items) > 4 else "")
        env = {}
        for c in as_dict(items[0].obj.get("spec")).get("containers") or []:
            if isinstance(c, dict) and c.get("name") == TO1.CONTAINER_NAME:
                env = {e.get("name"): e.get("value") for e in c.get("env") or [] if isinstance(e, dict)}
        detail = [f"{k}={env[k]}" for k in ("WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "PET_NNODES",
                                              "PET_NPROC_PER_NODE", "PET_RDZV_ENDPOINT") if k in env]
        init = next((e.facts["init_template"] for e in items if e.facts.get("init_template")), None)
        if init:
            detail.append(f"Worker init containers from {init}")
        objs = sorted({e.kind for e in extra})
        return (f"{total:,} pod{'s' if total != 1 else ''} ({names})" + (", " + ", ".join(detail) if detail else "")
                + (f", and their {' and '.join(o + 's' for o in objs)}" if objs else ""))

    def notes(self, e) -> list[str]:
        if not e.facts.get("init_template"):
            return []
        return [f"init containers injected by the Training Operator from {e.facts['init_template']} "
                "(.kdt-cluster.yaml or --pytorch-init-container-template names the cluster's)"]

    def workload(self, doc, docs) -> Workload | None:
        spec = as_dict(doc.data.get("spec"))
        total, gpus, cpu, mem = 0, 0, 0.0, 0.0
        for r in as_dict(spec.get(self.replica_specs)).values():
            if not isinstance(r, dict):
                continue
            n = as_int(r.get("replicas", 1), 0)
            total += n
            pod = as_dict(as_dict(r.get("template")).get("spec"))
            gpus = max(gpus, pod_gpus(pod, TO1.CONTAINER_NAME))
            c, m = pod_requests(pod)
            cpu, mem = cpu + c * n, mem + m * n
        elastic = as_dict(spec.get("elasticPolicy"))
        label, maxn = str(total), total
        if elastic:
            lo = as_int(elastic.get("minReplicas")) or total
            hi = as_int(elastic.get("maxReplicas")) or total
            label, maxn = (f"{lo}-{hi}" if lo != hi else str(hi)), hi
        procs, p = procs_per_node(spec.get("nprocPerNode", elastic.get("nProcPerNode")), gpus)
        world = (f"{(as_int(label) or maxn) * p}" if "-" not in label
                 else f"{as_int(elastic.get('minReplicas'), 0) * p}-{maxn * p}")
        return Workload(self.kind, doc.name, label, maxn, gpus, procs, world, cpu, mem)

    def kueue_workload(self, doc, ctx, expanded=None):
        # Kueue's kubeflow.org/pytorchjob integration (kubeflowjob_controller.go PodSets; PriorityClass:
        # runPolicy.schedulingPolicy.priorityClass before the replicas' priorityClassName)
        pod_sets = XK.kubeflow_pod_sets(doc.data, self.replica_specs, KQ.PYTORCHJOB_ORDER)
        policy = as_dict(as_dict(as_dict(doc.data.get("spec")).get("runPolicy")).get("schedulingPolicy"))
        return XK.workload(self.kind, doc.data, pod_sets, str(policy.get("priorityClass") or ""))

    def local_pods(self, e) -> list:
        if e.obj.get("kind") != "Pod":
            return []        # its Services and PodGroup run nothing
        pod = LocalPod(e.name, e.obj, self, e.source.name, str(e.facts.get("replica_type")),
                       int(e.name.rsplit("-", 1)[-1]), e.source)
        pod_containers(pod, tuple(e.base_path) + ("spec",), e.source)
        return [pod]

    def controller(self, pods, ctx):
        return PyTorchJobController(pods)

    def migrate(self, doc, ctx):
        """To a TrainJob and the runtime it needs (kdt.operators.training_operator_v1.migrate)."""
        return migrate_to1.plan(doc, ctx)

    def migration_side(self, doc, items, docs):
        gang = next((e.facts["gang"] for e in items if e.facts.get("gang")), None)   # its PodGroup's
        return migrate_to1.side(doc, [e for e in items if e.kind == "Pod"], gang)

    def set_nproc(self, data: dict, n: int) -> bool:
        spec = data.setdefault("spec", {})
        spec["nprocPerNode"] = str(n)
        if isinstance(spec.get("elasticPolicy"), dict):
            spec["elasticPolicy"].pop("nProcPerNode", None)
        return True


def _totals(pods) -> dict:
    """Pods per replica type: the replicas of each type (the preview may show only the first and last)."""
    out: dict = {}
    for e in pods:
        rs = as_dict(as_dict(as_dict(e.source.data.get("spec")).get(TO1.REPLICA_SPECS)).get(e.facts.get("replica_type")))
        out[e.facts.get("replica_type")] = as_int(rs.get("replicas", INJ.V1_DEFAULT_REPLICAS), 0)
    return out


KINDS = (PyTorchJob(), *(TrainingOperatorJob(k) for k in TO1.V1_KINDS if k != TO1.KIND))
