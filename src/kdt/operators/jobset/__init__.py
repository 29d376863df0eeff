"""JobSet (`jobset.x-k8s.io/v1alpha2`), at the releases the Trainer releases ship (v0.10.1, v0.12.0).

- `facts`: labels, names, webhook defaults, failure-policy actions and restart strategies per release;
- `expand`: a JobSet's headless Service, Indexed Jobs and pods, as the JobSet and Job controllers make them.
The package imports none of its modules: each is loaded where it is read.
"""
