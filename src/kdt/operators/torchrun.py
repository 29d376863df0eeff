"""torchrun, the launcher both operators start: its words, its flags and the PET_* env that sets them.

Facts read from torch 2.13 (the release the project's training image and tests run):
torch/distributed/run.py get_args_parser (every flag, its aliases and default) and config_from_args /
get_rdzv_endpoint; torch/distributed/argparse_util.py `env` (a flag's default is read from
`PET_<DEST>` when that variable is set, so an operator configures torchrun through the environment
alone). Both operators rely on that: the Training Operator injects PET_* from its own fields
(pkg/controller.v1/pytorch/envvar.go, elastic.go; kdt.operators.training_operator_v1.facts), Trainer from
the TrainJob (plugins/torch/torch.go; kdt.operators.trainer_v2.facts).
"""
from __future__ import annotations

# Words of a command line that start torchrun (`torchrun`, `python -m torch.distributed.run`, the legacy
# `torch.distributed.launch`, and this project's warm launcher `python3 -m trainkit.torchrun`,
# training/trainkit/torchrun.py, which takes torchrun's flags and env unchanged). A path ending in
# /torchrun is the console script too.
LAUNCHERS = ("torchrun", "torch.distributed.run", "torch.distributed.launch", "trainkit.torchrun")

# run.py get_args_parser: flag -> (its aliases, the PET_* variable its default is read from, the default).
# Each takes a value (`--flag=v` or `--flag v`).
VALUE_FLAGS = {
    "nnodes": (("--nnodes",), "PET_NNODES", "1:1"),
    "nproc_per_node": (("--nproc-per-node", "--nproc_per_node"), "PET_NPROC_PER_NODE", "1"),
    "rdzv_backend": (("--rdzv-backend", "--rdzv_backend"), "PET_RDZV_BACKEND", "static"),
    "rdzv_endpoint": (("--rdzv-endpoint", "--rdzv_endpoint"), "PET_RDZV_ENDPOINT", ""),
    "rdzv_id": (("--rdzv-id", "--rdzv_id"), "PET_RDZV_ID", "none"),
    "rdzv_conf": (("--rdzv-conf", "--rdzv_conf"), "PET_RDZV_CONF", ""),
    "max_restarts": (("--max-restarts", "--max_restarts"), "PET_MAX_RESTARTS", "0"),
    "monitor_interval": (("--monitor-interval", "--monitor_interval"), "PET_MONITOR_INTERVAL", "0.1"),
    "start_method": (("--start-method", "--start_method"), "PET_START_METHOD", "spawn"),
    "event_log_handler": (("--event-log-handler", "--event_log_handler"), "PET_EVENT_LOG_HANDLER", "null"),
    "role": (("--role",), "PET_ROLE", "default"),
    "log_dir": (("--log-dir", "--log_dir"), "PET_LOG_DIR", ""),
    "redirects": (("-r", "--redirects"), "PET_REDIRECTS", "0"),
    "tee": (("-t", "--tee"), "PET_TEE", "0"),
    "local_ranks_filter": (("--local-ranks-filter", "--local_ranks_filter"), "PET_LOCAL_RANKS_FILTER", ""),
    "duplicate_stdout_filters": (("--duplicate-stdout-filters", "--duplicate_stdout_filters"),
                                 "PET_DUPLICATE_STDOUT_FILTERS", ""),
    "duplicate_stderr_filters": (("--duplicate-stderr-filters", "--duplicate_stderr_filters"),
                                 "PET_DUPLICATE_STDERR_FILTERS", ""),
    "node_rank": (("--node-rank", "--node_rank"), "PET_NODE_RANK", "0"),
    "master_addr": (("--master-addr", "--master_addr"), "PET_MASTER_ADDR", "127.0.0.1"),
    "master_port": (("--master-port", "--master_port"), "PET_MASTER_PORT", "29500"),
    "local_addr": (("--local-addr", "--local_addr"), "PET_LOCAL_ADDR", ""),
    "logs_specs": (("--logs-specs", "--logs_specs"), "", ""),
    "numa_binding": (("--numa-binding", "--numa_binding"), "", ""),
    "signals_to_handle": (("--signals-to-handle", "--signals_to_handle"), "PET_SIGNALS_TO_HANDLE", ""),
    "shutdown_timeout": (("--shutdown-timeout", "--shutdown_timeout"), "PET_SHUTDOWN_TIMEOUT", ""),
}
# Flags without a value (check_env: set by the flag or by PET_<DEST>=1). `-m`/`--module` makes the script a
# module name; torch.distributed.launch's `--use-env` is the legacy spelling of what torchrun always does.
BOOL_FLAGS = ("--standalone", "-m", "--module", "--no-python", "--no_python", "--run-path", "--run_path",
              "--virtual-local-rank", "--virtual_local_rank", "--use-env", "--use_env")

# run.py get_rdzv_endpoint: the static backend (the default) without --rdzv-endpoint meets at
# <master_addr>:<master_port> (run(): master_port 29500 when unset), the node of rank 0 hosting the store
# (static_tcp_rendezvous.py: is_master = self.rank == 0); torch/distributed/elastic/rendezvous/utils.py parse_rendezvous_endpoint: an
# empty endpoint of another backend is localhost, so every node would host its own.
STATIC = "static"

# The flags that say how the nodes meet. A c10d (or etcd) rendezvous re-forms the group and restarts its
# workers in place (`--max-restarts`); the static one never re-forms (lint rule torchrun-static-restart).
RENDEZVOUS = ("rdzv_backend", "rdzv_endpoint", "rdzv_id", "rdzv_conf", "max_restarts")


def rdzv_conf(text) -> dict[str, str]:
    """`--rdzv-conf` (or PET_RDZV_CONF) as torchrun reads it: key=value pairs separated by commas
    (torch/distributed/elastic/rendezvous/utils.py _parse_rendezvous_config, which run.py config_from_args calls)."""
    out = {}
    for part in str(text or "").split(","):
        k, eq, v = part.partition("=")
        if eq:
            out[k.strip()] = v.strip()
    return out


def alias_index() -> dict[str, str]:
    """Every spelling of a value flag -> its name in VALUE_FLAGS."""
    return {a: name for name, (aliases, _, _) in VALUE_FLAGS.items() for a in aliases}
