"""The trainer reads where the initializers write.

A runtime's dataset-initializer and model-initializer download into /workspace/dataset and
/workspace/model of their own containers (Trainer v2.3.0 pkg/initializers/utils/utils.py). The
download reaches the trainer only through a volume both mount, one volume for all their pods: a
JobSet `volumeClaimPolicies` template (Trainer's runtimes name it `initializer`: JobSet creates one PVC
and mounts it in every Job that mounts that name) or a pod volume of one PersistentVolumeClaim.
Reported, each on the runtime's field:

- the initializer's container mounts no volume at /workspace or above its output: the download stays
  in the container and is lost with the pod;
- the volume it writes to is an emptyDir or other per-pod volume: the node pods never see it;
- the trainer's `node` container mounts that volume nowhere (or only a subPath that leaves the
  download out): the training reads nothing the initializer wrote. Where it does, the message of
  `kdt merge-preview --explain` is not needed: nothing is reported.

Source: kubeflow/trainer v2.3.0 pkg/initializers/utils/utils.py (DATASET_PATH, MODEL_PATH),
manifests/base/runtimes/torchtune (the initializer volume at /workspace in every job); kubernetes-sigs/jobset
v0.12.0 pkg/controllers/volume_claim_policy.go (one PVC per template, addVolumes).
"""
from ...findings import ERROR
from ...operators.jobset import facts as JS
from ...operators.trainer_v2 import facts as TV2
from ...operators.trainer_v2 import initializers as INIT
from ._util import d, lst, runtimes

ID = "trainjob-initializer-volume"
LEVEL = ERROR
BASIS = "breaks"
WHY = "What the initializer downloads never reaches the trainer: the training reads an empty path."

_POD = ("template", "spec", "template", "spec")


def _shared(js_spec: dict, pod: dict, name: str) -> str | None:
    """The claim behind volume `name` of a pod of this JobSet spec, or None (a per-pod volume, or none)."""
    if any(str(t["metadata"]["name"]) == name for _, _, t in JS.claim_templates(js_spec)):
        return f"volumeClaimPolicies template {name}"
    vol = next((v for v in lst(pod.get("volumes")) if d(v).get("name") == name), None)
    claim = d(d(vol).get("persistentVolumeClaim")).get("claimName")
    return f"claim {claim}" if claim else None


def _node(jobs: list[tuple[int, dict]]) -> tuple[int, dict, dict] | None:
    for j, rj in jobs:
        labels = d(d(rj.get("template")).get("metadata")).get("labels") or {}
        if labels.get(TV2.ANCESTOR_LABEL) == TV2.ANCESTOR_TRAINER or rj.get("name") == TV2.NODE:
            pod = d(d(d(d(rj.get("template")).get("spec")).get("template")).get("spec"))
            c = next((c for c in lst(pod.get("containers")) if d(c).get("name") == TV2.NODE), None)
            return (j, pod, c) if c is not None else None
    return None


def check(docs, ctx):
    for rt in runtimes(docs):
        js_spec = d(d(d(rt.data.get("spec")).get("template")).get("spec"))
        jobs = list(enumerate(TV2.replicated_jobs(rt.data)))
        node = _node(jobs)
        base = ("spec", "template", "spec", "replicatedJobs")
        for j, rj in jobs:
            name = d(d(rj.get("template")).get("metadata")).get("labels", {}).get(TV2.ANCESTOR_LABEL)
            if name not in INIT.OUTPUT:
                continue
            pod = d(d(d(d(rj.get("template")).get("spec")).get("template")).get("spec"))
            k, c = next(((k, c) for k, c in enumerate(lst(pod.get("containers"))) if d(c).get("name") == name),
                        (None, None))
            if c is None:
                continue          # trainjob-webhook: the container the initializer needs is missing
            at = base + (j, *_POD, "containers", k)
            where = INIT.written_to(name, [d(m) for m in lst(c.get("volumeMounts"))])
            if where is None:
                yield rt.finding(ID, f"{name} downloads into {INIT.OUTPUT[name]}, which no volume of its container "
                                     f"holds: the download is lost with the pod (mount the shared volume, Trainer's "
                                     f"`{TV2.INITIALIZER_VOLUME}`, at {INIT.WORKSPACE})", at + ("volumeMounts",))
                continue
            volume, inside = where
            claim = _shared(js_spec, pod, volume)
            if claim is None:
                yield rt.finding(ID, f"{name} writes to volume {volume!r}, which is no claim the node pods share "
                                     "(a JobSet volumeClaimPolicies template or a persistentVolumeClaim volume): the "
                                     "trainer never sees the download", at + ("volumeMounts",))
                continue
            if node is None:
                continue          # runtime-trainer-job / trainjob-webhook report a runtime without its node job
            nj, npod, nc = node
            mounts = [d(m) for m in lst(nc.get("volumeMounts")) if d(m).get("name") == volume
                      or _shared(js_spec, npod, str(d(m).get("name"))) == claim]
            seen = [p for p in (INIT.seen_at(inside, m) for m in mounts) if p]
            if not seen:
                shown = f"{volume}/{inside}" if inside else volume
                yield rt.finding(ID, f"the trainer (container {TV2.NODE}) does not read what {name} writes: "
                                     f"{INIT.OUTPUT[name]} of {name} is {shown} ({claim}), which the node container "
                                     f"mounts nowhere{' (its subPath leaves it out)' if mounts else ''}",
                                 base + (nj, *_POD, "containers", lst(npod.get("containers")).index(nc)))
