"""Rewards scaled by the running standard deviation of the discounted return.

The reward normalization of SB3's ``VecNormalize(norm_reward=True)``, Gymnasium's
``NormalizeReward`` and CleanRL's MuJoCo PPO (Engstrom et al. 2020, "Implementation
Matters in Deep Policy Gradients", "reward scaling"): each env keeps a running discounted
return ``R_t = discount * R_{t-1} + r_t`` (0 again after a done), the variance of every
``R_t`` seen so far is tracked, and the algorithm learns from ``r_t / std(R)``, clipped.
The mean is not subtracted, so the sign of every reward is kept.  Values and advantages
are then in the scaled units; returns of different tasks land near unit scale.
"""

from __future__ import annotations

import torch

from rlpyt.models.running_mean_std import RunningMeanStdModel

__all__ = ["REWARD_CLIP", "RewardScaler"]

REWARD_CLIP = 10.0
"""Bound of a scaled reward (SB3's ``clip_reward`` and CleanRL's default)."""
_MIN_VAR = 1e-8  # SB3's epsilon: a task without rewards yet is not divided by ~0.


class RewardScaler:
    """Scales each ``[T, B]`` batch of rewards by the running std of the discounted return.

    Batches must come in the order they were sampled, env ``b`` in column ``b`` of each
    (every synchronous sampler and each rank of ``SyncRl``); each env's return runs on
    across batches.  The statistics take in a whole batch before its rewards are scaled
    (SB3 folds in each step before scaling it: the same once a few batches are in).
    Under ``SyncRl`` they are all-reduced, so every rank scales by the same number.

    Args:
        discount: the discount of the running return (the algorithm's).
        device: where the statistics live (the agent's device, for NCCL's all-reduce).
    """

    def __init__(self, discount: float, device: torch.device | str = "cpu"):
        self.discount = float(discount)
        self.return_rms = RunningMeanStdModel((), min_var=_MIN_VAR).to(device)
        self.running_return: torch.Tensor | None = None  # [B] float64, CPU

    def __call__(self, reward, done, valid=None):
        """``reward`` ``[T, B]`` (a torch tensor or numpy array) divided by the std of all
        discounted returns so far, this batch's included, and clipped to
        ``[-REWARD_CLIP, REWARD_CLIP]``; the same type and dtype as ``reward``.  ``valid``
        (``[T, B]`` or None) leaves the filler steps after a wait-reset env's done out of
        the statistics."""
        as_numpy = not isinstance(reward, torch.Tensor)
        r = torch.as_tensor(reward)
        returns = self.discounted_returns(r, torch.as_tensor(done))
        seen = returns.reshape(-1) if valid is None else returns[torch.as_tensor(valid) > 0]
        self.return_rms.update(seen.to(self.return_rms.mean.device))
        std = float(self.return_rms.std)
        scaled = (r / std).clamp(-REWARD_CLIP, REWARD_CLIP).to(r.dtype)
        return scaled.numpy() if as_numpy else scaled

    def discounted_returns(self, reward: torch.Tensor, done: torch.Tensor) -> torch.Tensor:
        """``R_t`` ``[T, B]`` (float64) of each step, carrying each env's return in from the
        previous batch and out to the next."""
        T, B = reward.shape[:2]
        if self.running_return is None or self.running_return.shape[0] != B:
            self.running_return = torch.zeros(B, dtype=torch.float64)
        running = self.running_return
        returns = torch.empty(T, B, dtype=torch.float64)
        not_done = 1.0 - done.to(torch.float64)
        for t in range(T):  # T is a rollout's length: a few to a few thousand steps
            running = self.discount * running + reward[t].to(torch.float64)
            returns[t] = running
            running = running * not_done[t]
        self.running_return = running
        return returns

    def state_dict(self) -> dict:
        return dict(return_rms=self.return_rms.state_dict(),
                    running_return=None if self.running_return is None
                    else self.running_return.clone())

    def load_state_dict(self, state: dict) -> None:
        self.return_rms.load_state_dict(state["return_rms"])
        running = state["running_return"]
        self.running_return = None if running is None else running.clone()
