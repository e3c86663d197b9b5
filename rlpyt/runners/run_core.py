"""``RunnerCore``: what every runner holds and does apart from its loop.

The run's parts (a ``Checkpointer``, a ``DivergenceGuard``, ``RunDiagnostics``), its
counts (iterations, batch size, log interval), the start-up steps every runner takes
before its sampler starts (``begin_run``), snapshots, the checkpoint's contents and the
logging side of a resume.  The loops live in the runners that inherit it: the
synchronous ``MinibatchRlBase`` (``rlpyt.runners.minibatch_rl``) and the asynchronous
``AsyncRlBase`` (``rlpyt.runners.async_base``), so neither overrides the other's.
"""

from __future__ import annotations

import math

from rlpyt.runners import checkpoint_files as ckpt
from rlpyt.runners.base import BaseRunner, capped_n_steps
from rlpyt.runners.checkpointer import Checkpointer, resume_is_complete
from rlpyt.runners.diagnostics import RunDiagnostics
from rlpyt.runners.divergence import DivergenceGuard
from rlpyt.runners.preflight import check_before_start
from rlpyt.utils.logging import logger
from rlpyt.utils.malloc import keep_freed_memory
from rlpyt.utils.process import flush_denormals
from rlpyt.utils.seed import make_seed, set_seed

__all__ = ["RunnerCore"]


class RunnerCore(BaseRunner):
    """The parts, counts, checkpoints and logs of a run; subclasses add ``train``,
    ``startup``, ``start_line``, ``load_checkpoint_state`` and ``shutdown``.

    Args:
        algo: the algorithm (``RlAlgorithm``).
        agent: the agent.
        sampler: the sampler.
        n_steps: total env steps to train for (rounded up to whole sampler batches); the
            environment variable ``RLPYT_MAX_STEPS`` caps it for smoke runs.
        seed: run seed (torch, numpy, python and every env); None draws one. Default None.
        affinity: dict with optional ``cuda_idx``, ``master_cpus``, ``workers_cpus``,
            ``master_torch_threads``, ``worker_torch_threads``, ``set_affinity``. Default None.
            The training process runs ``master_torch_threads`` torch threads, else one
            per ``master_cpus``, else 1 (what ``rlpyt train`` uses; logged at start).
        log_interval_steps: env steps between log rows (and evaluations). Default 1e5.
        log_traj_window: number of latest completed trajectories in the train stats. Default 100.
        checkpoint_interval_steps: env steps between whole-run checkpoints (written into
            ``<run_dir>/checkpoints/`` inside a ``logger_context``; see docs/runners.md),
            rounded to whole iterations; the last iteration is always checkpointed.
            Default None: every ``log_interval_steps``; 0: no checkpoints.
        checkpoint_replay: include the algorithm's replay buffer in checkpoints, so a
            resumed off-policy run continues exactly. Default True.
        checkpoint_keep: newest complete checkpoints kept (each with its own replay
            copy); with 2 or more, a resume whose latest checkpoint is unreadable falls
            back to the one before it, saying so. Default 1.
        max_abs_value: log a warning when an optimizer diagnostic other than a loss or
            gradient norm (Q values, TD errors, ...) exceeds this in absolute value.
            Default None (no check). Non-finite losses and gradient norms always stop
            the run (``DivergenceError``).
        divergence: what a finite divergence does: a loss term, gradient norm or the
            norm of the agent's parameters jumping three orders of magnitude above its
            own recent history (``rlpyt.runners.divergence``; docs/runners.md).
            ``"stop"``: raise ``DivergenceError`` (as for a non-finite value);
            ``"warn"``: log a warning once per term; ``"off"``: no check. Default "stop".
    """

    _eval = False
    checkpointer_cls = Checkpointer  # writes and finds this runner's checkpoints
    # Whether an evaluation holds up training (so its time is kept out of the steps and
    # updates per second).  An asynchronous run evaluates in its sampler process.
    _eval_pauses_training = True

    def __init__(self, algo, agent, sampler, n_steps, seed=None, affinity=None,
                 log_interval_steps=1e5, log_traj_window=100, checkpoint_interval_steps=None,
                 checkpoint_replay=True, max_abs_value=None, divergence="stop",
                 checkpoint_keep=1):
        if not (isinstance(n_steps, (int, float)) and n_steps > 0):
            raise ValueError(f"n_steps={n_steps!r} must be a positive number of env steps")
        if not (isinstance(log_interval_steps, (int, float)) and log_interval_steps > 0):
            raise ValueError(f"log_interval_steps={log_interval_steps!r} must be positive")
        self.algo, self.agent, self.sampler = algo, agent, sampler
        self.n_steps, self._n_steps_note = capped_n_steps(int(n_steps), algo, sampler)
        self.seed = seed
        self.affinity = dict(affinity or {})
        self.log_interval_steps = int(log_interval_steps)
        if checkpoint_interval_steps is None:
            checkpoint_interval_steps = log_interval_steps
        self.checkpoints = self.checkpointer_cls(checkpoint_interval_steps, checkpoint_replay,
                                                 checkpoint_keep)
        self.guard = DivergenceGuard(divergence, max_abs_value)
        self.diagnostics = RunDiagnostics(algo, sampler, log_traj_window, self._eval,
                                          self._eval_pauses_training)
        self.checkpoint_interval_steps = self.checkpoints.interval_steps
        self.checkpoint_replay, self.max_abs_value = bool(checkpoint_replay), max_abs_value
        self.divergence = divergence
        self.rank, self.world_size = 0, 1
        self._resume_state = None  # checkpoint being resumed, between train() and startup

    @property
    def last_checkpoint(self) -> str | None:
        """Path of the newest checkpoint written or resumed from."""
        return self.checkpoints.last

    @property
    def eval_history(self) -> list[tuple[int, float]]:
        """``(cum_steps, mean eval return)`` of every evaluation so far."""
        return self.diagnostics.eval_history

    def should_stop(self) -> bool:
        """Checked after each log row; subclasses return True to end training early."""
        return False

    def _is_log_itr(self, itr) -> bool:
        return (itr + 1) % self.log_interval_itrs == 0 or itr == self.n_itr - 1

    # ---- set-up ------------------------------------------------------------------
    def begin_run(self, affinity: dict) -> int:
        """The start-up steps of every runner, before its sampler starts: the checks of
        the run's parts (``affinity``: the training process's), the run seed, and the
        iteration count of ``n_steps`` (returned)."""
        if self.rank == 0 and self._n_steps_note:
            logger.log(self._n_steps_note)
        check_before_start(self.algo, self.agent, self.sampler, self.n_steps, affinity)
        if self.seed is None:
            self.seed = make_seed()
        set_seed(self.seed)
        self.itr_batch_size = self.sampler.batch_spec.size * self.world_size
        return self.get_n_itr()

    def get_traj_info_kwargs(self) -> dict:
        return dict(discount=getattr(self.algo, "discount", 1))

    def get_n_itr(self) -> int:
        """Iterations for ``n_steps``; logging every ``log_interval_steps`` (at least 1 itr)."""
        self.log_interval_itrs = max(self.log_interval_steps // self.itr_batch_size, 1)
        self.n_itr = max(math.ceil(self.n_steps / self.itr_batch_size), 1)
        self.checkpoints.start(self.n_itr, self.itr_batch_size)
        return self.n_itr

    def initialize_logging(self):
        self.diagnostics.start(self.n_itr, self.itr_batch_size, self.log_interval_itrs,
                               self._replay_batch_size())
        self.guard.start(self.algo, self.agent, self.itr_batch_size)
        logger.log(self.start_line())

    def _restore_process_settings(self) -> None:
        """The training process's settings from before ``startup``: denormals
        (``flush_denormals``) and malloc (``keep_freed_memory``)."""
        before = getattr(self, "_denormals_were_flushed", None)
        if before is not None:
            flush_denormals(before)
            self._denormals_were_flushed = None
        before = getattr(self, "_freed_memory_was_kept", None)
        if before is not None:
            keep_freed_memory(before)
            self._freed_memory_was_kept = None

    # ---- snapshots -----------------------------------------------------------------
    def get_itr_snapshot(self, itr: int) -> dict:
        return dict(
            itr=itr,
            cum_steps=(itr + 1) * self.itr_batch_size,
            agent_state_dict=self.agent.state_dict(),
            optimizer_state_dict=self.algo.optim_state_dict(),
            rebuild=ckpt.rebuild_info(self.agent, self.sampler),
        )

    def save_itr_snapshot(self, itr: int):
        logger.log("saving snapshot...", routine=True)
        logger.save_itr_params(itr, self.get_itr_snapshot(itr))
        logger.log("saved", routine=True)

    # ---- whole-run checkpoints (resume) ----------------------------------------------------
    def find_resume_state(self, resume) -> dict | None:
        """The checkpoint ``train(resume=...)`` continues from (see ``train``); the run
        takes its seed."""
        state = self.checkpoints.find(resume)
        if state is not None:
            if self.seed is not None and self.seed != state["seed"]:
                logger.log(f"Resume: using the checkpoint's seed {state['seed']} "
                           f"(not {self.seed}).")
            self.seed = state["seed"]
        return state

    def _resume_is_complete(self, state: dict, world_size: int | None = None) -> bool:
        """Whether the checkpoint ``state`` holds the whole run of ``world_size`` processes
        (default this runner's; its diagnostics are then loaded for the summary, and
        nothing is built); ``ValueError`` if ``n_steps`` is below it
        (``resume_is_complete``)."""
        world_size = self.world_size if world_size is None else world_size
        if not resume_is_complete(state, self.n_steps,
                                  self.sampler.batch_spec.size * world_size):
            return False
        self.load_diagnostics_state(state["diagnostics"])
        return True

    def checkpoint_state(self, itr: int) -> dict:
        """Everything needed to continue after iteration ``itr`` (subclasses extend the
        dict and ``load_checkpoint_state``). Called only between iterations."""
        sampler_blob, why = ckpt.capture_sampler_state(self.sampler, self.agent)
        return dict(
            format=1,
            runner=type(self).__name__,
            itr=itr,
            cum_steps=(itr + 1) * self.itr_batch_size,
            n_itr=self.n_itr,
            seed=self.seed,
            agent=self.agent.state_dict(),
            algo=self.algo.state_dict(),
            sampler=sampler_blob,
            sampler_note=why,
            diagnostics=self.diagnostics_state(),
            progress_rows=logger.tabular_row_count(),
            rebuild=ckpt.rebuild_info(self.agent, self.sampler),
            rng=ckpt.capture_rng_state(),  # last: nothing above draws random numbers
        )

    def restore_log_state(self, state: dict) -> int:
        """The logging side of a resume: diagnostics, ``progress.csv`` rows, TensorBoard,
        random state; returns the next itr."""
        self.load_diagnostics_state(state["diagnostics"])
        logger.truncate_tabular_outputs(state["progress_rows"])
        logger.restart_summary_writer(purge_step=state["cum_steps"] + 1)
        ckpt.restore_rng_state(state["rng"])
        return state["itr"] + 1

    def save_checkpoint(self, itr: int) -> str | None:
        """Write a checkpoint after iteration ``itr`` into the run directory (if any)."""
        return self.checkpoints.save(itr, lambda: self.checkpoint_state(itr),
                                     getattr(self.algo, "replay_buffer", None))

    # ---- diagnostics ---------------------------------------------------------------------
    def diagnostics_state(self) -> dict:
        """The logging accumulators and the divergence guard's history."""
        return dict(self.diagnostics.state_dict(), **self.guard.state_dict())

    def load_diagnostics_state(self, state: dict) -> None:
        self.diagnostics.load_state_dict(state)
        self.guard.load_state_dict(state)

    def log_diagnostics(self, itr, eval_traj_infos=None, eval_time=0.0):
        """Snapshot the agent (after a trained iteration) and write the log row."""
        if itr >= 0:  # itr -1 is the evaluation before training: nothing trained to save
            self.save_itr_snapshot(itr)
        self.diagnostics.write_row(itr, eval_traj_infos, eval_time)

    def _replay_batch_size(self) -> int | None:
        """Samples per gradient update of a replay algorithm, over all ranks (None: on-policy)."""
        return getattr(self.algo, "batch_size", None)

    def summary(self) -> dict:
        return self.diagnostics.summary()

