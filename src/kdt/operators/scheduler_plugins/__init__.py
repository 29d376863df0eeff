"""The scheduler-plugins coscheduling (`scheduling.x-k8s.io`, v0.34.7): `facts`, how a pod joins a gang.

The PodGroups the Training Operator and Trainer write for it are kdt.operators.scheduling's.
"""
