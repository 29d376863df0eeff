#!/usr/bin/env bash
# bench/gpu_speed.py on a lent GPU machine, in one call of the device tool's `run`, from the repository root:
#
#   bash bench/gpu_device.sh                  (run's timeout_s: 600; nothing in `carry`)
#
# Designed for that machine as /work/.library/device/README.md and KINDS.md describe it: one H100 or H200,
# 16 cores, no network at all, a bare image whose python3 already holds torch (2.11 when read), transformers,
# tokenizers, numpy and peft; this repository copied without .venv. Nothing is installed or downloaded: the
# models are built from configs with random weights, the MNIST-shaped files are written here.
#
# Writes under $OUT (at most 8 files come back, none deeper than two folders): env.txt (card, driver, clocks,
# package versions), gpu_speed.json (every figure, rewritten after each variant, so a run cut short still
# returns what it measured), gpu_speed.log (the table and each variant's line; the samples' own logs with
# GPU_SPEED_VERBOSE=1). The bench starts no variant after GPU_SPEED_BUDGET_S seconds (default 390) and is
# killed at GPU_SPEED_TIMEOUT_S (default 480): with the machine's start, about 10 of the 15 device minutes.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$(mktemp -d /tmp/gpu-speed-out.XXXXXX)}
mkdir -p "$OUT"
PY=${PYTHON:-python3}
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
{
  date -u +%FT%TZ
  nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv 2>&1
  "$PY" - <<'EOF' 2>&1
import importlib, sys
print("python", sys.version.split()[0], sys.executable)
for name in ("torch", "transformers", "tokenizers", "numpy", "peft", "safetensors"):
    try:
        print(name, importlib.import_module(name).__version__)
    except Exception as exc:  # noqa: BLE001
        print(name, "MISSING", type(exc).__name__, exc)
import torch
print("cuda", torch.version.cuda, torch.cuda.is_available(), torch.cuda.get_device_name() if torch.cuda.is_available() else "")
EOF
} > "$OUT/env.txt"
cat "$OUT/env.txt"
verbose=()
[ "${GPU_SPEED_VERBOSE:-0}" = 1 ] && verbose=(--verbose)
timeout "${GPU_SPEED_TIMEOUT_S:-480}" "$PY" bench/gpu_speed.py --json "$OUT/gpu_speed.json" \
  --budget-s "${GPU_SPEED_BUDGET_S:-390}" --workdir /tmp/gpu-speed-work "${verbose[@]}" ${GPU_SPEED_ARGS:-} \
  2>&1 | tee "$OUT/gpu_speed.log"
rc=${PIPESTATUS[0]}
echo "gpu_speed exit $rc (124: stopped at the time limit; the JSON holds what was measured)" | tee -a "$OUT/gpu_speed.log"
exit "$rc"
