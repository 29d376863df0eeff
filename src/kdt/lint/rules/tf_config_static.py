"""A literal TF_CONFIG is not given to more than one pod.

TF_CONFIG carries the pod's own `task.index`. Written once in a pod template
that runs several pods (a TrainJob with numNodes > 1, a replicated job, a
StatefulSet with replicas > 1), it gives every pod the same task: they all
claim one worker's place and bind one address, and the job hangs or trains as
one worker. Build it per pod from the completion index (overlays/tensorflow,
training/tfkit/cluster.py); in this project's runtime a TF_CONFIG in the env
would also override the per-pod one.

Source: tensorflow/python/distribute/cluster_resolver/tfconfig_cluster_resolver.py
(the task comes from TF_CONFIG only); Kubernetes Indexed Jobs (completion index).
"""
from ... import kinds as K
from ...findings import ERROR
from ...operators import tensorflow as TF
from ._tf import env_sites, runtime_env_path, trainjob_views

ID = "tf-config-static"
LEVEL = ERROR
BASIS = "breaks"
WHY = ("Every pod claims the same task: the job hangs or trains as one worker.")


def check(docs, ctx):
    views = {(v.job.file, v.job.index): v for v in trainjob_views(docs, ctx)}
    for s in env_sites(docs, (TF.TF_CONFIG,)):
        pods = s.pods
        if K.TRAINJOB.matches(s.doc) and (s.doc.file, s.doc.index) in views:
            pods = views[(s.doc.file, s.doc.index)].nodes
        if pods is not None and pods > 1 and TF.parse_tf_config(s.value) is not None:
            yield s.doc.finding(ID, f"one literal TF_CONFIG for {pods} pods: every pod gets the same task.index; "
                                    "build it per pod from the completion index", s.path)
    # A runtime's literal TF_CONFIG reaches every pod of each TrainJob that runs it.
    for v in views.values():
        path = runtime_env_path(v.runtime, "node", TF.TF_CONFIG)
        if path is None or v.nodes is None or v.nodes < 2:
            continue
        if TF.parse_tf_config(v.runtime.get(path)) is None:
            continue
        yield v.job.finding(ID, f"runtime {v.runtime.name!r} writes one literal TF_CONFIG and this TrainJob runs "
                                f"{v.nodes} pods: every pod gets the same task.index", ("spec", "trainer", "numNodes"))
