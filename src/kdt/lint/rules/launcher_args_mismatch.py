"""A literal `--nnodes` / `--nproc_per_node` in a command agrees with the manifest.

torchrun flags written into `command`/`args` win over the operator's PET_*
env: `--nnodes 2` in a job of 4 replicas, or `--nproc_per_node 8` on a pod with
4 GPUs, hangs the rendezvous or starts processes with no GPU. Compared with
the PyTorchJob's total replicas (or elastic `min:max`), the TrainJob's
`numNodes`, the StatefulSet's replicas, and the container's GPU count. A torchft
replica group (trainkit's `--fault-tolerance torchft`) is a torchrun world of its
own, one pod: there `--nnodes` is 1 whatever the replicas.

Source: trainer v2.x pkg/constants/constants.go (PET_* = torchrun's argparse env names);
training-operator v1.8/v1.9 pkg/controller.v1/pytorch/envvar.go (PET_NNODES = replicas).
"""
from ... import kinds as K
from ...findings import ERROR
from ..pods import all_containers, as_int, command_line, gpu_count
from ..pods import runtime_for
from ._torchft import is_replica_group
from ._torchrun import flag
from ._util import d

ID = "launcher-args-mismatch"
LEVEL = ERROR
BASIS = "breaks"
WHY = ("torchrun's flags win over the operator's env: the rendezvous waits for nodes that never come, or "
       "processes start without a GPU.")


def flags(cmd: list[str]) -> dict[str, str]:
    """{'nnodes': '2', 'nproc': '4'} from a command line (also inside `sh -c` strings)."""
    found = {"nnodes": flag(cmd, ("--nnodes",)), "nproc": flag(cmd, ("--nproc_per_node", "--nproc-per-node"))}
    return {k: v for k, v in found.items() if v}


def _nodes(doc, docs):
    if K.PYTORCHJOB.matches(doc):
        ep = d(doc.get(("spec", "elasticPolicy")))
        if ep.get("minReplicas") is not None or ep.get("maxReplicas") is not None:
            return f"{ep.get('minReplicas')}:{ep.get('maxReplicas')}", True
        total = sum(as_int(d(r).get("replicas", 1)) or 0 for r in d(doc.get(("spec", "pytorchReplicaSpecs"))).values())
        return str(total), False
    if K.TRAINJOB.matches(doc):
        n = doc.get(("spec", "trainer", "numNodes"))
        if n is None:
            rt = runtime_for(doc, docs)
            n = rt.get(("spec", "mlPolicy", "numNodes")) if rt is not None else None
        return (str(n) if n is not None else None), False
    if K.STATEFULSET.matches(doc):
        return str(doc.get(("spec", "replicas"), 1)), False
    return None, False


def check(docs, ctx):
    for doc in docs:
        if K.of(doc) not in (K.PYTORCHJOB, K.TRAINJOB, K.STATEFULSET):
            continue
        nodes, elastic = _nodes(doc, ctx.pool(docs))
        for pt, path, c in all_containers(doc, init=False):
            f = flags(command_line(c))
            if not f:
                continue
            where = path + (("command",) if "command" in c else ("args",))
            n = f.get("nnodes")
            # each pod one replica group: one node per torchrun
            want, el = ("1", False) if is_replica_group(c) else (nodes, elastic)
            if n and want and not n.startswith("$") and n != want:
                if not (el and n == want.replace(":", ":")):
                    yield doc.finding(ID, f"--nnodes {n} disagrees with the manifest's {want} node(s)", where)
            npp = f.get("nproc")
            gpus = gpu_count(c)
            if npp and gpus and as_int(npp) is not None and as_int(npp) != gpus:
                yield doc.finding(ID, f"--nproc_per_node {npp} but the container has {gpus} GPU(s)", where)
