"""JobSet -> its headless Service, its Jobs, their pods, as the JobSet and Job controllers create them.

A TrainJob's preview continues past the JobSet Trainer builds (kdt.operators.trainer_v2.expand) through this
module, and a JobSet document is expanded by it directly; `kdt run` starts the pods it makes.

- The JobSet webhook's defaults first (pkg/webhooks/jobset_webhook.go Default, v0.10.1 / v0.12.0):
  Indexed Jobs, pod restartPolicy OnFailure, DNS hostnames on (kdt.operators.jobset.facts.defaulted_spec).
- The JobSet controller (pkg/controllers/jobset_controller.go): the headless Service
  (createHeadlessSvcIfNecessary), one Job per replicated-job replica (constructJobsFromTemplate,
  constructJob) with the labels and annotations of labelAndAnnotateObject on the Job and its pod
  template, the subdomain, `suspend` from the JobSet; nothing for a JobSet another controller manages.
- The Job controller (kubernetes pkg/controller/job: indexed_job_utils.go, job_controller.go manageJob,
  1.28+): for an Indexed Job, pods `<job>-<index>-<random>` with hostname `<job>-<index>`, the completion
  index as annotation, label and env JOB_COMPLETION_INDEX; none while the Job is suspended.

Facts: kdt.operators.jobset.facts. Counts are bounded (`Limit`): past the limit the first and last Jobs and
pods are built and the rest counted, so a JobSet of 2**70 replicas answers at once.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field

from ...documents import Document
from ...fields import as_int
from . import facts as JS
from ...expand.merge import Trace
from ...expand.model import Expanded, Held, Limit, LoadFn

JOB_CONTROLLER = "Job controller (kubernetes pkg/controller/job, indexed_job_utils.go)"
JOBSET_CONTROLLER = "JobSet controller (jobset_controller.go constructJob, labelAndAnnotateObject)"
VOLUME_CLAIMS = "JobSet controller v0.12.0 (volume_claim_policy.go createPVCsIfNecessary)"


@dataclass
class JobPod:
    """One pod of a JobSet: its object, and the Job that owns it."""
    obj: dict
    job: str                  # <jobset>-<rjob>-<jobIdx>
    replicated_job: str
    job_index: int
    completion_index: int
    path: tuple               # where its pod template sits in the JobSet
    job_spec: dict = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.obj["spec"]["hostname"]


@dataclass
class Built:
    """What the JobSet and Job controllers create from one JobSet."""
    service: dict | None
    jobs: list = field(default_factory=list)          # (replicated job index, job index, Job object)
    pods: list = field(default_factory=list)          # JobPod
    jobs_total: int = 0
    pods_total: int = 0
    elided: list = field(default_factory=list)        # (what, first hidden, last hidden, count) per gap
    defaults: list = field(default_factory=list)      # (path in spec, value) the webhook wrote
    why_none: str = ""                                 # why nothing is created (managedBy)
    pvcs: list = field(default_factory=list)          # the PVCs of spec.volumeClaimPolicies
    depends: dict = field(default_factory=dict)       # replicated job index -> its dependsOn


def managed_elsewhere(spec: dict) -> str | None:
    """The controller a JobSet is left to (jobset_controller.go managedByExternalController), or None."""
    m = spec.get("managedBy") if isinstance(spec, dict) else None
    return str(m) if m and m != JS.CONTROLLER_NAME else None


def _job(name: str, namespace: str, spec: dict, annotations: dict, k: int, ji: int, gates: frozenset) -> dict:
    """constructJob: the replicated job's template, labelled and annotated, with subdomain and suspend."""
    rj = spec["replicatedJobs"][k]
    tmpl = rj.get("template") if isinstance(rj.get("template"), dict) else {}
    tmeta = tmpl.get("metadata") if isinstance(tmpl.get("metadata"), dict) else {}
    labels, ann = JS.job_labels(name, namespace, spec, k, ji, gates=gates, annotations=annotations)
    jname = JS.job_name(name, str(rj.get("name")), ji)
    jspec = copy.deepcopy(tmpl.get("spec") if isinstance(tmpl.get("spec"), dict) else {})
    ptmpl = jspec.setdefault("template", {})
    pmeta = ptmpl.setdefault("metadata", {})
    pmeta["labels"] = {**(pmeta.get("labels") or {}), **labels}
    pmeta["annotations"] = {**(pmeta.get("annotations") or {}), **ann}
    pspec = ptmpl.setdefault("spec", {})
    if (spec.get("network") or {}).get("enableDNSHostnames") is not False:
        pspec["subdomain"] = JS.subdomain(spec, name)
    if JS.ANNOTATION_EXCLUSIVE in ann and JS.ANNOTATION_NODE_SELECTOR_STRATEGY in ann:
        # addNamespacedJobNodeSelector, addTaintToleration
        pspec.setdefault("nodeSelector", {})[JS.NAMESPACED_JOB_KEY] = f"{namespace}_{jname}"
        pspec.setdefault("tolerations", []).append({"key": JS.NO_SCHEDULE_TAINT_KEY, "operator": "Exists",
                                                    "effect": "NoSchedule"})
    jspec["suspend"] = bool(spec.get("suspend"))
    JS.add_claim_volumes(pspec, name, spec)
    meta = {"name": jname}
    if namespace:
        meta["namespace"] = namespace
    meta["labels"] = {**(tmeta.get("labels") or {}), **labels}
    meta["annotations"] = {**(tmeta.get("annotations") or {}), **ann}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta, "spec": jspec}


def job_pod(job: dict, index: int) -> dict:
    """The pod the Job controller creates for completion index `index` of an Indexed Job."""
    jname = job["metadata"]["name"]
    jspec = job["spec"]
    ptmpl = jspec.get("template") or {}
    pmeta = copy.deepcopy(ptmpl.get("metadata") or {})
    labels = {**(pmeta.get("labels") or {}), JS.LEGACY_LABEL_JOB_NAME: jname, JS.LABEL_JOB_NAME: jname,
              **{k: JS.UID_PLACEHOLDER for k in JS.LABELS_CONTROLLER_UID}, JS.COMPLETION_INDEX_KEY: str(index)}
    annotations = {**(pmeta.get("annotations") or {}), JS.COMPLETION_INDEX_KEY: str(index)}
    pspec = copy.deepcopy(ptmpl.get("spec") or {})
    pspec["hostname"] = f"{jname}-{index}"
    for c in [*(pspec.get("initContainers") or []), *(pspec.get("containers") or [])]:
        if not isinstance(c, dict):
            continue
        env = c.setdefault("env", [])
        if not any(isinstance(e, dict) and e.get("name") == JS.ENV_COMPLETION_INDEX for e in env):
            env.append({"name": JS.ENV_COMPLETION_INDEX,
                        "valueFrom": {"fieldRef": {"fieldPath": JS.ENV_COMPLETION_INDEX_FIELD}}})
    meta = {"generateName": f"{jname}-{index}-", "finalizers": [JS.JOB_TRACKING_FINALIZER]}
    if job["metadata"].get("namespace"):
        meta["namespace"] = job["metadata"]["namespace"]
    meta["labels"] = labels
    meta["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": pspec}


def pod_count(job_spec: dict) -> int:
    """Pods an Indexed Job runs at once: parallelism (default 1) up to completions."""
    par = as_int(job_spec.get("parallelism"), 1)
    comp = as_int(job_spec.get("completions"), par)
    return max(0, min(par, comp))


def build(jobset: dict, gates: frozenset = frozenset(), limit: Limit | None = None) -> Built:
    """What the JobSet and Job controllers create from `jobset` (not mutated)."""
    limit = limit or Limit()
    meta = jobset.get("metadata") if isinstance(jobset.get("metadata"), dict) else {}
    name, ns = str(meta.get("name", "")), str(meta.get("namespace") or "")
    spec = copy.deepcopy(jobset.get("spec") if isinstance(jobset.get("spec"), dict) else {})
    spec["replicatedJobs"] = [r for r in (spec.get("replicatedJobs") or []) if isinstance(r, dict)]
    out = Built(None)
    out.defaults = JS.defaulted_spec(spec)
    other = managed_elsewhere(spec)
    if other:
        out.why_none = (f"spec.managedBy is {other!r}: the JobSet controller leaves it to that controller "
                        "(managedByExternalController) and creates nothing")
        return out
    out.service = JS.headless_service(name, ns, spec)
    out.pvcs = JS.claim_pvcs(name, ns, spec)
    for k, rj in enumerate(spec["replicatedJobs"]):
        if rj.get("dependsOn"):
            out.depends[k] = rj["dependsOn"]
        replicas = JS.replicas_of(rj)
        out.jobs_total += replicas
        for ji in limit.indices(replicas, out.elided, f"Jobs of {rj.get('name')}"):
            job = _job(name, ns, spec, meta.get("annotations") or {}, k, ji, gates)
            out.jobs.append((k, ji, job))
            n = 0 if job["spec"]["suspend"] else pod_count(job["spec"])
            out.pods_total += n
            for ci in limit.indices(n, out.elided, f"pods of Job {job['metadata']['name']}"):
                out.pods.append(JobPod(job_pod(job, ci), job["metadata"]["name"], str(rj.get("name")), ji, ci,
                                       ("spec", "replicatedJobs", k, "template", "spec", "template"), job["spec"]))
        if limit.cut(replicas):
            # Pods of the Jobs not built: counted as those built are (same template).
            per_job = 0 if spec.get("suspend") else pod_count(((rj.get("template") or {}).get("spec")) or {})
            out.pods_total += per_job * (replicas - len(limit.shown(replicas)))
    return out


def expanded(built: Built, source: Document, base_doc: Document | None, base: tuple) -> list[Expanded]:
    """The Service, Jobs and pods of `built` as merge-preview objects; `base` is where the JobSet spec sits in
    `base_doc` (a runtime's spec.template, or a JobSet's own root)."""
    out = []
    if built.service is not None:
        t = Trace()
        t.note(("spec",), "JobSet controller (jobset_controller.go createHeadlessSvcIfNecessary)")
        out.append(Expanded(obj=built.service, source=source, base=None, base_doc=base_doc, base_path=base, trace=t))
    for path, pvc in built.pvcs:
        t = Trace()
        t.note(("metadata", "name"), f"{VOLUME_CLAIMS}: <template name>-<jobset name> (GeneratePVCName)")
        t.note(("metadata", "labels", JS.LABEL_JOBSET_NAME), VOLUME_CLAIMS)
        if "ownerReferences" in pvc["metadata"]:
            t.note(("metadata", "ownerReferences"), f"{VOLUME_CLAIMS}: retentionPolicy.whenDeleted Delete (the "
                                                    "webhook's default) makes the JobSet its owner")
        out.append(Expanded(obj=pvc, source=source, base=None, base_doc=base_doc, base_path=base + ("spec", *path),
                            trace=t))
    claims = {p["metadata"]["name"] for _, p in built.pvcs}
    held_jobs: dict[str, str] = {}     # a Job's name -> the dependsOn it waits for
    for k, ji, job in built.jobs:
        t = Trace()
        for i, v in enumerate(((job["spec"].get("template") or {}).get("spec") or {}).get("volumes") or []):
            if isinstance(v, dict) and (v.get("persistentVolumeClaim") or {}).get("claimName") in claims:
                t.note(("spec", "template", "spec", "volumes", i), f"{VOLUME_CLAIMS}: addVolumes (a container "
                                                                   "mounts the template's name)")
        for section in ("labels", "annotations"):
            t.note(("metadata", section), JOBSET_CONTROLLER)
            t.note(("spec", "template", "metadata", section), JOBSET_CONTROLLER)
        t.note(("spec", "suspend"), f"{JOBSET_CONTROLLER}: the JobSet's suspend")
        facts = {"elided": built.elided}
        if k in built.depends:
            after = ", ".join(f"{d.get('name')} {d.get('status')}" for d in built.depends[k] if isinstance(d, dict))
            t.note(("metadata", "name"), f"JobSet controller (depends_on.go dependencyReachedStatus): created only "
                                         f"once its dependsOn is reached ({after}), after the Jobs above")
            facts["depends_on"] = after
            held_jobs[job["metadata"]["name"]] = after
        out.append(Expanded(obj=job, source=source, base=None, base_doc=base_doc,
                            base_path=base + ("spec", "replicatedJobs", k, "template"), trace=t, facts=facts))
    for p in built.pods:
        t = Trace()
        t.note(("metadata", "labels", JS.COMPLETION_INDEX_KEY), JOB_CONTROLLER)
        t.note(("spec", "hostname"), f"{JOB_CONTROLLER}: <job>-<completion index>")
        out.append(Expanded(obj=p.obj, source=source, base=None, base_doc=base_doc, base_path=base + p.path, trace=t,
                            facts={"job": p.job, "completion_index": p.completion_index,
                                   **({"depends_on": held_jobs[p.job]} if p.job in held_jobs else {})}))
    return out


def expand(doc: Document, load: LoadFn, options: dict | None = None) -> tuple[list, list]:
    """A JobSet document: what its controllers create (nothing, and why, when another controller manages it)."""
    options = options or {}
    js = load(doc)
    built = build(js, frozenset(options.get("jobset_feature_gates") or ()), options.get("limit") or Limit())
    if built.why_none:
        return [Held(doc, built.why_none, ("spec", "managedBy"))], []
    return expanded(built, doc, doc, ()), []


def pods(jobset: dict, restart_attempt: int = 0, gates: frozenset = frozenset()) -> list[JobPod]:
    """Every pod of `jobset` (a JobSet object as the merge preview builds it), unbounded, for `kdt run`."""
    built = build(jobset, gates, Limit(None))
    for p in built.pods:
        for section in ("labels", "annotations"):
            p.obj["metadata"][section][JS.LABEL_RESTART_ATTEMPT] = str(restart_attempt)
    return built.pods


def backoff_limit(job_spec: dict) -> int:
    return as_int(job_spec.get("backoffLimit"), JS.JOB_DEFAULT_BACKOFF_LIMIT)
