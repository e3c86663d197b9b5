"""``AsyncRlBase``: the optimizer's side of an asynchronous run (``rlpyt.runners.async_rl``
has the runners and the picture): set-up before and after forking the sampler and
memory-copier processes (``AsyncProcesses``), the loop that optimizes at the replay
ratio while reading the sampler's messages, checkpoints and shutdown."""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import queue
import sys
import time
from collections.abc import Container

from rlpyt.runners.async_layout import describe_layout, split_affinity
from rlpyt.runners.async_processes import AsyncProcesses, AsyncRunError
from rlpyt.runners.async_watch import DEFAULT_PROGRESS_TIMEOUT_S, AsyncWatch, check_progress_timeout
from rlpyt.runners.base import apply_affinity, training_torch_threads
from rlpyt.runners.diagnostics import AsyncColumns
from rlpyt.runners.run_core import RunnerCore
from rlpyt.samplers.async_.base import AsyncSamplerBase
from rlpyt.samplers.async_.control_block import ThrottleSpec
from rlpyt.utils.logging import logger
from rlpyt.utils.malloc import keep_freed_memory
from rlpyt.utils.process import flush_denormals, granted_cpus
from rlpyt.utils.supervisor import raise_if_stopped

__all__ = ["AsyncRlBase", "AsyncRunError"]

DEFAULT_MAX_AHEAD = 2


class AsyncRlBase(RunnerCore):
    """Optimizer in this process, sampler and memory copier in their own processes.

    Args:
        algo: a replay-based algorithm (DQN and its variants, R2D1, DDPG, TD3, SAC) or
            ``Impala``; it must implement ``async_initialize``.
        agent: the agent.
        sampler: an ``Async...Sampler`` (``rlpyt.samplers.async_``).
        n_steps: env steps to sample (rounded up to whole sampler batches).
        affinity: from ``make_affinity(..., async_sample=True)`` (``optimizer`` and
            ``sampler`` parts), or ``dict(cuda_idx=..., workers_cpus=[...])``; None runs
            unpinned on the CPU.
        seed: run seed; None draws one. Default None.
        log_interval_steps: env steps between log rows (and evaluations). Default 1e5.
        log_traj_window: latest completed trajectories in the train stats. Default 100.
        max_ahead: sampler batches the sampler may run ahead of what the optimizer has
            consumed at the replay ratio; None takes the algorithm's
            ``async_max_ahead`` if it has one, else 2.  Larger values overlap better and
            let the measured ratio wander further within a log interval.
        checkpoint_interval_steps, checkpoint_replay, checkpoint_keep, max_abs_value,
            divergence: as ``MinibatchRl``
            (whole-run checkpoints at log rows, taken by the optimizer process with the
            replay read under its lock; the divergence guard). ``train(resume=...)``
            continues the optimizer's state exactly; the sampler restarts its envs.
        progress_timeout: seconds in which neither the sampler, the memory copier nor
            the optimizer makes progress (evaluations excepted) before the run stops with
            an ``AsyncRunError`` naming both sides' state (``rlpyt.runners.async_watch``);
            None: never.  Default 300.
        learner_channels_last: on the CPU, keep the learner's convolution weights in
            channels-last memory order (``agent.learner_channels_last``): the same
            arithmetic, and the learner of a conv net trains faster (docs/notes/appo.md).
            The sampler's copy keeps the default order.  Default True.

    Uses the ``fork`` start method (the sampler and copier inherit the shared buffers).
    """

    # The sampler process evaluates while this process goes on training, so an
    # evaluation's time stays in the interval of the steps and updates per second.
    _eval_pauses_training = False

    def __init__(self, algo, agent, sampler, n_steps, affinity=None, seed=None,
                 log_interval_steps=1e5, log_traj_window=100, max_ahead=None,
                 checkpoint_interval_steps=None, checkpoint_replay=True, max_abs_value=None,
                 progress_timeout=DEFAULT_PROGRESS_TIMEOUT_S, divergence="stop",
                 checkpoint_keep=1, learner_channels_last=True):
        if not isinstance(sampler, AsyncSamplerBase):
            raise TypeError(
                f"{type(self).__name__} needs an asynchronous sampler from "
                f"rlpyt.samplers.async_ (AsyncSerialSampler, AsyncCpuSampler, "
                f"AsyncGpuSampler, AsyncAlternatingSampler) or AsyncRaySampler "
                f"(rlpyt.samplers.ray_.async_sampler); got {type(sampler).__name__}")
        if max_ahead is not None and (int(max_ahead) != max_ahead or max_ahead < 1):
            raise ValueError(f"max_ahead={max_ahead!r} must be an integer >= 1 or None")
        if "fork" not in mp.get_all_start_methods():
            raise RuntimeError(f"{type(self).__name__} needs the 'fork' start method, which "
                               f"this platform ({sys.platform}) does not offer")
        super().__init__(algo, agent, sampler, n_steps, seed=seed, affinity=None,
                         log_interval_steps=log_interval_steps,
                         log_traj_window=log_traj_window,
                         checkpoint_interval_steps=checkpoint_interval_steps,
                         checkpoint_replay=checkpoint_replay, max_abs_value=max_abs_value,
                         divergence=divergence, checkpoint_keep=checkpoint_keep)
        self.affinity = affinity
        self.max_ahead = max_ahead
        self.learner_channels_last = bool(learner_channels_last)
        self.progress_timeout = check_progress_timeout(progress_timeout)
        self.processes = AsyncProcesses()
        self._watch = None  # the processes' watch, once they run
        self._opt_itr = None  # optimizer calls, once logging is set up

    @property
    def control(self):
        """The run's shared control block (None before the processes start and after)."""
        return self.processes.control

    @property
    def sampler_process(self):
        return self.processes.sampler_process

    @property
    def copier_process(self):
        return self.processes.copier_process

    # ---- set-up ------------------------------------------------------------------------
    def startup(self) -> int:
        optimizer_affinity, self.sampler_affinity = split_affinity(self.affinity)
        granted_cpus()  # The run's CPUs, recorded before any process of it pins itself.
        threads, why = training_torch_threads(optimizer_affinity.get("torch_threads"),
                                              optimizer_affinity.get("cpus"))
        logger.log(f"torch threads of the optimizer: {threads} ({why})")
        self._layout = describe_layout(self.sampler, self.sampler_affinity,
                                       optimizer_affinity, threads)
        n_itr = self.begin_run(dict(cuda_idx=optimizer_affinity.get("cuda_idx")))
        examples = self.sampler.async_initialize(
            self.agent, bootstrap_value=getattr(self.algo, "bootstrap_value", False),
            seed=self.seed)
        self.buffer = self.algo.async_initialize(
            agent=self.agent, sampler_n_itr=n_itr, batch_spec=self.sampler.batch_spec,
            mid_batch_reset=self.sampler.mid_batch_reset, examples=examples, world_size=1)
        self.throttle = self.make_throttle()
        resume = self._resume_state
        if resume is not None:  # Before forking: the sampler starts from these weights.
            self.agent.load_state_dict(resume["agent"])
            self.checkpoints.load_replay(resume, getattr(self.algo, "replay_buffer", None))
            restart_fifo = getattr(self.buffer, "restart_at", None)
            if restart_fifo is not None:  # A FIFO is not saved: it goes on empty.
                restart_fifo(resume["appended"])
        self.agent.async_cpu(share_memory=True)
        if resume is not None:  # Parameter versions go on counting.
            self.agent.param_board.restart_at(resume.get("param_version", 0))
        self._start_processes(start_itr=0 if resume is None else resume["appended"])
        # Pinned after forking: the sampler and copier start from the run's full CPU set.
        apply_affinity(optimizer_affinity.get("cpus"), threads,
                       optimizer_affinity.get("set_affinity", True))
        self._denormals_were_flushed = flush_denormals()  # restored at shutdown
        self._freed_memory_was_kept = keep_freed_memory()  # likewise (rlpyt.utils.malloc)
        self.agent.to_device(optimizer_affinity.get("cuda_idx"))  # After forking (CUDA).
        if self.learner_channels_last and self.agent.learner_channels_last():
            logger.log("learner's convolution weights: channels-last memory order")
        self.algo.optim_initialize(rank=0)
        if resume is not None:
            self.algo.load_state_dict(resume["algo"])
            self.control.publish_updates(self._consumed(), starving=False)
        self.initialize_logging()
        return n_itr

    def make_throttle(self) -> ThrottleSpec:
        algo = self.algo
        max_ahead = self.max_ahead or getattr(algo, "async_max_ahead", None) or DEFAULT_MAX_AHEAD
        return ThrottleSpec(
            replay_ratio=float(algo.replay_ratio), samples_per_update=int(algo.batch_size),
            itr_env_steps=self.itr_batch_size,
            min_itr_learn=int(getattr(algo, "min_itr_learn", 0)), max_ahead=int(max_ahead))

    def _start_processes(self, start_itr: int = 0) -> None:
        self.processes.start(
            self.throttle, self.sampler, self.agent, self.algo, self.buffer, start_itr,
            affinity=self.sampler_affinity, seed=self.seed,
            bootstrap_value=getattr(self.algo, "bootstrap_value", False),
            traj_info_kwargs=self.get_traj_info_kwargs(), n_itr=self.n_itr,
            eval_itrs=self.eval_itrs(start_itr))
        self._messages = self.processes.messages
        self._watch = AsyncWatch(self.control, self.progress_timeout, AsyncRunError)

    def eval_itrs(self, start_itr: int = 0) -> Container[int]:
        """Sampler iterations after which the sampler evaluates (none here)."""
        return frozenset()

    def start_line(self) -> str:
        t = self.throttle
        # A learner of whole batches (APPO) takes several gradient steps per update.
        steps = getattr(self.algo, "epochs", 1) * getattr(self.algo, "minibatches", 1)
        updates = f"updates of {steps} gradient steps" if steps > 1 else "gradient updates"
        return (f"Running {type(self).__name__}: {self.n_itr} sampler batches of "
                f"{self.itr_batch_size} env steps ({self.n_itr * self.itr_batch_size} in all) "
                f"and {t.allowed_updates(self.n_itr)} {updates} (replay ratio "
                f"{t.replay_ratio:g}: {t.updates_per_itr:.3g} updates per batch, learning after "
                f"{t.min_itr_learn} batches); {self._layout}.")

    def initialize_logging(self):
        super().initialize_logging()
        self._opt_itr = 0
        self._starving_at = None
        self._done_sampled = False
        self._final_eval = None
        self.async_columns = AsyncColumns(self.throttle, self.itr_batch_size)
        self._stopping = False
        self.agent.train_mode(0)

    # ---- the loop ------------------------------------------------------------------------
    def train(self, resume: bool | str | None = None):
        """Run training; returns the runner's summary (as ``MinibatchRl``).

        ``resume`` as ``MinibatchRl.train``: the optimizer's state (agent, optimizer,
        counters, replay, logs) continues exactly from the checkpoint; the sampler
        process restarts its envs from seeds derived from the run seed and the batch.
        """
        started = False
        try:
            self._resume_state = self.find_resume_state(resume)
            if self._resume_state is not None and self._resume_is_complete(self._resume_state):
                return self.summary()  # Nothing to train: no process is started.
            self.startup()
            started = True
            if self._resume_state is not None:  # logs, diagnostics and RNG go on from it
                state, self._resume_state = self._resume_state, None
                self.load_checkpoint_state(state)
            self._optimize_until_done()
            if not self._stopping:
                self._log_final_row()
        except KeyboardInterrupt:
            if started:  # during start-up the agent or optimizer may not exist yet
                logger.log("Interrupted: writing the last snapshot.")
                self._save_last_snapshot()
            raise
        except AsyncRunError:
            raise
        except Exception as error:
            self._raise_fault(error)  # A dead process is the cause more often than not.
            raise
        finally:
            self.shutdown()
        return self.summary()

    def _optimize_until_done(self) -> None:
        control, throttle = self.control, self.throttle
        while not self._stopping:
            raise_if_stopped()
            self._check_faults()
            self._read_messages()
            appended = control.appended.value
            allowed = throttle.allowed_updates(appended)
            if self._consumed() < allowed and self._starving_at != appended:
                self._optimize(appended)
            elif self._done_sampled and appended >= self.n_itr:
                return
            else:
                start = time.perf_counter()
                control.wait_appended_above(appended)
                self.async_columns.optimizer_waited(time.perf_counter() - start)

    def _consumed(self) -> int:
        """Updates as the throttle counts them: ``update_counter``, or, for a learner fed
        by a FIFO of batches, the batches it has consumed (``Impala.fifo_position``:
        after a resume the batches sampled but not yet consumed at the checkpoint are
        lost, and the FIFO's numbering goes on from the sampler's)."""
        position = getattr(self.algo, "fifo_position", None)
        return self.algo.update_counter if position is None else position

    def _optimize(self, appended: int) -> None:
        before = self.algo.update_counter
        opt_info = self.guard.update(
            lambda: self.algo.optimize_agent(self._opt_itr, sampler_itr=appended - 1),
            appended - 1, self.last_checkpoint)
        self._opt_itr += 1
        made_progress = self.algo.update_counter > before
        # No update (e.g. the replay cannot yet give an n-step sample): let the sampler
        # run on beyond the ratio until there is more data.
        self._starving_at = None if made_progress else appended
        self.control.publish_updates(self._consumed(), starving=not made_progress)
        self.diagnostics.add_opt_info(opt_info)
        self.async_columns.add_lag(
            self.agent.param_board.version - max(self.control.sampler_version.value, 0))

    def _read_messages(self) -> None:
        while True:
            try:
                kind, itr, payload = self._messages.get()
            except queue.Empty:
                return
            if kind == "traj":
                self.store_diagnostics(itr, payload, None)
                if self._is_log_itr(itr) and itr < self.n_itr - 1 and not self._eval:
                    self._log_row(itr)
            elif kind == "eval":
                self._on_eval(itr, *payload)
            elif kind == "done":
                self._done_sampled = True
            if self._stopping:
                return

    def store_diagnostics(self, itr, traj_infos, opt_info):
        self.diagnostics.add_trajs(itr, traj_infos)  # (the optimizer's values: _optimize)

    def _on_eval(self, itr, traj_infos, eval_time, version) -> None:
        """Evaluations are for the runner with evaluation (``AsyncRlEval``)."""

    def _log_row(self, itr: int, eval_traj_infos=None, eval_time: float = 0.0) -> None:
        self.async_columns.record(itr, self.control, self.algo.update_counter, self._opt_itr,
                                  self.agent.param_board.version)
        self.log_diagnostics(itr, eval_traj_infos, eval_time)
        if self.should_stop():
            logger.log(f"Stopping early after sampler iteration {itr}.")
            self._stopping = True
        if itr >= 0 and (self.checkpoints.is_due(itr) or self._stopping):
            self.save_checkpoint(itr)

    # ---- checkpoints ---------------------------------------------------------------------
    def save_checkpoint(self, itr: int) -> str | None:
        """As ``MinibatchRl``, with the replay read under its lock, so the copier cannot
        append while it is saved and the saved batch count matches its contents."""
        lock = getattr(getattr(self.algo, "replay_buffer", None), "rw_lock", None)
        with lock.read_lock() if lock is not None else contextlib.nullcontext():
            return super().save_checkpoint(itr)  # checkpoint_state runs under the lock

    def checkpoint_state(self, itr: int) -> dict:
        state = super().checkpoint_state(itr)
        state.update(sampler=None, appended=self.control.appended.value,
                     sampler_note="an asynchronous run's envs live in its sampler process",
                     optimizer_calls=self._opt_itr, param_version=self.agent.param_board.version)
        return state

    def load_checkpoint_state(self, state: dict) -> int:
        """The optimizer side was restored before the processes started (``startup``);
        here the logs, diagnostics and random state continue."""
        logger.log(f"Resume: the sampler goes on from batch {state['appended']} with fresh "
                   f"envs; the optimizer state, replay and logs continue exactly.")
        self._opt_itr = state.get("optimizer_calls", 0)
        return self.restore_log_state(state)

    def _log_final_row(self) -> None:
        self._read_messages()
        self._log_row(self.n_itr - 1)

    def _save_last_snapshot(self) -> None:
        last = (self.control.appended.value - 1) if self.control is not None else -1
        if last >= 0:
            self.save_itr_snapshot(last)

    # ---- faults --------------------------------------------------------------------------
    def _check_faults(self, force: bool = False) -> None:
        if not self.processes.check(self.sampler.batch_timeout, force):
            return
        if self._watch is not None and self._opt_itr is not None:
            self._watch.check_sampler_exit(self.sampler_process, self._awaited_from_sampler())
            self._watch.check_progress(self.algo.update_counter, self._opt_itr)

    def _awaited_from_sampler(self) -> str | None:
        """What the optimizer still waits for from the sampler process (None: nothing)."""
        return None if self._done_sampled else "its last batches (its 'done' message)"

    def _raise_fault(self, error: BaseException) -> None:
        """Raise ``AsyncRunError`` (chained to ``error``) if a process has failed."""
        if self.control is None:
            return
        try:
            self._check_faults(force=True)
        except AsyncRunError as fault:
            raise fault from error

    # ---- shutdown ------------------------------------------------------------------------
    def shutdown(self):
        self.diagnostics.stop()
        self.processes.stop()
        self._restore_process_settings()
