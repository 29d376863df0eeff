"""kdt: tooling for distributed PyTorch training manifests on Kubernetes.

The pipeline (docs/architecture.md): targets -> render -> documents ->
validate | lint | expand | diff -> findings -> report.
"""
__version__ = "0.1.0"
