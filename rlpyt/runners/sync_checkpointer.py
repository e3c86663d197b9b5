"""Whole-run checkpoints of a data-parallel run: rank 0's state plus one part per other
rank (its envs, replay, random streams and optimizer), appearing whole or not at all.

Both operations are collective: every rank calls them at the same iteration.  The run
directory must be on a file system every rank can reach.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import torch.distributed as dist

from rlpyt.runners import checkpoint_files as ckpt
from rlpyt.runners.checkpointer import Checkpointer
from rlpyt.runners.sync_ranks import SyncRlError
from rlpyt.utils.logging import logger

__all__ = ["RankCheckpointer", "from_rank0"]


def from_rank0(value):
    """Rank 0's ``value`` on every rank (a picklable object)."""
    box = [value]
    dist.broadcast_object_list(box, src=0)
    return box[0]


class RankCheckpointer(Checkpointer):
    """``Checkpointer`` for the ranks of a ``SyncRl`` run; ``bind`` it to the rank first."""

    rank, world_size = 0, 1

    def bind(self, rank: int, world_size: int) -> None:
        self.rank, self.world_size = rank, world_size

    def save(self, itr: int, make_state: Callable[[], dict], replay) -> str | None:
        """Every rank other than 0 writes its own part with ``checkpoint.write_part``;
        rank 0 writes its state and moves the parts in as ``rank_<r>/``."""
        run_dir = from_rank0(logger.get_snapshot_dir() if self.rank == 0 else None)
        if run_dir is None:
            return None
        replay = replay if self.include_replay else None
        part = (ckpt.write_part(run_dir, itr, make_state(), replay) if self.rank > 0 else None)
        parts = [None] * self.world_size
        dist.all_gather_object(parts, part)
        outcome = None
        if self.rank == 0:
            unseen = {r: p for r, p in enumerate(parts) if r > 0 and not os.path.isdir(p)}
            if unseen:
                outcome = ("error", f"SyncRl: rank 0 cannot see the checkpoint parts of ranks "
                                    f"{sorted(unseen)} ({sorted(unseen.values())}): checkpoints "
                                    f"need a run directory shared by every node")
            else:
                path = ckpt.save_checkpoint(
                    run_dir, itr, make_state(), replay, keep=self.keep,
                    parts={f"rank_{r}": p for r, p in enumerate(parts) if r > 0})
                logger.log(f"checkpoint written: {path} ({self.world_size} ranks)")
                outcome = ("ok", path)
        kind, value = from_rank0(outcome)
        if kind == "error":
            raise SyncRlError(value)
        self.last = value
        return value

    def find(self, resume) -> dict | None:
        """Rank 0 finds the checkpoint (as ``Checkpointer.find``); every other rank then
        loads its own part of it.  The run must have the ranks that wrote it."""
        outcome = state = None
        if self.rank == 0:
            try:
                state = super().find(resume)
                outcome = ("ok", None if state is None else
                           (state["_path"], state.get("world_size", 1)))
            except Exception as e:  # Every rank must raise, not wait on rank 0.
                outcome = ("error", f"{type(e).__name__}: {e}")
        kind, found = from_rank0(outcome)
        if kind == "error":
            raise ValueError(f"SyncRl resume: {found}")
        if found is None:
            return None
        path, world_size = found
        if world_size != self.world_size:
            raise ValueError(
                f"SyncRl resume: checkpoint {path} was written by {world_size} rank(s) and "
                f"this run has {self.world_size}; resume it with {world_size} ranks (each "
                f"rank continues its own envs, replay and random streams)")
        if self.rank == 0:
            return state
        state = ckpt.load_checkpoint(os.path.join(path, f"rank_{self.rank}"))
        self.last = state["_path"]
        return state
