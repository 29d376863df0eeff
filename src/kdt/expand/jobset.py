"""JobSet -> its Jobs -> their pods, as the JobSet and Job controllers create them.

The merge preview stops at the JobSet a TrainJob becomes; a local run (`kdt run`)
needs the pods: one Job per replicated-job replica, `completions` pods per Job
(Indexed completion mode, which the JobSet webhook defaults), each with the labels,
annotations, hostname and env its controllers give it. Facts: kdt.operators.jobset.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field

from ..operators import jobset as JS
from ..fields import as_int



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
        return self.obj["metadata"]["name"]


def pods(jobset: dict, restart_attempt: int = 0) -> list[JobPod]:
    """Every pod of `jobset` (a JobSet object as the merge preview builds it)."""
    meta = jobset.get("metadata") or {}
    name = str(meta.get("name", ""))
    spec = jobset.get("spec") or {}
    sub = JS.subdomain(spec, name)
    out = []
    for k, rj in enumerate(spec.get("replicatedJobs") or []):
        rname = str(rj.get("name"))
        jtemplate = rj.get("template") or {}
        jspec = jtemplate.get("spec") or {}
        ptemplate = jspec.get("template") or {}
        completions = as_int(jspec.get("completions"), as_int(jspec.get("parallelism"), 1))
        for ji in range(as_int(rj.get("replicas"), 1)):
            job = JS.job_name(name, rname, ji)
            for ci in range(completions):
                pmeta = copy.deepcopy(ptemplate.get("metadata") or {})
                labels = dict(pmeta.get("labels") or {})
                labels.update({JS.LABEL_JOBSET_NAME: name, JS.LABEL_REPLICATED_JOB: rname,
                               JS.LABEL_JOB_INDEX: str(ji), JS.LABEL_RESTART_ATTEMPT: str(restart_attempt),
                               JS.LABEL_JOB_NAME: job, JS.COMPLETION_INDEX_KEY: str(ci)})
                annotations = dict(pmeta.get("annotations") or {})
                annotations[JS.COMPLETION_INDEX_KEY] = str(ci)
                host = f"{job}-{ci}"
                pspec = copy.deepcopy(ptemplate.get("spec") or {})
                pspec.setdefault("restartPolicy", JS.DEFAULT_POD_RESTART_POLICY)
                pspec["hostname"] = host
                pspec["subdomain"] = sub
                for c in [*(pspec.get("initContainers") or []), *(pspec.get("containers") or [])]:
                    env = c.setdefault("env", [])
                    if not any(isinstance(e, dict) and e.get("name") == JS.ENV_COMPLETION_INDEX for e in env):
                        env.append({"name": JS.ENV_COMPLETION_INDEX,
                                    "valueFrom": {"fieldRef": {"fieldPath": f"metadata.annotations['{JS.COMPLETION_INDEX_KEY}']"}}})
                obj = {"apiVersion": "v1", "kind": "Pod",
                       "metadata": {"name": host, **({"namespace": meta["namespace"]} if meta.get("namespace") else {}),
                                    "labels": labels, "annotations": annotations},
                       "spec": pspec}
                out.append(JobPod(obj, job, rname, ji, ci,
                                  ("spec", "replicatedJobs", k, "template", "spec", "template"), jspec))
    return out


def backoff_limit(job_spec: dict) -> int:
    return as_int(job_spec.get("backoffLimit"), JS.JOB_DEFAULT_BACKOFF_LIMIT)
