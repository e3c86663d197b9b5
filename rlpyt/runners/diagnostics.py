"""The numbers of a run's log rows, kept between rows and written at each.

A runner holds one ``RunDiagnostics``: it hands over the trajectories that ended and
the optimizer's values of each update, and asks for a row at its log iterations.
The row holds the counters (``CumSteps``, ``CumUpdates``, ...), the rates of the
interval since the last row (steps and updates per second, the replay ratio), the
statistics of the latest ``log_traj_window`` training trajectories or of an
evaluation, and the optimizer values gathered since the last row.  Its state goes
into whole-run checkpoints, so a resumed run's rows equal the original run's.
"""

from __future__ import annotations

import math
import time
from collections import deque

import numpy as np

from rlpyt.utils.logging import logger
from rlpyt.utils.prog_bar import ProgBarCounter

__all__ = ["TIME_KEYS", "AsyncColumns", "RunDiagnostics", "RunProgress", "extend_opt_infos"]

# The columns that depend on the machine's speed (all others repeat with the seed).
TIME_KEYS = ("CumTime (s)", "StepsPerSecond", "UpdatesPerSecond", "EvalTime (s)",
             "CumEvalTime (s)")

# Columns of the mean over the latest training trajectories, logged beside evaluation
# statistics (papers that report training episodes use them; Atari's whole-game score).
TRAIN_SCORE_KEYS = ("Return", "GameScore")


def extend_opt_infos(store: dict[str, list], opt_info) -> None:
    """Append the fields of one ``OptInfo`` (each a value or a list of values) to the
    lists of ``store`` with the same names."""
    for key, values in store.items():
        new = getattr(opt_info, key, [])
        values.extend(new if isinstance(new, list) else [new])


class RunDiagnostics:
    """What a runner logs, accumulated between log rows.

    Args:
        algo: the run's algorithm (its ``opt_info_fields``, ``update_counter`` and, for a
            replay algorithm, ``batch_size``).
        sampler: the run's sampler (its ``TrajInfoCls`` and optional ``diagnostics()``
            columns, e.g. ``RaySampler``'s actor restarts).
        log_traj_window: latest completed trajectories in the train statistics.
        with_eval: rows carry evaluation statistics (``EvalTime (s)`` columns) instead
            of the training trajectories'.
        eval_pauses_training: an evaluation holds up training, so its time is kept out
            of the steps and updates per second (False for an asynchronous run, whose
            sampler process evaluates while the optimizer trains).
    """

    def __init__(self, algo, sampler, log_traj_window: int, with_eval: bool,
                 eval_pauses_training: bool = True):
        self.algo, self.sampler = algo, sampler
        self.log_traj_window = int(log_traj_window)
        self.with_eval = with_eval
        self.eval_pauses_training = eval_pauses_training
        self.eval_history: list[tuple[int, float]] = []  # (cum_steps, mean eval return)
        self.traj_infos: deque = deque(maxlen=self.log_traj_window)
        self.progress = None
        self.opt_infos: dict[str, list] = {}
        self.cum_completed_trajs = self.new_completed_trajs = 0

    def start(self, n_itr: int, itr_batch_size: int, log_interval_itrs: int,
              replay_batch_size: int | None) -> None:
        """Before the first iteration: empty accumulators, the clock started.
        ``replay_batch_size``: samples per update of a replay algorithm, every rank's
        together (None: on-policy, whose updates use the whole batch)."""
        self.n_itr, self.itr_batch_size = n_itr, itr_batch_size
        self.log_interval_itrs = log_interval_itrs
        self.replay_batch_size = replay_batch_size
        self.opt_infos = {k: [] for k in self.algo.opt_info_fields}
        self.start_time = self.last_time = time.time()
        self.cum_eval_time = 0.0
        self.cum_completed_trajs = self.new_completed_trajs = 0
        self.last_update_counter = 0
        self.last_itr = -1
        self.traj_infos = deque(maxlen=self.log_traj_window)
        self.progress = RunProgress(self)

    # ---- between rows ------------------------------------------------------------------
    def add_trajs(self, itr: int, traj_infos) -> None:
        """Trajectories that ended in iteration ``itr`` (and the progress bar moves on)."""
        self.cum_completed_trajs += len(traj_infos)
        self.new_completed_trajs += len(traj_infos)
        self.traj_infos.extend(traj_infos)
        self.tick(itr)

    def add_gathered(self, traj_infos, opt_infos: dict[str, list]) -> None:
        """Another rank's trajectories and optimizer values since the last row (a
        ``SyncRl`` run logs every rank's on rank 0); the progress bar does not move."""
        self.cum_completed_trajs += len(traj_infos)
        self.new_completed_trajs += len(traj_infos)
        self.traj_infos.extend(traj_infos)
        for k, values in opt_infos.items():
            self.opt_infos.setdefault(k, []).extend(values)

    def tick(self, itr: int) -> None:
        """Iteration ``itr`` is done: the progress bar moves on."""
        self.progress.update((itr + 1) % self.log_interval_itrs or self.log_interval_itrs)

    def add_opt_info(self, opt_info) -> None:
        extend_opt_infos(self.opt_infos, opt_info)

    def add_eval(self, itr: int, traj_infos, before_training: bool = False) -> float:
        """Record an evaluation after iteration ``itr`` (or before any training, at 0 env
        steps) in ``eval_history``; returns its mean return."""
        returns = [info["Return"] for info in traj_infos]
        mean = sum(returns) / len(returns) if returns else float("nan")
        cum_steps = 0 if before_training else (itr + 1) * self.itr_batch_size
        self.eval_history.append((cum_steps, mean))
        return mean

    # ---- a row --------------------------------------------------------------------------
    def write_row(self, itr: int, eval_traj_infos=None, eval_time: float = 0.0) -> None:
        """Record and dump the row after iteration ``itr`` (-1: before training)."""
        now = time.time()
        paused = eval_time if self.eval_pauses_training else 0.0
        train_time = max(now - self.last_time - paused, 1e-9)
        new_steps = (itr - self.last_itr) * self.itr_batch_size
        updates = self.algo.update_counter
        new_updates = updates - self.last_update_counter
        cum_steps = (itr + 1) * self.itr_batch_size
        self.cum_eval_time += eval_time
        record = logger.record_tabular
        record("Iteration", itr)
        record("CumTime (s)", now - self.start_time)
        record("CumSteps", cum_steps)
        record("CumCompletedTrajs", self.cum_completed_trajs)
        record("CumUpdates", updates)
        record("StepsPerSecond", new_steps / train_time)
        record("UpdatesPerSecond", new_updates / train_time)
        batch = self.replay_batch_size or self.itr_batch_size
        record("ReplayRatio", new_updates * batch / max(new_steps, 1))
        record("CumReplayRatio", updates * batch / max(cum_steps, 1))
        for key, value in getattr(self.sampler, "diagnostics", dict)().items():
            record(key, value)
        if self.with_eval:
            record("EvalTime (s)", eval_time)
            record("CumEvalTime (s)", self.cum_eval_time)
        self._record_trajs(eval_traj_infos)
        for key, values in self.opt_infos.items():  # OptInfo's gradNorm: GradNormAverage, ...
            logger.record_tabular_misc_stat(logger.column_name(key), values)
        logger.dump_tabular(with_prefix=False, step=cum_steps)
        self.opt_infos = {k: [] for k in self.opt_infos}
        self.last_time, self.last_update_counter = now, updates
        self.last_itr, self.new_completed_trajs = itr, 0

    def drop_row(self) -> None:
        """What ``write_row`` forgets, without a row (a rank that does not log)."""
        self.opt_infos = {k: [] for k in self.opt_infos}
        self.new_completed_trajs = 0

    def _record_trajs(self, eval_traj_infos) -> None:
        if eval_traj_infos is None:
            traj_infos = list(self.traj_infos)
            logger.record_tabular("NewCompletedTrajs", self.new_completed_trajs)
        else:
            traj_infos = eval_traj_infos
            logger.record_tabular("StepsInEval", sum(info["Length"] for info in traj_infos))
            logger.record_tabular("TrajsInEval", len(traj_infos))
            self._record_train_scores()
        if traj_infos:
            for key in traj_infos[0]:
                if not key.startswith("_"):
                    logger.record_tabular_misc_stat(logger.column_name(key),
                                                    [info[key] for info in traj_infos])

    def _record_train_scores(self) -> None:
        """Beside evaluation statistics, the mean over the latest ``log_traj_window``
        training trajectories of their return (and Atari's whole-game score): the measure
        of papers that report training episodes.  NaN before the first one ends."""
        example = getattr(self.sampler, "TrajInfoCls", dict)()
        latest = list(self.traj_infos)
        for key in TRAIN_SCORE_KEYS:
            if key in example:
                mean = float(np.mean([info[key] for info in latest])) if latest else math.nan
                logger.record_tabular(f"Train{key}Average", mean)

    # ---- end and resume -------------------------------------------------------------------
    def stop(self) -> None:
        if self.progress is not None:
            self.progress.stop()

    def summary(self) -> dict:
        returns = [info["Return"] for info in self.traj_infos]
        return dict(
            train_return=sum(returns) / len(returns) if returns else float("nan"),
            eval_history=list(self.eval_history),
            final_eval_return=self.eval_history[-1][1] if self.eval_history else float("nan"),
        )

    def state_dict(self) -> dict:
        """The accumulators, so a resumed run's next rows equal the original's."""
        return dict(
            opt_infos=self.opt_infos, traj_infos=list(self.traj_infos),
            cum_completed_trajs=self.cum_completed_trajs,
            new_completed_trajs=self.new_completed_trajs,
            last_update_counter=self.last_update_counter, last_itr=self.last_itr,
            cum_eval_time=self.cum_eval_time, eval_history=list(self.eval_history),
            elapsed=time.time() - self.start_time,
            # Cumulative sampler columns (RaySampler's ActorRestarts) go on counting.
            sampler=getattr(self.sampler, "diagnostics", dict)(),
        )

    def load_state_dict(self, state: dict) -> None:
        self.opt_infos = state["opt_infos"]
        self.traj_infos = deque(state["traj_infos"], maxlen=self.log_traj_window)
        self.cum_completed_trajs = state["cum_completed_trajs"]
        self.new_completed_trajs = state["new_completed_trajs"]
        self.last_update_counter = state["last_update_counter"]
        self.last_itr = state["last_itr"]
        self.cum_eval_time = state["cum_eval_time"]
        self.eval_history = list(state["eval_history"])
        self.start_time = time.time() - state["elapsed"]  # CumTime goes on counting
        load_sampler = getattr(self.sampler, "load_diagnostics", None)
        if load_sampler is not None and "sampler" in state:
            load_sampler(state["sampler"])


class RunProgress:
    """The terminal progress bar of a run: env steps out of ``n_steps``, with rate and
    ETA, one bar for the whole run (log rows print above it).

    ``update(count)`` takes the iterations done since the last log row
    (``log_interval_itrs`` at a row), as with the classic per-interval bar; the bar
    turns that into the run's env steps.
    """

    def __init__(self, diagnostics: RunDiagnostics):
        self.diagnostics = diagnostics
        self._bar = None

    def update(self, itrs_since_log_row: int) -> None:
        d = self.diagnostics
        steps = (d.last_itr + 1 + itrs_since_log_row) * d.itr_batch_size
        if self._bar is None:  # first update: a resumed run starts its bar where it is
            start = (d.last_itr + 1) * d.itr_batch_size
            self._bar = ProgBarCounter(d.n_itr * d.itr_batch_size, initial=start,
                                       unit="env step")
        self._bar.update(steps)

    def stop(self) -> None:
        if self._bar is not None:
            self._bar.stop()


class AsyncColumns:
    """The columns an asynchronous run adds to each row: the policy lag (parameter
    versions the acting parameters were behind the optimizer's, per update), the
    fraction of the interval each process spent held back, the replay ratio since
    learning started, the parameter version and the optimizer's calls.

    Args:
        throttle: the run's ``ThrottleSpec`` (its replay ratio's terms).
        itr_batch_size: env steps of one sampler batch.
    """

    def __init__(self, throttle, itr_batch_size: int):
        self.throttle, self.itr_batch_size = throttle, itr_batch_size
        self.lags: list[int] = []
        self.optimizer_wait_s = 0.0
        self.last_row_time = time.perf_counter()
        self.last_sampler_wait_s = 0.0

    def add_lag(self, lag: int) -> None:
        self.lags.append(lag)

    def optimizer_waited(self, seconds: float) -> None:
        self.optimizer_wait_s += seconds

    def record(self, itr: int, control, update_counter: int, optimizer_calls: int,
               param_version: int) -> None:
        """Record the columns of the row after sampler iteration ``itr``; ``control``:
        the run's ``AsyncControl`` (the sampler's wait time)."""
        now = time.perf_counter()
        interval = max(now - self.last_row_time, 1e-9)
        sampler_wait = control.sampler_wait_s.value
        lags = self.lags
        logger.record_tabular("PolicyLagAverage", sum(lags) / len(lags) if lags else math.nan)
        logger.record_tabular("PolicyLagMax", max(lags) if lags else math.nan)
        logger.record_tabular("OptimizerWaitFraction",
                              min(self.optimizer_wait_s / interval, 1.0))
        logger.record_tabular("SamplerWaitFraction",
                              min((sampler_wait - self.last_sampler_wait_s) / interval, 1.0))
        learn_steps = (itr + 1 - self.throttle.min_itr_learn) * self.itr_batch_size
        logger.record_tabular(
            "ReplayRatioSinceLearning",
            update_counter * self.throttle.samples_per_update / learn_steps
            if learn_steps > 0 else math.nan)
        logger.record_tabular("ParameterVersion", param_version)
        logger.record_tabular("OptimizerCalls", optimizer_calls)
        self.lags, self.optimizer_wait_s = [], 0.0
        self.last_row_time, self.last_sampler_wait_s = now, sampler_wait
