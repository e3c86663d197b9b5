"""Synchronous runners: sample a batch, optimize on it, repeat.

A runner wires the sampler, agent and algorithm together and holds three parts of its
own: a ``Checkpointer`` (whole-run checkpoints and resume), a ``DivergenceGuard``
(checks every update's values) and ``RunDiagnostics`` (the log rows).  ``train`` reads
as set-up, the loop over iterations, shutdown.
"""

from __future__ import annotations

import contextlib
import time

import numpy as np

from rlpyt.runners import checkpoint_files as ckpt
from rlpyt.runners.base import apply_affinity, training_torch_threads
from rlpyt.runners.checkpointer import resume_is_complete
from rlpyt.runners.diagnostics import TIME_KEYS
from rlpyt.runners.run_core import RunnerCore
from rlpyt.utils.interrupt import DeferredInterrupt
from rlpyt.utils.logging import logger
from rlpyt.utils.malloc import keep_freed_memory
from rlpyt.utils.process import flush_denormals
from rlpyt.utils.supervisor import raise_if_stopped

__all__ = ["TIME_KEYS", "MinibatchRl", "MinibatchRlBase", "MinibatchRlEval",
           "resume_is_complete"]


class MinibatchRlBase(RunnerCore):
    """Alternates ``sampler.obtain_samples`` and ``algo.optimize_agent`` for ``n_steps``.

    Its keywords are ``RunnerCore``'s (``rlpyt.runners.run_core``): ``algo``, ``agent``,
    ``sampler``, ``n_steps``, ``seed``, ``affinity``, ``log_interval_steps``,
    ``log_traj_window``, ``checkpoint_interval_steps``, ``checkpoint_replay``,
    ``checkpoint_keep``, ``max_abs_value`` and ``divergence``.
    """

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

    def _log_itr(self, itr):
        self.log_diagnostics(itr)

    def _stop_now(self) -> bool:
        """Whether the loop ends after this log row (multi-process runners agree on it)."""
        return self.should_stop()

    # ---- set-up ------------------------------------------------------------------
    def startup(self) -> int:
        cpus = self.affinity.get("master_cpus")
        threads, why = training_torch_threads(self.affinity.get("master_torch_threads"), cpus)
        apply_affinity(cpus, threads, self.affinity.get("set_affinity", True))
        self._denormals_were_flushed = flush_denormals()  # restored at shutdown
        self._freed_memory_was_kept = keep_freed_memory()  # likewise (rlpyt.utils.malloc)
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

    def env_seed(self) -> int:
        """Seed for the sampler's envs: the run seed, or on a resume whose checkpoint holds
        no env state (parallel samplers), one derived from the seed and the iteration, so
        the restarted envs do not replay the run's first episodes."""
        state = self._resume_state
        if state is None or state.get("sampler") is not None:
            return self.seed
        return int(np.random.SeedSequence([self.seed, state["itr"] + 1]).generate_state(1)[0])

    def start_line(self) -> str:
        """The run's first log line: what it is about to do."""
        return (f"Running {self.n_itr} iterations of minibatch RL "
                f"({self.itr_batch_size} env steps each).")

    def _before_train(self):
        pass

    def shutdown(self):
        self.diagnostics.stop()
        self.sampler.shutdown()
        self._restore_process_settings()

    def _resume_or_begin(self) -> int:
        """After ``startup``: load the checkpoint being resumed, or make the start's
        evaluation; returns the first iteration to train."""
        state, self._resume_state = self._resume_state, None
        if state is None:
            self._before_train()
            return 0
        return self.load_checkpoint_state(state)

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

    def store_diagnostics(self, itr, traj_infos, opt_info):
        self.diagnostics.add_trajs(itr, traj_infos)
        self.diagnostics.add_opt_info(opt_info)


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
