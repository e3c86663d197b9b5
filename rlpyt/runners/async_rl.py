"""Asynchronous runners: sampling and optimization at the same time, in separate processes.

``AsyncRl`` trains in the main process while a sampler process collects batches, and
a memory-copier process moves each batch into the replay buffer (or, for
``Impala``, into a queue of batches)::

    sampler process ──► double buffer (2 slots, shared) ──► memory copier ──► replay
          ▲  (Async...Sampler + its workers)                                  │
          └──────── parameter board (shared, versioned) ◄── optimizer (main) ◄┘

The replay ratio is held both ways (``rlpyt.samplers.async_.control.ThrottleSpec``):
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

import contextlib
import functools
import multiprocessing as mp
import os
import queue
import signal
import sys
import tempfile
import threading
import time
import traceback
import warnings
from collections.abc import Container
from dataclasses import dataclass

import torch

from rlpyt.runners.async_watch import DEFAULT_PROGRESS_TIMEOUT_S, AsyncWatch, check_progress_timeout
from rlpyt.runners.base import DivergenceError, apply_affinity, training_torch_threads
from rlpyt.runners.minibatch_rl import MinibatchRlBase
from rlpyt.runners.preflight import check_before_start
from rlpyt.samplers.async_.base import AsyncSamplerBase, run_sampler
from rlpyt.samplers.async_.control import AsyncControl, AsyncStopped, ThrottleSpec
from rlpyt.samplers.parallel.control import unlink_semaphore_names
from rlpyt.utils.logging import logger
from rlpyt.utils.process import child_processes, describe_exit, granted_cpus, kill_processes
from rlpyt.utils.seed import make_seed, set_seed

__all__ = ["AsyncRl", "AsyncRlBase", "AsyncRlEval", "AsyncRunError", "EvalItrs", "split_affinity"]

FAULT_CHECK_S = 0.2
# Stopping the sampler and copier processes: after the stop request each has this long
# to leave on its own (both poll it every POLL_S), then SIGTERM (both exit at once on it,
# the sampler stopping its workers), then SIGKILL.  A sampler inside an evaluation or a
# long batch does not look at the request, and a Ctrl-C must end the run within 5 s.
# The SIGTERM wait is the longer one: the sampler then stops its own workers.
JOIN_TIMEOUT_S = 1.0
TERMINATE_TIMEOUT_S = 2.0
DEFAULT_MAX_AHEAD = 2


class AsyncRunError(RuntimeError):
    """A process of an asynchronous run failed; the message holds its traceback."""


def split_affinity(affinity) -> tuple[dict, dict]:
    """``(optimizer part, sampler part)`` of an async affinity.

    Accepts what ``make_affinity(..., async_sample=True)`` returns (one optimizer and
    one sampler part), or the short form ``dict(cuda_idx=..., workers_cpus=[...])``,
    where ``cuda_idx`` is the optimizer's GPU and the rest describes the sampler.
    """
    if affinity is None:
        return {}, {}
    if "optimizer" in affinity:
        optimizer, sampler = affinity["optimizer"], affinity["sampler"]
        if isinstance(optimizer, (list, tuple)):
            if len(optimizer) != 1:
                raise ValueError(
                    f"affinity has {len(optimizer)} optimizer parts (gpu_per_run="
                    f"{len(optimizer)}): AsyncRl trains on one device; use gpu_per_run=1")
            optimizer = optimizer[0]
        if isinstance(sampler, (list, tuple)):
            if len(sampler) != 1:
                raise ValueError(
                    f"affinity has {len(sampler)} sampler parts (sample_gpu_per_run="
                    f"{len(sampler)}): AsyncRl runs one sampler process; use "
                    f"sample_gpu_per_run <= 1")
            sampler = sampler[0]
        return dict(optimizer), dict(sampler)
    affinity = dict(affinity)
    optimizer = dict(cuda_idx=affinity.pop("cuda_idx", None),
                     torch_threads=affinity.get("master_torch_threads"),
                     set_affinity=affinity.get("set_affinity", True))
    affinity.pop("master_cpus", None)
    return optimizer, affinity


def pinned_to(cpus, affinity: dict) -> str:
    if not cpus or not affinity.get("set_affinity", True):
        return "unpinned"
    return "pinned to CPUs " + ", ".join(str(c) for c in cpus)


def describe_layout(sampler, sampler_affinity: dict, optimizer_affinity: dict,
                    threads: int) -> str:
    """Where an async run's parts run, for its start line."""
    inner = sampler.sampler
    envs = f"{sampler.batch_spec.B} envs"
    if sampler.eval_n_envs:
        envs += f" + {sampler.eval_n_envs} eval envs"
    worker_cpus = getattr(inner, "_worker_cpus", None)  # Parallel samplers: the workers.
    n_actors = getattr(inner, "n_actors", None)  # Ray samplers: the actors.
    if n_actors is not None:
        where = f"stepped by {n_actors} Ray actors"
    elif worker_cpus is None:
        where = "stepped in the sampler process"
    else:
        with warnings.catch_warnings():  # More workers than envs: the sampler warns.
            warnings.simplefilter("ignore")
            cpus = worker_cpus(sampler_affinity)
        pinned = pinned_to([c[0] if len(c) == 1 else c for c in cpus if c], sampler_affinity)
        where = f"in {len(cpus)} worker processes ({pinned})"
    sampler_part = f"sampler process: {type(sampler).__name__}, {envs} {where}"
    if sampler_affinity.get("cuda_idx") is not None:
        sampler_part += f", acting on cuda:{sampler_affinity['cuda_idx']}"
    if sampler_affinity.get("master_cpus"):
        sampler_part += f", the process pinned to {sampler_affinity['master_cpus']}"
    cuda, cpus = optimizer_affinity.get("cuda_idx"), optimizer_affinity.get("cpus")
    device = "the CPU" if cuda is None else f"cuda:{cuda}"
    return (f"{sampler_part}; optimizer in this process on {device}, {threads} torch "
            f"thread{'s' if threads != 1 else ''}, {pinned_to(cpus, optimizer_affinity)}")


def memory_copier(double_buffer, control: AsyncControl, append, start_itr: int = 0) -> None:
    """Entry point of the memory-copier process: slot by slot, in order, into the replay
    (from batch ``start_itr`` on, whose slot is ``start_itr % 2``)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(0))
    torch.set_num_threads(1)  # Before any torch op: a forked child may hang otherwise.
    from rlpyt.utils.process import die_with_parent

    die_with_parent()
    try:
        n = start_itr
        while True:
            slot = n % 2
            control.acquire(control.slot_filled[slot])
            append(double_buffer[slot], control.slot_version[slot])
            control.slot_free[slot].release()
            control.batch_appended()
            n += 1
    except (AsyncStopped, SystemExit):
        pass
    except BaseException:  # noqa: BLE001 - everything reaches the optimizer process
        control.errors.put(("memory copier", traceback.format_exc()[-20000:]))
        sys.exit(1)


class QueueReader:
    """Reads a ``multiprocessing.Queue`` in a daemon thread into a local queue.

    A process killed in the middle of ``put`` leaves half a message in the pipe, and a
    ``get`` then blocks forever, even a non-blocking one.  Reading in a thread keeps
    the optimizer free to notice the dead process and stop the run.
    """

    def __init__(self, mp_queue, name: str):
        self.local: queue.Queue = queue.Queue()
        self._mp_queue = mp_queue
        threading.Thread(target=self._forward, name=name, daemon=True).start()

    def _forward(self) -> None:
        while True:
            try:
                self.local.put(self._mp_queue.get())
            except (EOFError, OSError, ValueError):
                return  # The queue was closed: the run is over.

    def get(self, block: bool = False, timeout: float | None = None):
        return self.local.get(block=block, timeout=timeout)


@dataclass(frozen=True)
class EvalItrs:
    """The sampler iterations after which ``AsyncRlEval``'s sampler evaluates: every
    log row's (``(itr + 1) % log_interval_itrs == 0``) and the last (``n_itr - 1``)
    from ``first`` on, and -1 (before the first batch) if ``before_start``.

    A membership test, not a set: a run of 1e12 env steps has 1e10 and more
    iterations, and listing them would take the sampler's start forever.
    """

    first: int
    n_itr: int
    log_interval_itrs: int
    before_start: bool

    def __contains__(self, itr: int) -> bool:
        if itr == -1:
            return self.before_start
        if not self.first <= itr < self.n_itr:
            return False
        return (itr + 1) % self.log_interval_itrs == 0 or itr == self.n_itr - 1


def append_to_buffer(algo, buffer, samples, param_version: int = -1) -> None:
    """What the copier does with one batch: the algorithm picks the fields it stores.

    ``param_version`` is the parameter version the sampler acted with for this batch;
    algorithms that set ``stores_param_version`` (Impala: its true policy lag) get it.
    """
    if getattr(algo, "stores_param_version", False):
        buffer.append_samples(algo.samples_to_buffer(samples, param_version=param_version))
    else:
        buffer.append_samples(algo.samples_to_buffer(samples))


class AsyncRlBase(MinibatchRlBase):
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
        checkpoint_interval_steps, checkpoint_replay, max_abs_value, divergence: as
            ``MinibatchRl``
            (whole-run checkpoints at log rows, taken by the optimizer process with the
            replay read under its lock; the divergence guard). ``train(resume=...)``
            continues the optimizer's state exactly; the sampler restarts its envs.
        progress_timeout: seconds in which neither the sampler, the memory copier nor
            the optimizer makes progress (evaluations excepted) before the run stops with
            an ``AsyncRunError`` naming both sides' state (``rlpyt.runners.async_watch``);
            None: never.  Default 300.

    Uses the ``fork`` start method (the sampler and copier inherit the shared buffers).
    """

    # The sampler process evaluates while this process goes on training, so an
    # evaluation's time stays in the interval of the steps and updates per second.
    _eval_pauses_training = False

    def __init__(self, algo, agent, sampler, n_steps, affinity=None, seed=None,
                 log_interval_steps=1e5, log_traj_window=100, max_ahead=None,
                 checkpoint_interval_steps=None, checkpoint_replay=True, max_abs_value=None,
                 progress_timeout=DEFAULT_PROGRESS_TIMEOUT_S, divergence="stop"):
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
                         divergence=divergence)
        self.affinity = affinity
        self.max_ahead = max_ahead
        self.progress_timeout = check_progress_timeout(progress_timeout)
        self.control = self.sampler_process = self.copier_process = None
        self._stack_file = None

    # ---- set-up ------------------------------------------------------------------------
    def startup(self) -> int:
        optimizer_affinity, self.sampler_affinity = split_affinity(self.affinity)
        check_before_start(self.algo, self.agent, self.sampler, self.n_steps,
                           dict(cuda_idx=optimizer_affinity.get("cuda_idx")))
        granted_cpus()  # The run's CPUs, recorded before any process of it pins itself.
        threads, why = training_torch_threads(optimizer_affinity.get("torch_threads"),
                                              optimizer_affinity.get("cpus"))
        logger.log(f"torch threads of the optimizer: {threads} ({why})")
        self._layout = describe_layout(self.sampler, self.sampler_affinity,
                                       optimizer_affinity, threads)
        if self._n_steps_note:
            logger.log(self._n_steps_note)
        if self.seed is None:
            self.seed = make_seed()
        set_seed(self.seed)
        self.itr_batch_size = self.sampler.batch_spec.size
        n_itr = self.get_n_itr()
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
            self._load_replay(resume)
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
        self.agent.to_device(optimizer_affinity.get("cuda_idx"))  # After forking (CUDA).
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
        ctx = mp.get_context("fork")
        self.control = AsyncControl(ctx, self.throttle)
        self.control.appended.value = self.control.sampled.value = start_itr
        fd, self._stack_file = tempfile.mkstemp(prefix="rlpyt-sampler-stack-", suffix=".txt")
        os.close(fd)
        self.copier_process = ctx.Process(
            target=memory_copier, name="rlpyt-memory-copier",
            args=(self.sampler.double_buffer_pyt, self.control,
                  functools.partial(append_to_buffer, self.algo, self.buffer), start_itr))
        self.copier_process.start()
        self.sampler_process = ctx.Process(
            target=run_sampler, name="rlpyt-sampler",
            args=(self.sampler, self.agent, self.control),
            kwargs=dict(affinity=self.sampler_affinity, seed=self.seed,
                        bootstrap_value=getattr(self.algo, "bootstrap_value", False),
                        traj_info_kwargs=self.get_traj_info_kwargs(), n_itr=self.n_itr,
                        eval_itrs=self.eval_itrs(start_itr), stack_file=self._stack_file,
                        start_itr=start_itr))
        self.sampler_process.start()
        lock = getattr(self.buffer, "rw_lock", None)
        if lock is not None:  # Both children have it now: nothing is left in /dev/shm.
            unlink_semaphore_names(lock.semaphores())
        self._messages = QueueReader(self.control.messages, "rlpyt-async-messages")
        self._errors = QueueReader(self.control.errors, "rlpyt-async-errors")
        self._watch = AsyncWatch(self.control, self.progress_timeout, AsyncRunError)

    def eval_itrs(self, start_itr: int = 0) -> Container[int]:
        """Sampler iterations after which the sampler evaluates (none here)."""
        return frozenset()

    def start_line(self) -> str:
        t = self.throttle
        return (f"Running {type(self).__name__}: {self.n_itr} sampler batches of "
                f"{self.itr_batch_size} env steps ({self.n_itr * self.itr_batch_size} in all) "
                f"and {t.allowed_updates(self.n_itr)} gradient updates (replay ratio "
                f"{t.replay_ratio:g}: {t.updates_per_itr:.3g} updates per batch, learning after "
                f"{t.min_itr_learn} batches); {self._layout}.")

    def initialize_logging(self):
        super().initialize_logging()
        self._opt_itr = 0
        self._starving_at = None
        self._done_sampled = False
        self._final_eval = None
        self._lags: list[int] = []
        self._opt_wait_s = 0.0
        self._last_row_time = time.perf_counter()
        self._last_sampler_wait_s = 0.0
        self._next_fault_check = 0.0
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
            if self._resume_state is not None:
                self.load_checkpoint_state(self._resume_state)
                self.last_checkpoint = self._resume_state["_path"]
                self._resume_state = None
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
                self._opt_wait_s += time.perf_counter() - start

    def _consumed(self) -> int:
        """Updates as the throttle counts them: ``update_counter``, or, for a learner fed
        by a FIFO of batches, the batches it has consumed (``Impala.fifo_position``:
        after a resume the batches sampled but not yet consumed at the checkpoint are
        lost, and the FIFO's numbering goes on from the sampler's)."""
        position = getattr(self.algo, "fifo_position", None)
        return self.algo.update_counter if position is None else position

    def _optimize(self, appended: int) -> None:
        before = self.algo.update_counter
        try:
            opt_info = self.algo.optimize_agent(self._opt_itr, sampler_itr=appended - 1)
        except FloatingPointError as e:  # The algorithm's own NaN check.
            if isinstance(e, DivergenceError):
                raise
            raise DivergenceError(self._divergence_message(str(e), appended - 1)) from e
        self.check_opt_info(appended - 1, opt_info)
        self._opt_itr += 1
        made_progress = self.algo.update_counter > before
        # No update (e.g. the replay cannot yet give an n-step sample): let the sampler
        # run on beyond the ratio until there is more data.
        self._starving_at = None if made_progress else appended
        self.control.publish_updates(self._consumed(), starving=not made_progress)
        for k, values in self._opt_infos.items():
            new = getattr(opt_info, k, [])
            values.extend(new if isinstance(new, list) else [new])
        board = self.agent.param_board
        self._lags.append(board.version - max(self.control.sampler_version.value, 0))

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
        self._cum_completed_trajs += len(traj_infos)
        self._new_completed_trajs += len(traj_infos)
        self._traj_infos.extend(traj_infos)
        self.pbar.update((itr + 1) % self.log_interval_itrs or self.log_interval_itrs)

    def _on_eval(self, itr, traj_infos, eval_time, version) -> None:
        """Evaluations are for the runner with evaluation (``AsyncRlEval``)."""

    def _log_row(self, itr: int, eval_traj_infos=None, eval_time: float = 0.0) -> None:
        now = time.perf_counter()
        interval = max(now - self._last_row_time, 1e-9)
        sampler_wait = self.control.sampler_wait_s.value
        logger.record_tabular("PolicyLagAverage", _mean(self._lags))
        logger.record_tabular("PolicyLagMax", max(self._lags) if self._lags else float("nan"))
        logger.record_tabular("OptimizerWaitFraction", min(self._opt_wait_s / interval, 1.0))
        logger.record_tabular("SamplerWaitFraction",
                              min((sampler_wait - self._last_sampler_wait_s) / interval, 1.0))
        learn_steps = (itr + 1 - self.throttle.min_itr_learn) * self.itr_batch_size
        logger.record_tabular(
            "ReplayRatioSinceLearning",
            self.algo.update_counter * self.throttle.samples_per_update / learn_steps
            if learn_steps > 0 else float("nan"))
        logger.record_tabular("ParameterVersion", self.agent.param_board.version)
        logger.record_tabular("OptimizerCalls", self._opt_itr)
        self._lags, self._opt_wait_s = [], 0.0
        self._last_row_time, self._last_sampler_wait_s = now, sampler_wait
        self.log_diagnostics(itr, eval_traj_infos, eval_time)
        if self.should_stop():
            logger.log(f"Stopping early after sampler iteration {itr}.")
            self._stopping = True
        if itr >= 0 and (self._is_checkpoint_itr(itr) or self._stopping):
            self.save_checkpoint(itr)

    # ---- checkpoints ---------------------------------------------------------------------
    def save_checkpoint(self, itr: int) -> str | None:
        """As ``MinibatchRl``, with the replay read under its lock, so the copier cannot
        append while it is saved and the saved batch count matches its contents."""
        lock = getattr(getattr(self.algo, "replay_buffer", None), "rw_lock", None)
        with lock.read_lock() if lock is not None else contextlib.nullcontext():
            self._checkpoint_appended = self.control.appended.value
            return super().save_checkpoint(itr)

    def checkpoint_state(self, itr: int) -> dict:
        state = super().checkpoint_state(itr)
        state.update(sampler=None, appended=self._checkpoint_appended,
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
        now = time.monotonic()
        if not force and now < self._next_fault_check:
            return
        self._next_fault_check = now + FAULT_CHECK_S
        control = self.control
        self._raise_reported(block=False)
        for name, proc in (("sampler process", self.sampler_process),
                           ("memory copier", self.copier_process)):
            if proc.is_alive():
                continue
            if proc is self.sampler_process and proc.exitcode == 0:
                continue  # Finished its batches (its "done" message is on the way).
            if proc.exitcode is None or proc.exitcode >= 0:
                self._raise_reported(block=True)
            raise AsyncRunError(f"the {name} (pid {proc.pid}) died: {describe_exit(proc.exitcode)}")
        timeout = self.sampler.batch_timeout
        if (timeout is not None and self.sampler_process.is_alive() and not control.in_eval.value
                and time.monotonic() - control.heartbeat.value > timeout):
            self._sampler_hung = True  # shutdown need not wait for it
            raise AsyncRunError(
                f"the sampler process (pid {self.sampler_process.pid}) made no progress for "
                f"over batch_timeout={timeout}s (one batch took longer: a hung env?); its "
                f"stack:\n{self._sampler_stack()}")
        if getattr(self, "_watch", None) is not None and hasattr(self, "_opt_itr"):
            self._watch.check_sampler_exit(self.sampler_process, self._awaited_from_sampler())
            self._watch.check_progress(self.algo.update_counter, self._opt_itr)

    def _awaited_from_sampler(self) -> str | None:
        """What the optimizer still waits for from the sampler process (None: nothing)."""
        return None if self._done_sampled else "its last batches (its 'done' message)"

    def _raise_reported(self, block: bool) -> None:
        try:
            who, text = self._errors.get(block=block, timeout=2.0)
        except queue.Empty:
            return
        raise AsyncRunError(f"the {who} failed:\n{text}")

    def _raise_fault(self, error: BaseException) -> None:
        """Raise ``AsyncRunError`` (chained to ``error``) if a process has failed."""
        if self.control is None:
            return
        try:
            self._check_faults(force=True)
        except AsyncRunError as fault:
            raise fault from error

    def _sampler_stack(self) -> str:
        try:
            os.kill(self.sampler_process.pid, signal.SIGUSR1)
            text, deadline = "", time.monotonic() + 1.0
            while time.monotonic() < deadline:  # until the dump stops growing
                time.sleep(0.1)
                with open(self._stack_file) as f:
                    now = f.read()
                if now and now == text:
                    break
                text = now
            return text or "(no stack was written)"
        except OSError as e:
            return f"(could not read its stack: {e})"

    # ---- shutdown ------------------------------------------------------------------------
    def shutdown(self):
        if getattr(self, "pbar", None) is not None:
            self.pbar.stop()
        if self.control is None:
            return
        self.control.request_stop()
        procs = [p for p in (self.sampler_process, self.copier_process) if p is not None]
        descendants = child_processes(procs)
        if getattr(self, "_sampler_hung", False):
            self.sampler_process.terminate()  # Hung: it will not see the stop request.
        deadline = time.monotonic() + JOIN_TIMEOUT_S
        for proc in procs:
            proc.join(timeout=max(0.0, deadline - time.monotonic()))
        for proc in procs:
            if proc.is_alive():
                proc.terminate()
        deadline = time.monotonic() + TERMINATE_TIMEOUT_S
        for proc in procs:
            proc.join(timeout=max(0.0, deadline - time.monotonic()))
        for proc in procs:
            if proc.is_alive():
                proc.kill()
                proc.join(timeout=2.0)
        kill_processes(descendants, timeout=2.0)
        self.control.close()
        self.control = None
        if self._stack_file is not None:
            try:
                os.unlink(self._stack_file)
            except OSError:
                pass
            self._stack_file = None


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
        returns = [info["Return"] for info in traj_infos]
        mean = sum(returns) / len(returns) if returns else float("nan")
        cum_steps = 0 if itr < 0 else (itr + 1) * self.itr_batch_size
        self.eval_history.append((cum_steps, mean))
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


def _mean(values) -> float:
    return sum(values) / len(values) if values else float("nan")
