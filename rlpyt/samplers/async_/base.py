"""Asynchronous samplers: a synchronous sampler run in its own process, feeding a double buffer.

An ``Async...Sampler`` is built with the keywords of the synchronous sampler it wraps
(``SerialSampler``, ``CpuSampler``, ``GpuSampler``, ``AlternatingSampler``).  The runner
(``AsyncRl``) uses it in two places:

1. in the optimizer process, ``async_initialize`` builds the agent's model and the
   **double buffer**: two ``[T, B]`` sample buffers in shared memory, from one example
   step taken in that process;
2. in the sampler process, ``run_sampler`` builds the wrapped sampler (its envs, and
   its worker processes if it has any), then loops: wait for sampling credit, load the
   newest published parameters, collect a batch, copy it into the next free slot of the
   double buffer and hand the slot to the memory copier.  Stepping never waits for the
   copy into the replay buffer, only for a free slot.

Evaluation (``AsyncRlEval``) also runs here, between batches, with the parameters
of that moment; its trajectories go to the optimizer process as messages, so the
optimizer never runs or waits for an evaluation itself.
"""

from __future__ import annotations

import time
from collections.abc import Container
from dataclasses import dataclass

from rlpyt.samplers.async_.control_block import AsyncControl, AsyncStopped
from rlpyt.samplers.base import BaseSampler
from rlpyt.samplers.samples_buffer import build_samples_buffer
from rlpyt.utils.buffer import torchify_buffer
from rlpyt.utils.supervisor import child_setup, dump_stack_on_sigusr1, failures_reported

__all__ = ["AsyncSamplerBase", "SamplerLoop", "run_sampler"]


class AsyncSamplerBase(BaseSampler):
    """Wraps a synchronous sampler class (``SamplerCls``) to run in a sampler process.

    Takes the wrapped sampler's keywords (checked by building it here; a parallel
    sampler's ``step_timeout``, seconds one env call in a worker may take, passes
    through to it), plus:
        batch_timeout: seconds one batch of the sampler process may take before the
            run stops with an error naming the sampler process and holding its Python
            stack; it catches a hung env of ``AsyncSerialSampler``, whose envs step in
            the sampler process itself.  ``None`` disables it.  Evaluations are not
            timed by it.  Default 120.

    The CUDA device of central inference (``AsyncGpuSampler``) comes from the sampler
    part of the runner's affinity (``affinity["sampler"]["cuda_idx"]``).
    """

    SamplerCls: type[BaseSampler]
    forwards_keywords_to = "SamplerCls"  # Its keywords are checked as the wrapped class's.

    def __init__(self, *args, batch_timeout: float | None = 120.0, **kwargs):
        self.sampler = self.SamplerCls(*args, **kwargs)
        if batch_timeout is not None and not batch_timeout > 0:
            raise ValueError(f"batch_timeout={batch_timeout!r} must be > 0 seconds, or None")
        self.batch_timeout = batch_timeout
        inner = self.sampler
        self.EnvCls, self.env_kwargs = inner.EnvCls, inner.env_kwargs
        self.batch_spec, self.mid_batch_reset = inner.batch_spec, inner.mid_batch_reset
        self.eval_n_envs, self.TrajInfoCls = inner.eval_n_envs, inner.TrajInfoCls
        self.CollectorCls = inner.CollectorCls
        self.double_buffer_np = self.double_buffer_pyt = None

    def initialize(self, *args, **kwargs):
        raise TypeError(f"{type(self).__name__} runs under an asynchronous runner "
                        f"(rlpyt.runners.async_rl.AsyncRl); for MinibatchRl use "
                        f"{self.SamplerCls.__name__}")

    def async_initialize(self, agent, bootstrap_value: bool = False, seed: int | None = None
                         ) -> dict:
        """Optimizer process, before the sampler process starts: build the agent's model
        (on the CPU, not shared) and the double buffer; returns the ``examples`` dict."""
        B = self.batch_spec.B
        example_env = self.EnvCls(**self.env_kwargs)
        try:
            if seed is not None:
                example_env.seed(int(seed))
            agent.initialize(example_env.spaces, share_memory=False, global_B=B,
                             env_ranks=list(range(B)))
            _, first_np, examples = build_samples_buffer(
                agent, example_env, self.batch_spec, bootstrap_value,
                agent_shared=True, env_shared=True)
        finally:
            example_env.close()
        _, second_np, _ = build_samples_buffer(
            agent, None, self.batch_spec, bootstrap_value, agent_shared=True,
            env_shared=True, examples=examples)
        self.double_buffer_np = [first_np, second_np]
        self.double_buffer_pyt = [torchify_buffer(b) for b in self.double_buffer_np]
        return examples

    def make_loop(self, inner: BaseSampler, agent, control: AsyncControl) -> SamplerLoop:
        """Sampler process: the loop that fills the double buffer from ``inner`` (the
        wrapped sampler, initialized); a subclass may collect differently."""
        return SamplerLoop(inner, self.double_buffer_np, agent, control)


@dataclass(frozen=True)
class EvalItrs:
    """The sampler iterations after which an ``AsyncRlEval`` run's sampler evaluates: every
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


def run_sampler(sampler: AsyncSamplerBase, agent, control: AsyncControl, *, affinity: dict,
                seed: int, bootstrap_value: bool, traj_info_kwargs: dict, n_itr: int,
                eval_itrs: Container[int], stack_writer=None, start_itr: int = 0) -> None:
    """Entry point of the sampler process (a ``multiprocessing.Process`` target).

    Args:
        sampler: the async sampler (its ``double_buffer_np`` already allocated).
        agent: the agent, whose ``param_board`` the optimizer publishes to.
        control: the run's shared ``AsyncControl``.
        affinity: the sampler part of the runner's affinity.
        seed: run seed (envs are seeded from it as by the wrapped sampler).
        bootstrap_value: record value estimates for on-policy return estimates.
        traj_info_kwargs: keywords of the trajectory-info class.
        n_itr: batches to collect.
        eval_itrs: iterations after which to evaluate (-1: before the first batch).
        start_itr: the first batch's iteration (a resumed run goes on from its checkpoint).
        stack_writer: a ``stack_pipe`` end where ``SIGUSR1`` makes this process write
            every thread's stack (the runner's watchdog reads it when a batch takes
            too long).
    """
    # The optimizer process decides when to stop; this process starts its own workers
    # (the fork server stays), and its torch threads are set below.
    child_setup(fork_server=True, torch_threads=None)
    from rlpyt.utils.process import apply_affinity
    from rlpyt.utils.seed import set_seed

    dump_stack_on_sigusr1(stack_writer)
    inner = sampler.sampler
    try:
        with failures_reported(lambda text: control.errors.put(("sampler process", text)),
                               quiet=(AsyncStopped, SystemExit)):
            # One torch thread, whatever the affinity asks: this process is forked from
            # the optimizer's, and once that has run an OpenMP region on several threads
            # (a second run in the same process), a forked child's first multi-threaded
            # op waits for threads it does not have (libgomp is not fork-safe).  Its
            # workers start fresh.
            apply_affinity(affinity.get("master_cpus"), 1, affinity.get("set_affinity", True))
            set_seed(seed + 1 + start_itr)  # The sampler's own stream (action sampling).
            inner.initialize(agent=agent, affinity=affinity, seed=seed + start_itr,
                             bootstrap_value=bootstrap_value,
                             traj_info_kwargs=traj_info_kwargs)
            agent.to_device(affinity.get("cuda_idx"))
            agent.recv_shared_memory()
            sampler.make_loop(inner, agent, control).run(start_itr, n_itr, eval_itrs)
    finally:
        inner.shutdown()


class SamplerLoop:
    """The sampler process's loop over batches (and evaluations)."""

    def __init__(self, inner: BaseSampler, double_buffer_np: list, agent, control: AsyncControl):
        self.inner, self.double_buffer_np = inner, double_buffer_np
        self.agent, self.control = agent, control

    def run(self, start_itr: int, n_itr: int, eval_itrs: Container[int]) -> None:
        control = self.control
        if -1 in eval_itrs:
            self.evaluate(-1)
        for itr in range(start_itr, n_itr):
            control.wait_sampling_credit(itr)
            self.agent.recv_shared_memory()
            control.sampler_version.value = self.agent.param_version
            control.beat()
            self.agent.sample_mode(itr)
            samples_np, traj_infos = self.collect(itr)
            slot = itr % 2
            control.acquire(control.slot_free[slot], beat=True)
            self.double_buffer_np[slot][:] = samples_np  # One copy; the copier does the rest.
            # The version the batch acted with (a collect that streams slices, as
            # AsyncRaySampler's, sets it to its slices' oldest).
            control.slot_version[slot] = control.sampler_version.value
            control.sampled.value = itr + 1
            control.slot_filled[slot].release()
            control.beat()
            control.messages.put(("traj", itr, traj_infos))
            if itr in eval_itrs:
                self.evaluate(itr)
        if start_itr >= n_itr and n_itr - 1 in eval_itrs:  # Resumed with every batch sampled.
            self.evaluate(n_itr - 1)
        control.messages.put(("done", n_itr, None))

    def collect(self, itr: int):
        samples, traj_infos = self.inner.obtain_samples(itr)
        return self.inner.samples_np, traj_infos

    def evaluate(self, itr: int) -> None:
        control = self.control
        self.agent.recv_shared_memory()
        control.in_eval.value = 1
        try:
            self.agent.eval_mode(max(itr, 0))
            start = time.perf_counter()
            traj_infos = self.inner.evaluate_agent(max(itr, 0))
            eval_time = time.perf_counter() - start
        finally:
            control.in_eval.value = 0
            control.beat()
        control.messages.put(("eval", itr, (traj_infos, eval_time, self.agent.param_version)))
        control.check_running()
