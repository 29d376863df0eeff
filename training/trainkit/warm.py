"""Preloaded by the fork server of ``trainkit.torchrun``: the training script's top level, once.

Runs the script named by ``TRAINKIT_WARM_SCRIPT`` with ``__name__`` set to
``__trainkit_warm__`` (so its ``if __name__ == "__main__":`` block does not
run), which imports everything the script imports at its top level. Workers
forked afterwards find those modules loaded. A script that imports something
heavy lazily (inside a function, to keep ``--help`` fast) can name it for the
fork server in a block of its own::

    if __name__ == "__trainkit_warm__":
        import transformers  # noqa: F401 Whatever goes wrong here is reported on stderr and
costs only speed: the worker then imports for itself.
"""
from __future__ import annotations

import os
import runpy
import sys
import time

SCRIPT_ENV = "TRAINKIT_WARM_SCRIPT"
RUN_NAME = "__trainkit_warm__"


def preload(script: str) -> bool:
    t0 = time.perf_counter()
    try:
        runpy.run_path(script, run_name=RUN_NAME)
    except BaseException as e:   # noqa: BLE001 - SystemExit too: the fork server must live on
        print(f"[WARN] trainkit.warm: preloading {script} failed ({type(e).__name__}: {e}); "
              f"workers import it themselves", file=sys.stderr, flush=True)
        return False
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        print(f"[WARN] trainkit.warm: {script} initialises CUDA at import time; forked workers cannot "
              f"use CUDA. Move that under `if __name__ == \"__main__\":` or set TRAINKIT_WARM=0",
              file=sys.stderr, flush=True)
    if os.environ.get("TRAINKIT_WARM_DEBUG"):
        print(f"[WARM] script={script} preload_s={time.perf_counter() - t0:.3f}", file=sys.stderr, flush=True)
    return True


_script = os.environ.get(SCRIPT_ENV)
if _script:
    preload(_script)
if os.environ.get("TRAINKIT_FAULT_TOLERANCE") == "torchft":
    # the replica groups' Manager (trainkit/ft.py imports it lazily; 0.3 s per restarted worker otherwise)
    try:
        import torchft  # noqa: F401
        from torchft.checkpointing import pg_transport  # noqa: F401
    except ImportError as e:
        print(f"[WARN] trainkit.warm: torchft not importable ({e}); workers import it themselves",
              file=sys.stderr, flush=True)
