"""Asynchronous runners: sampling and optimization at the same time, in separate processes.

``AsyncRl`` trains in the main process while a sampler process collects batches, and
a memory-copier process moves each batch into the replay buffer (or, for
``Impala``, into a queue of batches)::

    sampler process ──► double buffer (2 slots, shared) ──► memory copier ──► replay
          ▲  (Async...Sampler + its workers)                                  │
          └──────── parameter board (shared, versioned) ◄── optimizer (main) ◄┘

The replay ratio is held both ways (``rlpyt.samplers.async_.control_block.ThrottleSpec``):
the optimizer waits when sampling falls behind, the sampler when the optimizer falls
behind.  Log rows follow the sampler's iterations and add ``PolicyLag`` (versions the
acting parameters are behind the optimizer's), both processes' throughput and the
fraction of time each spent held back.  A fault in any process (an exception, a
kill, a hang past ``batch_timeout`` or a worker's ``step_timeout``, Ctrl-C) stops the run and raises here with the
failing process's traceback; every process is stopped and shared memory released.

Results depend on the timing of the two processes (which parameters act on which
batch), so an async run is not bit-reproducible from its seed; the envs and the
sampler's own random streams are still seeded from it.
"""

from __future__ import annotations

import time

from rlpyt.runners.async_base import AsyncRlBase
from rlpyt.runners.async_layout import split_affinity
from rlpyt.runners.async_processes import AsyncRunError, append_to_buffer
from rlpyt.samplers.async_.base import EvalItrs
from rlpyt.utils.logging import logger

__all__ = ["AsyncRl", "AsyncRlBase", "AsyncRlEval", "AsyncRunError", "EvalItrs",
           "append_to_buffer", "split_affinity"]


class AsyncRl(AsyncRlBase):
    """Asynchronous RL logging statistics of the latest training trajectories."""


class AsyncRlEval(AsyncRlBase):
    """Asynchronous RL with evaluation before training and every log interval.

    The sampler process evaluates (with the parameters of that moment, under the
    sampler's ``eval_*`` settings) and sends the trajectories here; the optimizer
    goes on training meanwhile.  Logged trajectory statistics are the evaluation's.
    """

    _eval = True

    def eval_itrs(self, start_itr: int = 0) -> EvalItrs:
        # A resumed run whose batches were all sampled still makes its final evaluation.
        return EvalItrs(first=min(start_itr, self.n_itr - 1), n_itr=self.n_itr,
                        log_interval_itrs=self.log_interval_itrs, before_start=start_itr == 0)

    def startup(self) -> int:
        if self.sampler.eval_n_envs == 0:
            raise ValueError(f"{type(self).__name__} needs a sampler with eval_n_envs > 0 "
                             f"(and eval_max_steps or eval_max_trajectories)")
        return super().startup()

    def _on_eval(self, itr, traj_infos, eval_time, version) -> None:
        mean = self.diagnostics.add_eval(itr, traj_infos, before_training=itr < 0)
        logger.log(f"Evaluation after sampler iteration {itr} (parameter version {version}): "
                   f"{len(traj_infos)} trajectories, mean return {mean:.2f}")
        if itr == self.n_itr - 1:
            self._final_eval = (traj_infos, eval_time)  # Logged once training is done.
            return
        with logger.prefix(f"itr #{max(itr, 0)} "):
            self._log_row(itr, traj_infos, eval_time)

    def _awaited_from_sampler(self) -> str | None:
        if not self._done_sampled:
            return super()._awaited_from_sampler()
        return "its final evaluation" if self._final_eval is None else None

    def _log_final_row(self) -> None:
        # The last evaluation may still be running: the fault checks watch the sampler
        # (it must not exit without sending it) and the progress watchdog (evaluating
        # counts as progress).
        while self._final_eval is None:
            self._check_faults(force=True)
            self._read_messages()
            if self._final_eval is None:
                time.sleep(0.05)
        self._log_row(self.n_itr - 1, *self._final_eval)
