"""The operators' behaviour as code: one module per operator building the objects it creates.

`training_operator_v1` (PyTorchJob -> pods), `trainer_v2` (TrainJob + runtime -> JobSet), `statefulset`
(StatefulSet -> pods), `jobset` (a JobSet object -> its Jobs' pods, for `kdt run`); shared merge helpers
in `merge`, the `Expanded` object and the `Loader` in `model`. Facts (names, ports, env, merge keys) come
from `kdt.operators`. The kinds (kdt.kinds) declare which module expands them; the merge preview stage
that asks them is kdt.merge_preview.
"""
