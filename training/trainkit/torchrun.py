"""torchrun with a faster c10d rendezvous poll (opt-in launcher).

While agents wait for a rendezvous round to complete, torch's dynamic
rendezvous polls the store once a second (``_delay(seconds=1)``, hard-coded
in ``torch/distributed/elastic/rendezvous/dynamic_rendezvous.py``, torch 2.13)
and serves a cached copy of the state for a second
(``_BackendRendezvousStateHolder(cache_duration=1)``). Every restart of a
worker group pays about a second for it. This launcher shortens both to
``TRAINKIT_RDZV_POLL`` seconds (default 0.1) and is otherwise exactly
torchrun, with the same arguments::

    python /app/training/trainkit/torchrun.py --nnodes=1:2 ... /app/training/mnist_ddp.py ...

It patches a private torch function: if a torch release renames it, the
launcher says so on stderr and runs plain torchrun. Each agent then reads the
store up to ten times a second while it waits, which is nothing for tens of
nodes but worth keeping at 1 s for hundreds.
"""
from __future__ import annotations

import os
import sys

POLL_ENV = "TRAINKIT_RDZV_POLL"


def patch_rendezvous_poll(poll: float) -> bool:
    try:
        from torch.distributed.elastic.rendezvous import dynamic_rendezvous as dr
    except ImportError:
        return False
    original = getattr(dr, "_delay", None)
    if original is None or getattr(original, "_trainkit_patched", False):
        return original is not None

    def _delay(seconds):
        if seconds == 1:          # the SYNC poll of the join/exit loops
            seconds = poll
        return original(seconds=seconds)

    _delay._trainkit_patched = True
    dr._delay = _delay
    # The state holder also serves a cached copy of the rendezvous state for 1 s, so a
    # faster poll alone would keep reading stale state: shorten the cache to the poll.
    holder = getattr(dr, "_BackendRendezvousStateHolder", None)
    if holder is not None:
        init = holder.__init__

        def __init__(self, backend, settings, cache_duration=1):
            init(self, backend, settings, cache_duration=min(cache_duration, poll))

        holder.__init__ = __init__
    return True


def main() -> None:
    poll = float(os.environ.get(POLL_ENV, "0.1"))
    if not patch_rendezvous_poll(poll):
        print("trainkit.torchrun: this torch has no dynamic_rendezvous._delay; running plain torchrun",
              file=sys.stderr)
    from torch.distributed.run import main as torchrun_main
    torchrun_main()


if __name__ == "__main__":
    main()
