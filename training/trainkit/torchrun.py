"""torchrun with warm worker restarts: the launcher every recipe of this project uses.

Same flags and the same ``PET_*`` environment as ``torchrun`` (it is torchrun:
torch's own argument parser, agent and rendezvous), so the Kubeflow operators
configure it exactly as they configure torchrun::

    python -m trainkit.torchrun --rdzv-backend=c10d ... /app/training/mnist_ddp.py --checkpoint-dir ...

What it changes, and why (measured on 2 CPU cores by ``bench/recovery.py``;
docs/training.md has the figures):

* **Warm workers.** torchrun starts every worker, and restarts every worker
  after a failure, as a fresh ``python script.py``: each pays for importing
  Python, torch and the script's libraries again (1.5 s for torch alone here),
  and DDP's constructor pulls in ``torch._dynamo`` (1.1 s more). Here the
  workers are forked from a fork server (torchrun's own ``--run-path
  --start-method=forkserver``) that has imported torch, ``torch._dynamo`` and
  the training script's top level once, at job start: a restarted worker is
  running the script's ``main`` within milliseconds. The script runs as
  ``__main__`` in the worker, exactly as under torchrun; its top level also runs
  once in the fork server under another ``__name__``, so side effects belong
  under ``if __name__ == "__main__":`` (as ``multiprocessing`` requires anyway).
  CUDA is never initialised in the fork server (``PYTORCH_NVML_BASED_CUDA_CHECK``
  keeps ``torch.cuda.is_available()`` from doing so); workers initialise it
  after the fork, as they must.
* **The fork server is a fork of the agent** where that is the same process a
  spawned server would be (``fork_refusal``: the agent read ``OMP_NUM_THREADS``
  and ``PYTHONUNBUFFERED`` as the server would, runs one thread and loaded no GPU
  driver): it then
  imports only what the agent has not (``torch._dynamo``, the script): 1 s of CPU
  and of wall less per node (``bench/fork_server.py``), its torch pages shared
  with the agent's. Elsewhere (e.g. no
  ``OMP_NUM_THREADS`` and OpenBLAS threads in the agent) it is spawned, as
  ``multiprocessing`` does; ``[LAUNCH] fork_server=`` says which and why, and
  ``TRAINKIT_FORK_SERVER_FROM_AGENT=0`` always spawns it.
* **No stall on the first failure, no torch._dynamo in the agent.** The agent
  logs a failed worker with its exception, and torch's log formatter
  (``TorchLogsFormatter`` in ``torch/_logging/_internal.py``) imports
  ``torch._dynamo`` for any record with ``exc_info``, only to read
  ``config.verbose`` for dynamo's own ``graph_breaks`` artifact: 1.1 s into every
  first recovery. The agent formats such tracebacks itself, before torch's
  formatter sees them (the same text: ``logging.Formatter.formatException``,
  which that formatter uses), so it never imports ``torch._dynamo`` (1.2 s of CPU
  and its memory, on every node, saved). If a torch release has no such
  formatter on its ``torch`` logger, the agent imports ``torch._dynamo`` up
  front instead, while the workers start, as it did before.
* **Optional, ``TRAINKIT_RDZV_POLL=<seconds>``:** torch's c10d rendezvous
  polls its store once a second and serves a cached copy of its state for a
  second (hard-coded in ``dynamic_rendezvous.py``); this shortens both. It
  patches private torch functions, so it is off unless asked for; if a torch
  release renames them the launcher says so and goes on without.

``TRAINKIT_WARM=0`` gives plain torchrun behaviour (fresh ``python`` workers).
Warm workers need the script as a ``.py`` file; ``-m``/``--module`` and
``--no-python`` entrypoints, and an explicit ``--start-method``, run as torchrun
runs them.
"""
from __future__ import annotations

import os
import sys

WARM_ENV = "TRAINKIT_WARM"
SCRIPT_ENV = "TRAINKIT_WARM_SCRIPT"
POLL_ENV = "TRAINKIT_RDZV_POLL"
FORK_ENV = "TRAINKIT_FORK_SERVER_FROM_AGENT"
# Read once, at a process's start (Python) or when torch loads (OpenMP, OpenBLAS); configure_warm may set them.
STARTUP_ENV = ("OMP_NUM_THREADS", "PYTHONUNBUFFERED")
# GPU drivers' user-space libraries (CUDA's, NVML, ROCm's): loaded when a process first asks its devices,
# never by `import torch`. A fork must not inherit their state.
GPU_DRIVERS = ("libcuda.so", "libnvidia-ml.so", "libamdhip64.so", "libamd_smi.so", "librocm_smi64.so")
MAPS = "/proc/self/maps"
# Imported once by the fork server; every worker it forks starts with them loaded.
PRELOAD = ["torch", "torch.distributed", "torch.distributed.run", "torch.nn.parallel", "torch._dynamo",
           "trainkit.warm"]


def patch_rendezvous_poll(poll: float) -> bool:
    """Shorten torch's 1 s c10d rendezvous poll and state cache to ``poll`` seconds."""
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


def _explicit_start_method(argv: list[str]) -> bool:
    return "PET_START_METHOD" in os.environ or any(
        a.split("=", 1)[0] in ("--start-method", "--start_method") for a in argv)


def _switched_off(name: str) -> bool:
    """An on/off setting of the launcher, on unless set to 0, false, no or off."""
    return os.environ.get(name, "1").strip().lower() in ("0", "false", "no", "off")


def warm_eligible(args, argv: list[str]) -> str | None:
    """Why these arguments run as plain torchrun (None: warm workers apply)."""
    if _switched_off(WARM_ENV):
        return f"{WARM_ENV}=0"
    if args.module or args.no_python:
        return "-m/--no-python entrypoint"
    if _explicit_start_method(argv) and args.start_method != "forkserver":
        return f"--start-method={args.start_method} asked for"
    if not args.training_script.endswith(".py") or not os.path.isfile(args.training_script):
        return f"{args.training_script} is not a .py file"
    return None


def static_restart_warning(args) -> str | None:
    """Why in-place restarts of these arguments can hang (None: they cannot, as far as we know).

    torchrun's static rendezvous (no --rdzv-backend, several nodes) never re-forms the group: each agent
    counts its own restarts and keys the next group's store by that count. When one node needs an extra
    attempt the counts diverge and the group waits forever (docs/training.md; lint rule
    torchrun-static-restart). With warm workers the extra attempt is more likely, not new.
    """
    from torch.distributed import run as torchrun

    _, max_nodes = torchrun.parse_min_max_nnodes(args.nnodes)
    if args.standalone or args.rdzv_backend != "static" or args.max_restarts <= 0 or max_nodes <= 1:
        return None
    return (f"--max-restarts={args.max_restarts} with the static rendezvous: a restart can hang when the "
            f"nodes' restart counts diverge; use --rdzv-backend=c10d, or --max-restarts=0 and let the "
            f"operator restart the pods")


def _traceback_as_text(record) -> bool:
    """A ``logging`` filter: the record's traceback as ``exc_text``, its ``exc_info`` cleared, so that torch's
    formatter appends the text (as it would have) without importing ``torch._dynamo`` first. Records of
    torch's artifact loggers (``graph_breaks`` and the like, whose traceback dynamo's config decides) are
    left to torch."""
    import logging
    if record.exc_info and getattr(logging.getLogger(record.name), "artifact_name", None) is None:
        if not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        record.exc_info = None
    return True


def format_tracebacks_without_dynamo() -> bool:
    """Put ``_traceback_as_text`` on every handler of torch's loggers (``torch`` and the ones torch's log
    registry configures, ``torch.distributed`` among them) that uses torch's formatter. False when there are
    none (another torch release): the caller then imports ``torch._dynamo`` up front."""
    import logging
    try:
        from torch._logging._internal import TorchLogsFormatter
    except ImportError:
        return False
    loggers = [logging.getLogger("torch")] + [
        lg for name, lg in list(logging.Logger.manager.loggerDict.items())
        if name.startswith("torch.") and isinstance(lg, logging.Logger)]
    handlers = {id(h): h for lg in loggers for h in lg.handlers if isinstance(h.formatter, TorchLogsFormatter)}
    handlers = list(handlers.values())
    for h in handlers:
        if _traceback_as_text not in h.filters:
            h.addFilter(_traceback_as_text)
    return bool(handlers)


def configure_warm(args, started_with: dict) -> str:
    """Switch ``args`` to forked workers, start the fork server and let it preload; how it started
    (``start_fork_server``). ``started_with``: the ``STARTUP_ENV`` values when the agent started."""
    import multiprocessing.forkserver as forkserver

    from torch.distributed import run as torchrun

    script = os.path.abspath(args.training_script)
    args.training_script, args.run_path, args.start_method = script, True, "forkserver"
    # Workers see the script's folder first on sys.path, as under `python script.py`; the
    # fork server and its workers take the launcher's sys.path at the server's start.
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))   # .../training
    for p in (here, os.path.dirname(script)):
        if p in sys.path:
            sys.path.remove(p)
        sys.path.insert(0, p)
    os.environ[SCRIPT_ENV] = script
    # The fork server's environment is what every worker inherits, so whatever torchrun would
    # put in the environment before starting workers must be there first. torchrun's own rule
    # (config_from_args): several workers per node and no OMP_NUM_THREADS -> 1. OpenMP reads
    # it once, when torch loads in the fork server.
    if "OMP_NUM_THREADS" not in os.environ and torchrun.determine_local_world_size(args.nproc_per_node) > 1:
        os.environ["OMP_NUM_THREADS"] = "1"
    # torch.cuda.is_available() through NVML: the fork server never creates a CUDA context.
    os.environ.setdefault("PYTORCH_NVML_BASED_CUDA_CHECK", "1")
    # Workers write to the agent's stdout through a pipe or file: no block buffering.
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    forkserver.set_forkserver_preload(PRELOAD)
    # Start it now: it imports while the agent joins the rendezvous.
    return start_fork_server(forkserver, started_with)


def fork_refusal(started_with: dict) -> str | None:
    """Why the fork server cannot be a fork of this agent (None: it can).

    A fork is the process the spawned server would be, less its imports, only if the agent read at its
    start what the server would read at its own: Python reads PYTHONUNBUFFERED when it starts, OpenMP
    and OpenBLAS read OMP_NUM_THREADS when torch loads, and ``configure_warm`` may have set either since
    (``started_with``: their values when the agent started, ``STARTUP_ENV``). And fork() copies only the
    calling thread, so the agent must have no other (OpenBLAS starts a pool of them when torch imports
    numpy, unless OMP_NUM_THREADS=1), nor a GPU driver loaded (torchrun asks the devices for
    ``--nproc-per-node=gpu|auto``)."""
    if _switched_off(FORK_ENV):
        return f"{FORK_ENV}=0"
    changed = [k for k in STARTUP_ENV if os.environ.get(k) != started_with.get(k)]
    if changed:
        return f"{', '.join(changed)} set after the agent started"
    try:
        with open(MAPS) as f:
            drivers = sorted({name for line in f for name in GPU_DRIVERS if name in line})
    except OSError:
        return f"no {MAPS} to check for a GPU driver"
    if drivers:     # torchrun asked the devices (--nproc-per-node=gpu|auto): no driver state in a fork
        return f"the agent loaded {', '.join(drivers)}"
    try:
        threads = len(os.listdir("/proc/self/task"))
    except OSError:
        return "no /proc/self/task to count the agent's threads"
    if threads != 1:
        return f"the agent runs {threads} threads"
    return None


def start_fork_server(forkserver, started_with: dict) -> str:
    """Start ``multiprocessing``'s fork server, as a fork of this agent where ``fork_refusal`` allows:
    the agent has imported torch already, so the server then imports only what the agent has not
    (``torch._dynamo``, the script's top level): about 1 s of CPU and of wall less per node
    (``bench/fork_server.py``), its torch pages shared with the agent's. How: ``ForkServer.ensure_running`` as it is, but the one ``spawnv_passfds`` call
    that would exec ``python -c "from multiprocessing.forkserver import main; main(...)"`` forks and
    runs that same code in the child, after closing every descriptor a spawn would not pass (the
    agent's end of the server's liveness pipe above all: the server exits when the agent is gone).
    Returns "forked", or "spawned (why)"."""
    from multiprocessing import util

    why = fork_refusal(started_with)
    if why is not None:
        forkserver.ensure_running()
        return f"spawned ({why})"
    spawnv_passfds, forked = util.spawnv_passfds, []

    def fork_instead(path, args, passfds):
        code = args[args.index("-c") + 1] if "-c" in args[:-1] else ""
        if not code.startswith("from multiprocessing.forkserver import main"):
            return spawnv_passfds(path, args, passfds)     # the resource tracker: spawned, as ever
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid:
            forked.append(pid)
            return pid
        status = 1
        try:
            keep = sorted({0, 1, 2, *map(int, passfds)})
            for low, high in zip([-1, *keep], [*keep, _max_fd()]):
                if high > low + 1:          # never an empty range: os.closerange(n, n) can close more
                    os.closerange(low + 1, high)
            import threading
            forkserver._forkserver._lock = threading.Lock()   # held by the agent's ensure_running at the fork
            sys.argv = ["-c"]
            exec(compile(code, "<trainkit fork server>", "exec"), {"__name__": "__trainkit_forkserver__"})
            status = 0
        except SystemExit as e:         # main() ends so when the agent is gone
            status = e.code if isinstance(e.code, int) else 0
        except BaseException:           # noqa: BLE001 - reported; the agent sees the server gone
            import traceback
            traceback.print_exc()
        finally:
            os._exit(status)

    util.spawnv_passfds = fork_instead
    try:
        forkserver.ensure_running()
    finally:
        util.spawnv_passfds = spawnv_passfds
    return "forked" if forked else "spawned (this Python's fork server started otherwise)"


def _max_fd() -> int:
    try:
        return max(int(fd) for fd in os.listdir("/proc/self/fd")) + 1
    except (OSError, ValueError):
        return os.sysconf("SC_OPEN_MAX")


def main(argv: list[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    started_with = {k: os.environ.get(k) for k in STARTUP_ENV}     # before torch loads OpenMP and OpenBLAS
    from torch.distributed import run as torchrun
    from torch.distributed.elastic.multiprocessing.errors import record

    from trainkit.log import log

    poll = os.environ.get(POLL_ENV, "").strip()
    try:
        poll_s = None if poll in ("", "off") else float(poll)
        if poll_s is not None and not 0 < poll_s <= 1:
            raise ValueError
    except ValueError:
        sys.exit(f"trainkit.torchrun: {POLL_ENV}={poll!r}: expected seconds in (0, 1], or off")
    parser = torchrun.get_args_parser()     # torchrun's own flags and PET_* defaults
    parser.prog = "python3 -m trainkit.torchrun"
    args = parser.parse_args(argv)
    if not (args.module or args.no_python) and not os.path.isfile(args.training_script):
        # torchrun would find out in every worker of every node, after the rendezvous.
        sys.exit(f"trainkit.torchrun: training script {args.training_script}: no such file")
    why_not = warm_eligible(args, argv)
    warning = static_restart_warning(args)
    if warning:
        log("WARN", source="trainkit.torchrun", message=warning)
    if why_not is None:
        fork_server = configure_warm(args, started_with)
        # See the module docstring: the agent's first failure log would import torch._dynamo otherwise.
        if not format_tracebacks_without_dynamo():
            import torch._dynamo  # noqa: F401
        log("LAUNCH", workers="warm", script=args.training_script, start_method="forkserver",
            fork_server=fork_server)
    else:
        log("LAUNCH", workers="cold", reason=why_not)
    if poll_s is not None and not patch_rendezvous_poll(poll_s):
        print("trainkit.torchrun: this torch has no dynamic_rendezvous._delay; the rendezvous polls every 1 s",
              file=sys.stderr)
    # torchrun's main() is record-wrapped too: an agent error ends in its error file and summary.
    record(torchrun.run)(args)


if __name__ == "__main__":
    if __package__ in (None, ""):            # run as a file: python .../trainkit/torchrun.py
        sys.path[0] = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    main()
