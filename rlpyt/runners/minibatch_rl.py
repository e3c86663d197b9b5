"""Synchronous runners: sample a batch, optimize on it, repeat."""

from __future__ import annotations

import contextlib
import math
import time
from collections import deque

import numpy as np
import psutil
import torch

from rlpyt.runners import checkpoint as ckpt
from rlpyt.runners.base import (
    BaseRunner,
    DivergenceError,
    apply_affinity,
    capped_n_steps,
    training_torch_threads,
)
from rlpyt.runners.divergence import DIVERGENCE_MODES, LOSS_WARMUP, DivergenceWatch
from rlpyt.runners.preflight import check_before_start
from rlpyt.utils.interrupt import DeferredInterrupt
from rlpyt.utils.logging import logger
from rlpyt.utils.prog_bar import ProgBarCounter
from rlpyt.utils.seed import make_seed, set_seed

__all__ = ["MinibatchRl", "MinibatchRlBase", "MinibatchRlEval"]

TIME_KEYS = ("CumTime (s)", "StepsPerSecond", "UpdatesPerSecond", "EvalTime (s)", "CumEvalTime (s)")


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
    # Whether an evaluation holds up training (so its time is kept out of the steps and
    # updates per second).  An asynchronous run evaluates in its sampler process.
    _eval_pauses_training = True

    def __init__(self, algo, agent, sampler, n_steps, seed=None, affinity=None,
                 log_interval_steps=1e5, log_traj_window=100, checkpoint_interval_steps=None,
                 checkpoint_replay=True, max_abs_value=None, divergence="stop"):
        if not (isinstance(n_steps, (int, float)) and n_steps > 0):
            raise ValueError(f"n_steps={n_steps!r} must be a positive number of env steps")
        if not (isinstance(log_interval_steps, (int, float)) and log_interval_steps > 0):
            raise ValueError(f"log_interval_steps={log_interval_steps!r} must be positive")
        self.algo, self.agent, self.sampler = algo, agent, sampler
        self.n_steps, self._n_steps_note = capped_n_steps(int(n_steps), algo, sampler)
        self.seed = seed
        self.affinity = dict(affinity or {})
        self.log_interval_steps = int(log_interval_steps)
        self.log_traj_window = int(log_traj_window)
        if checkpoint_interval_steps is None:
            checkpoint_interval_steps = log_interval_steps
        if not (isinstance(checkpoint_interval_steps, (int, float))
                and checkpoint_interval_steps >= 0):
            raise ValueError(f"checkpoint_interval_steps={checkpoint_interval_steps!r} must be "
                             f">= 0 env steps (0: no checkpoints)")
        if max_abs_value is not None and not (isinstance(max_abs_value, (int, float))
                                              and max_abs_value > 0):
            raise ValueError(f"max_abs_value={max_abs_value!r} must be a positive number or None")
        if divergence not in DIVERGENCE_MODES:
            raise ValueError(f"divergence={divergence!r} must be one of {DIVERGENCE_MODES}")
        self.divergence = divergence
        self.checkpoint_interval_steps = int(checkpoint_interval_steps)
        self.checkpoint_replay = bool(checkpoint_replay)
        self.max_abs_value = max_abs_value
        self.rank, self.world_size = 0, 1
        self.eval_history = []  # (cum_steps, mean eval return) per evaluation
        self.last_checkpoint = None  # path of the newest checkpoint written or loaded
        self._resume_state = None  # checkpoint being resumed, between train() and startup

    # ---- set-up ------------------------------------------------------------------
    def startup(self) -> int:
        cpus = self.affinity.get("master_cpus")
        threads, why = training_torch_threads(self.affinity.get("master_torch_threads"), cpus)
        apply_affinity(cpus, threads, self.affinity.get("set_affinity", True))
        if self.rank == 0:
            logger.log(f"torch threads: {threads} ({why}; set affinity="
                       f"dict(master_torch_threads=N) to change)")
            if self._n_steps_note:
                logger.log(self._n_steps_note)
        check_before_start(self.algo, self.agent, self.sampler, self.n_steps, self.affinity)
        if self.seed is None:
            self.seed = make_seed()
        set_seed(self.seed)
        examples = self.sampler.initialize(
            agent=self.agent,
            affinity=self.affinity,
            seed=self.env_seed(),
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
        self.checkpoint_interval_itrs = (
            max(round(self.checkpoint_interval_steps / self.itr_batch_size), 1)
            if self.checkpoint_interval_steps else 0
        )
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
            rebuild=self.rebuild_info(),
        )

    def rebuild_info(self) -> dict:
        """How to build this run's agent and env again (``rlpyt evaluate`` of a script's
        run): import paths of the agent class and the env maker, and their keywords
        (``agent_kwargs`` None when the agent was built with positional arguments)."""
        n_args, kwargs = getattr(self.agent, "_init_keywords", (0, {}))
        maker = self.sampler.EnvCls
        return dict(
            agent_class=f"{type(self.agent).__module__}:{type(self.agent).__qualname__}",
            agent_kwargs=None if n_args else kwargs,
            env_maker=f"{getattr(maker, '__module__', '?')}:"
                      f"{getattr(maker, '__qualname__', repr(maker))}",
            env_kwargs=dict(self.sampler.env_kwargs),
        )

    def save_itr_snapshot(self, itr: int):
        logger.log("saving snapshot...", routine=True)
        logger.save_itr_params(itr, self.get_itr_snapshot(itr))
        logger.log("saved", routine=True)

    # ---- whole-run checkpoints (resume) ----------------------------------------------------
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
            rebuild=self.rebuild_info(),
            rng=ckpt.capture_rng_state(),  # last: nothing above draws random numbers
        )

    def load_checkpoint_state(self, state: dict) -> int:
        """Restore ``checkpoint_state``'s dict after ``startup``; returns the next itr."""
        self.agent.load_state_dict(state["agent"])
        self.algo.load_state_dict(state["algo"])
        self._load_replay(state)
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

    def _load_replay(self, state: dict):
        replay = getattr(self.algo, "replay_buffer", None)
        if replay is None:
            return
        if not ckpt.load_replay(state["_path"], replay):
            logger.log("Resume: the checkpoint holds no replay buffer (checkpoint_replay="
                       "False): replay starts empty, so the run is not exact.")

    def save_checkpoint(self, itr: int) -> str | None:
        """Write a checkpoint after iteration ``itr`` into the run directory (if any)."""
        run_dir = logger.get_snapshot_dir()
        if run_dir is None:
            return None
        replay = getattr(self.algo, "replay_buffer", None) if self.checkpoint_replay else None
        self.last_checkpoint = ckpt.save_checkpoint(run_dir, itr, self.checkpoint_state(itr),
                                                    replay)
        logger.log(f"checkpoint written: {self.last_checkpoint}", routine=True)
        return self.last_checkpoint

    def _is_checkpoint_itr(self, itr) -> bool:
        n = self.checkpoint_interval_itrs
        return bool(n) and ((itr + 1) % n == 0 or itr == self.n_itr - 1)

    def _resume_is_complete(self, state: dict) -> bool:
        """Whether the checkpoint ``state`` holds the whole run (its diagnostics are then
        loaded for the summary, and nothing is built); ``ValueError`` if ``n_steps`` is
        below it (``resume_is_complete``)."""
        if not resume_is_complete(state, self.n_steps,
                                  self.sampler.batch_spec.size * self.world_size):
            return False
        self.load_diagnostics_state(state["diagnostics"])
        return True

    def find_resume_state(self, resume) -> dict | None:
        """The checkpoint ``train(resume=...)`` continues from (see ``train``)."""
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
        state = ckpt.load_checkpoint(str(resume))
        logger.log(f"Resuming from {state['_path']} (after iteration {state['itr']}, "
                   f"{state['cum_steps']} env steps).")
        if self.seed is not None and self.seed != state["seed"]:
            logger.log(f"Resume: using the checkpoint's seed {state['seed']} (not {self.seed}).")
        self.seed = state["seed"]
        return state

    # ---- divergence guard ----------------------------------------------------------------
    def check_opt_info(self, itr: int, opt_info) -> None:
        """Stop on a non-finite loss or gradient norm, or on a finite jump of one (or of
        the parameter norm) per ``divergence``; warn on values above max_abs_value."""
        watched = {}
        for name in getattr(opt_info, "_fields", ()):
            values = getattr(opt_info, name)
            values = np.asarray(values if isinstance(values, list) else [values],
                                dtype=np.float64).ravel()
            if values.size == 0:
                continue
            lowered = name.lower()
            if "loss" in lowered or "grad" in lowered:
                bad = values[~np.isfinite(values)]
                if bad.size:
                    raise DivergenceError(self._divergence_message(
                        f"{type(self.algo).__name__}: {name} is {bad[0]}", itr))
                watched[name] = float(np.max(np.abs(values)))
            elif self.max_abs_value is not None:
                peak = np.max(np.abs(values))
                if peak > self.max_abs_value and name not in self._warned_values:
                    self._warned_values.add(name)
                    logger.log(f"WARNING: |{name}| reached {peak:.4g} at iteration {itr}, above "
                               f"max_abs_value={self.max_abs_value:g}: value estimates may be "
                               f"diverging (lower the learning rate?)")
        if self.divergence != "off":
            self._watch_divergence(itr, watched)

    def _watch_divergence(self, itr: int, peaks: dict) -> None:
        """The finite-jump check of ``check_opt_info`` (rule: ``rlpyt.runners.divergence``)."""
        updates = self.algo.update_counter
        if updates != self._watched_updates:  # the parameters changed
            self._watched_updates = updates
            peaks = dict(peaks, paramNorm=self._param_norm())
        for name, peak in peaks.items():
            jump = self._divergence_watch.observe(
                name, peak, warmup=1 if name == "paramNorm" else LOSS_WARMUP)
            if jump is None:
                continue
            what = f"{type(self.algo).__name__}: {jump}"
            if self.divergence == "stop":
                raise DivergenceError(self._divergence_message(what, itr)
                                      + " (divergence='warn' or 'off' skips this check)")
            if name not in self._warned_values:
                self._warned_values.add(name)
                logger.log(f"WARNING: {what} at iteration {itr}: the run may be diverging "
                           f"(lower the learning rate?)")

    def _param_norm(self) -> float:
        """L2 norm of every trained parameter of the agent."""
        with torch.no_grad():
            squares = [p.detach().float().pow(2).sum() for p in self.agent.parameters()]
        return math.sqrt(float(torch.stack(squares).sum())) if squares else 0.0

    def _start_divergence_watch(self) -> None:
        """A fresh history, seeded with the parameter norm before any update."""
        self._divergence_watch = DivergenceWatch()
        self._watched_updates = getattr(self.algo, "update_counter", 0)
        if self.divergence != "off":
            self._divergence_watch.observe("paramNorm", self._param_norm(), warmup=1)

    def _divergence_message(self, what: str, itr: int) -> str:
        last = self.last_checkpoint or "none yet"
        return (f"{what} at iteration {itr} ({(itr + 1) * self.itr_batch_size} env steps): "
                f"training stopped. Last good checkpoint: {last}. Lower the learning rate or "
                f"check rewards/observations for NaN/inf, then resume or restart.")

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
        self.pbar = RunProgress(self)
        self._warned_values = set()
        self._start_divergence_watch()
        logger.log(self.start_line())
        self._process = psutil.Process()

    def start_line(self) -> str:
        """The run's first log line: what it is about to do."""
        return (f"Running {self.n_itr} iterations of minibatch RL "
                f"({self.itr_batch_size} env steps each).")

    def diagnostics_state(self) -> dict:
        """The logging accumulators, so a resumed run's next rows equal the original's."""
        return dict(
            opt_infos=self._opt_infos, traj_infos=list(self._traj_infos),
            cum_completed_trajs=self._cum_completed_trajs,
            new_completed_trajs=self._new_completed_trajs,
            last_update_counter=self._last_update_counter, last_itr=self._last_itr,
            cum_eval_time=self._cum_eval_time, eval_history=list(self.eval_history),
            elapsed=time.time() - self._start_time,
            divergence=self._divergence_watch.state_dict(),
            watched_updates=self._watched_updates,
            # Cumulative sampler columns (RaySampler's ActorRestarts) go on counting.
            sampler=getattr(self.sampler, "diagnostics", dict)(),
        )

    def load_diagnostics_state(self, state: dict) -> None:
        self._opt_infos = state["opt_infos"]
        self._traj_infos = deque(state["traj_infos"], maxlen=self.log_traj_window)
        self._cum_completed_trajs = state["cum_completed_trajs"]
        self._new_completed_trajs = state["new_completed_trajs"]
        self._last_update_counter = state["last_update_counter"]
        self._last_itr = state["last_itr"]
        self._cum_eval_time = state["cum_eval_time"]
        self.eval_history = list(state["eval_history"])
        self._start_time = time.time() - state["elapsed"]  # CumTime goes on counting
        if "divergence" in state:  # (absent in checkpoints of older versions)
            if getattr(self, "_divergence_watch", None) is None:  # (no startup: nothing to run)
                self._divergence_watch = DivergenceWatch()
            self._divergence_watch.load_state_dict(state["divergence"])
            self._watched_updates = state["watched_updates"]
        load_sampler = getattr(self.sampler, "load_diagnostics", None)
        if load_sampler is not None and "sampler" in state:
            load_sampler(state["sampler"])

    def store_diagnostics(self, itr, traj_infos, opt_info):
        self._cum_completed_trajs += len(traj_infos)
        self._new_completed_trajs += len(traj_infos)
        self._traj_infos.extend(traj_infos)
        for k, values in self._opt_infos.items():
            new = getattr(opt_info, k, [])
            values.extend(new if isinstance(new, list) else [new])
        self.pbar.update((itr + 1) % self.log_interval_itrs or self.log_interval_itrs)

    def log_diagnostics(self, itr, eval_traj_infos=None, eval_time=0.0):
        if itr >= 0:  # itr -1 is the evaluation before training: nothing trained to save
            self.save_itr_snapshot(itr)
        now = time.time()
        new_itrs = itr - self._last_itr
        paused = eval_time if self._eval_pauses_training else 0.0
        train_time = max(now - self._last_time - paused, 1e-9)
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
        # Sampler-specific columns (e.g. RaySampler's ActorRestarts).
        for key, value in getattr(self.sampler, "diagnostics", dict)().items():
            logger.record_tabular(key, value)
        if self._eval:
            logger.record_tabular("EvalTime (s)", eval_time)
            logger.record_tabular("CumEvalTime (s)", self._cum_eval_time)
        self._log_infos(eval_traj_infos)
        logger.dump_tabular(with_prefix=False, step=cum_steps)
        self._last_time = now
        self._last_update_counter = updates
        self._last_itr = itr
        self._new_completed_trajs = 0

    def _replay_batch_size(self) -> int | None:
        """Samples per gradient update of a replay algorithm, over all ranks (None: on-policy)."""
        return getattr(self.algo, "batch_size", None)

    TRAIN_SCORE_KEYS = ("Return", "GameScore")

    def _log_train_scores(self) -> None:
        """Beside evaluation statistics, the mean over the latest ``log_traj_window``
        training trajectories of their return (and Atari's whole-game score): the measure
        of papers that report training episodes.  NaN before the first one ends."""
        example = getattr(self.sampler, "TrajInfoCls", dict)()
        latest = list(self._traj_infos)
        for key in self.TRAIN_SCORE_KEYS:
            if key in example:
                mean = float(np.mean([info[key] for info in latest])) if latest else math.nan
                logger.record_tabular(f"Train{key}Average", mean)

    def _log_infos(self, traj_infos=None):
        if traj_infos is None:
            traj_infos = list(self._traj_infos)
            logger.record_tabular("NewCompletedTrajs", self._new_completed_trajs)
        else:
            logger.record_tabular("StepsInEval", sum(info["Length"] for info in traj_infos))
            logger.record_tabular("TrajsInEval", len(traj_infos))
            self._log_train_scores()
        if traj_infos:
            for key in traj_infos[0]:
                if not key.startswith("_"):
                    logger.record_tabular_misc_stat(logger.column_name(key),
                                                    [info[key] for info in traj_infos])
        for key, values in self._opt_infos.items():  # OptInfo's gradNorm: GradNormAverage, ...
            logger.record_tabular_misc_stat(logger.column_name(key), values)
        self._opt_infos = {k: [] for k in self._opt_infos}

    # ---- the loop ------------------------------------------------------------------------
    def _train_itr(self, itr):
        logger.set_iteration(itr)
        with logger.prefix(f"itr #{itr} "):
            self.agent.sample_mode(itr)
            samples, traj_infos = self.sampler.obtain_samples(itr)
            self.agent.train_mode(itr)
            try:
                opt_info = self.algo.optimize_agent(itr, samples)
            except FloatingPointError as e:  # the algorithm's own NaN check
                if isinstance(e, DivergenceError):
                    raise
                raise DivergenceError(self._divergence_message(str(e), itr)) from e
            self.check_opt_info(itr, opt_info)
            self.store_diagnostics(itr, traj_infos, opt_info)

    def _is_log_itr(self, itr) -> bool:
        return (itr + 1) % self.log_interval_itrs == 0 or itr == self.n_itr - 1

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
            start_itr = 0
            if self._resume_state is not None:
                start_itr = self.load_checkpoint_state(self._resume_state)
                self.last_checkpoint = self._resume_state["_path"]
                self._resume_state = None
            else:
                self._before_train()
            # Ranks of a multi-process run must stop at the same iteration: they keep
            # the plain Ctrl-C (a snapshot, no checkpoint).
            with ctrl_c if self.world_size == 1 else contextlib.nullcontext():
                for itr in range(start_itr, n_itr):
                    self._train_itr(itr)
                    stop = False
                    if self._is_log_itr(itr):
                        self._log_itr(itr)
                        stop = self._stop_now()
                    if self._is_checkpoint_itr(itr) or stop or ctrl_c.requested:
                        self.save_checkpoint(itr)
                    if ctrl_c.requested:
                        self._log_interrupted(itr)
                        raise KeyboardInterrupt
                    if stop:
                        logger.log(f"Stopping early after iteration {itr}.")
                        break
        except KeyboardInterrupt:
            if not ctrl_c.requested:  # mid-iteration: no exact checkpoint can be written
                logger.log(f"Interrupted at iteration {itr}: writing the last snapshot.")
                if itr >= 0:
                    self.save_itr_snapshot(itr)
                self._log_interrupted(None)
            raise
        finally:
            self.shutdown()
        return self.summary()

    def _log_interrupted(self, itr: int | None) -> None:
        """Say what a resume continues from after Ctrl-C (``itr``: the iteration whose
        checkpoint was just written; None: interrupted mid-iteration)."""
        run_dir = logger.get_snapshot_dir()
        if run_dir is None:
            logger.log(f"Interrupted at iteration {itr}: no checkpoint, as the run has no run "
                       f"directory (train inside logger_context to have one).")
            return
        if itr is not None and self.last_checkpoint:
            logger.log(f"Interrupted after iteration {itr}: checkpoint {self.last_checkpoint}; "
                       f"a resume continues at iteration {itr + 1}.")
        elif self.last_checkpoint:
            logger.log(f"Interrupted mid-iteration: a resume continues from the last "
                       f"checkpoint, {self.last_checkpoint}.")
        if self.last_checkpoint:
            logger.log(f"Resume with `rlpyt train --resume {run_dir}` (a run of rlpyt train) "
                       f"or runner.train(resume={run_dir!r}) in a script.")

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


class RunProgress:
    """The terminal progress bar of a run: env steps out of ``n_steps``, with rate and
    ETA, one bar for the whole run (log rows print above it).

    Runners call ``update(count)`` with the iterations done since the last log row
    (``log_interval_itrs`` at a row), as with the classic per-interval bar; the bar
    turns that into the run's env steps.
    """

    def __init__(self, runner: MinibatchRlBase):
        self.runner = runner
        self._bar = None

    def update(self, itrs_since_log_row: int) -> None:
        runner = self.runner
        steps = (runner._last_itr + 1 + itrs_since_log_row) * runner.itr_batch_size
        if self._bar is None:  # first update: a resumed run starts its bar where it is
            start = (runner._last_itr + 1) * runner.itr_batch_size
            self._bar = ProgBarCounter(runner.n_itr * runner.itr_batch_size, initial=start,
                                       unit="env step")
        self._bar.update(steps)

    def stop(self) -> None:
        if self._bar is not None:
            self._bar.stop()


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
        returns = [info["Return"] for info in traj_infos]
        mean = sum(returns) / len(returns) if returns else float("nan")
        cum_steps = 0 if before_training else (itr + 1) * self.itr_batch_size
        self.eval_history.append((cum_steps, mean))
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


