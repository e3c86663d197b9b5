"""Worker side of samplers whose master selects actions (GPU and alternating samplers).

A worker owns a slice of the envs.  Each step it writes the agent inputs of its
envs into the shared step buffer, signals ``ready``, waits until the master has
written actions, then steps its envs and writes rewards, dones and env infos
straight into the shared ``[T, B]`` sample buffer.  The master learns of env
resets and truncations from flags in the step buffer:

* ``reset[b]``: env ``b`` was reset, so the master clears its recurrent state;
* ``timeout[b]``: env ``b``'s episode was truncated; ``final_observation[b]`` holds
  the observation the master evaluates for ``timeout_value`` (bootstrap samplers).

Envs may be a list of single envs or one vectorised env (``rlpyt.envs.vec``)
stepped in one call.
"""

from __future__ import annotations

import numpy as np

from rlpyt.agents.base import AgentInputs
from rlpyt.samplers.collector_base import DecorrelatingStartCollector
from rlpyt.samplers.env_group import is_vec_env
from rlpyt.samplers.parallel.worker_eval import EvalEnvGroup, run_worker_evaluation
from rlpyt.samplers.vec_stepping import VecEnvStepper
from rlpyt.utils.buffer import buffer_from_example
from rlpyt.utils.collections import namedarraytuple

__all__ = [
    "EvalStepBuffer",
    "GpuEvalCollector",
    "GpuResetCollector",
    "GpuWaitResetCollector",
    "StepBuffer",
    "build_step_buffers",
]

StepBuffer = namedarraytuple(
    "StepBuffer", ["observation", "action", "reward", "reset", "timeout", "final_observation"]
)
EvalStepBuffer = namedarraytuple("EvalStepBuffer", ["observation", "action", "reward", "reset"])


def build_step_buffers(examples: dict, B: int, eval_B: int, bootstrap: bool):
    """Shared ``StepBuffer`` of ``[B]`` and ``EvalStepBuffer`` of ``[eval_B]`` (or None)."""
    obs, act = examples["observation"], examples["action"]
    step = StepBuffer(
        observation=buffer_from_example(obs, B, share_memory=True),
        action=buffer_from_example(act, B, share_memory=True),
        reward=buffer_from_example(np.float32(0), B, share_memory=True),
        reset=buffer_from_example(np.bool_(False), B, share_memory=True),
        timeout=buffer_from_example(np.bool_(False), B, share_memory=True),
        final_observation=buffer_from_example(obs, B, share_memory=True) if bootstrap else None,
    )
    if eval_B == 0:
        return step, None
    eval_step = EvalStepBuffer(
        observation=buffer_from_example(obs, eval_B, share_memory=True),
        action=buffer_from_example(act, eval_B, share_memory=True),
        reward=buffer_from_example(np.float32(0), eval_B, share_memory=True),
        reset=buffer_from_example(np.bool_(False), eval_B, share_memory=True),
    )
    return step, eval_step


class GpuResetCollector(DecorrelatingStartCollector):
    """Steps the worker's envs with the master's actions; resets an env as soon as it ends.

    Keywords as ``BaseCollector``; ``sync`` (the worker's ``WorkerSync``) and
    ``step_buffer_np`` (the worker's slice of the ``StepBuffer``) are required.
    """

    mid_batch_reset = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.sync is None or self.step_buffer_np is None:
            raise ValueError(f"{type(self).__name__} runs in a sampler worker: it needs "
                             "sync= and step_buffer_np= (use it with GpuSampler)")
        self.vec = VecEnvStepper(self.envs[0]) if is_vec_env(self.envs[0]) else None
        B = len(self.step_buffer_np.reward)
        self.need_reset = np.zeros(B, dtype=bool)
        self.done = np.zeros(B, dtype=bool)

    # ---- start ---------------------------------------------------------------------
    def start_envs(self, max_decorrelation_steps=0):
        if self.vec is not None:
            agent_inputs, traj_infos = self.vec.start(
                self.TrajInfoCls, max_decorrelation_steps, self.env_seeds)
        else:
            agent_inputs, traj_infos = super().start_envs(max_decorrelation_steps)
        step = self.step_buffer_np
        step.observation[:] = agent_inputs.observation
        step.action[:] = agent_inputs.prev_action
        step.reward[:] = agent_inputs.prev_reward
        step.reset[:] = False
        step.timeout[:] = False
        return AgentInputs(step.observation, step.action, step.reward), traj_infos

    def start_agent(self):
        """The master holds the agent."""

    # ---- one batch -------------------------------------------------------------------
    def collect_batch(self, agent_inputs, traj_infos, itr):
        env_buf, step, sync = self.samples_np.env, self.step_buffer_np, self.sync
        completed, self.completed_keys = [], []
        for t in range(self.batch_T):
            env_buf.observation[t] = step.observation
            env_buf.prev_reward[t] = step.reward
            sync.signal_ready()
            sync.wait_actions()
            if self.vec is not None:
                self._step_vec_env(t, traj_infos, completed)
            else:
                self._step_envs(t, traj_infos, completed)
        sync.signal_ready()
        return agent_inputs, traj_infos, completed

    def _step_envs(self, t, traj_infos, completed):
        env_buf, step = self.samples_np.env, self.step_buffer_np
        agent_info = self.samples_np.agent.agent_info
        pass_agent_info = agent_info is not None and self.traj_uses_agent_info
        for b, env in enumerate(self.envs):
            if self.done[b]:  # Wait-reset: idle until the batch ends.
                env_buf.done[t, b] = True
                env_buf.reward[t, b] = 0
                if env_buf.env_info is not None:
                    env_buf.env_info[t, b] = 0  # No stale ``timeout`` from an earlier batch.
                step.reward[b] = 0
                continue
            action = step.action[b]
            o, r, d, env_info = env.step(action)
            info_b = agent_info[t, b] if pass_agent_info else None
            traj_infos[b].step(step.observation[b], action, r, d, info_b, env_info)
            if env_info.traj_done if self.has_traj_done else d:
                completed.append(traj_infos[b].terminate(o))
                self.completed_keys.append((t, self.env_ranks[b]))
                traj_infos[b] = self.TrajInfoCls()
            env_buf.reward[t, b] = r
            env_buf.done[t, b] = d
            if env_info:
                env_buf.env_info[t, b] = env_info
            if d:
                if self.bootstrap and getattr(env_info, "timeout", False):
                    step.final_observation[b] = o
                    step.timeout[b] = True
                o, r = self._on_done(b, env, o, r)
            step.observation[b] = o
            step.reward[b] = r

    def _on_done(self, b, env, o, r):
        """Reset now: the next agent inputs are the reset observation, null action, 0 reward."""
        self.step_buffer_np.action[b] = self.null_action
        self.step_buffer_np.reset[b] = True
        return env.reset(), 0.0

    def _step_vec_env(self, t, traj_infos, completed):
        step = self.step_buffer_np
        done = self.vec.step(
            t, step.action, step.observation, step.reward, self.samples_np.env,
            self.samples_np.agent.agent_info, traj_infos, completed, self.TrajInfoCls,
            step.final_observation if self.bootstrap else None, step.timeout,
        )
        self.completed_keys += [(t, self.env_ranks[b]) for b in self.vec.completed_envs]
        if done.any():
            step.action[done] = self.null_action
            step.reset[done] = True


class GpuWaitResetCollector(GpuResetCollector):
    """Leaves a finished env idle until the batch ends, then resets it (recurrent agents).

    Steps after an env's ``done`` are written as ``done=True`` with zero reward, as in
    ``CpuWaitResetCollector``.  Vectorised envs reset inside their step call, so they
    work only with ``GpuResetCollector``.
    """

    mid_batch_reset = False

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.vec is not None:
            raise TypeError(
                f"{type(self).__name__} cannot hold a vectorised env's finished sub-envs "
                "idle (they reset inside the step call); use GpuResetCollector with "
                f"{type(self.envs[0]).__name__}"
            )

    def _on_done(self, b, env, o, r):
        self.done[b] = True
        self.need_reset[b] = True
        return o, r  # Keep the final observation until the reset between batches.

    def collect_batch(self, agent_inputs, traj_infos, itr):
        self._reset_finished_envs()
        return super().collect_batch(agent_inputs, traj_infos, itr)

    def _reset_finished_envs(self):
        """Reset at the start of the next batch, not right after this one: the master
        still reads the final observations (bootstrap values) after the last step."""
        step = self.step_buffer_np
        for b in np.flatnonzero(self.need_reset):
            step.observation[b] = self.envs[b].reset()
            step.action[b] = self.null_action
            step.reward[b] = 0
            step.reset[b] = True
        self.need_reset[:] = False
        self.done[:] = False


class GpuEvalCollector:
    """Worker side of evaluation when the master selects actions.

    Args:
        envs: the worker's eval envs.
        TrajInfoCls: per-trajectory statistics factory.
        schedule: the sampler's ``EvalSchedule`` (the master decides which
            trajectories start, see ``rlpyt.samplers.parallel.worker_eval``).
        env_ranks: global eval ranks of ``envs``.
        step_buffer_np: the worker's slice of the ``EvalStepBuffer``.
        sync: the worker's ``WorkerSync``.
    """

    def __init__(self, envs, TrajInfoCls, schedule, env_ranks, step_buffer_np, sync,
                 **_ignored):
        s = step_buffer_np
        self.sync = sync
        self.group = EvalEnvGroup(envs, env_ranks, TrajInfoCls, schedule, s.observation,
                                  s.action, s.reward, reset=s.reset)
        self.completed_keyed = []

    def collect_evaluation(self, itr):
        run_worker_evaluation(self.group, self.sync)
        self.completed_keyed = self.group.completed
        return [info for _, _, info in self.completed_keyed]
