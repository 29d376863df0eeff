"""The fault-tolerance mode's pieces in process, no Lighthouse: the sampler's deal-then-advance, the flags'
one-line errors, the Lighthouse probe, and moving sharded (DTensor) state between replica groups, also into
an optimizer that has no state yet (a group healed before its first step)."""
from __future__ import annotations

import argparse
import io
import socket

import pytest
import torch

from trainkit.args import add_common_args, check_ft_args
from trainkit.sampler import ElasticSampler

pytestmark = pytest.mark.timeout(60)


def test_peek_deals_without_moving_and_advance_takes_only_the_next_batch():
    s = ElasticSampler(10, batch_size=2, seed=3)
    a = s.peek_batch(1, world_size=2)
    assert s.consumed == 0 and a == s.peek_batch(1, world_size=2)
    assert a.world_size == 2 and a.global_count == 4 and len(a.indices) == 2
    idle = s.peek_batch(None, world_size=2)          # a healing group: counted in the step, no sample
    assert idle.indices == [] and idle.global_count == 4
    s.advance(idle)
    assert s.consumed == 4
    with pytest.raises(RuntimeError):
        s.advance(a)                                 # dealt at position 0, the sampler is at 4 now
    # the step dealt over 3 ranks (one more group came back): no sample of the epoch skipped or repeated
    seen = []
    while not s.epoch_done:
        b = [s.peek_batch(r, world_size=3) for r in range(3)]
        seen += [i for x in b for i in x.indices]
        s.advance(b[0])
    first = s.permutation(0)[:4].tolist()
    assert sorted(seen + first) == list(range(10))


def _parser():
    p = argparse.ArgumentParser(prog="sample")
    add_common_args(p, epochs=1, batch_size=1, lr=0.1, checkpoint_every=1)
    return p


@pytest.mark.parametrize("argv,says", [
    (["--num-replica-groups", "2", "--lighthouse", "http://lh:29510"], "--replica-group-id"),
    (["--replica-group-id", "0", "--lighthouse", "http://lh:29510"], "--num-replica-groups"),
    (["--replica-group-id", "2", "--num-replica-groups", "2", "--lighthouse", "http://lh:29510"], "outside 0..1"),
    (["--replica-group-id", "0", "--num-replica-groups", "2", "--min-replica-groups", "3",
      "--lighthouse", "http://lh:29510"], "--min-replica-groups 3"),
    (["--replica-group-id", "0", "--num-replica-groups", "2"], "--lighthouse"),
    (["--replica-group-id", "0", "--num-replica-groups", "2", "--lighthouse", "http://lh:29510",
      "--audit-samples"], "--audit-samples"),
])
def test_a_replica_group_setting_that_cannot_work_is_one_line(argv, says, capsys, monkeypatch):
    for name in ("REPLICA_GROUP_ID", "NUM_REPLICA_GROUPS", "TORCHFT_LIGHTHOUSE", "TRAINKIT_FT_MIN_GROUPS"):
        monkeypatch.delenv(name, raising=False)
    p = _parser()
    args = p.parse_args(["--fault-tolerance", "torchft", *argv])
    with pytest.raises(SystemExit) as exc:
        check_ft_args(args, p)
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert says in err[-1] and "Traceback" not in "\n".join(err)


def test_the_settings_come_from_the_environment_the_manifests_set(monkeypatch):
    monkeypatch.setenv("TRAINKIT_FAULT_TOLERANCE", "torchft")
    monkeypatch.setenv("REPLICA_GROUP_ID", "3")
    monkeypatch.setenv("NUM_REPLICA_GROUPS", "4")
    monkeypatch.setenv("TRAINKIT_FT_MIN_GROUPS", "2")
    monkeypatch.setenv("TORCHFT_LIGHTHOUSE", "http://lighthouse:29510")
    p = _parser()
    args = p.parse_args([])
    check_ft_args(args, p)
    assert (args.fault_tolerance, args.replica_group_id, args.num_replica_groups, args.min_replica_groups,
            args.lighthouse) == ("torchft", 3, 4, 2, "http://lighthouse:29510")
    monkeypatch.setenv("REPLICA_GROUP_ID", "x")
    with pytest.raises(SystemExit, match="REPLICA_GROUP_ID='x' is not a int"):
        _parser()


def test_lighthouse_probe_and_the_wait_for_it():
    from trainkit.ft import lighthouse_reachable, wait_for_lighthouse
    with socket.socket() as srv:
        srv.bind(("127.0.0.1", 0))
        srv.listen()
        port = srv.getsockname()[1]
        assert lighthouse_reachable(f"http://127.0.0.1:{port}")
        wait_for_lighthouse(f"http://127.0.0.1:{port}", 1.0, rank=0)
    assert not lighthouse_reachable(f"http://127.0.0.1:{port}")
    with pytest.raises(SystemExit, match="did not answer within 1 s"):
        wait_for_lighthouse(f"http://127.0.0.1:{port}", 0.6, rank=0)


@pytest.fixture
def world_of_one():
    import torch.distributed as dist
    assert not dist.is_initialized()
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    yield
    dist.destroy_process_group()


def test_sharded_state_moves_between_groups_also_into_an_optimizer_without_state(world_of_one):
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard
    from trainkit.loop import _rewrap, _rewrap_optim, _to_local

    def make():
        torch.manual_seed(0)
        m = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Linear(8, 2))
        fully_shard(m, mesh=init_device_mesh("cpu", (1,)))
        return m, torch.optim.AdamW(m.parameters(), lr=0.1)
    src, src_opt = make()
    for _ in range(3):                                  # the healthy group has trained
        src(torch.randn(5, 4)).sum().backward()
        src_opt.step()
        src_opt.zero_grad()
    sent = {"model": _to_local(src.state_dict()), "optim": _to_local(src_opt.state_dict())}
    assert not any(hasattr(v, "to_local") for v in sent["model"].values())   # plain tensors travel
    buf = io.BytesIO()                                 # ... as copies (the transport sends bytes)
    torch.save(sent, buf)
    sent = torch.load(io.BytesIO(buf.getvalue()), weights_only=False)
    dst, dst_opt = make()
    assert dst_opt.state_dict()["state"] == {}         # healed before its first step
    dst.load_state_dict(_rewrap(sent["model"], dst.state_dict()))
    dst_opt.load_state_dict(_rewrap_optim(sent["optim"], dst_opt))
    x = torch.randn(5, 4)
    for m, o in ((src, src_opt), (dst, dst_opt)):       # the next step is the same step on both
        m(x).sum().backward()
        o.step()
    for a, b in zip(src.parameters(), dst.parameters()):
        assert torch.equal(a.full_tensor(), b.full_tensor())
    assert all(hasattr(v, "to_local") for st in dst_opt.state.values() for k, v in st.items() if k != "step")
