"""A fault-tolerant job writes its checkpoints to a persistent volume.

Elastic jobs and jobs that restart (restartPolicy OnFailure/ExitCode with
retries, elastic `maxRestarts`, a JobSet `failurePolicy.maxRestarts`) resume
from their last checkpoint; if the checkpoint directory is on the container's
filesystem or an emptyDir, a restarted pod finds nothing and starts over.
The checkpoint directory is taken from env (`*CHECKPOINT*`, `*CKPT*`) or
flags (`--checkpoint-dir`, `--ckpt_dir`, `--save-dir`, ...).
"""
import re

from ... import kinds as K
from ...findings import WARNING
from ..pods import as_int, containers, pod_templates, runtime_for, trainer_pod
from ._util import d, lst

ID = "checkpoint-persistence"
LEVEL = WARNING
BASIS = "risk"
WHY = ("The job runs; whether a restart loses work depends on the restarts and on where the directory is "
       "mounted at run time.")
_ENV = re.compile(r"(CHECKPOINT|CKPT)", re.I)
_FLAG = re.compile(r"^--(checkpoint[-_]?dir|ckpt[-_]?dir|checkpoint[-_]?path|save[-_]dir|output[-_]dir)(=(.*))?$")
PERSISTENT = ("persistentVolumeClaim", "nfs", "csi", "ephemeral", "cephfs", "glusterfs", "azureFile", "iscsi")


def checkpoint_dirs(c: dict) -> list[tuple[tuple, str]]:
    out = []
    for i, e in enumerate(lst(c.get("env"))):
        e = d(e)
        v = e.get("value")
        if _ENV.search(str(e.get("name", ""))) and isinstance(v, str) and v.startswith("/"):
            out.append((("env", i, "value"), v))
    for key in ("command", "args"):
        toks = [str(t) for t in lst(c.get(key))]
        for i, t in enumerate(toks):
            m = _FLAG.match(t)
            if m:
                val = m.group(3) if m.group(2) else (toks[i + 1] if i + 1 < len(toks) else "")
                if val.startswith("/"):
                    out.append(((key, i), val))
    return out


def on_persistent(ps: dict, c: dict, path: str, claim_templates: set) -> bool:
    vols = {d(v).get("name"): d(v) for v in lst(ps.get("volumes"))}
    best = None
    for m in lst(c.get("volumeMounts")):
        mp = str(d(m).get("mountPath", "")).rstrip("/")
        if mp and (path == mp or path.startswith(mp + "/")) and (best is None or len(mp) > len(best[0])):
            best = (mp, d(m).get("name"))
    if best is None:
        return False
    name = best[1]
    if name in claim_templates:
        return True
    return any(k in vols.get(name, {}) for k in PERSISTENT)


def fault_tolerant(doc, docs) -> bool:
    if K.PYTORCHJOB.matches(doc):
        if doc.get(("spec", "elasticPolicy")) is not None:
            return True
        rs = d(doc.get(("spec", "pytorchReplicaSpecs"))).values()
        return any(d(r).get("restartPolicy", "OnFailure") in ("OnFailure", "ExitCode", "Always") for r in rs) and \
            (as_int(doc.get(("spec", "runPolicy", "backoffLimit"))) or 0) > 0
    if K.JOBSET.matches(doc):
        return (as_int(doc.get(("spec", "failurePolicy", "maxRestarts"))) or 0) > 0
    if K.STATEFULSET.matches(doc):
        return True   # pods are always restarted
    return False


def check(docs, ctx):
    for doc in docs:
        targets = []
        if K.TRAINJOB.matches(doc):
            rt = runtime_for(doc, ctx.pool(docs))
            if rt is None or (as_int(rt.get(("spec", "template", "spec", "failurePolicy", "maxRestarts"))) or 0) <= 0:
                continue
            merged = trainer_pod(doc, rt)
            if merged is None:
                continue
            ps, node = merged
            for sub, p in checkpoint_dirs(node):
                if not on_persistent(ps, node, p, set()):
                    yield doc.finding(ID, f"checkpoint directory {p} is not on a persistent volume (runtime {rt.name!r} "
                                          "with this TrainJob's overrides), and the runtime restarts the job", ("spec", "trainer"))
            continue
        if not fault_tolerant(doc, docs):
            continue
        claims = {d(d(t).get("metadata")).get("name") for t in lst(doc.get(("spec", "volumeClaimTemplates")))}
        for pt in pod_templates(doc):
            for cpath, c in containers(pt, init=False):
                for sub, p in checkpoint_dirs(c):
                    if not on_persistent(pt.spec, c, p, claims):
                        targets.append(doc.finding(ID, f"checkpoint directory {p} is not on a persistent volume, "
                                                       "but this job restarts: restarted pods start over", cpath + sub))
        yield from targets
