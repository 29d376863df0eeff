"""A literal TF_CONFIG is JSON that TensorFlow accepts, and a TF_PORT is a port.

TF_CONFIG must be a JSON object whose `cluster` maps task types to lists of
`host:port` (TensorFlow starts a gRPC server on the port of its own entry, and
dials the others by theirs), with at most one `chief`, and whose `task` names
a type of the cluster and an index inside its list. Anything else fails at
start-up, or, for a missing port, leaves a worker unreachable.
TF_PORT (this project's TensorFlow runtime, training/tfkit/cluster.py) must be
an integer port.

Source: tensorflow/python/distribute/cluster_resolver/tfconfig_cluster_resolver.py,
multi_worker_util.py _validate_cluster_spec.
"""
from ...findings import ERROR
from ...operators import tensorflow as TF
from ..pods import as_int
from ._tf import env_sites

ID = "tf-config-address"
LEVEL = ERROR
BASIS = "breaks"
WHY = ("TensorFlow fails at start-up, or a worker is unreachable.")


def check(docs, ctx):
    for s in env_sites(docs, (TF.TF_CONFIG, TF.ENV_PORT)):
        if s.name == TF.ENV_PORT:
            port = as_int(s.value)
            if port is None or not 0 < port < 65536:
                yield s.doc.finding(ID, f"TF_PORT {s.value!r} is not a port (1-65535)", s.path)
            continue
        cfg = TF.parse_tf_config(s.value)
        if cfg is None:
            yield s.doc.finding(ID, "TF_CONFIG is not a JSON object: TensorFlow fails to parse it at start-up", s.path)
            continue
        if not isinstance(cfg.get("cluster"), dict) or not cfg["cluster"]:
            yield s.doc.finding(ID, "TF_CONFIG has no cluster: MultiWorkerMirroredStrategy runs one local worker alone",
                                s.path)
            continue
        for _, problem in TF.address_problems(cfg):
            yield s.doc.finding(ID, f"TF_CONFIG {problem}", s.path)
        task = cfg.get("task") if isinstance(cfg.get("task"), dict) else {}
        kind, index = task.get("type"), task.get("index")
        if kind is not None and kind not in cfg["cluster"]:
            yield s.doc.finding(ID, f"TF_CONFIG task.type {kind!r} is not in the cluster ({', '.join(cfg['cluster'])})",
                                s.path)
        elif kind is not None and isinstance(cfg["cluster"].get(kind), list) and (
                not isinstance(index, int) or not 0 <= index < len(cfg["cluster"][kind])):
            yield s.doc.finding(ID, f"TF_CONFIG task.index {index!r} is not an index of cluster.{kind} "
                                    f"({len(cfg['cluster'][kind])} address(es))", s.path)
