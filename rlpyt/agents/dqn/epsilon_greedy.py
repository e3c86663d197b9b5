"""Epsilon-greedy exploration for Q-learning agents: a schedule in sampler iterations."""

from __future__ import annotations

import math

import torch

__all__ = ["EpsilonGreedyAgentMixin"]


def _check_probability(name: str, value) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise ValueError(f"{name}={value!r} must be a probability in [0, 1]")


def _check_itr(name: str, value) -> int:
    if isinstance(value, bool) or int(value) != value or value < 0:
        raise ValueError(f"{name}={value!r} must be an integer >= 0 (a sampler iteration)")
    return int(value)


class EpsilonGreedyAgentMixin:
    """Sets the agent's ``EpsilonGreedy`` distribution's epsilon in each mode.

    Put it before the agent base class (``class DqnAgent(EpsilonGreedyAgentMixin,
    BaseAgent)``); the agent must build ``self.distribution`` (an ``EpsilonGreedy``) in
    ``initialize``.

    Sampling epsilon falls linearly from ``eps_init`` at iteration ``eps_itr_min`` to
    ``eps_final`` at ``eps_itr_max`` and stays there.  It is a pure function of the
    iteration passed to ``sample_mode(itr)``, so a resumed run that passes its true
    iteration continues the schedule where it stopped (classic rlpyt restarted it).
    ``DQN`` sets ``eps_itr_min``/``eps_itr_max`` from ``min_steps_learn`` and
    ``eps_steps`` (env steps) through ``set_epsilon_itr_min_max``.

    Args:
        eps_init: epsilon up to ``eps_itr_min`` (default 1: uniformly random actions).
        eps_final: epsilon from ``eps_itr_max`` on (default 0.01).
        eps_final_min: if given, each env gets its own final epsilon, log-spaced from
            ``eps_final_min`` (global env rank 0) to ``eps_final`` (the last rank) across
            all ``global_B`` sampling envs (Ape-X style); an agent stepping only some
            envs (``env_ranks``) takes their entries.  Default None (one epsilon).
        eps_itr_min: iteration where the decay starts (default 50).
        eps_itr_max: iteration where it ends (default 1000).
        eps_eval: epsilon in ``eval_mode`` (default 0.001).
    """

    def __init__(
        self,
        *args,
        eps_init: float = 1,
        eps_final: float = 0.01,
        eps_final_min: float | None = None,
        eps_itr_min: int = 50,
        eps_itr_max: int = 1000,
        eps_eval: float = 0.001,
        **kwargs,
    ):
        super().__init__(*args, **kwargs)
        for name, value in (("eps_init", eps_init), ("eps_final", eps_final),
                            ("eps_eval", eps_eval)):
            _check_probability(name, value)
        if eps_final_min is not None:
            _check_probability("eps_final_min", eps_final_min)
            if not 0 < eps_final_min <= eps_final:
                raise ValueError(
                    f"eps_final_min={eps_final_min!r} must lie in (0, eps_final={eps_final!r}] "
                    f"(it is the low end of log-spaced per-env epsilons)"
                )
        self.eps_init = float(eps_init)
        self.eps_final = float(eps_final)
        self.eps_final_min = None if eps_final_min is None else float(eps_final_min)
        self.eps_eval = float(eps_eval)
        self.set_epsilon_itr_min_max(eps_itr_min, eps_itr_max)
        self.eps_itr = 0  # Iteration of the latest sample_mode call.
        self._eps_final_envs: float | torch.Tensor = self.eps_final
        self._applied_epsilon_key = None  # What the distribution's epsilon was set from.

    def initialize(self, env_spaces, share_memory=False, global_B=1, env_ranks=None):
        super().initialize(env_spaces, share_memory, global_B=global_B, env_ranks=env_ranks)
        self._take_env_epsilons()

    def collector_initialize(self, global_B: int = 1, env_ranks=None) -> None:
        """This copy of the agent steps only the envs ``env_ranks`` (of ``global_B``), as a
        sampler worker's or Ray actor's copy does: take their per-env epsilons (applied at
        the next ``sample_mode``)."""
        self.global_B = int(global_B)
        self.env_ranks = list(range(self.global_B)) if env_ranks is None else list(env_ranks)
        self._take_env_epsilons()

    def _take_env_epsilons(self) -> None:
        """The final epsilons of ``self.env_ranks``, applied at the next ``sample_mode``."""
        self._eps_final_envs = self.final_epsilons(self.global_B, self.env_ranks)
        self._applied_epsilon_key = None

    def final_epsilons(self, global_B: int, env_ranks) -> float | torch.Tensor:
        """``eps_final``, or with ``eps_final_min`` the ``[len(env_ranks)]`` per-env values."""
        if self.eps_final_min is None:
            return self.eps_final
        all_envs = torch.logspace(
            math.log10(self.eps_final_min), math.log10(self.eps_final), int(global_B)
        )
        return all_envs[torch.as_tensor(list(env_ranks), dtype=torch.long)]

    def set_epsilon_itr_min_max(self, eps_itr_min: int, eps_itr_max: int) -> None:
        """Iterations where the linear decay starts and ends (``DQN`` calls this)."""
        eps_itr_min = _check_itr("eps_itr_min", eps_itr_min)
        eps_itr_max = _check_itr("eps_itr_max", eps_itr_max)
        if eps_itr_max < eps_itr_min:
            raise ValueError(
                f"eps_itr_max={eps_itr_max} must be >= eps_itr_min={eps_itr_min}"
            )
        self.eps_itr_min, self.eps_itr_max = eps_itr_min, eps_itr_max
        self._applied_epsilon_key = None

    def _decay_progress(self, itr: int) -> float:
        span = self.eps_itr_max - self.eps_itr_min
        if span == 0:
            return float(itr >= self.eps_itr_max)
        return min(1.0, max(0.0, (itr - self.eps_itr_min) / span))

    def epsilon_at(self, itr: int) -> float | torch.Tensor:
        """Sampling epsilon at iteration ``itr`` (a ``[B]`` tensor with ``eps_final_min``)."""
        progress = self._decay_progress(itr)
        return self.eps_init + progress * (self._eps_final_envs - self.eps_init)

    def _apply_epsilon(self, key, epsilon_fn) -> None:
        """Set the distribution's epsilon unless ``key`` says it already holds that value
        (skips re-validating the same epsilon every iteration)."""
        if key != self._applied_epsilon_key:
            self.distribution.set_epsilon(epsilon_fn())
            self._applied_epsilon_key = key

    def act_on_envs(self, envs: slice | None) -> None:
        """Per-env epsilons: the next steps use the entries of envs ``envs`` only."""
        super().act_on_envs(envs)
        self.distribution.select_envs(envs)

    def sample_mode(self, itr):
        super().sample_mode(itr)
        self.eps_itr = int(itr)
        key = ("sample", self._decay_progress(itr))
        self._apply_epsilon(key, lambda: self.epsilon_at(itr))

    def eval_mode(self, itr):
        super().eval_mode(itr)
        self._apply_epsilon(("eval",), lambda: self.eps_eval)

    def epsilon_state_dict(self) -> dict:
        """The schedule and the latest sampling iteration (part of the agent's state_dict)."""
        return dict(
            eps_init=self.eps_init,
            eps_final=self.eps_final,
            eps_final_min=self.eps_final_min,
            eps_itr_min=self.eps_itr_min,
            eps_itr_max=self.eps_itr_max,
            eps_eval=self.eps_eval,
            eps_itr=self.eps_itr,
        )

    def load_epsilon_state_dict(self, state: dict) -> None:
        """Restore the schedule and apply the epsilon of the current mode right away."""
        self.eps_init = float(state["eps_init"])
        self.eps_final = float(state["eps_final"])
        self.eps_final_min = state["eps_final_min"]
        self.eps_eval = float(state["eps_eval"])
        self.set_epsilon_itr_min_max(state["eps_itr_min"], state["eps_itr_max"])
        self.eps_itr = int(state["eps_itr"])
        if self.env_spaces is not None:  # Initialized: per-env values and the distribution.
            self._eps_final_envs = self.final_epsilons(self.global_B, self.env_ranks)
            self._applied_epsilon_key = None
            if self._mode == "eval":
                self.eval_mode(self.eps_itr)
            else:
                self._apply_epsilon(("sample", self._decay_progress(self.eps_itr)),
                                    lambda: self.epsilon_at(self.eps_itr))
