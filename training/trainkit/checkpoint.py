"""Atomic, verifiable checkpoints on a shared volume.

Layout under ``--checkpoint-dir``::

    step_000000040/                  a complete checkpoint (the newest N are kept)
        COMPLETE                     marker, JSON: step, epoch, world size, every file with size (+ sha256)
        trainer.pt                   step, epoch, sampler position, RNG states of every rank,
                                     LR scheduler, last loss, sample audit, sample extras
        model_optim.pt               DDP ("single" mode): full model + optimizer state, written by rank 0
        dcp/.metadata, dcp/*.distcp  FSDP ("dcp" mode): sharded model + optimizer, every rank writes its shards
    step_000000050.tmp-3f2a.../      a checkpoint being written (or left by a crash): never loaded
    step_000000010.trash-9c1e.../    an old checkpoint being deleted: never loaded

Protocol (what makes it safe to kill any process at any moment):

1. Write every file into a fresh temporary folder ``step_N.tmp-<token>``;
   flush and ``fsync`` each file (DCP: ``FileSystemWriter(sync_files=True)``).
2. Only when all data is durable, write the ``COMPLETE`` marker (file names,
   sizes, sha256 of the rank-0 files), ``fsync`` it and the folder.
3. ``rename`` the folder to ``step_N`` (atomic on POSIX file systems and on
   the NFS/CephFS/Lustre volumes a ReadWriteMany claim gives) and ``fsync``
   the parent folder.
4. Delete the oldest complete checkpoints beyond ``keep_last`` by renaming
   them to ``*.trash-*`` first, then removing them.

Resume picks the newest folder named ``step_N`` whose marker parses and whose
files match the marker (and, for rank-0 files, their sha256); anything else is
skipped with a ``[RESUME] skip`` line. Rank 0 decides and broadcasts the
choice, so all ranks load the same checkpoint.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import threading
import time
import uuid
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from .log import log

FORMAT = 1
MARKER = "COMPLETE"
NAME_RE = re.compile(r"^step_(\d{9})$")
TMP_TAG = ".tmp-"
TRASH_TAG = ".trash-"

# Test-only fault injection: sleep this many seconds after the data files of a
# checkpoint are written and before its marker (so a test can kill the writer
# while a checkpoint is incomplete). Optional list of steps it applies to.
FAULT_SLEEP_ENV = "TRAINKIT_FAULT_CKPT_SLEEP"
FAULT_STEPS_ENV = "TRAINKIT_FAULT_CKPT_STEPS"


def checkpoint_name(step: int) -> str:
    return f"step_{step:09d}"


def fsync_dir(path: Path) -> None:
    fd = os.open(str(path), os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_durable(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` and fsync it (no rename: for files inside a tmp folder)."""
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def atomic_write(path: Path, data: bytes) -> None:
    """Write a single file atomically: tmp file, fsync, rename, fsync the folder."""
    path = Path(path)
    tmp = path.with_name(path.name + TMP_TAG + uuid.uuid4().hex[:8])
    write_durable(tmp, data)
    os.replace(tmp, path)
    fsync_dir(path.parent)


def sha256_file(path: Path, bufsize: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(bufsize):
            h.update(chunk)
    return h.hexdigest()


@dataclass
class CheckpointInfo:
    path: Path
    step: int
    meta: dict = field(default_factory=dict)


def inspect_checkpoint(path: Path, verify_digests: bool = True) -> tuple[bool, str, dict]:
    """Whether ``path`` is a complete checkpoint: ``(ok, reason, marker)``."""
    path = Path(path)
    m = NAME_RE.match(path.name)
    if not m or not path.is_dir():
        return False, "not a checkpoint folder name", {}
    marker = path / MARKER
    try:
        meta = json.loads(marker.read_text())
    except FileNotFoundError:
        return False, "no COMPLETE marker", {}
    except (OSError, ValueError) as exc:
        return False, f"unreadable marker: {exc}", {}
    if meta.get("format") != FORMAT:
        return False, f"unknown format {meta.get('format')!r}", meta
    if meta.get("step") != int(m.group(1)):
        return False, "marker step does not match folder name", meta
    files = meta.get("files")
    if not isinstance(files, dict) or not files:
        return False, "marker lists no files", meta
    for rel, desc in files.items():
        f = path / rel
        try:
            size = f.stat().st_size
        except FileNotFoundError:
            return False, f"missing file {rel}", meta
        if size != desc.get("size"):
            return False, f"size mismatch for {rel}: {size} != {desc.get('size')}", meta
        if verify_digests and desc.get("sha256") and sha256_file(f) != desc["sha256"]:
            return False, f"sha256 mismatch for {rel}", meta
    return True, "ok", meta


def list_checkpoints(root: Path, verify_digests: bool = False, report: bool = False) -> list[CheckpointInfo]:
    """Complete checkpoints under ``root``, oldest first."""
    root = Path(root)
    if not root.is_dir():
        return []
    found = []
    for entry in root.iterdir():
        if not NAME_RE.match(entry.name):
            continue
        ok, reason, meta = inspect_checkpoint(entry, verify_digests=verify_digests)
        if ok:
            found.append(CheckpointInfo(entry, meta["step"], meta))
        elif report:
            log("RESUME", rank=0, skip=str(entry), reason=reason)
    found.sort(key=lambda c: c.step)
    return found


def latest_checkpoint(root: Path, verify_digests: bool = True, report: bool = False) -> CheckpointInfo | None:
    """The newest complete checkpoint, verifying lazily from the newest down."""
    root = Path(root)
    if not root.is_dir():
        return None
    candidates = sorted((e for e in root.iterdir() if NAME_RE.match(e.name)),
                        key=lambda e: e.name, reverse=True)
    for entry in candidates:
        ok, reason, meta = inspect_checkpoint(entry, verify_digests=verify_digests)
        if ok:
            return CheckpointInfo(entry, meta["step"], meta)
        if report:
            log("RESUME", rank=0, skip=str(entry), reason=reason)
    return None


def clean_stale(root: Path) -> list[Path]:
    """Remove folders left by interrupted writes or deletions (``*.tmp-*``, ``*.trash-*``).

    Call only when no checkpoint of this job is being written (at start-up,
    before the first save of a new worker group).
    """
    root = Path(root)
    removed = []
    if not root.is_dir():
        return removed
    for entry in root.iterdir():
        if TMP_TAG in entry.name or TRASH_TAG in entry.name:
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                entry.unlink(missing_ok=True)
            removed.append(entry)
    return removed


def prune(root: Path, keep_last: int) -> list[Path]:
    """Delete all but the newest ``keep_last`` complete checkpoints."""
    if keep_last < 1:
        raise ValueError("keep_last must be at least 1")
    complete = list_checkpoints(root)
    removed = []
    for info in complete[:-keep_last]:
        trash = info.path.with_name(info.path.name + TRASH_TAG + uuid.uuid4().hex[:8])
        os.rename(info.path, trash)          # no longer a candidate for resume
        shutil.rmtree(trash, ignore_errors=True)
        removed.append(info.path)
    if removed:
        fsync_dir(Path(root))
    return removed


def tmp_sibling(final: Path) -> Path:
    """Where to write ``final`` before it is swapped in (``clean_stale`` removes what a crash leaves)."""
    return final.with_name(final.name + TMP_TAG + uuid.uuid4().hex[:8])


def swap_in(tmp_dir: Path, final_dir: Path) -> None:
    """Put the finished folder ``tmp_dir`` at ``final_dir``: an existing one is renamed away (to a
    ``*.trash-*`` name, never a resume candidate) and deleted, then ``tmp_dir`` renamed into place."""
    if final_dir.exists():
        trash = final_dir.with_name(final_dir.name + TRASH_TAG + uuid.uuid4().hex[:8])
        os.rename(final_dir, trash)
        shutil.rmtree(trash, ignore_errors=True)
    os.rename(tmp_dir, final_dir)
    fsync_dir(final_dir.parent)


def publish(tmp_dir: Path, final_dir: Path, meta: dict, digests: dict[str, str] | None = None,
            fault_hook: Callable[[str], None] | None = None) -> None:
    """Write the marker into ``tmp_dir`` (listing every file in it) and rename it to ``final_dir``."""
    digests = digests or {}
    files = {}
    for f in sorted(tmp_dir.rglob("*")):
        if f.is_file():
            rel = f.relative_to(tmp_dir).as_posix()
            desc = {"size": f.stat().st_size}
            if rel in digests:
                desc["sha256"] = digests[rel]
            files[rel] = desc
    for sub in sorted({p.parent for p in tmp_dir.rglob("*") if p.is_file()}, reverse=True):
        fsync_dir(sub)
    marker = dict(meta, format=FORMAT, files=files, created=time.time())
    write_durable(tmp_dir / MARKER, json.dumps(marker, indent=1, sort_keys=True).encode())
    fsync_dir(tmp_dir)
    if fault_hook:
        fault_hook("marker_written")
    if final_dir.exists():
        # The same step again (a resumed job re-saving its resume point): keep the
        # existing complete one, drop this copy.
        ok, _, _ = inspect_checkpoint(final_dir, verify_digests=False)
        if ok:
            shutil.rmtree(tmp_dir, ignore_errors=True)
            return
    swap_in(tmp_dir, final_dir)
    if fault_hook:
        fault_hook("renamed")


def _fault_sleep(step: int) -> None:
    secs = float(os.environ.get(FAULT_SLEEP_ENV, "0") or 0)
    if secs <= 0:
        return
    steps = os.environ.get(FAULT_STEPS_ENV, "").strip()
    if steps and step not in {int(s) for s in steps.split(",") if s.strip()}:
        return
    time.sleep(secs)


class CheckpointManager:
    """Writes and finds checkpoints for one training job.

    ``mode="single"``: rank 0 writes whole-state files (DDP; all ranks hold the
    full state). ``mode="dcp"``: every rank writes its shards with
    ``torch.distributed.checkpoint`` (FSDP), rank 0 adds its own files and
    publishes. With ``async_save`` the training thread only serialises (single)
    or stages (DCP) the state; writing, fsync, marker and rename happen in the
    background, and at most one save is in flight.
    """

    def __init__(self, root: str | os.PathLike, *, rank: int = 0, world_size: int = 1,
                 keep_last: int = 3, mode: str = "single", async_save: bool = True,
                 process_group=None, fault_hook: Callable[[str], None] | None = None):
        if mode not in ("single", "dcp"):
            raise ValueError(mode)
        if keep_last < 1:
            raise ValueError("keep_last must be at least 1")
        self.root = Path(root)
        self.rank = rank
        self.world_size = world_size
        self.keep_last = keep_last
        self.mode = mode
        self.async_save = async_save
        self.process_group = process_group
        self.fault_hook = fault_hook
        self._thread: threading.Thread | None = None
        self._thread_error: BaseException | None = None
        self._dcp_future: Future | None = None
        self.last_published: CheckpointInfo | None = None
        self.stats: list[dict] = []
        if rank == 0:
            self.root.mkdir(parents=True, exist_ok=True)

    # -- finding ---------------------------------------------------------
    def start_fresh_incarnation(self) -> None:
        """Rank 0 removes leftovers of interrupted writes; call before the first save."""
        if self.rank == 0:
            for p in clean_stale(self.root):
                log("CKPT", rank=0, removed_stale=str(p))

    def find_latest(self) -> CheckpointInfo | None:
        """The newest complete checkpoint, as decided by rank 0 (a collective when distributed)."""
        info = None
        if self.rank == 0:
            info = latest_checkpoint(self.root, verify_digests=True, report=True)
        if self.world_size > 1:
            import torch.distributed as dist
            box = [None if info is None else (str(info.path), info.step, info.meta)]
            dist.broadcast_object_list(box, src=0, group=self.process_group)
            info = None if box[0] is None else CheckpointInfo(Path(box[0][0]), box[0][1], box[0][2])
        return info

    # -- writing ---------------------------------------------------------
    def wait(self) -> None:
        """Block until the save in flight (if any) is durable and published."""
        if self._dcp_future is not None:
            fut, self._dcp_future = self._dcp_future, None
            fut.result()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self._thread_error is not None:
            err, self._thread_error = self._thread_error, None
            raise RuntimeError("checkpoint write failed") from err

    def _token(self) -> str:
        token = uuid.uuid4().hex[:12]
        if self.world_size > 1 and self.mode == "dcp":
            import torch.distributed as dist
            box = [token]
            dist.broadcast_object_list(box, src=0, group=self.process_group)
            token = box[0]
        return token

    def save(self, step: int, files: dict[str, bytes], meta: dict, dcp_state: dict | None = None,
             sync: bool = False, t_start: float | None = None) -> float:
        """Save checkpoint ``step``. Call on every rank.

        ``files``: rank 0's whole files (name -> bytes), ignored on other ranks.
        ``dcp_state``: the sharded state dict (``mode="dcp"`` only).
        ``t_start``: ``time.perf_counter()`` when the caller began preparing the
        state (serialising counts as blocking). Returns the seconds the caller was blocked.
        """
        t0 = time.perf_counter() if t_start is None else t_start
        self.wait()                       # at most one save in flight
        name = checkpoint_name(step)
        token = self._token()
        tmp = self.root / f"{name}{TMP_TAG}{token}"
        final = self.root / name
        use_async = self.async_save and not sync
        if self.rank == 0:
            tmp.mkdir(parents=True, exist_ok=True)   # DCP ranks may create it first (unique token)
            log("CKPT", rank=0, step=step, phase="writing", path=str(tmp))
        if self.mode == "dcp":
            if dcp_state is None:
                raise ValueError("dcp mode needs dcp_state")
            import torch.distributed.checkpoint as dcp
            writer = dcp.FileSystemWriter(str(tmp / "dcp"), sync_files=True)
            if use_async:
                res = dcp.async_save(dcp_state, storage_writer=writer, process_group=self.process_group)
                fut = getattr(res, "upload_completion", res)
            else:
                dcp.save(dcp_state, storage_writer=writer, process_group=self.process_group)
                fut = Future()
                fut.set_result(None)
            if self.rank != 0:
                self._dcp_future = fut if use_async else None
                return time.perf_counter() - t0
        else:
            fut = None
            if self.rank != 0:
                return time.perf_counter() - t0
        blocking = time.perf_counter() - t0
        meta = dict(meta, step=step, world_size=self.world_size, mode=self.mode)

        def finish():
            t1 = time.perf_counter()
            try:
                if fut is not None:
                    fut.result()
                digests = {}
                for rel, data in files.items():
                    write_durable(tmp / rel, data)
                    digests[rel] = hashlib.sha256(data).hexdigest()
                if self.fault_hook:
                    self.fault_hook("data_written")
                _fault_sleep(step)
                publish(tmp, final, meta, digests, self.fault_hook)
                info = CheckpointInfo(final, step, meta)
                self.last_published = info
                removed = prune(self.root, self.keep_last)
                write_s = time.perf_counter() - t1
                nbytes = sum(f.stat().st_size for f in final.rglob("*") if f.is_file())
                self.stats.append({"step": step, "blocking_s": blocking, "write_s": write_s, "bytes": nbytes})
                log("CKPT", rank=0, step=step, phase="complete", reason=meta.get("reason"), path=str(final),
                    blocking_s=round(blocking, 4), write_s=round(write_s, 4), bytes=nbytes,
                    pruned=",".join(p.name for p in removed) or None)
            except BaseException as exc:  # surfaced by wait()
                self._thread_error = exc
                log("WARN", rank=0, step=step, ckpt_error=repr(exc))

        if use_async:
            self._thread = threading.Thread(target=finish, name=f"ckpt-{step}", daemon=True)
            self._thread.start()
        else:
            finish()
            if self._thread_error is not None:
                self.wait()
        return blocking
