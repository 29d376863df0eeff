"""Kubeflow Trainer v2 (`trainer.kubeflow.org/v1alpha1`): TrainJob, TrainingRuntime, ClusterTrainingRuntime.

A TrainJob has no pod template of its own: the controller builds a JobSet from its runtime's template
with the TrainJob's overrides (2.1) or patches (2.2+) and `spec.trainer` (kdt.operators.trainer_v2.expand); the
JobSet's kind (kdt.operators.jobset.kind) then makes and runs the pods. Lint reads `spec.trainer` as a
container-like mapping, and a runtime's replicated jobs as pod templates whose JobSet name is the name of
a TrainJob the runtime cannot know. Facts: kdt.operators.trainer_v2.facts, kdt.operators.injection.
"""
from __future__ import annotations

import json
from typing import Iterator

from ... import versions as V
from ..kueue import expand as XK
from . import expand as expand_tv2
from ...fields import as_dict, as_int, quantity
from . import migrate as migrate_tv2
from ..jobset import facts as JS
from . import facts as TV2
from ...resources import container_gpus, procs_per_node
from ..framework.kind import ANY, JOB, RUNTIME, Kind, PodTemplate, Workload
from ..jobset.kind import replicated_job_templates


class _Trainer(Kind):
    group, versions = TV2.GROUP, ("v1alpha1",)
    operator = "Kubeflow Trainer v2"
    releases = V.TRAINER_RELEASES
    schema_source = ("generated from kubeflow-trainer-api's models per release (kdt.schemas.generate) + the "
                     "official CRDs' enums, formats and CEL rules (kdt.schemas.crd_rules)")


class TrainJob(_Trainer):
    kind = TV2.TRAINJOB
    role = JOB
    ends = TV2.TRAINJOB_ENDS
    explained = (("ConfigMap", r"^data\.runtime\.",
                  "Trainer 2.3's runtime snapshot (pkg/runtime/core/snapshot.go) is the runtime as the API server stored "
                  "it, its CRD's defaults applied (replicatedJobs[].replicas 1, groupName default) and marshalled from "
                  "Go's types (empty structs as {}); the preview writes the runtime as rendered", True),)

    def reencodes(self, data: dict) -> bool:
        return TV2.webhook_reencodes(data)

    def extra_containers(self, doc) -> Iterator[tuple[tuple, dict]]:
        trainer = doc.get(("spec", "trainer"))
        if isinstance(trainer, dict):
            yield ("spec", "trainer"), trainer

    def admission_inputs(self, doc, ctx):
        """The TrainJob and its runtime, at the release the preview builds for: the API server refuses either
        by its CRD's schema and CEL rules before the controller reads them."""
        rt = expand_tv2.find_runtime(doc, ctx.docs)
        version = ctx.trainer_version or expand_tv2.infer_version(doc.data)
        return [doc] + ([rt] if rt is not None else []), TV2.checked_as(version)

    def expand(self, doc, ctx):
        return expand_tv2.expand(doc, ctx.docs, ctx.load, ctx.trainer_version, ctx.options)

    def describe(self, items) -> str:
        parts = []
        for e in items:
            if e.kind != JS.KIND:
                continue          # its PodGroup, Service, Jobs and pods are counted on the JobSet
            f = e.facts
            pods = f.get("pods") or []
            total = f.get("pods_total", len(pods))
            shown = ", ".join(pods[:4]) + (f", ... {pods[-1]}" if len(pods) > 4 else "")
            detail = [f"JobSet {e.name} from {f.get('runtime')} (Trainer {f.get('version')})",
                      f"{total:,} pod{'s' if total != 1 else ''} ({shown})" if pods else
                      f"no pod yet ({f.get('held') or 'none'})"]
            if any(x.kind == "PodGroup" for x in items):
                pg = next(x for x in items if x.kind == "PodGroup")
                detail.append(f"PodGroup minMember {pg.obj['spec']['minMember']}")
            if f.get("ml_policy", "torch") == "torch":
                detail.append(f"PET_NNODES={f.get('nodes')}")
            elif f.get("ml_policy") == "none":
                detail.append("no ML policy (PlainML: pod count and trainer.env only)")
            if f.get("tf_config"):
                workers = f["tf_config"][0]["cluster"]["worker"]
                detail.append(f"TF_CONFIG worker=[{', '.join(workers[:2])}{', ...' if len(workers) > 2 else ''}] "
                              f"({len(workers)}), task.index = completion index")
            if "nproc_per_node" in f:
                eff = (f" ({f['nproc_effective']} per node: torchrun starts one per GPU)"
                       if f.get("nproc_effective") else "")
                detail.append(f"PET_NPROC_PER_NODE={f['nproc_per_node']}{eff}")
            if f.get("world_size") and f.get("ml_policy", "torch") == "torch":
                detail.append(f"world size {f['world_size']}")
            if "master" in f:
                detail.append(f"master {f['master']}")
            if f.get("active_deadline"):
                detail.append(f"failed by Trainer {f['active_deadline']} s after creation or resume "
                              "(spec.activeDeadlineSeconds)")
            parts.append(", ".join(detail))
        return "; ".join(parts)

    def notes(self, e) -> list[str]:
        """What each pod computes at start: its node rank and ranks, or the TF_CONFIG a TensorFlow runtime builds."""
        cfgs = e.facts.get("tf_config") or []
        pods = e.facts.get("pods") or []
        out = []
        per_node = as_int(e.facts.get("nproc_per_node")) or e.facts.get("nproc_effective")
        if "nproc_per_node" in e.facts and per_node:
            out.append(f"PET_NODE_RANK is each pod's completion index; {per_node} processes per node "
                       f"(PET_NPROC_PER_NODE={e.facts['nproc_per_node']}), world size {e.facts.get('world_size')}:")
            trainer = [p for p in pods if p.startswith(f"{e.name}-{e.facts.get('trainer_job', TV2.NODE)}-")]
            for name in trainer:
                i = as_int(name.rsplit("-", 1)[-1], 0)     # the completion index ends the hostname
                out.append(f"  pod {name}: PET_NODE_RANK={i}, ranks {i * per_node}-{(i + 1) * per_node - 1}")
        if e.facts.get("active_deadline"):
            out.append(f"spec.activeDeadlineSeconds {e.facts['active_deadline']}: the JobSet carries no deadline; Trainer "
                       "fails the TrainJob (reason DeadlineExceeded) and deletes this JobSet that many seconds after the "
                       "TrainJob's creation or last resume (v2.3.0 pkg/controller/trainjob_controller.go reconcileDeadline)")
        if cfgs:
            out.append("TF_CONFIG is built by each pod at start (training/tfkit/cluster.py) from TF_JOBSET_NAME, "
                       "TF_REPLICATED_JOB, TF_JOB_INDEX (JobSet labels), TF_TASK_INDEX (completion index), "
                       "TF_NUM_WORKERS and TF_PORT:")
        for name, cfg in zip([p for p in pods if p.startswith(f"{e.name}-{e.facts.get('trainer_job', TV2.NODE)}-")], cfgs):
            out.append(f"  pod {name}: TF_TASK_INDEX={cfg['task']['index']} -> TF_CONFIG="
                       + json.dumps(cfg, separators=(",", ":")))
        return out

    def workload(self, doc, docs) -> Workload | None:
        spec = as_dict(doc.data.get("spec"))
        trainer = as_dict(spec.get("trainer"))
        nodes = as_int(trainer.get("numNodes"))
        res = as_dict(trainer.get("resourcesPerNode"))
        gpus = container_gpus({"resources": res})
        procs, p = procs_per_node(trainer.get("numProcPerNode"), gpus)
        if docs is not None and _plain_ml(doc, docs):
            procs, p = "1", 1     # no launcher policy: the pod's own command is the one process
        req = as_dict(res.get("requests"))
        n = nodes or 1
        return Workload(self.kind, doc.name, str(nodes) if nodes else "runtime", n, gpus, procs,
                        str(n * p) if nodes else "-", quantity(req.get("cpu")) * n, quantity(req.get("memory")) * n)

    def kueue_workload(self, doc, ctx, expanded=None):
        """Kueue's trainer.kubeflow.org/trainjob integration: the pod sets of the JobSet Trainer builds from the
        TrainJob and its runtime (trainjob_controller.go podSets -> getChildJobSet -> the JobSet's PodSets), the
        merge preview's JobSet. None when the TrainJob does not expand (its runtime is not in the run)."""
        if expanded is None:
            expanded, _ = self.expand(doc, ctx)
        jobset = next((e.obj for e in expanded if e.obj.get("kind") == JS.KIND and e.source is doc), None)
        return XK.workload(self.kind, doc.data, XK.jobset_pod_sets(jobset, None)) if jobset is not None else None

    def set_nproc(self, data: dict, n: int) -> bool:
        data.setdefault("spec", {}).setdefault("trainer", {})["numProcPerNode"] = n
        return True

    def migrate(self, doc, ctx):
        """Between Trainer 2.1's shape and 2.2+'s (kdt.operators.trainer_v2.migrate)."""
        return migrate_tv2.plan(doc, ctx)

    def migration_side(self, doc, items, docs):
        js = next((e for e in items if e.kind == JS.KIND), None)
        pods = [e for e in items if e.kind == "Pod"]
        return migrate_tv2.side(doc, js, pods, TV2.find_runtime(doc, list(docs))) if js is not None else None

    def field_origin(self, pod, container, key: str) -> tuple:
        """The `node` container's command and args come from spec.trainer when it sets them (builder.go Trainer)."""
        trainer = as_dict(as_dict(pod.source.data.get("spec")).get("trainer"))
        if container.name == TV2.NODE and trainer.get(key) is not None:
            return pod.source, ("spec", "trainer", key)
        return super().field_origin(pod, container, key)


def _plain_ml(job, docs) -> bool:
    """True when the TrainJob's runtime (among `docs`) has no ML policy source: one process per node (PlainML)."""
    rt = TV2.find_runtime(job, list(docs or []))
    ml = as_dict(rt.data.get("spec")).get("mlPolicy") if rt is not None and isinstance(rt.data, dict) else None
    return isinstance(ml, dict) and not any(k != "numNodes" for k in ml)


class _Runtime(_Trainer):
    role = RUNTIME
    # trainer v2.3.0 pkg/runtime/core/clustertrainingruntime.go and trainingruntime.go ("must be created before
    # the TrainJob")
    admission_reads = True

    def pod_templates(self, doc) -> Iterator[PodTemplate]:
        spec = as_dict(as_dict(as_dict(doc.data.get("spec")).get("template")).get("spec"))
        yield from replicated_job_templates(doc, spec, ("spec", "template", "spec"))

    def own_pod_labels(self, doc, tmpl) -> dict:
        # The JobSet is named after a TrainJob the runtime cannot know: ANY matches every selector value.
        return {JS.LABEL_JOBSET_NAME: ANY, JS.LABEL_REPLICATED_JOB: tmpl.role}

    def migrate(self, doc, ctx):
        """Its fields that changed between Trainer 2.1 and 2.2 (kdt.operators.trainer_v2.migrate)."""
        return migrate_tv2.plan_runtime(doc, ctx)


class TrainingRuntime(_Runtime):
    kind = TV2.TRAINING_RUNTIME
    tier = 2


class ClusterTrainingRuntime(_Runtime):
    kind = TV2.CLUSTER_TRAINING_RUNTIME
    namespaced = False


KINDS = (TrainJob(), TrainingRuntime(), ClusterTrainingRuntime())
