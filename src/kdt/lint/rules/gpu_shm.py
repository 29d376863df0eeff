"""Pods with GPUs mount a memory-backed volume at `/dev/shm`.

The container runtime gives `/dev/shm` 64 MiB; NCCL and DataLoader workers
use shared memory and fail with "Bus error" or NCCL shm errors. Mount an
`emptyDir: {medium: Memory}` volume at /dev/shm. (For a TrainJob the runtime's
`node` container is checked, with the TrainJob's podTemplateOverrides or
runtimePatches applied.)

Source: NCCL troubleshooting (shared memory); PyTorch DataLoader docs (shm for workers).
"""
from ... import kinds as K
from ...findings import WARNING
from ..pods import containers, gpu_count, pod_templates, runtime_for, trainer_pod
from ._util import d, lst

ID = "gpu-shm"
LEVEL = WARNING
BASIS = "risk"
WHY = ("64 MiB of /dev/shm is enough for some jobs: NCCL and DataLoader fail only when they need more.")


def has_shm(ps: dict, c: dict) -> bool:
    mem = {d(v).get("name") for v in lst(ps.get("volumes")) if d(d(v).get("emptyDir")).get("medium") == "Memory"}
    return any(d(m).get("mountPath", "").rstrip("/") == "/dev/shm" and d(m).get("name") in mem
               for m in lst(c.get("volumeMounts")))


def check(docs, ctx):
    for doc in docs:
        for pt in pod_templates(doc):
            for path, c in containers(pt, init=False):
                if gpu_count(c) and not has_shm(pt.spec, c):
                    yield doc.finding(ID, f"container {c.get('name')!r} has {gpu_count(c)} GPU(s) but no memory-backed "
                                          "volume at /dev/shm (64 MiB default)", path)
        if K.TRAINJOB.matches(doc):
            gpus = gpu_count(d(doc.get(("spec", "trainer"))))
            rt = runtime_for(doc, ctx.pool(docs))
            if not gpus or rt is None:
                continue
            merged = trainer_pod(doc, rt)
            if merged is not None and not has_shm(*merged):
                yield doc.finding(ID, f"trainer asks for {gpus} GPU(s) but neither runtime {rt.name!r} nor the "
                                      "TrainJob's overrides mount a memory-backed volume at /dev/shm in the node container",
                                  ("spec", "trainer", "resourcesPerNode"))
