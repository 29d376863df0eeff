"""The shared module, tested directly: log format, atomic writes under injected crashes,
keep-N, resume selection, the elastic sampler and the weights digest."""
from __future__ import annotations

import json
import subprocess
import textwrap

import pytest
import torch

from training_harness import PYTHON, TRAINING, base_env

from trainkit import checkpoint as ck
from trainkit.log import format_line, parse_line
from trainkit.loop import weights_digest
from trainkit.sampler import ElasticSampler

pytestmark = pytest.mark.timeout(60)


# -- log ------------------------------------------------------------------------
def test_log_line_round_trips_and_starts_with_its_tag():
    line = format_line("DONE", {"rank": 0, "final_loss": 0.125, "weights_sha256": "ab" * 32,
                                "source": "/a b/c", "ok": True, "skip": None})
    assert line.startswith("[DONE] rank=0 final_loss=0.125 weights_sha256=")
    tag, fields = parse_line(line)
    assert tag == "DONE"
    assert fields["final_loss"] == "0.125" and fields["source"] == "/a b/c" and fields["ok"] == "true"
    assert "skip" not in fields and "ts" in fields
    with pytest.raises(ValueError):
        format_line("NOPE", {})
    assert parse_line("[rank0]: Traceback") is None


# -- checkpoints ----------------------------------------------------------------
def _save(root, step, keep=3, payload=b"x", hook=None):
    m = ck.CheckpointManager(root, keep_last=keep, async_save=False, fault_hook=hook)
    m.save(step, {"trainer.pt": payload + str(step).encode(), "model_optim.pt": b"m" * 100}, {"epoch": 0})
    return m


def _crash_in_child(root, step, stage):
    """Save ``step`` in a child process that dies (os._exit) at ``stage`` of the protocol."""
    code = textwrap.dedent(f"""
        import os, sys
        sys.path.insert(0, {str(TRAINING)!r})
        from trainkit.checkpoint import CheckpointManager
        def hook(stage):
            if stage == {stage!r}:
                os._exit(9)
        m = CheckpointManager({str(root)!r}, keep_last=3, async_save=False, fault_hook=hook)
        m.save({step}, {{"trainer.pt": b"t", "model_optim.pt": b"m" * 1000}}, {{"epoch": 0}})
        os._exit(0)
    """)
    r = subprocess.run([PYTHON, "-c", code], env=base_env(), timeout=60, capture_output=True)
    return r.returncode


@pytest.mark.parametrize("stage", ["data_written", "marker_written"])
def test_crash_during_save_leaves_previous_checkpoint_as_latest(tmp_path, stage):
    _save(tmp_path, 10)
    assert _crash_in_child(tmp_path, 20, stage) == 9
    partial = [p for p in tmp_path.iterdir() if ck.TMP_TAG in p.name]
    assert len(partial) == 1 and partial[0].name.startswith("step_000000020")
    assert (partial[0] / ck.MARKER).exists() == (stage == "marker_written")
    latest = ck.latest_checkpoint(tmp_path)
    assert latest.step == 10
    assert [c.step for c in ck.list_checkpoints(tmp_path)] == [10]
    # the next incarnation cleans the leftovers before saving again
    m = ck.CheckpointManager(tmp_path, keep_last=3, async_save=False)
    m.start_fresh_incarnation()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["step_000000010"]


def test_clean_stale_removes_tmp_folders_and_links_and_swap_in_replaces(tmp_path):
    keep = tmp_path / "best-step_000000020"
    keep.mkdir()
    half = ck.tmp_sibling(tmp_path / "best-step_000000030")
    half.mkdir()
    link = ck.tmp_sibling(tmp_path / ".best")
    link.symlink_to(keep.name)                    # a symlink swap cut short: remove the link, not its target
    removed = ck.clean_stale(tmp_path)
    assert sorted(p.name for p in removed) == sorted([half.name, link.name])
    assert sorted(p.name for p in tmp_path.iterdir()) == [keep.name]
    new = ck.tmp_sibling(keep)
    new.mkdir()
    (new / "x").write_text("new")
    ck.swap_in(new, keep)
    assert (keep / "x").read_text() == "new" and sorted(p.name for p in tmp_path.iterdir()) == [keep.name]


def test_crash_after_rename_means_checkpoint_is_complete(tmp_path):
    _save(tmp_path, 10)
    assert _crash_in_child(tmp_path, 20, "renamed") == 9
    assert ck.latest_checkpoint(tmp_path).step == 20


def test_atomic_write_keeps_old_content_when_interrupted(tmp_path, monkeypatch):
    target = tmp_path / "f.bin"
    ck.atomic_write(target, b"old")

    def boom(*a, **k):
        raise OSError("injected crash before rename")

    monkeypatch.setattr(ck.os, "replace", boom)
    with pytest.raises(OSError):
        ck.atomic_write(target, b"new content")
    assert target.read_bytes() == b"old"
    monkeypatch.undo()
    ck.atomic_write(target, b"new")
    assert target.read_bytes() == b"new"


def test_keep_last_n(tmp_path):
    for step in (5, 10, 15, 20, 25):
        _save(tmp_path, step, keep=2)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["step_000000020", "step_000000025"]
    with pytest.raises(ValueError):
        ck.CheckpointManager(tmp_path, keep_last=0)


def test_resume_selection_skips_incomplete_and_corrupt(tmp_path):
    for step in (10, 20, 30):
        _save(tmp_path, step, keep=5)
    # a newer folder without a marker, a newer temporary folder, a stray file
    (tmp_path / "step_000000050").mkdir()
    (tmp_path / "step_000000050" / "trainer.pt").write_bytes(b"half")
    (tmp_path / "step_000000060.tmp-abc").mkdir()
    (tmp_path / "notes.txt").write_text("x")
    assert ck.latest_checkpoint(tmp_path).step == 30
    # truncated file: size no longer matches the marker
    with open(tmp_path / "step_000000030" / "model_optim.pt", "r+b") as f:
        f.truncate(10)
    assert ck.latest_checkpoint(tmp_path).step == 20
    # same size, different bytes: caught by the sha256 in the marker
    p = tmp_path / "step_000000020" / "model_optim.pt"
    p.write_bytes(b"n" * p.stat().st_size)
    assert ck.latest_checkpoint(tmp_path, verify_digests=False).step == 20
    assert ck.latest_checkpoint(tmp_path, verify_digests=True).step == 10
    # a marker claiming another step is rejected
    meta = json.loads((tmp_path / "step_000000010" / ck.MARKER).read_text())
    meta["step"] = 11
    (tmp_path / "step_000000010" / ck.MARKER).write_text(json.dumps(meta))
    assert ck.latest_checkpoint(tmp_path) is None
    assert ck.latest_checkpoint(tmp_path / "missing") is None


def test_async_save_publishes_in_background_and_resaving_a_step_is_harmless(tmp_path):
    m = ck.CheckpointManager(tmp_path, keep_last=3, async_save=True)
    m.save(7, {"trainer.pt": b"a", "model_optim.pt": b"b" * 4096}, {"epoch": 1})
    m.wait()
    info = ck.latest_checkpoint(tmp_path)
    assert info.step == 7 and info.meta["epoch"] == 1 and set(info.meta["files"]) == {"trainer.pt", "model_optim.pt"}
    assert info.meta["files"]["model_optim.pt"]["size"] == 4096
    m.save(7, {"trainer.pt": b"other", "model_optim.pt": b"c"}, {"epoch": 1})
    m.wait()
    assert (tmp_path / "step_000000007" / "trainer.pt").read_bytes() == b"a"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["step_000000007"]


def test_fault_sleep_env_delays_only_the_named_steps(tmp_path, monkeypatch):
    import time
    monkeypatch.setenv(ck.FAULT_SLEEP_ENV, "0.5")
    monkeypatch.setenv(ck.FAULT_STEPS_ENV, "2")
    t0 = time.perf_counter()
    _save(tmp_path, 1)
    t1 = time.perf_counter()
    _save(tmp_path, 2)
    t2 = time.perf_counter()
    assert t1 - t0 < 0.4 <= t2 - t1


# -- sampler --------------------------------------------------------------------
def _drain(sampler, world, steps=None):
    seen, n = [], 0
    while not sampler.epoch_done and (steps is None or n < steps):
        batches = []
        state = sampler.state_dict()
        for rank in range(world):
            s = ElasticSampler(sampler.num_samples, sampler.batch_size, sampler.seed)
            s.load_state_dict(state)
            batches.append(s.next_batch(rank, world))
        sampler.next_batch(0, world)
        assert len({b.global_count for b in batches}) == 1
        assert sum(len(b.indices) for b in batches) == batches[0].global_count
        seen += [i for b in batches for i in b.indices]
        n += 1
    return seen


@pytest.mark.parametrize("n,batch,w1,w2", [(103, 4, 2, 3), (100, 5, 4, 1), (37, 8, 1, 4), (10, 4, 3, 2)])
def test_sampler_reshards_without_skipping_or_repeating(n, batch, w1, w2):
    s = ElasticSampler(n, batch, seed=3)
    first = _drain(s, w1, steps=2)
    state = s.state_dict()
    resumed = ElasticSampler(n, batch, seed=3)
    resumed.load_state_dict(state)
    rest = _drain(resumed, w2)
    assert sorted(first + rest) == list(range(n))
    # what was consumed before the restart is exactly a prefix of the epoch's permutation
    assert sorted(first) == sorted(s.permutation(0).tolist()[:len(first)])


def test_sampler_epochs_and_state_checks():
    s = ElasticSampler(50, 10, seed=1)
    p0 = s.permutation(0).tolist()
    _drain(s, 2)
    s.end_epoch()
    assert s.epoch == 1 and s.consumed == 0 and s.permutation(1).tolist() != p0
    with pytest.raises(ValueError):
        ElasticSampler(51, 10, seed=1).load_state_dict(s.state_dict())
    with pytest.raises(ValueError):
        ElasticSampler(50, 10, seed=2).load_state_dict(s.state_dict())


# -- digest -----------------------------------------------------------------------
def test_weights_digest_is_canonical_and_sensitive():
    torch.manual_seed(0)
    a = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 2))
    b = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 2))
    b.load_state_dict(a.state_dict())
    assert weights_digest(a) == weights_digest(b)
    with torch.no_grad():
        w = b[0].weight.view(-1)
        w[0] = torch.nextafter(w[0], torch.tensor(float("inf")))   # one ulp
    assert weights_digest(a) != weights_digest(b)


# -- launcher -----------------------------------------------------------------------
def test_fast_rendezvous_poll_patches_this_torch(monkeypatch):
    """trainkit/torchrun.py patches two private torch internals; fail loudly if a torch upgrade moved them."""
    import time

    from torch.distributed.elastic.rendezvous import dynamic_rendezvous as dr

    from trainkit.torchrun import patch_rendezvous_poll

    monkeypatch.setattr(dr, "_delay", dr._delay)                      # restored after the test
    monkeypatch.setattr(dr._BackendRendezvousStateHolder, "__init__", dr._BackendRendezvousStateHolder.__init__)
    assert patch_rendezvous_poll(0.05)
    t0 = time.perf_counter()
    dr._delay(seconds=1)
    assert time.perf_counter() - t0 < 0.5
    holder = dr._BackendRendezvousStateHolder(backend=None, settings=None)
    assert holder._cache_duration == 0.05
