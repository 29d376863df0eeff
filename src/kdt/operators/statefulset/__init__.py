"""The StatefulSet controller (kube-controller-manager): `expand`, the pods it creates from a StatefulSet.

Its labels are kdt.operators.injection's (STS_LABEL_*).
"""
