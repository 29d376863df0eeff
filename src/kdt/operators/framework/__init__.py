"""The framework every operator folder builds on (as Kueue's pkg/controller/jobframework): the `Kind` base the
registry holds (`kind`), the local pods and the controller base of `kdt run` (`pods`, `controller`: the kubelet's
and Kubernetes' built-in controllers), the machinery of `kdt migrate` (`migrate/`). It imports no operator folder.
"""
