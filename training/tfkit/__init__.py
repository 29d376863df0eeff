"""tfkit: what the TensorFlow sample needs from Kubernetes, with the standard library only.

`tfkit.cluster` builds each pod's TF_CONFIG from facts the pod can read on a
Kubeflow Trainer v2 runtime with no ML policy (see its docstring).
"""
