"""torchft replica groups as this project runs them: what a pod of a fault-tolerant job carries.

Two sources. torchft 0.2.0 (PyPI `torchft`, pytorch/torchft; paths relative to that package): the
Lighthouse command and its flags, and the variable its Manager reads. This project's trainkit
(training/trainkit/args.py, which must not import this package nor be imported by it): the variables a
replica group reads. tests/lint checks that both copies of the trainkit names agree.
"""
from __future__ import annotations

# -- torchft 0.2.0 ---------------------------------------------------------------------------------
# torchft-0.2.0.dist-info/entry_points.txt: console script `torchft_lighthouse` (torchft._torchft
# lighthouse_main); its flags (src/lighthouse.rs LighthouseOpt; `torchft_lighthouse --help` of 0.2.0):
LIGHTHOUSE_COMMAND = "torchft_lighthouse"
LIGHTHOUSE_MIN_REPLICAS = "--min_replicas"          # required; the fewest groups in a quorum
LIGHTHOUSE_BIND = "--bind"                          # default [::]:29510
LIGHTHOUSE_DEFAULT_PORT = 29510
LIGHTHOUSE_HEARTBEAT_TIMEOUT = "--heartbeat_timeout_ms"   # default 5000
# torchft/manager.py Manager.__init__: the Lighthouse address when none is passed (os.environ[...]).
ENV_LIGHTHOUSE = "TORCHFT_LIGHTHOUSE"

# -- trainkit (training/trainkit/args.py) -----------------------------------------------------------
ENV_MODE = "TRAINKIT_FAULT_TOLERANCE"     # "torchft": this pod's torchrun is one replica group
MODE_TORCHFT = "torchft"
ENV_GROUP_ID = "REPLICA_GROUP_ID"         # the group's id, unique in the job
ENV_NUM_GROUPS = "NUM_REPLICA_GROUPS"     # the job's number of groups
ENV_MIN_GROUPS = "TRAINKIT_FT_MIN_GROUPS"  # fewest groups a step may commit with (default 1)
FLAG_MODE = "--fault-tolerance"


def runs_group(c: dict) -> bool:
    """Whether container `c` runs a replica group by its env (TRAINKIT_FAULT_TOLERANCE=torchft, literal): what
    the merge preview (kdt.operators.torchft.groups) and the migration (kdt.operators.training_operator_v1.migrate) read; the lint rules
    also read the flag (kdt.lint.rules._torchft.is_replica_group)."""
    env = c.get("env")
    return isinstance(env, list) and any(isinstance(e, dict) and e.get("name") == ENV_MODE
                                         and e.get("value") == MODE_TORCHFT for e in env)
