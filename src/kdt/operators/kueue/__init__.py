"""Kueue (`kueue.x-k8s.io`, v0.19.2).

- `facts`: labels, annotations, limits and the integrations' framework names;
- `expand`: the Workload a queued job becomes and the admission arithmetic of its scheduler.
The package imports none of its modules: each is loaded where it is read.
"""
