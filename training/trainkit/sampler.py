"""A data sampler whose position survives a restart with a different world size.

Each epoch has one global permutation of the dataset (seeded by ``seed`` and
the epoch). The sampler's state is ``(epoch, consumed)``: how many samples of
that permutation the whole job has already trained on. A step takes the next
``world_size * batch_size`` samples of the permutation and deals them out to
the ranks (rank ``r`` gets every ``world_size``-th one, starting at ``r``).

Because what has been consumed is always a prefix of the permutation, a job
restarted from a checkpoint with another world size carries on from
``consumed`` and re-shards only the rest: no sample of the epoch is skipped
and none is seen twice. The last step of an epoch may be short and uneven
(ranks differ by at most one sample, a rank may get none); the samples
normalise the loss by the global count, so that step is still exact.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass
class Batch:
    indices: list[int]      # this rank's samples
    global_count: int       # samples in the step over all ranks
    epoch: int
    start: int              # position in the epoch's permutation where the step starts
    world_size: int = 1     # ranks whose gradients the step averages: scale a loss sum by world_size / global_count


class ElasticSampler:
    def __init__(self, num_samples: int, batch_size: int, seed: int = 0, shuffle: bool = True):
        if num_samples <= 0 or batch_size <= 0:
            raise ValueError("num_samples and batch_size must be positive")
        self.num_samples = num_samples
        self.batch_size = batch_size
        self.seed = seed
        self.shuffle = shuffle
        self.epoch = 0
        self.consumed = 0
        self._perm_epoch = None
        self._perm = None

    # -- state -----------------------------------------------------------
    def state_dict(self) -> dict:
        return {"epoch": self.epoch, "consumed": self.consumed,
                "num_samples": self.num_samples, "seed": self.seed, "shuffle": self.shuffle}

    def load_state_dict(self, state: dict) -> None:
        if state["num_samples"] != self.num_samples:
            raise ValueError(f"checkpoint was taken on {state['num_samples']} samples, "
                             f"this dataset has {self.num_samples}")
        if state["seed"] != self.seed or state["shuffle"] != self.shuffle:
            raise ValueError("checkpoint was taken with another data seed/shuffle setting")
        self.epoch = int(state["epoch"])
        self.consumed = int(state["consumed"])

    # -- iteration -------------------------------------------------------
    def permutation(self, epoch: int) -> torch.Tensor:
        if self._perm_epoch != epoch:
            if self.shuffle:
                g = torch.Generator()
                g.manual_seed(self.seed * 100_003 + epoch)
                self._perm = torch.randperm(self.num_samples, generator=g)
            else:
                self._perm = torch.arange(self.num_samples)
            self._perm_epoch = epoch
        return self._perm

    def steps_left_in_epoch(self, world_size: int) -> int:
        left = self.num_samples - self.consumed
        per_step = world_size * self.batch_size
        return (left + per_step - 1) // per_step

    def next_batch(self, rank: int, world_size: int) -> Batch:
        """This rank's share of the next step; advances the position."""
        batch = self.peek_batch(rank, world_size)
        self.advance(batch)
        return batch

    def peek_batch(self, rank: int | None, world_size: int) -> Batch:
        """This rank's share of the next step over ``world_size`` ranks, without advancing (``rank``
        None: a rank that takes no part in the step gets no sample); ``advance`` once the step counts."""
        if self.consumed >= self.num_samples:
            raise RuntimeError("epoch exhausted; call end_epoch() first")
        perm = self.permutation(self.epoch)
        start = self.consumed
        chunk = perm[start:start + world_size * self.batch_size]
        mine = [] if rank is None else chunk[rank::world_size].tolist()
        return Batch(indices=mine, global_count=len(chunk), epoch=self.epoch, start=start, world_size=world_size)

    def advance(self, batch: Batch) -> None:
        if batch.epoch != self.epoch or batch.start != self.consumed:
            raise RuntimeError(f"batch at epoch {batch.epoch} position {batch.start} is not the next one "
                               f"(epoch {self.epoch}, position {self.consumed})")
        self.consumed += batch.global_count

    @property
    def epoch_done(self) -> bool:
        return self.consumed >= self.num_samples

    def end_epoch(self) -> None:
        self.epoch += 1
        self.consumed = 0
