"""A runner's whole-run checkpoints: when to write one, where a resume continues from,
and whether the run it continues is already complete.

The files themselves (their layout, atomic writes, random and sampler state) are
``rlpyt.runners.checkpoint_files``'s; the runner says what goes into one
(``checkpoint_state``) and restores it.  See docs/runners.md, "Checkpoints and resume".
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable

from rlpyt.runners import checkpoint_files as ckpt
from rlpyt.utils.logging import logger
from rlpyt.utils.logging.run_dir import STATE_FILE, CheckpointUnreadableError

__all__ = ["Checkpointer", "load_newest_readable", "resume_is_complete"]


def resume_is_complete(state: dict, n_steps: int, itr_batch_size: int) -> bool:
    """Whether the checkpoint ``state`` already holds all ``n_steps`` (then the run is
    complete); raises ``ValueError`` for an ``n_steps`` below it: a resumed run can only
    go on (an async sampler would wait for batches it never samples, a synchronous run
    would end without a word).  ``itr_batch_size``: env steps of one iteration, every
    rank's together."""
    n_itr = max(math.ceil(n_steps / itr_batch_size), 1)
    done_itrs, done_steps = state["itr"] + 1, state["cum_steps"]
    if n_itr < done_itrs:
        raise ValueError(
            f"n_steps={n_steps} is below the {done_steps} env steps the checkpoint "
            f"{state['_path']} already holds; a resumed run can only go on: pass "
            f"n_steps >= {done_steps} (--n-steps), or start a new run")
    if n_itr > done_itrs:
        return False
    logger.log(f"Resume: the run is already complete ({done_steps} env steps, "
               f"n_steps={n_steps}); nothing to train.  Pass a larger n_steps "
               f"(--n-steps) to train on.")
    return True


def load_newest_readable(path: str) -> dict:
    """The state of checkpoint directory ``path``, or of a run directory's newest
    checkpoint that can be read: an unreadable one (``CheckpointUnreadableError``) is
    passed over for the one before it, with a log line naming both.  A checkpoint named
    by its own directory is loaded or fails; no other is taken in its place."""
    kept = ckpt.list_checkpoints(path)
    if os.path.isfile(os.path.join(path, STATE_FILE)) or not kept:
        return ckpt.load_checkpoint(path)
    newest_first = [p for _, p in reversed(kept)]
    for checkpoint, previous in zip(newest_first, newest_first[1:]):
        try:
            return ckpt.load_checkpoint(checkpoint)
        except CheckpointUnreadableError as error:
            logger.log(f"Resume: {error}; falling back to the previous complete "
                       f"checkpoint, {previous}.")
    try:
        return ckpt.load_checkpoint(newest_first[-1])
    except CheckpointUnreadableError as error:
        earlier = ("no earlier checkpoint is kept (a run with checkpoint_keep=2 or more "
                   "keeps one to fall back to)" if len(newest_first) == 1 else
                   "and so is every earlier checkpoint kept")
        raise CheckpointUnreadableError(f"{error}; {earlier}") from error


class Checkpointer:
    """Writes a run's checkpoints into its run directory and finds the one to resume.

    Args:
        interval_steps: env steps between checkpoints, rounded to whole iterations (the
            last iteration is always checkpointed); 0: none.
        include_replay: write the algorithm's replay buffer too, so a resumed off-policy
            run continues exactly.
        keep: newest complete checkpoints kept; with 2 or more, a resume whose latest
            checkpoint cannot be read falls back to the one before it (each kept
            checkpoint holds its own copy of the replay buffer). Default 1.
    """

    def __init__(self, interval_steps: float, include_replay: bool = True, keep: int = 1):
        if not (isinstance(interval_steps, (int, float)) and interval_steps >= 0):
            raise ValueError(f"checkpoint_interval_steps={interval_steps!r} must be >= 0 env "
                             f"steps (0: no checkpoints)")
        if isinstance(keep, bool) or not isinstance(keep, int) or keep < 1:
            raise ValueError(f"checkpoint_keep={keep!r} must be an integer >= 1 (the newest "
                             f"complete checkpoints kept)")
        self.interval_steps = int(interval_steps)
        self.include_replay = bool(include_replay)
        self.keep = keep
        self.last: str | None = None  # the newest checkpoint written or resumed from
        self.interval_itrs = 0

    def start(self, n_itr: int, itr_batch_size: int) -> None:
        self.n_itr = n_itr
        self.interval_itrs = (max(round(self.interval_steps / itr_batch_size), 1)
                              if self.interval_steps else 0)

    def is_due(self, itr: int) -> bool:
        n = self.interval_itrs
        return bool(n) and ((itr + 1) % n == 0 or itr == self.n_itr - 1)

    def find(self, resume) -> dict | None:
        """The checkpoint ``train(resume=...)`` continues from: None for a fresh start.
        ``resume``: True (the current run directory's latest, none yet: a fresh start),
        a run or checkpoint directory, False, or None (``logger_context``'s request)."""
        if resume is None:
            resume = logger.resume_requested()
        if resume is False:
            return None
        if resume is True:
            run_dir = logger.get_snapshot_dir()
            if run_dir is None:
                raise ValueError("train(resume=True) needs a run directory: call it inside "
                                 "logger_context(..., resume=True), or pass resume=RUN_DIR")
            if ckpt.latest_checkpoint(run_dir) is None:
                logger.log(f"Resume: no checkpoint in {run_dir} yet; starting from the "
                           f"beginning.")
                logger.truncate_tabular_outputs(0)
                return None
            resume = run_dir
        state = load_newest_readable(str(resume))
        logger.log(f"Resuming from {state['_path']} (after iteration {state['itr']}, "
                   f"{state['cum_steps']} env steps).")
        self.last = state["_path"]
        return state

    def save(self, itr: int, make_state: Callable[[], dict], replay) -> str | None:
        """Write the checkpoint after iteration ``itr`` (``make_state()``'s dict and
        ``replay`` if replay is included) into the run directory, if there is one."""
        run_dir = logger.get_snapshot_dir()
        if run_dir is None:
            return None
        replay = replay if self.include_replay else None
        self.last = ckpt.save_checkpoint(run_dir, itr, make_state(), replay, keep=self.keep)
        logger.log(f"checkpoint written: {self.last}", routine=True)
        return self.last

    def load_replay(self, state: dict, replay) -> None:
        if replay is None:
            return
        if not ckpt.load_replay(state["_path"], replay):
            logger.log("Resume: the checkpoint holds no replay buffer (checkpoint_replay="
                       "False): replay starts empty, so the run is not exact.")

    def log_interrupted(self, itr: int | None) -> None:
        """Say what a resume continues from after Ctrl-C (``itr``: the iteration whose
        checkpoint was just written; None: interrupted mid-iteration)."""
        run_dir = logger.get_snapshot_dir()
        if run_dir is None:
            logger.log(f"Interrupted at iteration {itr}: no checkpoint, as the run has no run "
                       f"directory (train inside logger_context to have one).")
            return
        if itr is not None and self.last:
            logger.log(f"Interrupted after iteration {itr}: checkpoint {self.last}; "
                       f"a resume continues at iteration {itr + 1}.")
        elif self.last:
            logger.log(f"Interrupted mid-iteration: a resume continues from the last "
                       f"checkpoint, {self.last}.")
        if self.last:
            logger.log(f"Resume with `rlpyt train --resume {run_dir}` (a run of rlpyt train) "
                       f"or runner.train(resume={run_dir!r}) in a script.")
