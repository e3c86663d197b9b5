"""The two child processes of an asynchronous run, started, watched and stopped.

The sampler process (``rlpyt.samplers.async_.base.run_sampler``) fills a double buffer;
the memory copier moves each filled slot into the algorithm's replay (or Impala's
FIFO).  ``AsyncProcesses`` forks both (they inherit the shared buffers), reads the
messages and errors they send, raises ``AsyncRunError`` with the failing process's
traceback (or how it died, or the stack of a hung sampler), and stops both with
stop request -> SIGTERM -> SIGKILL, reaping every descendant and releasing the
shared control block.
"""

from __future__ import annotations

import functools
import multiprocessing as mp
import queue
import threading
import time

from rlpyt.samplers.async_.base import run_sampler
from rlpyt.samplers.async_.control_block import AsyncControl, AsyncStopped, ThrottleSpec
from rlpyt.samplers.parallel.worker_channel import unlink_semaphore_names
from rlpyt.utils.supervisor import (
    ASYNC_PROCESSES,
    child_setup,
    describe_exit,
    failures_reported,
    read_stack,
    stack_pipe,
    start_process,
    stop_processes,
)

__all__ = ["AsyncProcesses", "AsyncRunError", "QueueReader", "append_to_buffer",
           "memory_copier"]

FAULT_CHECK_S = 0.2


class AsyncRunError(RuntimeError):
    """A process of an asynchronous run failed; the message holds its traceback."""


def append_to_buffer(algo, buffer, samples, param_version: int = -1) -> None:
    """What the copier does with one batch: the algorithm picks the fields it stores.

    ``param_version`` is the parameter version the sampler acted with for this batch;
    algorithms that set ``stores_param_version`` (Impala: its true policy lag) get it.
    """
    if getattr(algo, "stores_param_version", False):
        buffer.append_samples(algo.samples_to_buffer(samples, param_version=param_version))
    else:
        buffer.append_samples(algo.samples_to_buffer(samples))


def memory_copier(double_buffer, control: AsyncControl, append, start_itr: int = 0) -> None:
    """Entry point of the memory-copier process: slot by slot, in order, into the replay
    (from batch ``start_itr`` on, whose slot is ``start_itr % 2``)."""
    child_setup()
    with failures_reported(lambda text: control.errors.put(("memory copier", text)),
                           quiet=(AsyncStopped, SystemExit)):
        n = start_itr
        while True:
            slot = n % 2
            control.acquire(control.slot_filled[slot])
            append(double_buffer[slot], control.slot_version[slot])
            control.slot_free[slot].release()
            control.batch_appended()
            n += 1


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


class AsyncProcesses:
    """The sampler and memory-copier processes of one asynchronous run.

    ``control`` (the shared counters, slots and queues), ``sampler_process`` and
    ``copier_process`` are None before ``start`` and after ``stop``.
    """

    def __init__(self):
        self.control = self.sampler_process = self.copier_process = None
        self.messages = self.errors = None
        self._stack_reader = None
        self._sampler_hung = False
        self._next_check = 0.0

    def start(self, throttle: ThrottleSpec, sampler, agent, algo, buffer, start_itr: int,
              **sampler_kwargs) -> None:
        """Fork the copier and the sampler, which go on from batch ``start_itr``;
        ``sampler_kwargs`` go to ``run_sampler``."""
        ctx = mp.get_context("fork")
        self.control = AsyncControl(ctx, throttle)
        self.control.appended.value = self.control.sampled.value = start_itr
        self._stack_reader, stack_writer = stack_pipe(ctx)
        self.copier_process = ctx.Process(
            target=memory_copier, name="rlpyt-memory-copier",
            args=(sampler.double_buffer_pyt, self.control,
                  functools.partial(append_to_buffer, algo, buffer), start_itr))
        start_process(self.copier_process)
        self.sampler_process = ctx.Process(
            target=run_sampler, name="rlpyt-sampler", args=(sampler, agent, self.control),
            kwargs=dict(sampler_kwargs, stack_writer=stack_writer, start_itr=start_itr))
        start_process(self.sampler_process)
        stack_writer.close()  # The sampler holds its own copy.
        lock = getattr(buffer, "rw_lock", None)
        if lock is not None:  # Both children have it now: nothing is left in /dev/shm.
            unlink_semaphore_names(lock.semaphores())
        self.messages = QueueReader(self.control.messages, "rlpyt-async-messages")
        self.errors = QueueReader(self.control.errors, "rlpyt-async-errors")

    def check(self, batch_timeout: float | None, force: bool = False) -> bool:
        """Raise ``AsyncRunError`` if a process reported an error, died, or the sampler
        made no progress for ``batch_timeout`` seconds outside an evaluation.  Checks
        at most every ``FAULT_CHECK_S`` unless ``force``; returns whether it checked."""
        now = time.monotonic()
        if not force and now < self._next_check:
            return False
        self._next_check = now + FAULT_CHECK_S
        self.raise_reported(block=False)
        for name, proc in (("sampler process", self.sampler_process),
                           ("memory copier", self.copier_process)):
            if proc.is_alive():
                continue
            if proc is self.sampler_process and proc.exitcode == 0:
                continue  # Finished its batches (its "done" message is on the way).
            if proc.exitcode is None or proc.exitcode >= 0:
                self.raise_reported(block=True)
            raise AsyncRunError(f"the {name} (pid {proc.pid}) died: {describe_exit(proc.exitcode)}")
        control = self.control
        if (batch_timeout is not None and self.sampler_process.is_alive()
                and not control.in_eval.value
                and time.monotonic() - control.heartbeat.value > batch_timeout):
            self._sampler_hung = True  # stop need not wait for it
            raise AsyncRunError(
                f"the sampler process (pid {self.sampler_process.pid}) made no progress for "
                f"over batch_timeout={batch_timeout}s (one batch took longer: a hung env?); "
                f"its stack:\n{read_stack(self.sampler_process.pid, self._stack_reader)}")
        return True

    def raise_reported(self, block: bool) -> None:
        try:
            who, text = self.errors.get(block=block, timeout=2.0)
        except queue.Empty:
            return
        raise AsyncRunError(f"the {who} failed:\n{text}")

    def stop(self) -> None:
        """Stop request, then SIGTERM, then SIGKILL; every descendant reaped, the shared
        control block released."""
        if self.control is None:
            return
        # Both poll the request; SIGTERM ends either at once (the sampler stopping its
        # workers first).  A sampler inside an evaluation or a long batch does not look.
        stop_processes([self.sampler_process, self.copier_process], ASYNC_PROCESSES,
                       request_stop=self.control.request_stop,
                       hung=[self.sampler_process] if self._sampler_hung else ())
        self.control.close()
        self.control = None
        if self._stack_reader is not None:
            self._stack_reader.close()
            self._stack_reader = None
