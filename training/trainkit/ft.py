"""Per-step fault tolerance with torchft: replica groups that train on when one of them fails.

``--fault-tolerance torchft`` (or ``TRAINKIT_FAULT_TOLERANCE=torchft``) turns a job into replica
groups: each group is one torchrun (one pod, or one Job's pod), holds a whole replica of the model
(DDP: every process a full copy; FSDP: sharded over the group's processes, so the job is HSDP), and
averages its gradients with the other groups through torchft's fault-tolerant process group. A
Lighthouse server (``torchft_lighthouse``, the address in ``TORCHFT_LIGHTHOUSE``) decides at every
step which groups form the quorum; a group that fails drops out of it while the others keep
stepping, and when it comes back it heals: it receives the live model, optimizer, scheduler and
data position from a healthy peer (torchft's PGTransport, over the same process group) instead of
reading the last checkpoint. Disk checkpoints stay the backstop for losing every group at once; in
this mode each group writes its own folder (``<checkpoint-dir>/replica-group-<id>``) and the
Manager's step counter is saved with them.

What each piece is, in torchft 0.2.0 (pytorch/torchft, files under ``torchft/``):

* ``Manager`` (manager.py): one per process; group rank 0 runs the ManagerServer that asks the
  Lighthouse for the quorum (``start_quorum``), reconfigures the process group when the quorum
  changes, sends or receives the live state for healing, and decides per step whether the group
  may apply its optimizer step (``should_commit``: False after any error in the step's
  collectives, or with fewer than ``min_replica_size`` groups).
* ``OptimizerWrapper`` (optim.py, exported as ``torchft.Optimizer``): ``zero_grad`` starts the
  quorum, ``step`` steps the wrapped optimizer only when ``should_commit`` says so.
* ``ProcessGroupGloo`` / ``ProcessGroupNCCL`` (process_group.py): the cross-group process group the
  Manager reconfigures; one per group rank (rank r of every group).
* Gradients: ``Manager.allreduce`` averages over the participating groups (ReduceOp.AVG: a sum
  divided by ``num_participants()``); a group that is healing contributes zeros.

The data: :class:`trainkit.ElasticSampler` deals each step over the ranks of the groups in that
step's quorum (``num_participants() x group size``), a group's ranks taking the slots of its
``participating_rank()``; the position advances only when the step commits, and it travels with the
healed state, so a step that did not commit is dealt again and no sample is skipped or repeated
because a group died. (torchft's own ``DistributedSampler`` shards by a fixed number of groups and
loses a dead group's shard: data.py says so.)

The DDP wrapper here differs from ``torchft.DistributedDataParallel`` (ddp.py), whose process group
is a dummy: it averages only across groups, which is right for groups of one process (its docs:
"for DDP we can use replica groups of size 1"). Here a group may hold several processes (a pod with
several GPUs): its communication hook first averages over the group's own ranks, then across groups
through the Manager. Like torchft's, it keeps DDP from rebuilding its buckets after the first step
(``find_unused_parameters=True``), since a healed group's first step would otherwise lay out its
buckets differently from its peers'.
"""
from __future__ import annotations

import concurrent.futures
import os
import socket
import time
from datetime import timedelta
from urllib.parse import urlsplit

import torch
import torch.distributed as dist

from .log import log

from .args import ADDRESS_ENV, GROUP_DIR, REPLICA_PREFIX

LIGHTHOUSE_EXIT_CODE = 75      # EX_TEMPFAIL: the Lighthouse was lost; saved, restart and wait for it
LOST_KEY = "trainkit/lighthouse_lost"
PROBE_AFTER_S = 0.2            # a quorum slower than this makes rank 0 check that the Lighthouse still answers
PROBE_EVERY_S = 0.25


class LighthouseLost(RuntimeError):
    """The Lighthouse stopped answering while this group waited for a quorum: save and restart."""


def lighthouse_reachable(url: str, timeout: float = 1.0) -> bool:
    """Whether the Lighthouse at ``url`` (http://HOST:PORT) accepts a TCP connection."""
    parts = urlsplit(url if "//" in url else f"http://{url}")
    try:
        with socket.create_connection((parts.hostname, parts.port or 80), timeout=timeout):
            return True
    except OSError:
        return False


def wait_for_lighthouse(url: str, deadline_s: float, rank: int) -> None:
    """Block until the Lighthouse accepts connections (a restarted group waits out a Lighthouse restart
    here instead of failing in torchft's connect timeout and using up its restarts)."""
    t0 = time.monotonic()
    if lighthouse_reachable(url):
        return
    log("FT", rank=rank, lighthouse=url, state="unreachable", action="wait", wait_s=deadline_s)
    while time.monotonic() - t0 < deadline_s:
        time.sleep(PROBE_EVERY_S)
        if lighthouse_reachable(url):
            log("FT", rank=rank, lighthouse=url, state="reachable", waited_s=round(time.monotonic() - t0, 2))
            return
    raise SystemExit(f"trainkit: the Lighthouse {url} did not answer within {deadline_s:.0f} s "
                     "(--ft-lighthouse-wait); is its Service up?")


def advertised_address() -> str:
    """The address other groups reach this one at: $POD_IP (the manifests set it from status.podIP), else
    what this host's name resolves to (a pod's /etc/hosts maps its name to its IP)."""
    addr = os.environ.get(ADDRESS_ENV, "").strip()
    if addr:
        return addr
    try:
        return socket.gethostbyname(socket.gethostname())
    except OSError:
        return socket.gethostname()


def _url_host(addr: str) -> str:
    return f"[{addr}]" if ":" in addr and not addr.startswith("[") else addr


class FaultTolerance:
    """One process's part of a torchft replica group: the Manager, its process group and wrappers."""

    def __init__(self, args, env):
        from torchft import Manager, ProcessGroupGloo, ProcessGroupNCCL
        from torchft.checkpointing.pg_transport import PGTransport
        self.env = env
        self.group_id = int(args.replica_group_id)
        self.num_groups = int(args.num_replica_groups)
        self.min_groups = int(args.min_replica_groups)
        self.group_size = env.world_size
        self.lighthouse = args.lighthouse
        timeout = timedelta(seconds=args.ft_timeout)
        self.pg = (ProcessGroupNCCL(timeout=timeout) if env.device.type == "cuda"
                   else ProcessGroupGloo(timeout=timeout))
        address = advertised_address()
        self.address = address
        self.grace = args.ft_lighthouse_grace
        if env.rank == 0:
            wait_for_lighthouse(self.lighthouse, args.ft_lighthouse_wait, env.rank)
        # The group's own store (torchrun's): rank 0 tells the group's other ranks the Lighthouse is lost.
        self.store = dist.TCPStore(address, int(os.environ["MASTER_PORT"]), is_master=False,
                                   wait_for_workers=False, timeout=timedelta(seconds=60))
        # Healing travels over the cross-group process group (torchft's PGTransport): the default
        # HTTPTransport serves from this host's bare name, which other pods cannot resolve.
        transport = PGTransport(self.pg, timeout=timeout, device=env.device)
        self.manager = Manager(
            pg=self.pg, load_state_dict=None, state_dict=None, min_replica_size=self.min_groups,
            timeout=timeout, quorum_timeout=timedelta(seconds=args.ft_quorum_timeout),
            connect_timeout=timedelta(seconds=min(args.ft_timeout, 10.0)),
            rank=env.rank, world_size=env.world_size,
            # The group's own TCPStore (torchrun's), advertised at an address the other groups reach.
            store_addr=address, store_port=int(os.environ["MASTER_PORT"]),
            lighthouse_addr=self.lighthouse, replica_id=f"{REPLICA_PREFIX}{self.group_id}",
            hostname=_url_host(address), checkpoint_transport=transport,
            # Every sample builds identical initial weights from --seed, so step 0 needs no transfer;
            # a group behind its peers heals whatever this says (manager.rs compute_quorum_results).
            init_sync=False,
            # A lost Lighthouse is handled by wait_quorum below (save, restart, wait for it), not by
            # retrying: a restarted Lighthouse numbers its quorums from 1 again (lighthouse.rs State),
            # and a group whose last quorum had the same number would keep a stale process group.
            quorum_retries=0)
        self.healed = False      # set when this process loaded a peer's state (healing)
        self.sent = False        # set when it served its state to a healing peer
        log("FT", rank=env.rank, replica_group=self.group_id, groups=self.num_groups, min_groups=self.min_groups,
            group_size=self.group_size, lighthouse=self.lighthouse, address=address,
            backend=self.pg.getBackendName())

    # -- wrappers ----------------------------------------------------------
    def ddp(self, module: torch.nn.Module, **kwargs) -> torch.nn.Module:
        """``module`` in DDP whose gradients are averaged over this group's ranks, then across groups."""
        return GroupDDP(self, module, **kwargs)

    def fsdp(self, model: torch.nn.Module) -> torch.nn.Module:
        """HSDP: after ``fully_shard`` over the group's ranks, each reduce-scattered gradient shard is
        averaged across groups (rank r of every group holds the same shard) by the Manager."""
        from torch.distributed.fsdp import FSDPModule
        manager = self.manager

        def hook(output: torch.Tensor) -> None:
            manager.allreduce(output).wait()
        n = 0
        for m in model.modules():
            if isinstance(m, FSDPModule):
                m.set_all_reduce_hook(hook)
                n += 1
        if n == 0:
            raise ValueError("no fully_shard module to hook: call fsdp() after fully_shard")
        return model

    def optimizer(self, optimizer: torch.optim.Optimizer):
        from torchft import Optimizer
        return Optimizer(self.manager, optimizer)

    # -- quorum ------------------------------------------------------------
    def wait_quorum(self) -> None:
        """Wait for the quorum ``zero_grad`` started, watching the Lighthouse while it takes long.

        torchft's ManagerServer never answers its group when its request to the Lighthouse fails
        (manager.rs ``_run_quorum``: "We don't broadcast in cases when this method returns an error,
        resulting in a hang"), so every rank would sit out the whole quorum timeout, also after the
        Lighthouse is back. Here, once a quorum takes longer than 0.2 s, rank 0 probes the Lighthouse's
        port four times a second. When it has refused connections for ``--ft-lighthouse-grace`` seconds,
        or answers again after refusing (a restart: this quorum's request is lost), rank 0 marks it lost
        in the group's store and every rank raises :class:`LighthouseLost` (the Trainer saves this step
        and exits 75 for a restart). An error of the quorum itself is raised the same way."""
        fut = getattr(self.manager, "_quorum_future", None)   # torchft 0.2.0 manager.py start_quorum
        if fut is None:
            self.manager.wait_quorum()
            return
        t0 = time.monotonic()
        down_since, next_probe = None, t0 + PROBE_AFTER_S
        while True:
            try:
                fut.result(timeout=0.1)
                return
            except concurrent.futures.TimeoutError:
                pass
            except Exception as exc:  # noqa: BLE001 - the quorum RPC failed (Lighthouse, ManagerServer)
                raise LighthouseLost(f"quorum failed: {_first_line(exc)}") from exc
            now = time.monotonic()
            if now < next_probe:
                continue
            next_probe = now + PROBE_EVERY_S
            if self.env.rank != 0:
                if self.store.check([LOST_KEY]):
                    raise LighthouseLost(f"rank 0 found the Lighthouse {self.lighthouse} unreachable")
                continue
            reachable = lighthouse_reachable(self.lighthouse, timeout=PROBE_EVERY_S)
            if reachable and down_since is None:
                continue
            if not reachable and down_since is None:
                down_since = now
            if reachable or now - down_since >= self.grace:
                self.store.set(LOST_KEY, "1")
                raise LighthouseLost(f"the Lighthouse {self.lighthouse} " + (
                    "restarted during the quorum" if reachable else
                    f"refused connections for {now - down_since:.1f} s"))

    def register_state(self, get, put) -> None:
        """What a healing group receives: ``get()`` on the peer, ``put(state)`` here."""

        def send():
            self.sent = True
            return get()

        def receive(state):
            self.healed = True
            put(state)
        self.manager.register_state_dict_fn("trainkit", receive, send)

    def sum_across_groups(self, tensor: torch.Tensor) -> torch.Tensor:
        """Sum ``tensor`` over the groups of this step (in place; a healing group contributes zero)."""
        self.manager.allreduce(tensor, reduce_op=dist.ReduceOp.SUM).wait()
        return tensor

    def state_dict(self) -> dict:
        return self.manager.state_dict()

    def load_state_dict(self, state: dict) -> None:
        self.manager.load_state_dict(state)

    def shutdown(self) -> None:
        self.manager.shutdown(wait=False)


def _first_line(exc) -> str:
    return str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__


def _group_ddp_hook(state, bucket):
    ft, group_size = state
    buf = bucket.buffer()
    if group_size > 1:
        dist.all_reduce(buf)            # this group's own ranks (the default group is the group)
        buf.div_(group_size)
    ft.manager.allreduce(buf).wait()    # across groups: the average over the participants
    fut = torch.futures.Future()
    fut.set_result(buf)
    return fut


class GroupDDP(torch.nn.parallel.DistributedDataParallel):
    """DDP over one replica group whose communication hook also averages across groups (module docstring)."""

    def __init__(self, ft: FaultTolerance, module: torch.nn.Module, **kwargs):
        super().__init__(module, find_unused_parameters=True, **kwargs)
        self.register_comm_hook((ft, ft.group_size), _group_ddp_hook)


def setup(args, env) -> FaultTolerance | None:
    """The fault-tolerance mode the flags ask for: None when off."""
    if getattr(args, "fault_tolerance", "off") != "torchft":
        return None
    return FaultTolerance(args, env)
