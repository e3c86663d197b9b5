"""Shared machinery of policy-gradient agents: policy + value model, one distribution."""

from __future__ import annotations

import types

import torch

from rlpyt.agents.base import AgentStep, BaseAgent, RecurrentAgentMixin
from rlpyt.models.mlp import has_hooks
from rlpyt.utils.buffer import buffer_func, buffer_method
from rlpyt.utils.collections import namedarraytuple

__all__ = ["AgentInfo", "AgentInfoRnn", "BasePgAgent", "RecurrentPgAgentMixin"]

AgentInfo = namedarraytuple("AgentInfo", ["dist_info", "value"])
AgentInfoRnn = namedarraytuple("AgentInfoRnn", ["dist_info", "value", "prev_rnn_state"])


def _to_cpu(agent_step, device: torch.device):
    """The step's tensors on the CPU, detached from any graph."""
    if device.type != "cpu":
        # Blocking copies: a non_blocking device-to-host copy may not have landed yet
        # when the sampler reads the numpy view.
        agent_step = buffer_method(agent_step, "cpu")
    # Views of parameters (a shared log_std) keep requires_grad even under no_grad.
    return buffer_func(agent_step, _detached)


def _detached(x: torch.Tensor) -> torch.Tensor:
    return x.detach() if x.requires_grad else x


def value_only(model: torch.nn.Module):
    """``model.value`` (bound) if the model can compute its value output alone, else None.

    A model may define ``value(observation, prev_action, prev_reward)`` returning what
    ``forward(...)[-1]`` returns, without its policy part.  It is trusted only from the
    class that also defines ``forward`` (a subclass that overrides ``forward`` alone may
    change the value output) and on a model without hooks (which ``value`` would skip).
    """
    method = _value_of_forward_owner(type(model))
    if method is None or has_hooks(model):
        return None
    return method.__get__(model)


def _value_of_forward_owner(cls: type):
    for klass in cls.__mro__:
        if "forward" in vars(klass):
            method = vars(klass).get("value")
            return method if isinstance(method, types.FunctionType) else None
    return None


class BasePgAgent(BaseAgent):
    """Feed-forward policy-gradient agent: ``model(o, a, r) -> (*dist_params, value)``.

    Subclasses set the distribution in ``initialize`` and map the model's
    distribution outputs to a ``dist_info`` in ``make_dist_info``.
    """

    def make_dist_info(self, *dist_params):
        raise NotImplementedError

    def __call__(self, observation, prev_action, prev_reward):
        """Training forward pass: ``(dist_info, value)`` on the agent's device."""
        inputs = self.model_inputs(observation, prev_action, prev_reward)
        *dist_params, value = self.model(*inputs)
        return self.make_dist_info(*dist_params), value

    @torch.no_grad()
    def step(self, observation, prev_action, prev_reward) -> AgentStep:
        inputs = self.model_inputs(observation, prev_action, prev_reward)
        # Detach the model's outputs here rather than walking the finished AgentStep.
        *dist_params, value = [_detached(x) for x in self.model(*inputs)]
        dist_info = self.make_dist_info(*dist_params)
        action = _detached(self.select_action(dist_info))
        agent_step = AgentStep(action, AgentInfo(dist_info, value))
        if self.device.type != "cpu":
            # Blocking copies, as in _to_cpu.
            agent_step = buffer_method(agent_step, "cpu")
        return agent_step

    def select_action(self, dist_info):
        return self.distribution.sample(dist_info)

    @torch.no_grad()
    def value(self, observation, prev_action, prev_reward) -> torch.Tensor:
        """V(observation) on the CPU (bootstrap and time-limit values for the sampler);
        the policy part of the model runs only if the model has no ``value`` method."""
        inputs = self.model_inputs(observation, prev_action, prev_reward)
        model_value = value_only(self.model)
        if model_value is not None:
            return model_value(*inputs).cpu()
        return self.model(*inputs)[-1].cpu()

    def train_mode(self, itr):
        super().train_mode(itr)

    def update_obs_rms(self, observation):
        """Update the model's observation normaliser, if it has one (called by algorithms)."""
        model = getattr(self.model, "module", self.model)  # inside DistributedDataParallel
        if hasattr(model, "update_obs_rms"):
            model.update_obs_rms(observation.to(self.device))


class RecurrentPgAgentMixin(RecurrentAgentMixin):
    """Recurrent policy-gradient agent: ``model(o, a, r, rnn_state) -> (*dist, value, state)``."""

    def __call__(self, observation, prev_action, prev_reward, init_rnn_state):
        """Training forward pass over ``[T, B]`` sequences from ``init_rnn_state`` ``[N, B, H]``."""
        inputs = self.model_inputs(observation, prev_action, prev_reward, init_rnn_state)
        *dist_params, value, next_rnn_state = self.model(*inputs)
        return self.make_dist_info(*dist_params), value, next_rnn_state

    @torch.no_grad()
    def step(self, observation, prev_action, prev_reward) -> AgentStep:
        inputs = self.model_inputs(observation, prev_action, prev_reward)
        *dist_params, value, rnn_state = self.model(*inputs, self.prev_rnn_state)
        dist_info = self.make_dist_info(*dist_params)
        action = self.select_action(dist_info)
        prev_rnn_state = self.prev_rnn_state
        if prev_rnn_state is None:
            prev_rnn_state = buffer_func(rnn_state, torch.zeros_like)
        # Stored per env as [B, N, H]; algorithms transpose back to [N, B, H].
        prev_rnn_state = buffer_method(prev_rnn_state, "transpose", 0, 1)
        agent_info = AgentInfoRnn(dist_info, value, prev_rnn_state)
        self.advance_rnn_state(rnn_state)
        return _to_cpu(AgentStep(action, agent_info), self.device)

    @torch.no_grad()
    def value(self, observation, prev_action, prev_reward) -> torch.Tensor:
        """Value from the current recurrent state, without advancing it."""
        inputs = self.model_inputs(observation, prev_action, prev_reward)
        outputs = self.model(*inputs, self.prev_rnn_state)
        return outputs[-2].cpu()
