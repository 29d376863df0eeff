"""Which containers run a torchft replica group (trainkit's --fault-tolerance torchft), and what they say.

Shared by the torchft-* rules and by the rules whose checks change for replica groups (a group's
torchrun is a world of its own: --nnodes=1 is right there). Facts: kdt.operators.torchft.facts.
"""
from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from ... import kinds as K
from ...operators.torchft import facts as TFT
from ...operators.trainer_v2 import facts as TV2
from ..pods import all_containers, as_int, command_line, runtime_for, runtime_jobs, trainer_pod
from ._torchrun import flag
from ._util import d, lst


def env_entry(c: dict, name: str) -> dict | None:
    """The env entry `name` of container `c` (the last one, as the kubelet keeps), or None."""
    found = None
    for e in lst(c.get("env")):
        if d(e).get("name") == name:
            found = d(e)
    return found


def setting(c: dict, env: str, flag_names: tuple[str, ...] = ()) -> tuple[str | None, dict | None]:
    """(literal value, env entry) of a trainkit setting: a command-line flag wins over the env."""
    if flag_names:
        v = flag(command_line(c), flag_names)
        if v is not None:
            return v, None
    e = env_entry(c, env)
    if e is None:
        return None, None
    return (str(e["value"]) if "value" in e and e["value"] is not None else None), e


def is_replica_group(c: dict) -> bool:
    """The container runs a sample as one torchft replica group (env or flag)."""
    mode, _ = setting(c, TFT.ENV_MODE, (TFT.FLAG_MODE,))
    return str(mode or "").strip() == TFT.MODE_TORCHFT


@dataclass
class GroupPod:
    """A pod template whose training container is a replica group, as it will run."""
    doc: object                 # where findings point (the TrainJob for a TrainJob's pods)
    container: dict             # the training container, after the operator's merge
    where: tuple                # its path in `doc` (a TrainJob: spec.trainer)
    groups: int | None          # the pods of this template: the job's replica groups (None: unknown)
    owner: object               # the kind (kdt.kinds) of `doc`: PyTorchJob, StatefulSet, JobSet, TrainJob, a runtime
    role: str = ""              # replica type, replicated job
    jobs: int = 1               # Jobs of a replicated job (JobSet / runtime): completion indexes repeat per Job
    per_job: int = 1            # pods of one such Job
    job_spec: dict | None = None          # the batch Job spec of a replicated job
    job_path: tuple = ()                  # its path in `job_doc`
    job_doc: object = None


def group_pods(docs, pool):
    """Every replica-group pod template of `docs` (TrainJobs merged with their runtime from `pool`)."""
    for doc in docs:
        if K.TRAINJOB.matches(doc):
            rt = runtime_for(doc, pool)
            if rt is None:
                continue
            merged = trainer_pod(doc, rt)
            if merged is None or not is_replica_group(merged[1]):
                continue
            n = as_int(doc.get(("spec", "trainer", "numNodes")))
            if n is None:
                n = as_int(rt.get(("spec", "mlPolicy", "numNodes"))) or 1
            rj = next((j for j in runtime_jobs(rt) if j.get("name") == TV2.NODE), {})
            k = next((i for i, j in enumerate(runtime_jobs(rt)) if j.get("name") == TV2.NODE), 0)
            yield GroupPod(doc, merged[1], ("spec", "trainer"), n, K.TRAINJOB, TV2.NODE, 1, n,
                           d(d(rj.get("template")).get("spec")),
                           ("spec", "template", "spec", "replicatedJobs", k, "template", "spec"), rt)
            continue
        if K.PYTORCHJOB.matches(doc):
            ft = [(pt, path, c) for pt, path, c in all_containers(doc, init=False) if is_replica_group(c)]
            total = sum(pt.replicas or 0 for pt in {id(pt): pt for pt, _, _ in ft}.values())
            for pt, path, c in ft:
                yield GroupPod(doc, c, path, total, K.PYTORCHJOB, pt.role)
            continue
        runtime = any(k.matches(doc) for k in K.RUNTIMES)
        if K.STATEFULSET.matches(doc) or K.JOBSET.matches(doc) or runtime:
            base = ("spec",) if K.JOBSET.matches(doc) else ("spec", "template", "spec")
            rjobs = [] if K.STATEFULSET.matches(doc) else lst(doc.get(base + ("replicatedJobs",)))
            for pt, path, c in all_containers(doc, init=False):
                if not is_replica_group(c):
                    continue
                if K.STATEFULSET.matches(doc):
                    yield GroupPod(doc, c, path, pt.replicas, K.STATEFULSET)
                    continue
                i = path[len(base) + 1] if len(path) > len(base) + 1 else 0
                rj = d(rjobs[i]) if isinstance(i, int) and i < len(rjobs) else {}
                job = d(d(rj.get("template")).get("spec"))
                reps = as_int(rj.get("replicas", 1)) or 1
                par = as_int(job.get("parallelism", 1)) or 1
                groups = None if runtime else reps * par   # a runtime: the TrainJob's numNodes decides
                yield GroupPod(doc, c, path, groups, K.of(doc), str(rj.get("name", "")), reps, par, job,
                               base + ("replicatedJobs", i, "template", "spec"), doc)


def lighthouse_url(c: dict) -> tuple[str | None, dict | None]:
    return setting(c, TFT.ENV_LIGHTHOUSE, ("--lighthouse",))


def url_host_port(url: str) -> tuple[str | None, int | None]:
    parts = urlsplit(url if "//" in url else f"http://{url}")
    try:
        return parts.hostname, parts.port or 80
    except ValueError:
        return None, None


def runs_lighthouse(c: dict) -> bool:
    return any(TFT.LIGHTHOUSE_COMMAND == str(w).rsplit("/", 1)[-1] for w in command_line(c))
