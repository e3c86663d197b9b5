"""Collector base classes: step a list of envs with an agent into a ``[T, B]`` buffer.

A collector owns a group of envs (all of a serial sampler's, or one worker's) and
writes their interaction into its slice of the shared sample buffer:

- ``env.observation[t]`` is the observation the agent acted on at step ``t``;
- ``agent.action[t]``, ``env.reward[t]``, ``env.done[t]`` follow from it;
- ``agent.prev_action[t]``/``env.prev_reward[t]`` are the agent's other inputs
  (null action and zero reward at the start of an episode).
"""

from __future__ import annotations

import numpy as np

from rlpyt.agents.base import AgentInputs
from rlpyt.envs.traj_info import reads_agent_info
from rlpyt.samplers.eval import EvalCollector
from rlpyt.utils.buffer import buffer_from_example, numpify_buffer, torchify_buffer

__all__ = ["BaseCollector", "BaseEvalCollector", "DecorrelatingStartCollector"]

# Classic rlpyt name of the evaluation collector base class (see ``rlpyt.samplers.eval``).
BaseEvalCollector = EvalCollector


class BaseCollector:
    """Steps ``envs`` for ``batch_T`` steps per call of ``collect_batch``.

    Args:
        rank: index of this collector (worker) among all collectors.
        envs: the envs this collector steps.
        samples_np: numpy ``Samples`` buffer slice ``[T, len(envs)]`` to write into.
        batch_T: steps per batch.
        TrajInfoCls: callable making a fresh per-trajectory stats object.
        agent: the agent (CPU collectors); None when the master selects actions.
        sync: synchronisation objects of a parallel sampler (unused here).
        step_buffer_np: master-worker step buffer (GPU collectors).
        global_B: total envs across all collectors.
        env_ranks: global indices of this collector's envs.
        env_seeds: per-env seeds (used for the decorrelation RNG).
    """

    mid_batch_reset = True

    def __init__(
        self,
        rank,
        envs,
        samples_np,
        batch_T,
        TrajInfoCls,
        agent=None,
        sync=None,
        step_buffer_np=None,
        global_B=1,
        env_ranks=None,
        env_seeds=None,
    ):
        self.rank = rank
        self.envs = envs
        self.samples_np = samples_np
        self.batch_T = batch_T
        self.TrajInfoCls = TrajInfoCls
        self.agent = agent
        self.sync = sync
        self.step_buffer_np = step_buffer_np
        self.global_B = global_B
        self.env_ranks = list(range(len(envs))) if env_ranks is None else list(env_ranks)
        self.env_seeds = env_seeds
        self.null_action = envs[0].action_space.null_value()
        agent_samples = samples_np.agent
        self.bootstrap = hasattr(agent_samples, "bootstrap_value")
        # Per-step loops test these for every env; the answers never change.
        env_info = samples_np.env.env_info
        self.has_traj_done = "traj_done" in getattr(env_info, "_fields", ())
        # The base TrajInfo.step reads only reward, done and env_info, so collectors
        # need not build each env's agent_info view for it.
        self.traj_uses_agent_info = reads_agent_info(TrajInfoCls())
        # (t, global env rank) of each trajectory completed in the latest batch, in the
        # order of ``completed``: parallel samplers merge their workers' trajectories
        # into the serial sampler's order with it.
        self.completed_keys = []

    def start_agent(self):
        if self.agent is not None:
            self.agent.reset()
            self.agent.sample_mode(itr=0)

    def start_envs(self, max_decorrelation_steps=0):
        """Reset every env; returns ``(agent_inputs, traj_infos)``."""
        traj_infos = [self.TrajInfoCls() for _ in self.envs]
        observations = [env.reset() for env in self.envs]
        return self._make_agent_inputs(observations), traj_infos

    def _make_agent_inputs(self, observations, actions=None, rewards=None):
        B = len(self.envs)
        observation = buffer_from_example(observations[0], B)
        action = buffer_from_example(self.null_action, B)
        reward = np.zeros(B, dtype=np.float32)
        for b in range(B):
            observation[b] = observations[b]
            if actions is not None:
                action[b] = actions[b]
                reward[b] = rewards[b]
        if action is not None and actions is None:
            action[:] = self.null_action
        return AgentInputs(observation, action, reward)

    def collect_batch(self, agent_inputs, traj_infos, itr):
        raise NotImplementedError

    def reset_if_needed(self, agent_inputs):
        """Between batches: reset envs that wait for it (wait-reset collectors)."""


class DecorrelatingStartCollector(BaseCollector):
    """Starts each env with a random number of random actions so envs are out of phase.

    The number of steps for each env comes from that env's own seed, so serial and
    parallel samplers with the same seed start from identical states.
    """

    def start_envs(self, max_decorrelation_steps=0):
        traj_infos = [self.TrajInfoCls() for _ in self.envs]
        observations, actions, rewards = [], [], []
        for b, env in enumerate(self.envs):
            observation = env.reset()
            action, reward = self.null_action, 0.0
            n_steps = self._decorrelation_steps(b, max_decorrelation_steps)
            for _ in range(n_steps):
                action = env.action_space.sample()
                step = env.step(action)
                traj_infos[b].step(
                    observation, action, step.reward, step.done, None, step.env_info
                )
                observation, reward = step.observation, step.reward
                if getattr(step.env_info, "traj_done", step.done):
                    traj_infos[b] = self.TrajInfoCls()
                if step.done:
                    observation = env.reset()
                    action, reward = self.null_action, 0.0
            observations.append(observation)
            actions.append(action)
            rewards.append(reward)
        return self._make_agent_inputs(observations, actions, rewards), traj_infos

    def _decorrelation_steps(self, b, max_steps):
        if max_steps <= 0:
            return 0
        seed = None if self.env_seeds is None else [int(self.env_seeds[b]), 0x5EED]
        return int(np.random.default_rng(seed).integers(0, max_steps + 1))


class CpuCollectorMixin:
    """Shared hot loop of the CPU reset / wait-reset collectors.

    The agent acts for all envs at once; envs step one by one.  Truncated
    episodes get ``timeout_value`` = V(final observation) (bootstrap samplers) before
    the env is reset.
    """

    def _step_envs(self, t, observation, action, reward, agent_info_np, traj_infos, completed):
        """Step every env once; returns the envs whose episode ended at ``t``."""
        env_buf = self.samples_np.env
        done_t, env_info_buf = env_buf.done[t], env_buf.env_info
        has_traj_done, TrajInfoCls = self.has_traj_done, self.TrajInfoCls
        skip_env, pass_agent_info = self._skip_env, self.traj_uses_agent_info
        done_envs, timeout_obs = [], {}
        for b, env in enumerate(self.envs):
            if skip_env(b, t, action, reward):
                continue
            o, r, d, env_info = env.step(action[b])
            info_b = agent_info_np[b] if pass_agent_info else None
            traj_infos[b].step(observation[b], action[b], r, d, info_b, env_info)
            if env_info.traj_done if has_traj_done else d:
                completed.append(traj_infos[b].terminate(o))
                self.completed_keys.append((t, self.env_ranks[b]))
                traj_infos[b] = TrajInfoCls()
            if d:
                done_envs.append(b)
                if self.bootstrap and getattr(env_info, "timeout", False):
                    timeout_obs[b] = o
                o = self._on_done(b, env, o)
            observation[b] = o
            reward[b] = r
            done_t[b] = d
            if env_info:
                env_info_buf[t, b] = env_info
        return done_envs, timeout_obs

    def _skip_env(self, b, t, action, reward) -> bool:
        return False

    def _on_done(self, b, env, o):
        return env.reset()

    def _write_timeout_values(self, t, timeout_obs, observation, action, reward):
        final = buffer_from_example(observation[0], len(self.envs))
        final[:] = observation
        for b, o in timeout_obs.items():
            final[b] = o
        value = self.agent.value(*torchify_buffer(AgentInputs(final, action, reward)))
        value = numpify_buffer(value)
        for b in timeout_obs:
            self.samples_np.agent.timeout_value[t, b] = value[b]

    def collect_batch(self, agent_inputs, traj_infos, itr):
        agent_buf, env_buf = self.samples_np.agent, self.samples_np.env
        completed, self.completed_keys = [], []
        observation, action, reward = agent_inputs
        obs_pyt, act_pyt, rew_pyt = torchify_buffer(agent_inputs)
        agent = self.agent
        agent_info_buf = agent_buf.agent_info
        if self.bootstrap:
            agent_buf.timeout_value[:] = 0
        for t in range(self.batch_T):
            env_buf.observation[t] = observation
            agent_buf.prev_action[t] = action
            env_buf.prev_reward[t] = reward
            agent_step = numpify_buffer(agent.step(obs_pyt, act_pyt, rew_pyt))
            action[:] = agent_step.action
            agent_info_np = agent_step.agent_info
            agent_buf.action[t] = action
            if agent_info_np:
                agent_info_buf[t] = agent_info_np
            done_envs, timeout_obs = self._step_envs(
                t, observation, action, reward, agent_info_np, traj_infos, completed
            )
            env_buf.reward[t] = reward
            if timeout_obs:
                self._write_timeout_values(t, timeout_obs, observation, action, reward)
            if done_envs:
                self._after_done(done_envs, action, reward)
        if self.bootstrap:
            agent_buf.bootstrap_value[:] = numpify_buffer(agent.value(obs_pyt, act_pyt, rew_pyt))
        return agent_inputs, traj_infos, completed

    def _after_done(self, done_envs, action, reward):
        for b in done_envs:
            self.agent.reset_one(idx=b)
            action[b] = self.null_action
            reward[b] = 0.0
