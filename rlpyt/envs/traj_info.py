"""Per-trajectory statistics that samplers accumulate step by step and log at the end."""

from __future__ import annotations

from typing import Any

from rlpyt.utils.collections import AttrDict


class TrajInfo(AttrDict):
    """Running statistics of one trajectory (a dict whose keys are also attributes).

    Args:
        discount: discount factor for ``DiscountedReturn``; default 1.
        **kwargs: extra entries stored as-is.

    Fields logged by runners (keys starting with ``_`` are internal and not logged):
        Length: number of steps.
        Return: sum of rewards.
        NonzeroRewards: number of steps with a nonzero reward.
        DiscountedReturn: sum of ``discount**t * reward_t``.

    Subclasses add fields in ``__init__`` and update them in ``step`` (see
    ``AtariTrajInfo``).  Instances pickle, so workers can send them to the master.
    """

    def __init__(self, discount: float = 1, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._discount = discount
        self.Length = 0
        self.Return = 0
        self.NonzeroRewards = 0
        self.DiscountedReturn = 0
        self._cur_discount = 1

    def step(
        self,
        observation: Any,
        action: Any,
        reward: Any,
        done: Any,
        agent_info: Any,
        env_info: Any,
    ) -> TrajInfo:
        """Account for one step; returns ``self``."""
        reward = float(reward)
        self.Length += 1
        self.Return += reward
        self.NonzeroRewards += reward != 0
        self.DiscountedReturn += self._cur_discount * reward
        self._cur_discount *= self._discount
        return self

    def terminate(self, observation: Any) -> TrajInfo:
        """Called once when the trajectory ends; returns ``self`` for logging."""
        return self


def reads_agent_info(traj_info: TrajInfo) -> bool:
    """Whether ``traj_info.step`` may read its ``agent_info`` argument.

    The base ``TrajInfo.step`` reads only reward, done and env_info, so samplers can
    pass ``None`` instead of building each env's ``agent_info`` view every step; any
    class that overrides ``step`` is assumed to read it.
    """
    return getattr(type(traj_info), "step", None) is not TrajInfo.step
