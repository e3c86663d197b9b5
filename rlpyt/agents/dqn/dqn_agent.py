"""Q-learning agent: a Q model, its target copy, and epsilon-greedy action selection."""

from __future__ import annotations

import torch

from rlpyt.agents.base import AgentStep, BaseAgent
from rlpyt.agents.dqn.epsilon_greedy import EpsilonGreedyAgentMixin
from rlpyt.distributions.epsilon_greedy import EpsilonGreedy
from rlpyt.models.utils import strip_ddp_state_dict, update_state_dict
from rlpyt.spaces.int_box import IntBox
from rlpyt.utils.buffer import buffer_to
from rlpyt.utils.collections import namedarraytuple

__all__ = ["AgentInfo", "DqnAgent", "check_q_agent_spaces"]

AgentInfo = namedarraytuple("AgentInfo", ["q"])


def check_q_agent_spaces(agent, env_spaces) -> None:
    """Q agents need one discrete action and an array (not a dict/tuple) observation."""
    action = getattr(env_spaces.action, "space", env_spaces.action)  # Unwrap GymSpaceWrapper.
    if not isinstance(action, IntBox) or len(action.shape) != 0:
        raise TypeError(
            f"{type(agent).__name__} needs a single discrete action space (IntBox with shape (), "
            f"gym Discrete), got {action!r}; for continuous actions use DdpgAgent, Td3Agent or "
            f"SacAgent"
        )
    observation = getattr(env_spaces.observation, "space", env_spaces.observation)
    if not hasattr(observation, "shape") or observation.shape is None:
        raise TypeError(
            f"{type(agent).__name__}'s default models need an array observation (Box), got "
            f"{observation!r}; give a ModelCls that handles it"
        )


class DqnAgent(EpsilonGreedyAgentMixin, BaseAgent):
    """Q-values from ``model``, training targets from ``target_model``, epsilon-greedy acting.

    * ``agent(observation, prev_action, prev_reward) -> q`` ``[..., n_actions]`` on the
      agent's device, with gradients (training).
    * ``agent.target(...)`` the same from the target network, without gradients.
    * ``agent.step(...) -> AgentStep(action, AgentInfo(q))`` on CPU, epsilon-greedy.
    * ``agent.update_target(tau=1)``: copy (``tau=1``) or Polyak-average the model into
      the target.
    * ``state_dict()`` is ``{"model", "target", "epsilon"}``: the target network and the
      exploration schedule are restored by ``load_state_dict`` too.

    Args:
        ModelCls: Q model class, ``forward(observation, prev_action, prev_reward) -> q``.
            ``None`` (default) uses ``DqnMlpModel`` (flattened Box observations; 64-64 ReLU).
        model_kwargs: extra model keywords, e.g. ``dict(hidden_sizes=[128], dueling=True)``
            (default None).  ``observation_shape`` and ``output_size`` come from the env.
        initial_model_state_dict: loaded into the model (and target) at ``initialize``.
        eps_init, eps_final, eps_final_min, eps_itr_min, eps_itr_max, eps_eval: the
            exploration schedule of ``EpsilonGreedyAgentMixin`` (defaults 1, 0.01, None,
            50, 1000, 0.001).
    """

    def __init__(
        self,
        ModelCls=None,
        model_kwargs: dict | None = None,
        initial_model_state_dict: dict | None = None,
        eps_init: float = 1,
        eps_final: float = 0.01,
        eps_final_min: float | None = None,
        eps_itr_min: int = 50,
        eps_itr_max: int = 1000,
        eps_eval: float = 0.001,
    ):
        super().__init__(
            ModelCls=ModelCls,
            model_kwargs=model_kwargs,
            initial_model_state_dict=initial_model_state_dict,
            eps_init=eps_init,
            eps_final=eps_final,
            eps_final_min=eps_final_min,
            eps_itr_min=eps_itr_min,
            eps_itr_max=eps_itr_max,
            eps_eval=eps_eval,
        )
        self.target_model = None

    # ---- construction ------------------------------------------------------------
    def default_model_cls(self):
        from rlpyt.models.dqn.mlp import DqnMlpModel

        return DqnMlpModel

    def check_env_spaces(self, env_spaces) -> None:
        check_q_agent_spaces(self, env_spaces)

    def make_env_to_model_kwargs(self, env_spaces) -> dict:
        return dict(observation_shape=env_spaces.observation.shape,
                    output_size=int(env_spaces.action.n))

    def initialize(self, env_spaces, share_memory=False, global_B=1, env_ranks=None):
        super().initialize(env_spaces, share_memory, global_B=global_B, env_ranks=env_ranks)
        self.target_model = self.ModelCls(**self.env_model_kwargs, **self.model_kwargs)
        self.target_model.load_state_dict(self.model.state_dict())
        self.target_model.requires_grad_(False)
        self.target_model.to(self.device)
        self.distribution = self.make_distribution(int(env_spaces.action.n))

    def make_distribution(self, n_actions: int):
        return EpsilonGreedy(dim=n_actions, epsilon=self.eps_init)

    def to_device(self, cuda_idx=None):
        super().to_device(cuda_idx)
        self.target_model.to(self.device)

    # ---- forward passes ----------------------------------------------------------
    def to_agent_device(self, *inputs):
        """``inputs`` on the agent's device (as given when that is the CPU: the hot path)."""
        if self.device.type == "cpu":
            return inputs
        return buffer_to(inputs, self.device)

    def to_cpu(self, step: AgentStep) -> AgentStep:
        return step if self.device.type == "cpu" else buffer_to(step, "cpu")

    def __call__(self, observation, prev_action, prev_reward) -> torch.Tensor:
        """Q-values ``[..., n_actions]`` (or the model's output) on the agent's device."""
        return self.model(*self.to_agent_device(observation, prev_action, prev_reward))

    def target(self, observation, prev_action, prev_reward) -> torch.Tensor:
        """The target network's output on the agent's device (no gradients)."""
        inputs = self.to_agent_device(observation, prev_action, prev_reward)
        if not torch.is_grad_enabled():  # The usual caller's no_grad block: skip another.
            return self.target_model(*inputs)
        with torch.no_grad():
            return self.target_model(*inputs)

    @torch.no_grad()
    def step(self, observation, prev_action, prev_reward) -> AgentStep:
        q = self.model(*self.to_agent_device(observation, prev_action, prev_reward))
        action = self.distribution.sample(q)
        return self.to_cpu(AgentStep(action=action, agent_info=AgentInfo(q=q)))

    def update_target(self, tau: float = 1) -> None:
        """``target <- tau * model + (1 - tau) * target`` (``tau=1``: copy)."""
        update_state_dict(self.target_model, self.model.state_dict(), tau)

    # ---- state ----------------------------------------------------------------------
    def state_dict(self) -> dict:
        return dict(
            model=strip_ddp_state_dict(self.model.state_dict()),
            target=self.target_model.state_dict(),
            epsilon=self.epsilon_state_dict(),
        )

    def load_state_dict(self, state_dict: dict, strict: bool = True) -> None:
        """Restore model, target and exploration schedule from ``state_dict()``.

        A plain model state dict (parameter names as keys, e.g. from a snapshot that
        holds only the model) is also accepted: it is loaded into the model and copied to
        the target.
        """
        if "model" not in state_dict:
            update_state_dict(self.model, state_dict)
            self.update_target()
            return
        update_state_dict(self.model, state_dict["model"])
        target = state_dict.get("target")
        if target is None:
            if strict:
                raise KeyError(
                    f"{type(self).__name__}.load_state_dict: state_dict has 'model' but no "
                    f"'target' (keys {sorted(state_dict)}); pass strict=False to copy the "
                    f"model into the target"
                )
            self.update_target()
        else:
            self.target_model.load_state_dict(target, strict=strict)
        if "epsilon" in state_dict:
            self.load_epsilon_state_dict(state_dict["epsilon"])
