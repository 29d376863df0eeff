"""torchft replica groups as trainkit runs them.

- `facts`: the env a torchft worker reads (restated from training/trainkit, which imports nothing of kdt);
- `groups`: each pod's replica group and Lighthouse, as the merge preview shows them.
The package imports none of its modules: each is loaded where it is read.
"""
