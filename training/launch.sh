#!/usr/bin/env bash
# torchrun with the recovery settings this project relies on (docs/training.md, "Recovery"),
# launched as `python3 -m trainkit.torchrun`: torchrun with warm worker restarts.
#
#   training/launch.sh mnist_ddp.py --data-dir /data/mnist --checkpoint-dir /checkpoints/mnist
#
# Settings come from the environment (the manifests set them; the Kubeflow
# operators' PET_* variables are honoured too):
#   NNODES          "2" (fixed) or "1:2" (elastic: min:max)       default PET_NNODES or 1
#   NPROC_PER_NODE  workers per node                              default PET_NPROC_PER_NODE or 1
#   RDZV_ENDPOINT   host:port of the c10d rendezvous store         default PET_RDZV_ENDPOINT (unset: --standalone)
#   RDZV_ID         job id shared by all nodes                     default PET_RDZV_ID or "trainjob"
#   RDZV_IS_HOST    "true" on the one node that hosts the store    default: true when this host is RDZV_ENDPOINT's host
#   MAX_RESTARTS    worker-group restarts before the job fails     default 3
#   TRAINKIT_WARM   "0": fresh python workers, as plain torchrun starts them (default: warm, forked)
#   TRAINKIT_RDZV_POLL  seconds (e.g. 0.1): poll the rendezvous that often instead of every second
#                   (patches private torch code; docs/training.md)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
sample="${1:?usage: launch.sh SAMPLE.py [flags...]}"; shift
case "$sample" in /*) ;; *) sample="$here/$sample" ;; esac

nnodes="${NNODES:-${PET_NNODES:-1}}"
nproc="${NPROC_PER_NODE:-${PET_NPROC_PER_NODE:-1}}"
endpoint="${RDZV_ENDPOINT:-${PET_RDZV_ENDPOINT:-}}"
rdzv_id="${RDZV_ID:-${PET_RDZV_ID:-trainjob}}"
max_restarts="${MAX_RESTARTS:-3}"

# A restarted worker group must not reuse the previous round's TCPStore address: with the
# agent's shared store, a restart after a killed worker hangs or needs several attempts
# (pytorch/pytorch#135712). With this, a killed worker resumes in seconds.
export TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1
# A dead peer turns a blocked NCCL collective into an error the agent restarts from.
export TORCH_NCCL_ASYNC_ERROR_HANDLING="${TORCH_NCCL_ASYNC_ERROR_HANDLING:-1}"
# Log lines reach `kubectl logs` at once, also from a rank that is killed.
export PYTHONUNBUFFERED=1

args=(--nnodes="$nnodes" --nproc-per-node="$nproc" --max-restarts="$max_restarts"
      # Notice a dead worker within 0.1 s (the default; stated so that nobody raises it).
      --monitor-interval=0.1)
if [[ -z "$endpoint" ]]; then
    args+=(--standalone)
else
    host="${endpoint%:*}"
    if [[ -z "${RDZV_IS_HOST:-}" ]]; then
        RDZV_IS_HOST=false
        for me in "$(hostname)" "$(hostname -f 2>/dev/null || true)" "${POD_NAME:-}"; do
            [[ -n "$me" && ( "$host" == "$me" || "$host" == "$me".* ) ]] && RDZV_IS_HOST=true
        done
    fi
    # last_call_timeout=2: once the minimum number of nodes is there, wait 2 s (not 30) for
    #   stragglers; a job that lost a node restarts on the survivors about 6 s after the loss.
    # keep_alive_interval=1,keep_alive_max_attempt=2: a node that stops heart-beating is
    #   declared dead after ~2 s (default 5 x 5 s = 25 s).
    # is_host: pin which node runs the c10d store (the one named by the endpoint). The store
    #   dies with its node, so that node must be the stable one (e.g. the master replica).
    args+=(--rdzv-backend=c10d --rdzv-endpoint="$endpoint" --rdzv-id="$rdzv_id"
           --rdzv-conf="is_host=${RDZV_IS_HOST},last_call_timeout=2,keep_alive_interval=1,keep_alive_max_attempt=2")
fi
# trainkit.torchrun is torchrun (same flags, same PET_* env) whose workers fork from a process
# that imported torch and the sample once: a restarted group trains again in ~2 s, not ~4 s.
export PYTHONPATH="$here${PYTHONPATH:+:$PYTHONPATH}"
exec python3 -m trainkit.torchrun "${args[@]}" "$sample" "$@"
