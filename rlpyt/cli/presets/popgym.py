"""Presets of POPGym ids (``popgym-<Task><Level>-v0``, Morad et al. 2023): memory tasks.

POPGym's tasks hide what the agent must act on behind time: ``RepeatPrevious`` asks for
the suit of the card dealt k steps ago, ``RepeatFirst`` for the first card's, so a
feed-forward agent, which sees only the card in front of it, scores what chance scores,
and a recurrent one must carry the card in its state.  ``r2d1`` is the classic-control
R2D1 preset (LSTM agent, sequences of 20 with 10 steps of burn-in) and ``dqn`` the
feed-forward DQN beside it at the same budget: the baseline that shows the task needs
memory.  Observations of cards and symbols arrive one-hot (``rlpyt.envs.popgym``).
"""

from __future__ import annotations

import copy

from rlpyt.cli.presets.base import Preset
from rlpyt.cli.presets.classic import PRESETS
from rlpyt.envs.popgym import POPGYM_PREFIX

__all__ = ["POPGYM_PREFIX", "POPGYM_PRESETS"]

# An episode of an Easy task is one deck: 51 steps, reward +-1/48 a step once k cards are
# dealt (RepeatPrevious), so returns lie in [-1, 1] and guessing scores -0.5 on average.
_SAMPLER = dict(batch_T=20, batch_B=16, max_decorrelation_steps=0, eval_n_envs=4,
                eval_max_trajectories=16)
# R2D1 recalls every suit of RepeatPreviousEasy after about 400k steps (docs/notes/popgym.md).
_RUNNER = dict(n_steps=500_000, log_interval_steps=25_000)
_SCHEDULE_OF_R2D1 = {k: PRESETS["r2d1"].algo_kwargs[k]
                     for k in ("min_steps_learn", "replay_size", "eps_steps")}
POPGYM_PRESETS: dict[str, Preset] = {
    "r2d1": Preset(
        algo="rlpyt.algos.dqn.r2d1:R2D1",
        agents={"discrete": "rlpyt.agents.dqn.r2d1_agent:R2d1Agent"},
        env="popgym-RepeatPreviousEasy-v0",
        algo_kwargs=copy.deepcopy(PRESETS["r2d1"].algo_kwargs),
        sampler_kwargs=_SAMPLER,
        runner_kwargs=_RUNNER,
        source="the classic-control R2D1 preset (docs/notes/r2d1_horizon.md), on POPGym",
        description="Recurrent DQN from replayed sequences (R2D2 with one learner)",
    ),
    "dqn": Preset(
        algo="rlpyt.algos.dqn.dqn:DQN",
        agents={"discrete": "rlpyt.agents.dqn.dqn_agent:DqnAgent"},
        env="popgym-RepeatPreviousEasy-v0",
        # R2D1's exploration and replay length, so the two differ by memory only.
        algo_kwargs=dict(PRESETS["dqn"].algo_kwargs, **_SCHEDULE_OF_R2D1),
        agent_kwargs=copy.deepcopy(PRESETS["dqn"].agent_kwargs),
        sampler_kwargs=dict(_SAMPLER, batch_T=4),
        runner_kwargs=_RUNNER,
        source="the classic-control DQN preset (docs/notes/dqn_cartpole.md), on POPGym: "
               "the feed-forward baseline",
        description="Deep Q-Network, feed-forward: sees only the current observation",
    ),
}
"""The POPGym presets by algorithm name (default env popgym-RepeatPreviousEasy-v0)."""
