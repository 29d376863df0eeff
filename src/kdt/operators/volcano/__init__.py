"""Volcano (`scheduling.volcano.sh`, `batch.volcano.sh`, v1.15.1): `facts`, how a pod joins a gang.

The PodGroups the Training Operator and Trainer write for it are kdt.operators.scheduling's.
"""
