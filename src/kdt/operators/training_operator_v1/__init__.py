"""Kubeflow Training Operator v1 (`kubeflow.org/v1` PyTorchJob and the other jobs), v1.8.1 and v1.9.4.

- `facts`: the kinds, labels, names, ports and what its webhook refuses (`webhook_rejections`);
- `pytorch_init`: the PyTorchJob init container template, read as the operator reads it;
- `expand`: the pods, Services and PodGroup the controller creates (the merge preview).
The package imports none of its modules: each is loaded where it is read.
"""
