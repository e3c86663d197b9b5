"""Synchronous runners: sample a batch, optimize on it, repeat."""

from __future__ import annotations

import math
import time
from collections import deque

import psutil

from rlpyt.runners.base import BaseRunner, apply_affinity
from rlpyt.utils.logging import logger
from rlpyt.utils.prog_bar import ProgBarCounter
from rlpyt.utils.seed import make_seed, set_seed

__all__ = ["MinibatchRl", "MinibatchRlBase", "MinibatchRlEval"]

TIME_KEYS = ("CumTime (s)", "StepsPerSecond", "UpdatesPerSecond", "EvalTime (s)", "CumEvalTime (s)")


class MinibatchRlBase(BaseRunner):
    """Alternates ``sampler.obtain_samples`` and ``algo.optimize_agent`` for ``n_steps``.

    Args:
        algo: the algorithm (``RlAlgorithm``).
        agent: the agent.
        sampler: the sampler.
        n_steps: total env steps to train for (rounded up to whole sampler batches).
        seed: run seed (torch, numpy, python and every env); None draws one. Default None.
        affinity: dict with optional ``cuda_idx``, ``master_cpus``, ``workers_cpus``,
            ``master_torch_threads``, ``worker_torch_threads``, ``set_affinity``. Default None.
        log_interval_steps: env steps between log rows (and evaluations). Default 1e5.
        log_traj_window: number of latest completed trajectories in the train stats. Default 100.
    """

    _eval = False

    def __init__(self, algo, agent, sampler, n_steps, seed=None, affinity=None,
                 log_interval_steps=1e5, log_traj_window=100):
        if not (isinstance(n_steps, (int, float)) and n_steps > 0):
            raise ValueError(f"n_steps={n_steps!r} must be a positive number of env steps")
        if not (isinstance(log_interval_steps, (int, float)) and log_interval_steps > 0):
            raise ValueError(f"log_interval_steps={log_interval_steps!r} must be positive")
        self.algo, self.agent, self.sampler = algo, agent, sampler
        self.n_steps = int(n_steps)
        self.seed = seed
        self.affinity = dict(affinity or {})
        self.log_interval_steps = int(log_interval_steps)
        self.log_traj_window = int(log_traj_window)
        self.rank, self.world_size = 0, 1
        self.eval_history = []  # (cum_steps, mean eval return) per evaluation

    # ---- set-up ------------------------------------------------------------------
    def startup(self) -> int:
        apply_affinity(self.affinity.get("master_cpus"), self.affinity.get("master_torch_threads"),
                       self.affinity.get("set_affinity", True))
        if self.seed is None:
            self.seed = make_seed()
        set_seed(self.seed)
        examples = self.sampler.initialize(
            agent=self.agent,
            affinity=self.affinity,
            seed=self.seed,
            bootstrap_value=getattr(self.algo, "bootstrap_value", False),
            traj_info_kwargs=self.get_traj_info_kwargs(),
            rank=self.rank,
            world_size=self.world_size,
        )
        self.itr_batch_size = self.sampler.batch_spec.size * self.world_size
        n_itr = self.get_n_itr()
        self.agent.to_device(self.affinity.get("cuda_idx"))
        if self.world_size > 1:
            self.agent.data_parallel()
        self.algo.initialize(
            agent=self.agent,
            n_itr=n_itr,
            batch_spec=self.sampler.batch_spec,
            mid_batch_reset=self.sampler.mid_batch_reset,
            examples=examples,
            world_size=self.world_size,
            rank=self.rank,
        )
        self.initialize_logging()
        return n_itr

    def get_traj_info_kwargs(self) -> dict:
        return dict(discount=getattr(self.algo, "discount", 1))

    def get_n_itr(self) -> int:
        """Iterations for ``n_steps``; logging every ``log_interval_steps`` (at least 1 itr)."""
        self.log_interval_itrs = max(self.log_interval_steps // self.itr_batch_size, 1)
        self.n_itr = max(math.ceil(self.n_steps / self.itr_batch_size), 1)
        return self.n_itr

    def shutdown(self):
        if getattr(self, "pbar", None) is not None:
            self.pbar.stop()
        self.sampler.shutdown()

    # ---- snapshots -----------------------------------------------------------------
    def get_itr_snapshot(self, itr: int) -> dict:
        return dict(
            itr=itr,
            cum_steps=(itr + 1) * self.itr_batch_size,
            agent_state_dict=self.agent.state_dict(),
            optimizer_state_dict=self.algo.optim_state_dict(),
        )

    def save_itr_snapshot(self, itr: int):
        logger.log("saving snapshot...")
        logger.save_itr_params(itr, self.get_itr_snapshot(itr))
        logger.log("saved")

    # ---- diagnostics ---------------------------------------------------------------------
    def initialize_logging(self):
        self._opt_infos = {k: [] for k in self.algo.opt_info_fields}
        self._start_time = self._last_time = time.time()
        self._cum_eval_time = 0.0
        self._cum_completed_trajs = 0
        self._last_update_counter = 0
        self._last_itr = -1
        self._traj_infos = deque(maxlen=self.log_traj_window)
        self._new_completed_trajs = 0
        self.pbar = ProgBarCounter(self.log_interval_itrs)
        logger.log(f"Running {self.n_itr} iterations of minibatch RL "
                   f"({self.itr_batch_size} env steps each).")
        self._process = psutil.Process()

    def store_diagnostics(self, itr, traj_infos, opt_info):
        self._cum_completed_trajs += len(traj_infos)
        self._new_completed_trajs += len(traj_infos)
        self._traj_infos.extend(traj_infos)
        for k, values in self._opt_infos.items():
            new = getattr(opt_info, k, [])
            values.extend(new if isinstance(new, list) else [new])
        self.pbar.update((itr + 1) % self.log_interval_itrs or self.log_interval_itrs)

    def log_diagnostics(self, itr, eval_traj_infos=None, eval_time=0.0):
        self.pbar.stop()
        if itr >= 0:  # itr -1 is the evaluation before training: nothing trained to save
            self.save_itr_snapshot(itr)
        now = time.time()
        new_itrs = itr - self._last_itr
        train_time = max(now - self._last_time - eval_time, 1e-9)
        new_steps = new_itrs * self.itr_batch_size
        updates = self.algo.update_counter
        new_updates = updates - self._last_update_counter
        cum_steps = (itr + 1) * self.itr_batch_size
        self._cum_eval_time += eval_time
        logger.record_tabular("Iteration", itr)
        logger.record_tabular("CumTime (s)", now - self._start_time)
        logger.record_tabular("CumSteps", cum_steps)
        logger.record_tabular("CumCompletedTrajs", self._cum_completed_trajs)
        logger.record_tabular("CumUpdates", updates)
        logger.record_tabular("StepsPerSecond", new_steps / train_time)
        logger.record_tabular("UpdatesPerSecond", new_updates / train_time)
        batch = self._replay_batch_size() or self.itr_batch_size
        logger.record_tabular("ReplayRatio", new_updates * batch / max(new_steps, 1))
        logger.record_tabular("CumReplayRatio", updates * batch / max(cum_steps, 1))
        if self._eval:
            logger.record_tabular("EvalTime (s)", eval_time)
            logger.record_tabular("CumEvalTime (s)", self._cum_eval_time)
        self._log_infos(eval_traj_infos)
        logger.dump_tabular(with_prefix=False, step=cum_steps)
        self._last_time = now
        self._last_update_counter = updates
        self._last_itr = itr
        self._new_completed_trajs = 0
        if itr < self.n_itr - 1:
            remaining = min(self.log_interval_itrs, self.n_itr - 1 - itr)
            self.pbar = ProgBarCounter(remaining)

    def _replay_batch_size(self) -> int | None:
        """Samples per gradient update of a replay algorithm, over all ranks (None: on-policy)."""
        return getattr(self.algo, "batch_size", None)

    def _log_infos(self, traj_infos=None):
        if traj_infos is None:
            traj_infos = list(self._traj_infos)
            logger.record_tabular("NewCompletedTrajs", self._new_completed_trajs)
        else:
            logger.record_tabular("StepsInEval", sum(info["Length"] for info in traj_infos))
            logger.record_tabular("TrajsInEval", len(traj_infos))
        if traj_infos:
            for key in traj_infos[0]:
                if not key.startswith("_"):
                    logger.record_tabular_misc_stat(key, [info[key] for info in traj_infos])
        for key, values in self._opt_infos.items():
            logger.record_tabular_misc_stat(key, values)
        self._opt_infos = {k: [] for k in self._opt_infos}

    # ---- the loop ------------------------------------------------------------------------
    def _train_itr(self, itr):
        logger.set_iteration(itr)
        with logger.prefix(f"itr #{itr} "):
            self.agent.sample_mode(itr)
            samples, traj_infos = self.sampler.obtain_samples(itr)
            self.agent.train_mode(itr)
            opt_info = self.algo.optimize_agent(itr, samples)
            self.store_diagnostics(itr, traj_infos, opt_info)

    def _is_log_itr(self, itr) -> bool:
        return (itr + 1) % self.log_interval_itrs == 0 or itr == self.n_itr - 1

    def train(self):
        """Run training; returns the runner's last evaluation or train-trajectory summary."""
        itr = -1
        try:
            n_itr = self.startup()  # inside try: a failed set-up still stops sampler workers
            self._before_train()
            for itr in range(n_itr):
                self._train_itr(itr)
                if self._is_log_itr(itr):
                    self._log_itr(itr)
                    if self._stop_now():
                        logger.log(f"Stopping early after iteration {itr}.")
                        break
        except KeyboardInterrupt:
            logger.log(f"Interrupted at iteration {itr}: writing the last snapshot.")
            if itr >= 0:
                self.save_itr_snapshot(itr)
            raise
        finally:
            self.shutdown()
        return self.summary()

    def _before_train(self):
        pass

    def should_stop(self) -> bool:
        """Checked after each log row; subclasses return True to end training early."""
        return False

    def _stop_now(self) -> bool:
        """Whether the loop ends after this log row (multi-process runners agree on it)."""
        return self.should_stop()

    def _log_itr(self, itr):
        self.log_diagnostics(itr)

    def summary(self) -> dict:
        returns = [info["Return"] for info in self._traj_infos]
        return dict(
            train_return=sum(returns) / len(returns) if returns else float("nan"),
            eval_history=list(self.eval_history),
            final_eval_return=self.eval_history[-1][1] if self.eval_history else float("nan"),
        )


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
        logger.log("Evaluating agent...")
        self.agent.eval_mode(itr)
        start = time.time()
        traj_infos = self.sampler.evaluate_agent(itr)
        eval_time = time.time() - start
        returns = [info["Return"] for info in traj_infos]
        mean = sum(returns) / len(returns) if returns else float("nan")
        cum_steps = 0 if before_training else (itr + 1) * self.itr_batch_size
        self.eval_history.append((cum_steps, mean))
        logger.log(f"Evaluation: {len(traj_infos)} trajectories, mean return {mean:.2f}")
        return traj_infos, eval_time

    def _before_train(self):
        with logger.prefix("itr #0 "):
            traj_infos, eval_time = self.evaluate_agent(0, before_training=True)
            self.log_diagnostics(-1, traj_infos, eval_time)

    def _log_itr(self, itr):
        traj_infos, eval_time = self.evaluate_agent(itr)
        self.log_diagnostics(itr, traj_infos, eval_time)


