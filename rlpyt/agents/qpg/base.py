"""What the DDPG, TD3 and SAC agents share.

A Q-policy-gradient agent holds a policy (``self.model``, the only network the
sampler needs), a critic (``self.q_model``) and target copies, and maps actions
between two units:

* **model units**: every action dimension in ``[-1, 1]``.  Policies output them,
  critics take them, and the algorithms train in them.
* **env units**: the env's ``[low, high]`` box.  ``step`` returns these, so they are
  what the sampler records and the replay buffer stores; algorithms convert replayed
  actions with ``to_model_action``.

Before learning starts (``give_min_itr_learn``), ``sample_mode`` switches to the
agent's wide pre-training exploration; ``eval_mode`` acts deterministically.
"""

from __future__ import annotations

import contextlib
import copy

import numpy as np
import torch

from rlpyt.agents.base import BaseAgent
from rlpyt.models.utils import (
    polyak_update_,
    set_train_mode,
    strip_ddp_state_dict,
    unwrap_parallel,
    update_state_dict,
)
from rlpyt.spaces.float_box import FloatBox

__all__ = ["QpgAgent", "TwinQ", "frozen_parameters"]


@contextlib.contextmanager
def frozen_parameters(module: torch.nn.Module | list[torch.Tensor]):
    """Within the block, ``module``'s parameters (or the given list of parameters) take
    no gradient (autograd skips their weight-gradient work entirely); their previous
    ``requires_grad`` is restored after."""
    params = list(module.parameters()) if isinstance(module, torch.nn.Module) else module
    previous = [p.requires_grad for p in params]
    for p in params:
        p.requires_grad_(False)
    try:
        yield module
    finally:
        for p, flag in zip(params, previous):
            p.requires_grad_(flag)


class TwinQ(torch.nn.Module):
    """Two separate critic modules called as one: ``forward(...) -> (q1(...), q2(...))``.

    Used when an agent is given a single-critic ``QModelCls`` (e.g. ``QofMuMlpModel``)
    where it needs twin critics; ``TwinQofMuMlpModel`` (both in one module) is faster.
    """

    def __init__(self, q1: torch.nn.Module, q2: torch.nn.Module):
        super().__init__()
        self.q1, self.q2 = q1, q2

    def forward(self, *inputs):
        return self.q1(*inputs), self.q2(*inputs)


def check_bounded_box(agent, env_spaces) -> tuple[np.ndarray, np.ndarray]:
    """The action space's ``(low, high)`` as ``[A]`` arrays; raise unless it is a finite
    1-D ``FloatBox``."""
    space = getattr(env_spaces.action, "space", env_spaces.action)  # unwrap GymSpaceWrapper
    name = type(agent).__name__
    if not isinstance(space, FloatBox) or len(space.shape) != 1:
        raise TypeError(
            f"{name} needs a continuous action space (FloatBox of shape (dim,), e.g. a "
            f"Gymnasium Box), got {space!r}; for discrete actions use DqnAgent or "
            f"CategoricalPgAgent"
        )
    low = np.broadcast_to(np.asarray(space.low, dtype=np.float64), space.shape)
    high = np.broadcast_to(np.asarray(space.high, dtype=np.float64), space.shape)
    if not (np.all(np.isfinite(low)) and np.all(np.isfinite(high))) or np.any(high <= low):
        raise ValueError(
            f"{name} scales actions to the env's bounds, which must be finite with "
            f"low < high; got low={low}, high={high}. Wrap the env to rescale its actions "
            f"(e.g. gymnasium.wrappers.RescaleAction)"
        )
    return low, high


class QpgAgent(BaseAgent):
    """Base of ``DdpgAgent``, ``Td3Agent`` and ``SacAgent``.

    Args:
        ModelCls: policy model class (the subclass's default if None).
        QModelCls: critic model class (the subclass's default if None).
        model_kwargs: policy keyword arguments (default: ``hidden_sizes=[256, 256]``).
        q_model_kwargs: critic keyword arguments (default: ``hidden_sizes=[256, 256]``).
        initial_model_state_dict: loaded at ``initialize``: either the policy's state
            dict or a whole ``agent.state_dict()`` (default None).
        initial_q_model_state_dict: the critic's state dict (default None).

    Subclasses set ``twin_q`` (whether the critic returns ``(q1, q2)``) and
    ``has_target_model`` (whether the policy has a target copy).
    """

    twin_q = False
    has_target_model = False

    def __init__(
        self,
        ModelCls=None,
        QModelCls=None,
        model_kwargs=None,
        q_model_kwargs=None,
        initial_model_state_dict=None,
        initial_q_model_state_dict=None,
    ):
        model_kwargs = dict(hidden_sizes=[256, 256]) if model_kwargs is None else model_kwargs
        super().__init__(ModelCls, model_kwargs, initial_model_state_dict=None)
        self.QModelCls = QModelCls if QModelCls is not None else self.default_q_model_cls()
        self.q_model_kwargs = (
            dict(hidden_sizes=[256, 256]) if q_model_kwargs is None else dict(q_model_kwargs)
        )
        self.initial_agent_state_dict = initial_model_state_dict
        self.initial_q_model_state_dict = initial_q_model_state_dict
        self.q_model = self.target_q_model = self.target_model = None
        self.min_itr_learn = 0
        self._pretraining = False
        self._target_pairs = None  # cached tensors of the soft target update
        self._q_params = None  # cached critic parameters that q_for_policy freezes

    def default_q_model_cls(self):
        raise NotImplementedError

    # ---- construction ------------------------------------------------------------
    def check_env_spaces(self, env_spaces) -> None:
        check_bounded_box(self, env_spaces)

    def make_env_to_model_kwargs(self, env_spaces) -> dict:
        return dict(
            observation_shape=tuple(env_spaces.observation.shape),
            action_size=int(env_spaces.action.shape[0]),
        )

    def initialize(self, env_spaces, share_memory=False, global_B=1, env_ranks=None):
        super().initialize(env_spaces, share_memory, global_B=global_B, env_ranks=env_ranks)
        low, high = check_bounded_box(self, env_spaces)
        self._action_scale = torch.as_tensor((high - low) / 2, dtype=torch.float32)
        self._action_bias = torch.as_tensor((high + low) / 2, dtype=torch.float32)
        self.q_model = self.make_q_model()
        self._target_pairs = self._q_params = None
        self.target_q_model = copy.deepcopy(self.q_model)
        if self.has_target_model:
            self.target_model = self.ModelCls(**self.env_model_kwargs, **self.model_kwargs)
            self.target_model.load_state_dict(self.model.state_dict())
        self.load_initial_state_dicts()

    def make_q_model(self) -> torch.nn.Module:
        """The critic; for twin-critic agents a module returning ``(q1, q2)``."""
        kwargs = {**self.env_model_kwargs, **self.q_model_kwargs}
        if not self.twin_q or getattr(self.QModelCls, "n_q", 1) == 2:
            return self.QModelCls(**kwargs)
        return TwinQ(self.QModelCls(**kwargs), self.QModelCls(**kwargs))

    def load_initial_state_dicts(self) -> None:
        initial = self.initial_agent_state_dict
        if initial is not None:
            if "model" in initial and isinstance(initial["model"], dict):
                self.load_state_dict(initial)
            else:
                self.model.load_state_dict(strip_ddp_state_dict(initial))
                if self.target_model is not None:
                    self.target_model.load_state_dict(self.model.state_dict())
        if self.initial_q_model_state_dict is not None:
            self.q_model.load_state_dict(strip_ddp_state_dict(self.initial_q_model_state_dict))
            self.target_q_model.load_state_dict(self.q_model.state_dict())

    def give_min_itr_learn(self, min_itr_learn: int) -> None:
        """Iterations before the algorithm starts learning; sampling until then uses the
        pre-training exploration."""
        self.min_itr_learn = int(min_itr_learn)

    # ---- units -------------------------------------------------------------------
    def to_env_action(self, action: torch.Tensor) -> torch.Tensor:
        """Model units ``[-1, 1]`` -> env units ``[low, high]``."""
        return action * self._action_scale + self._action_bias

    def to_model_action(self, env_action: torch.Tensor) -> torch.Tensor:
        """Env units ``[low, high]`` -> model units ``[-1, 1]`` (e.g. replayed actions)."""
        return (env_action - self._action_bias) / self._action_scale

    # ---- networks used by the algorithms -----------------------------------------------
    def q(self, observation, prev_action, prev_reward, action):
        """Critic value(s) of ``action`` (model units) on the agent's device; ``(q1, q2)``
        for twin-critic agents.  Gradients reach the critic's parameters."""
        return self.q_model(*self._on_device(observation, prev_action, prev_reward, action))

    def q_for_policy(self, observation, prev_action, prev_reward, action):
        """Critic value(s) for a policy loss: gradients reach ``action`` only.

        The critic's parameters are frozen for this call (no weight-gradient work) and
        the call bypasses DistributedDataParallel, whose gradient hooks must fire only
        for the critic's own loss.
        """
        q_model = unwrap_parallel(self.q_model)
        if self._q_params is None:  # cached: listing parameters costs more than freezing
            self._q_params = list(q_model.parameters())
        inputs = self._on_device(observation, prev_action, prev_reward, action)
        with frozen_parameters(self._q_params):
            return q_model(*inputs)

    def target_q(self, observation, prev_action, prev_reward, action):
        """Target critic value(s) of ``action`` (model units); call under ``no_grad``."""
        return self.target_q_model(
            *self._on_device(observation, prev_action, prev_reward, action)
        )

    def update_target(self, tau: float = 1) -> None:
        """Move every target network toward its online network: ``tau=1`` copies,
        ``tau < 1`` is a Polyak average ``tau * online + (1 - tau) * target``."""
        if tau == 1:
            update_state_dict(self.target_q_model, self.q_model.state_dict(), tau)
            if self.target_model is not None:
                update_state_dict(self.target_model, self.model.state_dict(), tau)
            return
        if not 0 <= tau <= 1:
            raise ValueError(f"{type(self).__name__}.update_target: tau={tau!r} must lie in [0, 1]")
        if self._target_pairs is None:
            self._target_pairs = self._make_target_pairs()
        polyak_update_(*self._target_pairs, tau)

    def _make_target_pairs(self) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
        """Matching float tensors (parameters and buffers) of every target and its online
        network, so the hot-path soft update needs no state-dict lookups."""
        pairs = [(self.target_q_model, self.q_model)]
        if self.target_model is not None:
            pairs.append((self.target_model, self.model))
        targets, sources = [], []
        for target, online in pairs:
            target_state = target.state_dict(keep_vars=True)
            online_state = strip_ddp_state_dict(online.state_dict(keep_vars=True))
            if set(target_state) != set(online_state):
                raise KeyError(
                    f"{type(self).__name__}: target and online networks differ in keys: "
                    f"{sorted(set(target_state) ^ set(online_state))}"
                )
            for key, value in target_state.items():
                if value.is_floating_point():
                    targets.append(value)
                    sources.append(online_state[key])
        return targets, sources

    def pi_parameters(self):
        """Parameters of the policy."""
        return self.model.parameters()

    def q_parameters(self):
        """Parameters of the critic (both critics for twin agents)."""
        return self.q_model.parameters()

    def parameters(self):
        """Every trained parameter: policy, critic(s) and any extra learned values."""
        for module in self.trained_modules().values():
            yield from module.parameters()

    def trained_modules(self) -> dict[str, torch.nn.Module]:
        """The modules the algorithm trains, by ``state_dict`` key."""
        return dict(model=self.model, q_model=self.q_model)

    def target_modules(self) -> dict[str, torch.nn.Module]:
        targets = dict(target_q_model=self.target_q_model)
        if self.target_model is not None:
            targets["target_model"] = self.target_model
        return targets

    def __call__(self, *args, **kwargs):
        raise NotImplementedError(
            f"{type(self).__name__} has no single training forward pass; algorithms call "
            f"its q, q_for_policy, target_q and policy methods"
        )

    def _on_device(self, *tensors):
        return tuple(None if t is None else t.to(self.device) for t in tensors)

    # ---- devices, parallelism, modes ---------------------------------------------------
    def to_device(self, cuda_idx=None):
        super().to_device(cuda_idx)
        if cuda_idx is None:
            return
        self._target_pairs = self._q_params = None
        for module in [*self.trained_modules().values(), *self.target_modules().values()]:
            module.to(self.device)
        self._action_scale = self._action_scale.to(self.device)
        self._action_bias = self._action_bias.to(self.device)

    def data_parallel(self):
        """Wrap every trained module (not the targets) in ``DistributedDataParallel``;
        torch.distributed must be initialised.  Returns the device ids (None on CPU)."""
        from torch.nn.parallel import DistributedDataParallel as DDP

        ids = None if self.device.type == "cpu" else [self.device.index]
        kwargs = {} if ids is None else dict(device_ids=ids, output_device=ids[0])
        for name, module in self.trained_modules().items():
            if not isinstance(module, DDP):
                setattr(self, name, DDP(module, **kwargs))
        self._q_params = None
        return ids

    def train_mode(self, itr):
        self._set_training(True)
        self._mode = "train"

    def sample_mode(self, itr):
        self._set_training(False)
        self._mode = "sample"
        self._pretraining = itr < self.min_itr_learn

    def eval_mode(self, itr):
        self._set_training(False)
        self._mode = "eval"
        self._pretraining = False

    def _set_training(self, training: bool) -> None:
        """Put the trained modules in train or eval mode (``set_train_mode``: modes change
        twice per iteration, and at one env step per iteration ``Module.train``'s walk
        would cost more than the env step)."""
        for module in self.trained_modules().values():
            set_train_mode(module, training)

    # ---- state -------------------------------------------------------------------
    def state_dict(self) -> dict:
        """Every network and learned value, by name, without DDP prefixes."""
        modules = {**self.trained_modules(), **self.target_modules()}
        return {name: strip_ddp_state_dict(m.state_dict()) for name, m in modules.items()}

    def load_state_dict(self, state_dict, strict: bool = True):
        """Load what ``state_dict()`` returned (every network, target and learned value)."""
        modules = {**self.trained_modules(), **self.target_modules()}
        missing = sorted(set(modules) - set(state_dict))
        unexpected = sorted(set(state_dict) - set(modules))
        if missing or (strict and unexpected):
            raise KeyError(
                f"{type(self).__name__}.load_state_dict: expected keys {sorted(modules)}, "
                f"missing {missing}, unexpected {unexpected}; pass what state_dict() returned"
            )
        for name, module in modules.items():
            unwrap_parallel(module).load_state_dict(strip_ddp_state_dict(state_dict[name]), strict)
