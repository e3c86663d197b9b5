"""Recurrent Q-learning agents (R2D2-style): an LSTM Q-network, its target copy, epsilon-greedy."""

from __future__ import annotations

import torch

from rlpyt.agents.base import AgentStep, AlternatingRecurrentAgentMixin, RecurrentAgentMixin
from rlpyt.agents.dqn.dqn_agent import DqnAgent
from rlpyt.utils.buffer import buffer_func, buffer_method, buffer_to
from rlpyt.utils.collections import namedarraytuple

__all__ = ["AgentInfo", "R2d1Agent", "R2d1AgentBase", "R2d1AlternatingAgent"]

# ``prev_rnn_state``: the recurrent state the agent acted from, per env ``[B, N, H]``.
AgentInfo = namedarraytuple("AgentInfo", ["q", "prev_rnn_state"])


class R2d1AgentBase(DqnAgent):
    """Shared forward passes of the recurrent Q agents (use ``R2d1Agent``).

    * ``agent(observation, prev_action, prev_reward, init_rnn_state) -> (q, next_rnn_state)``
      over ``[T, B]`` inputs from ``init_rnn_state`` ``[N, B, H]`` (``None``: zeros), on the
      agent's device, with gradients.
    * ``agent.target(...)`` the same from the target network, without gradients.
    * ``agent.step(observation, prev_action, prev_reward) -> AgentStep(action,
      AgentInfo(q, prev_rnn_state))`` on CPU, advancing the agent's own recurrent state.
    """

    def default_model_cls(self):
        from rlpyt.models.dqn.r2d1_mlp import R2d1MlpModel

        return R2d1MlpModel

    def __call__(self, observation, prev_action, prev_reward, init_rnn_state):
        inputs = buffer_to((observation, prev_action, prev_reward, init_rnn_state), self.device)
        return self.model(*inputs)

    @torch.no_grad()
    def target(self, observation, prev_action, prev_reward, init_rnn_state):
        inputs = buffer_to((observation, prev_action, prev_reward, init_rnn_state), self.device)
        return self.target_model(*inputs)

    @torch.no_grad()
    def step(self, observation, prev_action, prev_reward) -> AgentStep:
        inputs = buffer_to((observation, prev_action, prev_reward), self.device)
        q, rnn_state = self.model(*inputs, self.prev_rnn_state)
        action = self.distribution.sample(q)
        prev_rnn_state = self.prev_rnn_state
        if prev_rnn_state is None:
            prev_rnn_state = buffer_func(rnn_state, torch.zeros_like)
        # Stored per env as [B, N, H] (the sample buffer's leading dims are [T, B]); the
        # replay buffer keeps it every store_rnn_state_interval steps for training.
        prev_rnn_state = buffer_method(prev_rnn_state, "transpose", 0, 1)
        self.advance_rnn_state(rnn_state)
        agent_info = AgentInfo(q=q, prev_rnn_state=prev_rnn_state)
        return buffer_to(AgentStep(action=action, agent_info=agent_info), "cpu")


class R2d1Agent(RecurrentAgentMixin, R2d1AgentBase):
    """Recurrent epsilon-greedy Q agent for ``R2D1``; works on any Box-observation,
    Discrete-action env with its default model.

    Each env's recurrent state is kept between ``step`` calls and zeroed when its episode
    ends; sampling and evaluation keep separate states.  ``state_dict()`` holds the model,
    the target network and the exploration schedule (all restored by ``load_state_dict``).

    Args:
        ModelCls: recurrent Q model class, ``forward(observation, prev_action, prev_reward,
            init_rnn_state) -> (q, next_rnn_state)``.  ``None`` (default) uses
            ``R2d1MlpModel`` (observation MLP 64, LSTM 64, head 64).
        model_kwargs: extra model keywords, e.g. ``dict(lstm_size=128, dueling=True)``
            (default None); ``observation_shape`` and ``output_size`` come from the env.
        initial_model_state_dict: loaded into the model (and target) at ``initialize``.
        eps_init, eps_final, eps_final_min, eps_itr_min, eps_itr_max, eps_eval: the
            exploration schedule of ``EpsilonGreedyAgentMixin`` (defaults 1, 0.01, None,
            50, 1000, 0.001; ``R2D1`` sets the iterations from its ``min_steps_learn`` and
            ``eps_steps``).
    """


class R2d1AlternatingAgent(AlternatingRecurrentAgentMixin, R2d1AgentBase):
    """``R2d1Agent`` for the alternating samplers: one recurrent state per env group.
    Keywords as ``R2d1Agent``."""
