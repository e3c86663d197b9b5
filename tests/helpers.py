"""Shared helpers for tests: partially observed envs and learning-test plumbing."""

from __future__ import annotations

import gymnasium as gym
import numpy as np

from rlpyt.envs.gym import GymEnvWrapper
from rlpyt.runners.minibatch_rl import MinibatchRlEval
from rlpyt.utils.logging.context import logger_context


class VelocityMask(gym.ObservationWrapper):
    """CartPole with the velocity entries (cart and pole) zeroed: needs memory to balance."""

    def observation(self, observation):
        masked = np.array(observation, dtype=np.float32)
        masked[[1, 3]] = 0.0
        return masked


def make_masked_cartpole(**kwargs) -> GymEnvWrapper:
    """EnvCls for velocity-masked CartPole-v1 (kwargs go to ``gymnasium.make``)."""
    return GymEnvWrapper(VelocityMask(gym.make("CartPole-v1", **kwargs)))


class EarlyStopRunner(MinibatchRlEval):
    """Stops once an evaluation reaches ``target_return`` (learning tests save CI time).

    Stopping early never makes a test pass that would fail: the threshold was reached
    within the step budget either way.
    """

    def __init__(self, *args, target_return: float, **kwargs):
        super().__init__(*args, **kwargs)
        self.target_return = target_return

    def should_stop(self) -> bool:
        return bool(self.eval_history) and self.eval_history[-1][1] >= self.target_return


def train_until(algo, agent, sampler, n_steps, seed, target_return, log_dir,
                log_interval_steps) -> dict:
    """Train with evaluation; returns the runner summary (``eval_history``, ``best_eval_return``)."""
    runner = EarlyStopRunner(algo=algo, agent=agent, sampler=sampler, n_steps=n_steps, seed=seed,
                             log_interval_steps=log_interval_steps, target_return=target_return)
    with logger_context(str(log_dir), seed, "learning", override_prefix=True):
        summary = runner.train()
    returns = [r for _, r in summary["eval_history"]]
    summary["best_eval_return"] = max(returns) if returns else float("nan")
    summary["steps"] = summary["eval_history"][-1][0] if summary["eval_history"] else 0
    return summary
