"""Synchronous runners: sample a batch, optimize on it, repeat.

A runner wires the sampler, agent and algorithm together and holds three parts of its
own: a ``Checkpointer`` (whole-run checkpoints and resume), a ``DivergenceGuard``
(checks every update's values) and ``RunDiagnostics`` (the log rows).  ``train`` reads
as set-up, the loop over iterations, shutdown.
"""

from __future__ import annotations

import contextlib
import math
import time

import numpy as np

from rlpyt.runners import checkpoint_files as ckpt
from rlpyt.runners.base import BaseRunner, apply_affinity, capped_n_steps, training_torch_threads
from rlpyt.runners.checkpointer import Checkpointer, resume_is_complete
from rlpyt.runners.diagnostics import TIME_KEYS, RunDiagnostics
from rlpyt.runners.divergence import DivergenceGuard
from rlpyt.runners.preflight import check_before_start
from rlpyt.utils.interrupt import DeferredInterrupt
from rlpyt.utils.logging import logger
from rlpyt.utils.process import flush_denormals
from rlpyt.utils.seed import make_seed, set_seed
from rlpyt.utils.supervisor import raise_if_stopped

__all__ = ["TIME_KEYS", "MinibatchRl", "MinibatchRlBase", "MinibatchRlEval",
           "resume_is_complete"]


class MinibatchRlBase(BaseRunner):
    """Alternates ``sampler.obtain_samples`` and ``algo.optimize_agent`` for ``n_steps``.

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

    # ---- train: set-up, the loop, shutdown -------------------------------------------------
    def train(self, resume: bool | str | None = None):
        """Run training; returns the runner's last evaluation or train-trajectory summary.

        Args:
            resume: continue from a checkpoint. True: the latest one of the current run
                directory (``logger_context``), starting afresh if there is none yet;
                a path: that run directory's latest checkpoint, or that checkpoint
                directory; False: start afresh. Default None: True inside
                ``logger_context(..., resume=True)``, else False.
        """
        itr = -1
        ctrl_c = DeferredInterrupt("Ctrl-C: finishing this iteration, then writing a checkpoint "
                                   "(Ctrl-C again to stop at once, without one)")
        try:
            self._resume_state = self.find_resume_state(resume)
            if self._resume_state is not None and self._resume_is_complete(self._resume_state):
                return self.summary()  # Nothing to train: nothing is built.
            n_itr = self.startup()  # inside try: a failed set-up still stops sampler workers
            start_itr = self._resume_or_begin()
            # Ranks of a multi-process run must stop at the same iteration: they keep
            # the plain Ctrl-C (a snapshot, no checkpoint).
            with ctrl_c if self.world_size == 1 else contextlib.nullcontext():
                for itr in range(start_itr, n_itr):
                    raise_if_stopped()
                    self._train_itr(itr)
                    stop = False
                    if self._is_log_itr(itr):
                        self._log_itr(itr)
                        stop = self._stop_now()
                    if self.checkpoints.is_due(itr) or stop or ctrl_c.requested:
                        self.save_checkpoint(itr)
                    if ctrl_c.requested:
                        self.checkpoints.log_interrupted(itr)
                        raise KeyboardInterrupt
                    if stop:
                        logger.log(f"Stopping early after iteration {itr}.")
                        break
        except KeyboardInterrupt:
            if not ctrl_c.requested:  # mid-iteration: no exact checkpoint can be written
                logger.log(f"Interrupted at iteration {itr}: writing the last snapshot.")
                if itr >= 0:
                    self.save_itr_snapshot(itr)
                self.checkpoints.log_interrupted(None)
            raise
        finally:
            self.shutdown()
        return self.summary()

    def _train_itr(self, itr):
        logger.set_iteration(itr)
        with logger.prefix(f"itr #{itr} "):
            self.agent.sample_mode(itr)
            samples, traj_infos = self.sampler.obtain_samples(itr)
            self.agent.train_mode(itr)
            opt_info = self.guard.update(lambda: self.algo.optimize_agent(itr, samples),
                                         itr, self.last_checkpoint)
            self.store_diagnostics(itr, traj_infos, opt_info)

    def _is_log_itr(self, itr) -> bool:
        return (itr + 1) % self.log_interval_itrs == 0 or itr == self.n_itr - 1

    def _log_itr(self, itr):
        self.log_diagnostics(itr)

    def should_stop(self) -> bool:
        """Checked after each log row; subclasses return True to end training early."""
        return False

    def _stop_now(self) -> bool:
        """Whether the loop ends after this log row (multi-process runners agree on it)."""
        return self.should_stop()

    # ---- set-up ------------------------------------------------------------------
    def startup(self) -> int:
        cpus = self.affinity.get("master_cpus")
        threads, why = training_torch_threads(self.affinity.get("master_torch_threads"), cpus)
        apply_affinity(cpus, threads, self.affinity.get("set_affinity", True))
        self._denormals_were_flushed = flush_denormals()  # restored at shutdown
        if self.rank == 0:
            logger.log(f"torch threads: {threads} ({why}; set affinity="
                       f"dict(master_torch_threads=N) to change)")
        n_itr = self.begin_run(self.affinity)
        examples = self.sampler.initialize(
            agent=self.agent, affinity=self.affinity, seed=self.env_seed(),
            bootstrap_value=getattr(self.algo, "bootstrap_value", False),
            traj_info_kwargs=self.get_traj_info_kwargs(), rank=self.rank,
            world_size=self.world_size)
        self.agent.to_device(self.affinity.get("cuda_idx"))
        if self.world_size > 1:
            self.agent.data_parallel()
        self.algo.initialize(
            agent=self.agent, n_itr=n_itr, batch_spec=self.sampler.batch_spec,
            mid_batch_reset=self.sampler.mid_batch_reset, examples=examples,
            world_size=self.world_size, rank=self.rank)
        self.initialize_logging()
        return n_itr

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

    def env_seed(self) -> int:
        """Seed for the sampler's envs: the run seed, or on a resume whose checkpoint holds
        no env state (parallel samplers), one derived from the seed and the iteration, so
        the restarted envs do not replay the run's first episodes."""
        state = self._resume_state
        if state is None or state.get("sampler") is not None:
            return self.seed
        return int(np.random.SeedSequence([self.seed, state["itr"] + 1]).generate_state(1)[0])

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

    def start_line(self) -> str:
        """The run's first log line: what it is about to do."""
        return (f"Running {self.n_itr} iterations of minibatch RL "
                f"({self.itr_batch_size} env steps each).")

    def _before_train(self):
        pass

    def shutdown(self):
        self.diagnostics.stop()
        self.sampler.shutdown()
        self._restore_denormals()

    def _restore_denormals(self) -> None:
        """The process's denormal setting from before ``startup`` (``flush_denormals``)."""
        before = getattr(self, "_denormals_were_flushed", None)
        if before is not None:
            flush_denormals(before)
            self._denormals_were_flushed = None

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

    def _resume_or_begin(self) -> int:
        """After ``startup``: load the checkpoint being resumed, or make the start's
        evaluation; returns the first iteration to train."""
        state, self._resume_state = self._resume_state, None
        if state is None:
            self._before_train()
            return 0
        return self.load_checkpoint_state(state)

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

    def load_checkpoint_state(self, state: dict) -> int:
        """Restore ``checkpoint_state``'s dict after ``startup``; returns the next itr."""
        self.agent.load_state_dict(state["agent"])
        self.algo.load_state_dict(state["algo"])
        self.checkpoints.load_replay(state, getattr(self.algo, "replay_buffer", None))
        if state["sampler"] is not None:
            ckpt.restore_sampler_state(self.sampler, self.agent, state["sampler"])
        else:
            logger.log(f"Resume: the envs restart from new seeds, because "
                       f"{state['sampler_note']}; the run continues, but not bit for bit.")
        return self.restore_log_state(state)

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

    def store_diagnostics(self, itr, traj_infos, opt_info):
        self.diagnostics.add_trajs(itr, traj_infos)
        self.diagnostics.add_opt_info(opt_info)

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


class MinibatchRl(MinibatchRlBase):
    """Minibatch RL logging statistics of the latest training trajectories."""


class MinibatchRlEval(MinibatchRlBase):
    """Minibatch RL with evaluation at iteration 0 and every log interval.

    Logged trajectory statistics are those of the evaluation trajectories (the
    sampler's ``eval_*`` settings bound each evaluation).
    """

    _eval = True

    def evaluate_agent(self, itr, before_training=False):
        """Evaluate after iteration ``itr`` (or before any training, at 0 env steps)."""
        logger.log("Evaluating agent...", routine=True)
        self.agent.eval_mode(itr)
        start = time.time()
        traj_infos = self.sampler.evaluate_agent(itr)
        eval_time = time.time() - start
        mean = self.diagnostics.add_eval(itr, traj_infos, before_training)
        logger.log(f"Evaluation: {len(traj_infos)} trajectories, mean return {mean:.2f}",
                   routine=True)
        return traj_infos, eval_time

    def _before_train(self):
        with logger.prefix("itr #0 "):
            traj_infos, eval_time = self.evaluate_agent(0, before_training=True)
            self.log_diagnostics(-1, traj_infos, eval_time)

    def _log_itr(self, itr):
        traj_infos, eval_time = self.evaluate_agent(itr)
        self.log_diagnostics(itr, traj_infos, eval_time)
