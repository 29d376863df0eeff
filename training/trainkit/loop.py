"""The training loop shared by the samples: resume, step, checkpoint, preempt, finish."""
from __future__ import annotations

import hashlib
import io
import os
import signal
import sys
import threading
import traceback
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import torch
import torch.distributed as dist

from .checkpoint import CheckpointManager
from .dist import DistEnv, rng_state, set_rng_state
from .log import log
from .progress import ProgressReporter, StepProgress
from .sampler import Batch, ElasticSampler

PREEMPT_EXIT_CODE = 143   # 128 + SIGTERM: non-zero so the torchrun agent restarts the group
TERM_GRACE_ENV = "TRAINKIT_TERM_GRACE"


class PreemptionHandler:
    """SIGTERM/SIGINT set a flag; the loop agrees on it across ranks at the next step boundary,
    saves a checkpoint and exits with 143. A watchdog ends the process if that takes longer than
    the grace period (default 25 s, below the 30 s after which torchrun and the kubelet SIGKILL)."""

    def __init__(self, rank: int):
        self.rank = rank
        self.requested = False
        self.signal_name = None
        self.grace = float(os.environ.get(TERM_GRACE_ENV, "25"))
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, self._handle)

    def _handle(self, signum, frame):
        if self.requested:
            return
        self.requested = True
        self.signal_name = signal.Signals(signum).name
        log("STOP", rank=self.rank, signal=self.signal_name, action="save-and-exit", grace_s=self.grace)
        timer = threading.Timer(self.grace, self._expire)
        timer.daemon = True
        timer.start()

    def _expire(self):
        log("STOP", rank=self.rank, action="grace-expired", exit=PREEMPT_EXIT_CODE)
        os._exit(PREEMPT_EXIT_CODE)


def _tensor_bytes(t: torch.Tensor) -> bytes:
    t = t.detach().to("cpu").contiguous()
    return t.reshape(-1).view(torch.uint8).numpy().tobytes()


def full_state_dict(model: torch.nn.Module) -> dict:
    """Unsharded model state with canonical names (no ``module.`` prefixes); a collective under FSDP."""
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict
    return get_model_state_dict(model, options=StateDictOptions(full_state_dict=True))


def weights_digest(model: torch.nn.Module) -> str:
    """sha256 over (name, dtype, shape, bytes) of every tensor of the full state, sorted by name.

    Identical on every rank and independent of DDP/FSDP wrapping.
    """
    sd = full_state_dict(model)
    h = hashlib.sha256()
    for name in sorted(sd):
        t = sd[name]
        if hasattr(t, "full_tensor"):
            t = t.full_tensor()
        h.update(name.encode())
        h.update(str(t.dtype).encode())
        h.update(repr(tuple(t.shape)).encode())
        h.update(_tensor_bytes(t))
    return h.hexdigest()


def _to_local(obj):
    """A state dict with every DTensor replaced by this rank's shard (a plain tensor): what a healing peer
    of the same shape receives (torchft's transports would otherwise pickle the device mesh)."""
    if hasattr(obj, "to_local") and isinstance(obj, torch.Tensor):
        return obj.to_local()
    if isinstance(obj, dict):
        return {k: _to_local(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(_to_local(v) for v in obj)
    return obj


def _rewrap(received, live):
    """``received`` (from ``_to_local`` on a peer) with each shard put back into the DTensor layout that
    ``live`` (this rank's own state dict) has at the same place."""
    if hasattr(live, "to_local") and isinstance(live, torch.Tensor) and isinstance(received, torch.Tensor):
        from torch.distributed.tensor import DTensor
        return DTensor.from_local(received.to(live.device), live.device_mesh, live.placements, run_check=False,
                                  shape=live.shape, stride=live.stride())
    if isinstance(received, dict) and isinstance(live, dict):
        return {k: _rewrap(v, live.get(k)) for k, v in received.items()}
    if isinstance(received, (list, tuple)) and isinstance(live, (list, tuple)) and len(received) == len(live):
        return type(received)(_rewrap(a, b) for a, b in zip(received, live))
    return received


def _rewrap_optim(received: dict, optimizer: torch.optim.Optimizer) -> dict:
    """An optimizer state dict from ``_to_local`` with each per-parameter tensor (moments: the shape of
    their parameter's shard) put back into its parameter's DTensor layout. The parameter is the template,
    not this optimizer's own state, which a group healed before its first step does not have yet
    (torch creates it lazily). Optimizer.state_dict numbers the parameters in param_groups order from 0."""
    params = [p for group in optimizer.param_groups for p in group["params"]]
    state = {}
    for pid, per_param in received.get("state", {}).items():
        p = params[int(pid)]
        state[pid] = {k: _rewrap(v, p) if isinstance(v, torch.Tensor) and v.dim() == p.dim() and v.dim() > 0
                      else v for k, v in per_param.items()}
    return dict(received, state=state)


def _first_line(err) -> str | None:
    return None if err is None else str(err).splitlines()[0][:200]


def _serialize(obj) -> bytes:
    buf = io.BytesIO()
    torch.save(obj, buf)
    return buf.getvalue()


@dataclass
class TrainResult:
    step: int
    epoch: int
    final_loss: float
    weights_sha256: str
    resumed_from: int


class Trainer:
    """Runs ``step_fn`` over an :class:`ElasticSampler` with checkpoints and resume.

    ``step_fn(batch)`` does forward and backward for this rank's ``batch.indices``
    and returns the *sum* of the per-sample losses (a float or 0-d tensor). It
    must scale what it back-propagates by ``world_size / batch.global_count``,
    so that averaged gradients are the exact mean over the global step, however
    unevenly a short last step is split. ``eval_fn(epoch)`` (optional) returns a
    dict of metrics logged in the ``[EPOCH]`` line; with ``eval_every=N`` also every N steps within an
    epoch and at a last step that ends mid-epoch (``--max-steps``), in an ``[EVAL]`` line, before that
    step's checkpoint. ``extra_state=(get, set)`` keeps a
    sample's own state (a best score, counters) in every checkpoint and gives it back on resume.
    ``after_step(step, loss, lr)`` runs on every rank after each step (metrics trackers).
    ``progress_metrics()`` (optional) adds a sample's own figures (tokens/s) to what rank 0 reports to
    Kubeflow Trainer's status endpoint when the pod has one (trainkit/progress.py): progress, ETA, loss,
    learning rate, epoch and the last evaluation's figures.

    ``mode="ddp"``: ``raw_model`` is the unwrapped module, rank 0 writes whole
    state files. ``mode="fsdp"``: ``model`` is an FSDP2 module, saved and loaded
    with DCP ``get_state_dict``/``set_state_dict`` (sharded).

    ``ft`` (a :class:`trainkit.ft.FaultTolerance`, from ``trainkit.ft.setup``): this process group is
    one torchft replica group. The optimizer is wrapped (``torchft.Optimizer``), each step is dealt
    over the groups of that step's quorum and counts only when it commits, the live state is what a
    healing peer receives, and checkpoints go to this group's own folder (trainkit/ft.py).
    """

    def __init__(self, env: DistEnv, args, *, model: torch.nn.Module, optimizer: torch.optim.Optimizer,
                 sampler: ElasticSampler, step_fn: Callable[[Batch], float], mode: str = "ddp",
                 raw_model: torch.nn.Module | None = None, scheduler=None, scheduler_interval: str = "step",
                 eval_fn: Callable[[int], dict] | None = None, name: str = "train", eval_every: int = 0,
                 extra_state: tuple[Callable[[], dict], Callable[[dict], None]] | None = None,
                 after_step: Callable[[int, float, float], None] | None = None, ft=None,
                 progress_metrics: Callable[[], dict] | None = None):
        if mode not in ("ddp", "fsdp"):
            raise ValueError(mode)
        self.env, self.args, self.model, self.optimizer = env, args, model, optimizer
        self.ft = ft
        self.inner_optimizer = optimizer          # what checkpoints and healing save (not the wrapper)
        # The rank whose streams (dropout, ...) this process draws: with replica groups, unique in the job.
        self.seed_rank = env.rank if ft is None else ft.group_id * env.world_size + env.rank
        self.sampler, self.step_fn, self.mode = sampler, step_fn, mode
        self.raw_model = raw_model if raw_model is not None else model
        self.scheduler, self.scheduler_interval = scheduler, scheduler_interval
        self.eval_fn, self.name = eval_fn, name
        self.eval_every, self.extra_state, self.after_step = eval_every, extra_state, after_step
        self.step = 0
        self.last_loss = float("nan")
        self.last_eval: dict = {}
        self.resumed_from = 0
        self.last_saved_step = -1
        self.ckpt_blocking_s = 0.0
        self.audit = args.audit_samples
        n = sampler.num_samples
        self.seen_committed = torch.zeros(n, dtype=torch.int32) if self.audit else None
        self.seen_local = torch.zeros(n, dtype=torch.int32) if self.audit else None
        self.preempt = PreemptionHandler(env.rank)
        self.progress = StepProgress(ProgressReporter.from_env(rank=self.seed_rank))
        self.progress_metrics = progress_metrics
        self.ckpt = None
        if args.checkpoint_dir:
            pg = None
            if env.world_size > 1 and (mode == "fsdp" or env.device.type == "cuda"):
                # A group of its own for checkpoint coordination: asynchronous DCP saves run their
                # collectives in a background thread, which must never interleave with the training
                # collectives on the default group. gloo, so that it works on CPU state (and GPUs).
                pg = dist.new_group(backend="gloo")
            root = Path(args.checkpoint_dir)
            if ft is not None:
                from .ft import GROUP_DIR
                root = root / GROUP_DIR.format(id=ft.group_id)   # each group its own folder: no cross-group writes
            self.ckpt = CheckpointManager(
                root, rank=env.rank, world_size=env.world_size, keep_last=args.keep_last,
                mode="single" if mode == "ddp" else "dcp", async_save=args.async_checkpoint, process_group=pg)
        if ft is not None:
            self.optimizer = ft.optimizer(optimizer)
            ft.register_state(self._live_state, self._load_live_state)

    # -- state -------------------------------------------------------------
    def _trainer_state(self, rng_all: list) -> dict:
        return {
            "format": 1, "name": self.name, "step": self.step, "sampler": self.sampler.state_dict(),
            "world_size": self.env.world_size, "rng": rng_all, "last_loss": self.last_loss,
            "last_eval": self.last_eval, "seed": self.args.seed,
            "scheduler": self.scheduler.state_dict() if self.scheduler is not None else None,
            "audit": self.seen_committed.clone() if self.audit else None,
            "extra": self.extra_state[0]() if self.extra_state is not None else None,
            "torchft": self.ft.state_dict() if self.ft is not None else None,
        }

    # -- healing (torchft) ----------------------------------------------------
    def _live_state(self) -> dict:
        """What a healing replica group receives from this one (shards of this rank as plain tensors)."""
        return {"model": _to_local(self.raw_model.state_dict()),
                "optim": _to_local(self.inner_optimizer.state_dict()),
                "scheduler": self.scheduler.state_dict() if self.scheduler is not None else None,
                "sampler": self.sampler.state_dict(), "last_loss": self.last_loss,
                "last_eval": self.last_eval,
                "extra": self.extra_state[0]() if self.extra_state is not None else None}

    def _load_live_state(self, state: dict) -> None:
        self.raw_model.load_state_dict(_rewrap(state["model"], self.raw_model.state_dict()))
        self.inner_optimizer.load_state_dict(_rewrap_optim(state["optim"], self.inner_optimizer))
        if self.scheduler is not None and state["scheduler"] is not None:
            self.scheduler.load_state_dict(state["scheduler"])
        self.sampler.load_state_dict(state["sampler"])
        self.last_loss = float(state["last_loss"])
        self.last_eval = dict(state.get("last_eval") or {})
        if self.extra_state is not None and state.get("extra") is not None:
            self.extra_state[1](state["extra"])

    def _all_gather_object(self, obj) -> list:
        if self.env.world_size == 1:
            return [obj]
        out = [None] * self.env.world_size
        dist.all_gather_object(out, obj)
        return out

    def save(self, sync: bool = False, reason: str = "interval") -> None:
        if self.ckpt is None or self.last_saved_step == self.step:
            return
        t0 = time.perf_counter()
        rng_all = self._all_gather_object(rng_state(self.env.device))
        if self.audit:
            self._audit_sync()
        files = {}
        if self.env.rank == 0:
            files["trainer.pt"] = _serialize(self._trainer_state(rng_all))
        meta = {"epoch": self.sampler.epoch, "consumed": self.sampler.consumed, "reason": reason,
                "loss": self.last_loss}
        if self.mode == "ddp":
            if self.env.rank == 0:
                files["model_optim.pt"] = _serialize({"model": self.raw_model.state_dict(),
                                                      "optim": self.inner_optimizer.state_dict()})
            blocking = self.ckpt.save(self.step, files, meta, sync=sync, t_start=t0)
        else:
            from torch.distributed.checkpoint.state_dict import get_state_dict
            model_sd, optim_sd = get_state_dict(self.model, self.inner_optimizer)
            blocking = self.ckpt.save(self.step, files, meta, dcp_state={"model": model_sd, "optim": optim_sd},
                                      sync=sync, t_start=t0)
        self.ckpt_blocking_s += blocking
        self.last_saved_step = self.step

    def resume(self) -> None:
        env = self.env
        if self.ckpt is None:
            torch.manual_seed(self.args.seed * 1000 + self.seed_rank)
            log("RESUME", rank=env.rank, source="none", reason="no --checkpoint-dir", step=0)
            return
        self.ckpt.start_fresh_incarnation()
        info = self.ckpt.find_latest()
        if info is None:
            torch.manual_seed(self.args.seed * 1000 + self.seed_rank)
            log("RESUME", rank=env.rank, source="none", reason="no complete checkpoint", step=0,
                restart=env.restart_count)
            return
        t0 = time.perf_counter()
        state = torch.load(info.path / "trainer.pt", map_location="cpu", weights_only=False)
        if self.mode == "ddp":
            mo = torch.load(info.path / "model_optim.pt", map_location=env.device, weights_only=True)
            self.raw_model.load_state_dict(mo["model"])
            self.inner_optimizer.load_state_dict(mo["optim"])
        else:
            import torch.distributed.checkpoint as dcp
            from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict
            model_sd, optim_sd = get_state_dict(self.model, self.inner_optimizer)
            sd = {"model": model_sd, "optim": optim_sd}
            dcp.load(sd, checkpoint_id=str(info.path / "dcp"), process_group=self.ckpt.process_group)
            set_state_dict(self.model, self.inner_optimizer, model_state_dict=sd["model"],
                           optim_state_dict=sd["optim"])
        if self.scheduler is not None and state["scheduler"] is not None:
            self.scheduler.load_state_dict(state["scheduler"])
        self.sampler.load_state_dict(state["sampler"])
        self.step = self.resumed_from = self.last_saved_step = int(state["step"])
        self.last_loss = float(state["last_loss"])
        self.last_eval = dict(state.get("last_eval") or {})
        if self.audit and state.get("audit") is not None:
            self.seen_committed.copy_(state["audit"])
        if self.extra_state is not None and state.get("extra") is not None:
            self.extra_state[1](state["extra"])
        if self.ft is not None:
            self.ft.load_state_dict(state.get("torchft") or {"step": self.step, "batches_committed": 0})
        saved_ws = int(state["world_size"])
        if saved_ws == env.world_size:
            set_rng_state(state["rng"][env.rank], env.device)
            rng = "restored"
        else:
            # Another world size: per-rank streams cannot be mapped; derive fresh ones.
            torch.manual_seed(self.args.seed * 1000 + self.step * 7919 + self.seed_rank)
            rng = "reseeded"
        log("RESUME", rank=env.rank, source=str(info.path), step=self.step, epoch=self.sampler.epoch,
            consumed=self.sampler.consumed, world_size=env.world_size, saved_world_size=saved_ws,
            rng=rng, restart=env.restart_count, load_s=round(time.perf_counter() - t0, 4))

    # -- audit -------------------------------------------------------------
    def _audit_sync(self) -> None:
        if self.env.world_size > 1:
            dist.all_reduce(self.seen_local)
        self.seen_committed += self.seen_local
        self.seen_local.zero_()

    # -- loop --------------------------------------------------------------
    def finished(self) -> bool:
        if self.args.max_steps and self.step >= self.args.max_steps:
            return True
        return self.sampler.epoch >= self.args.epochs

    def total_steps(self, world_size: int) -> int:
        """The step this run ends at: ``--max-steps``, or the end of the last epoch at this world size."""
        if self.sampler.epoch >= self.args.epochs:
            return self.step
        per_epoch = -(-self.sampler.num_samples // (world_size * self.sampler.batch_size))
        left = max(0, self.args.epochs - self.sampler.epoch - 1)
        total = self.step + self.sampler.steps_left_in_epoch(world_size) + left * per_epoch
        return min(total, self.args.max_steps) if self.args.max_steps else total

    def _progress_figures(self, world_size: int) -> tuple[int, dict]:
        metrics = {"loss": self.last_loss, "lr": self.optimizer.param_groups[0]["lr"], "epoch": self.sampler.epoch}
        metrics.update({k: v for k, v in self.last_eval.items() if isinstance(v, (int, float))})
        if self.progress_metrics is not None:
            metrics.update(self.progress_metrics())
        return self.total_steps(world_size), metrics

    def _report_progress(self, world_size: int, done: bool) -> None:
        if not self.progress.reporter.enabled:
            return
        total, metrics = self._progress_figures(world_size)
        if done:
            self.progress.finish(self.step, total, metrics)
        else:
            self.progress.step(self.step, total, metrics)

    def _step(self):
        """One step of the whole process group: (batch, stop) once it counts."""
        env = self.env
        batch = self.sampler.next_batch(env.rank, env.world_size)
        self.model.train()
        self.optimizer.zero_grad(set_to_none=True)
        loss_sum = self.step_fn(batch)
        self.optimizer.step()
        if self.scheduler is not None and self.scheduler_interval == "step":
            self.scheduler.step()
        self.step += 1
        if self.audit and batch.indices:
            self.seen_local[torch.tensor(batch.indices)] += 1
        red = torch.tensor([float(loss_sum), 1.0 if self.preempt.requested else 0.0],
                           dtype=torch.float64, device=env.device)
        if env.world_size > 1:
            dist.all_reduce(red)
        self.last_loss = red[0].item() / batch.global_count
        return batch, red[1].item() > 0

    def _ft_step(self):
        """One step of this replica group under torchft: (batch, stop), batch None when it did not commit.

        ``zero_grad`` (torchft.Optimizer) starts the quorum; the step is dealt over the ranks of the
        groups at the quorum's step (``num_participants``; a healing group takes no sample and its
        gradients count zero), the loss is summed over those groups, and ``step`` applies the update
        only if ``should_commit`` agrees. The data position moves on only then, from the state the
        group holds after the step (a healed group's is its peer's)."""
        env, m = self.env, self.ft.manager
        self.model.train()
        self.optimizer.zero_grad(set_to_none=True)
        self.ft.wait_quorum()                      # LighthouseLost when the Lighthouse is gone
        world = m.num_participants() * env.world_size
        prank = m.participating_rank() if m.is_participating() else None
        rank = None if prank is None else prank * env.world_size + env.rank
        batch = self.sampler.peek_batch(rank, world)
        loss_sum = self.step_fn(batch)
        red = torch.tensor([float(loss_sum), 1.0 if self.preempt.requested else 0.0],
                           dtype=torch.float64, device=env.device)
        if env.world_size > 1:
            dist.all_reduce(red)
        loss = red[:1].clone()
        self.ft.sum_across_groups(loss)
        before = m.current_step()
        self.optimizer.step()                      # should_commit, then the wrapped optimizer's step
        stop = red[1].item() > 0
        if m.current_step() == before:
            if env.rank == 0:
                log("FT", rank=0, replica_group=self.ft.group_id, step=self.step + 1, committed=False,
                    participants=world // env.world_size, error=_first_line(m.errored()))
            return None, stop
        if self.scheduler is not None and self.scheduler_interval == "step":
            self.scheduler.step()
        batch = self.sampler.peek_batch(rank, world)   # a healed group's position is its peer's now
        self.sampler.advance(batch)
        self.step = m.current_step()
        self.last_loss = loss.item() / batch.global_count
        return batch, stop

    def _log_heal(self) -> None:
        """After a step in which this group healed from a peer or served a healing one: the weights' digest,
        which a peer that took part in the same transfer logs for the same step."""
        ft = self.ft
        if not (ft.healed or ft.sent):
            return
        role = "received" if ft.healed else "sent"
        ft.healed = ft.sent = False
        digest = weights_digest(self.model)
        log("HEAL", rank=self.env.rank, replica_group=ft.group_id, role=role, step=self.step,
            weights_sha256=digest)

    def run(self) -> TrainResult:
        env, args = self.env, self.args
        self.resume()
        self.progress.begin(self.step)
        t_start = time.perf_counter()
        steps_run = 0
        every = args.checkpoint_every
        try:
            while not self.finished():
                t0 = time.perf_counter()
                batch, stop = self._ft_step() if self.ft is not None else self._step()
                if batch is None:                    # a torchft step that did not commit: deal it again
                    if stop:
                        self._stop(self.finished())
                    continue
                steps_run += 1
                if self.ft is not None:
                    self._log_heal()
                done = self.finished()
                if env.rank == 0 and (self.step % max(1, args.log_every) == 0 or steps_run == 1 or done):
                    lr = self.optimizer.param_groups[0]["lr"]
                    extra = {} if self.ft is None else {"replica_group": self.ft.group_id,
                                                        "participants": batch.world_size // env.world_size}
                    log("TRAIN", rank=0, step=self.step, epoch=batch.epoch, loss=round(self.last_loss, 6),
                        lr=float(f"{lr:.6g}"), step_s=round(time.perf_counter() - t0, 4),
                        world_size=batch.world_size, **extra)
                if self.after_step is not None:
                    self.after_step(self.step, self.last_loss, self.optimizer.param_groups[0]["lr"])
                epoch_end = self.sampler.epoch_done
                if epoch_end:
                    self._end_epoch()
                    done = self.finished()
                elif self.eval_fn is not None and self.eval_every > 0 and (self.step % self.eval_every == 0 or done):
                    self.last_eval = dict(self.eval_fn(self.sampler.epoch))
                    if env.rank == 0:
                        log("EVAL", rank=0, step=self.step, epoch=self.sampler.epoch, **self.last_eval)
                if self.ckpt is not None and (stop or epoch_end or done or (every > 0 and self.step % every == 0)):
                    self.save(sync=stop or done, reason="sigterm" if stop else "epoch" if epoch_end
                              else "final" if done else "interval")
                self._report_progress(batch.world_size, done)
                if stop and not done:
                    self._stop(done)
                if args.step_sleep > 0 and not done:
                    time.sleep(args.step_sleep)    # drills only; not counted in step_s
            if self.ckpt is not None:
                self.save(sync=True, reason="final")
                self.ckpt.wait()
        except Exception as exc:
            if self.ft is not None and type(exc).__name__ == "LighthouseLost":
                self._lighthouse_lost(exc)
            # Typically a peer died and a collective failed. Finish a rank-0 whole-file write already
            # in flight (it needs no collectives), so that the restart loses as little as possible,
            # then exit at once: the agent restarts the group as soon as this process is gone, and a
            # normal interpreter shutdown (or destroy_process_group with a dead peer) can take seconds.
            if self.ckpt is not None and self.mode == "ddp" and env.rank == 0 and self.ckpt._thread is not None:
                self.ckpt._thread.join(timeout=10)
            traceback.print_exc()
            log("STOP", rank=env.rank, step=self.step, action="exit", reason="error",
                error=f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}", exit=1)
            sys.stderr.flush()
            os._exit(1)
        digest = weights_digest(self.model)
        train_s = time.perf_counter() - t_start
        extra = {} if self.ft is None else {"replica_group": self.ft.group_id}
        log("DONE", rank=env.rank, step=self.step, epoch=self.sampler.epoch, final_loss=self.last_loss,
            weights_sha256=digest, resumed_from=self.resumed_from, restart=env.restart_count,
            world_size=env.world_size, steps_run=steps_run, train_s=round(train_s, 3),
            ckpt_blocking_s=round(self.ckpt_blocking_s, 4), **extra,
            **{k: v for k, v in self.last_eval.items()})
        if env.world_size > 1:
            dist.barrier()
        if self.ft is not None:
            self.ft.shutdown()
        return TrainResult(self.step, self.sampler.epoch, self.last_loss, digest, self.resumed_from)

    def _lighthouse_lost(self, exc) -> None:
        """No quorum without the Lighthouse: save this committed step (every rank of the group is here) and
        exit 75, so the launcher restarts the group; it waits for the Lighthouse and resumes from this step,
        and so does every other group. Nothing trained is lost (docs/training.md, "When the Lighthouse dies")."""
        from .ft import LIGHTHOUSE_EXIT_CODE
        log("FT", rank=self.env.rank, replica_group=self.ft.group_id, step=self.step, lighthouse="lost",
            action="save-and-restart", reason=str(exc), exit=LIGHTHOUSE_EXIT_CODE)
        if self.ckpt is not None:
            self.save(sync=True, reason="lighthouse")
            self.ckpt.wait()
        sys.stdout.flush()
        os._exit(LIGHTHOUSE_EXIT_CODE)

    def _stop(self, done: bool) -> None:
        """SIGTERM agreed on: the checkpoint of this step is saved (synchronously); exit with 143."""
        if self.ckpt is not None:
            self.save(sync=True, reason="sigterm")
            self.ckpt.wait()
        log("STOP", rank=self.env.rank, step=self.step, action="exit", exit=PREEMPT_EXIT_CODE,
            saved=self.ckpt is not None)
        os._exit(PREEMPT_EXIT_CODE)

    def _end_epoch(self) -> None:
        ended = self.sampler.epoch
        fields = {}
        if self.audit:
            self._audit_sync()
            fields["audit_min"] = int(self.seen_committed.min())
            fields["audit_max"] = int(self.seen_committed.max())
            fields["audit_exact"] = bool(fields["audit_min"] == 1 and fields["audit_max"] == 1)
            self.seen_committed.zero_()
        self.sampler.end_epoch()
        if self.scheduler is not None and self.scheduler_interval == "epoch":
            self.scheduler.step()
        if self.eval_fn is not None:
            self.last_eval = dict(self.eval_fn(ended))
            fields.update(self.last_eval)
        if self.env.rank == 0:
            log("EPOCH", rank=0, epoch=ended, step=self.step, loss=round(self.last_loss, 6), **fields)
