"""One Ray actor of the Ray samplers: a slice of the envs with a CPU copy of the agent.

``EnvActor`` is a plain class; the sampler turns it into a Ray actor class
(``ray.remote``) with the resources and restart policy it was given, so this module
imports no Ray at import time.  Everything an actor returns is plain data: numpy
arrays of its ``[T, b]`` slice (as a flat list of leaves, in the field order of the
``Samples`` buffer), trajectory statistics, and the parameter version the batch was
collected with.  No torch tensor crosses the wire after set-up.

Life cycle, driven by the sampler:

* ``__init__`` takes no arguments (Ray calls it again when it restarts a dead actor,
  and an actor whose constructor arguments live in the object store could not be
  restarted once they were gone).
* ``setup(common, spec)`` fetches the run's common settings, builds the envs from the
  seeds in ``spec``, resets and decorrelates them, and returns where the actor runs.
  The sampler calls it after creating the actor and again after every restart, with
  fresh seeds, so that a replacement actor is re-seeded deterministically from the
  run seed.
* ``sample(itr, params, version)`` collects one batch.  ``params`` is a one-element
  list holding the ``ObjectRef`` of the parameters (a list, so Ray does not fetch
  it on every call): the actor fetches and loads it only when ``version`` is new.
* ``eval_start`` / ``eval_run`` / ``eval_finish``: one evaluation with the lockstep
  evaluation's outcome (see ``rlpyt.samplers.parallel.eval_events``): ``eval_run``
  steps until one of the actor's trajectories ends, and the sampler applies the
  global counting rule there.
* ``busy()`` runs in its own concurrency group, beside a running ``sample``: it
  reports how long the current env call has run, and the sampling thread's stack,
  so the sampler can tell a hung env from a slow batch.

An actor that has not been set up (Ray restarted it since) answers every command
with ``LOST`` instead of acting on envs it does not have.

The same actor serves an asynchronous sampler unchanged: ``sample`` returns the
version it acted with, so batches can be tagged and streamed as they arrive.
"""

from __future__ import annotations

import sys
import threading
import time
import traceback

import numpy as np

from rlpyt.samplers.env_group import TimedEnv, localize_agent

__all__ = ["LOST", "EnvActor", "batch_leaves"]

LOST = "rlpyt-ray-actor-lost-its-state"


def batch_leaves(samples_np) -> list:
    """The arrays of a ``Samples`` buffer, depth first in field order (None fields skipped)."""
    leaves = []

    def walk(x):
        if x is None:
            return
        if isinstance(x, tuple) and hasattr(x, "_fields"):
            for v in x:
                walk(v)
        else:
            leaves.append(x)

    walk(samples_np)
    return leaves


class _NoSync:
    """``sync`` placeholder for the eval collector: rounds are driven by Ray calls."""

    def __getattr__(self, name):
        raise RuntimeError(f"EnvActor evaluation is driven round by round; sync.{name} "
                           "is not available here")


class EnvActor:
    """Steps a slice of a sampler's envs with a CPU copy of the agent.

    ``setup``'s ``common_box`` is a one-element list holding the ``ObjectRef`` of the
    run's settings (put into the object store once for all actors), the same for
    every actor: ``EnvCls``,
            ``env_kwargs``, ``eval_env_kwargs``, ``batch_T``, ``global_B``,
            ``CollectorCls``, ``eval_CollectorCls``, ``TrajInfoCls`` (already bound to
            its keyword arguments), ``max_decorrelation_steps``, ``eval_n_envs``,
            ``eval_max_steps``, ``eval_max_trajectories``, ``eval_hard_limit``,
            ``examples`` (one example of every sample field), ``bootstrap_value``,
            ``agent`` (initialized, on CPU), ``torch_threads``.
    """

    def __init__(self):
        self.common = None
        self.ready = False
        self.version = -1
        self.envs, self.eval_envs = [], []
        self._clock = [0.0]  # monotonic start of the latest env call; 0: not in one
        self._thread = None  # ident of the thread running the current command

    # ---- set-up ----------------------------------------------------------------------
    def setup(self, common_box: list, spec: dict) -> dict:
        """Build and start this actor's envs; returns ``node_id``, ``node_ip``, ``pid``.

        ``spec``: ``index``, ``env_ranks``, ``env_seeds``, ``eval_env_ranks``,
        ``eval_env_seeds``, ``seed`` (the actor's torch/numpy seed).
        """
        import os

        import ray
        import torch

        if self.common is None:
            common = ray.get(common_box[0])
            torch.set_num_threads(int(common.get("torch_threads", 1)))  # Before torch ops.
            self.common = common

        from rlpyt.samplers.env_group import make_envs
        from rlpyt.samplers.samples import BatchSpec
        from rlpyt.samplers.samples_buffer import build_samples_buffer
        from rlpyt.utils.seed import set_seed

        self.close()
        self.ready = False
        self._thread = threading.get_ident()
        c = self.common
        set_seed(int(spec["seed"]))
        agent = self.agent = c["agent"]
        localize_agent(agent, c["global_B"], spec["env_ranks"])
        self._clock[0] = time.monotonic()
        envs = make_envs(c["EnvCls"], c["env_kwargs"], spec["env_seeds"])
        self.envs = [TimedEnv(env, self._clock) for env in envs]
        _, self.samples_np, _ = build_samples_buffer(
            agent, None, BatchSpec(c["batch_T"], len(spec["env_ranks"])), c["bootstrap_value"],
            agent_shared=False, env_shared=False, examples=c["examples"])
        self.collector = c["CollectorCls"](
            rank=spec["index"], envs=self.envs, samples_np=self.samples_np,
            batch_T=c["batch_T"], TrajInfoCls=c["TrajInfoCls"], agent=agent,
            global_B=c["global_B"], env_ranks=spec["env_ranks"], env_seeds=spec["env_seeds"])
        self.agent_inputs, self.traj_infos = self.collector.start_envs(
            c["max_decorrelation_steps"])
        self.collector.start_agent()
        self.eval_collector = None
        if spec["eval_env_ranks"]:
            self.eval_collector = self._make_eval_collector(spec)
        self._clock[0] = 0.0
        self.version = -1
        self.index = spec["index"]
        self.ready = True
        context = ray.get_runtime_context()
        return dict(node_id=context.get_node_id(), node_ip=ray.util.get_node_ip_address(),
                    pid=os.getpid())

    def _make_eval_collector(self, spec):
        from rlpyt.samplers.env_group import make_envs
        from rlpyt.samplers.eval import EvalSchedule

        c = self.common
        self._clock[0] = time.monotonic()
        envs = make_envs(c["EnvCls"], c["eval_env_kwargs"], spec["eval_env_seeds"],
                         vectorize=False)
        self.eval_envs = [TimedEnv(env, self._clock) for env in envs]
        # A private copy of the sampler's schedule: the sampler sends its ``active``
        # flags each round and reads back this actor's ``ended`` flags.
        self.schedule = EvalSchedule(c["eval_n_envs"], c["eval_max_steps"],
                                     c["eval_max_trajectories"], c["eval_hard_limit"])
        self.eval_ranks = list(spec["eval_env_ranks"])
        return c["eval_CollectorCls"](
            envs=self.eval_envs, agent=self.agent, TrajInfoCls=c["TrajInfoCls"],
            max_steps=c["eval_max_steps"], max_trajectories=c["eval_max_trajectories"],
            schedule=self.schedule, env_ranks=self.eval_ranks, sync=_NoSync())

    # ---- parameters ---------------------------------------------------------------------
    def _load(self, params_box, version: int) -> None:
        """Load the parameters of ``version`` unless already loaded (all or nothing)."""
        if version == self.version:
            return
        import ray
        import torch

        from rlpyt.models.utils import unwrap_parallel

        params = ray.get(params_box[0])
        state = {k: torch.from_numpy(np.array(v)) for k, v in params.items()}
        unwrap_parallel(self.agent.model).load_state_dict(state)
        self.version = version

    # ---- commands -------------------------------------------------------------------------
    def sample(self, itr: int, params_box, version: int):
        """One ``[T, b]`` batch: ``(version, leaves, keyed)`` or ``LOST``.

        ``keyed``: ``((t, global env rank), traj info)`` of each trajectory completed in
        the batch, for the sampler's merge into the serial order.
        """
        if not self.ready:
            return LOST
        self._thread = threading.get_ident()
        try:
            self._load(params_box, version)
            self.agent.sample_mode(itr)
            self.agent_inputs, self.traj_infos, completed = self.collector.collect_batch(
                self.agent_inputs, self.traj_infos, itr)
            self.collector.reset_if_needed(self.agent_inputs)
        finally:
            self._clock[0] = 0.0
        keys = getattr(self.collector, "completed_keys", ())
        if len(keys) != len(completed):  # A collector that does not record keys.
            keys = [(0, self.collector.env_ranks[0])] * len(completed)
        return self.version, batch_leaves(self.samples_np), list(zip(keys, completed))

    def eval_start(self, itr: int, params_box, version: int, active) -> object:
        """Reset the eval envs for a new evaluation (after ``schedule.reset`` in the
        sampler, whose ``active`` flags are given); returns True or ``LOST``."""
        if not self.ready:
            return LOST
        self._thread = threading.get_ident()
        try:
            self._load(params_box, version)
            self.agent.eval_mode(itr)  # Before reset: a recurrent agent sets its state aside.
            self.agent.reset()
            self.schedule.active[:] = active
            self.schedule.ended[:] = False
            self.eval_collector.group.start()
        finally:
            self._clock[0] = 0.0
        return True

    def eval_run(self, active, until: int):
        """Step this actor's eval envs until one of their trajectories ends (or round
        ``until``; see ``rlpyt.samplers.parallel.eval_events``), after starting the
        trajectories the sampler's latest decisions (``active``) allow; returns
        ``(round, ended flags)``."""
        if not self.ready:
            return LOST
        self._thread = threading.get_ident()
        group = self.eval_collector.group
        try:
            self.schedule.active[:] = active
            group.run(until, self.eval_collector._select_actions)
        finally:
            self._clock[0] = 0.0
        return group.round, group.ended.copy()

    def eval_finish(self):
        """``(round, eval rank, traj info)`` of every trajectory of this evaluation."""
        if not self.ready:
            return LOST
        return list(self.eval_collector.group.completed)

    def busy(self):
        """``(seconds in the current env call, stack of the acting thread)``; ``(0, "")``
        when no env call runs.  Runs in its own concurrency group (see module doc)."""
        start = self._clock[0]
        if not start:
            return 0.0, ""
        frame = sys._current_frames().get(self._thread)
        stack = "".join(traceback.format_stack(frame)) if frame is not None else ""
        return time.monotonic() - start, stack

    def close(self) -> None:
        """Close every env (before a re-setup, and when the sampler shuts down)."""
        for env in [*self.envs, *self.eval_envs]:
            try:
                env.close()
            except Exception:  # noqa: BLE001 - closing must not hide the original error
                pass
        self.envs, self.eval_envs = [], []
        self.ready = False
