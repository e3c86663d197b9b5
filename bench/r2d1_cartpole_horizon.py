"""Why an R2D1 run stalls on CartPole-v1: how its greedy episodes end, and how far its
Q-values see.

Loads the latest checkpoint of each run directory (``bench/results/final_returns.py --log-dir``
keeps them), plays ``--episodes`` greedy episodes of CartPole-v1 and prints:

* how they end: truncated at 500 steps, the cart off the track (``|x| > 2.4``) or the pole
  down (``|theta| > 12`` degrees);
* the unscaled value ``max_a Q(s_0, a)`` of the first state, beside what fitted Q-iteration
  gives after the run's target copies: with ``k`` copies of ``n``-step targets a value
  sees ``n * k`` steps ahead, so a pole kept up for ever is worth
  ``(1 - discount ** (n * k)) / (1 - discount)`` (100 once ``n * k`` is large, for
  discount 0.99).  Failures further ahead than ``n * k`` steps do not show in the values.

    python bench/results/final_returns.py --algo r2d1 --preset --seeds 0 1 2 --jobs 1 \\
        --n-steps 200000 --log-interval 10000 --log-dir /tmp/r2d1
    python bench/r2d1_cartpole_horizon.py /tmp/r2d1/run_0 /tmp/r2d1/run_1 /tmp/r2d1/run_2

The run's ``discount``, ``n_step_return``, ``target_update_interval`` and
``min_steps_learn`` are read from the ``r2d1`` preset, overridden by ``--algo-kwargs``
(the same JSON that ``bench/results/final_returns.py`` was given).
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import gymnasium as gym  # noqa: E402
import torch  # noqa: E402

from rlpyt.algos.dqn.r2d1 import inverse_value_rescale  # noqa: E402
from rlpyt.cli.presets import PRESETS, import_path  # noqa: E402
from rlpyt.runners.checkpoint import load_checkpoint  # noqa: E402

X_LIMIT = 2.4  # CartPole-v1's track half-length.


def greedy_episodes(model, episodes: int, value_scale_eps: float | None):
    """``(length, how it ended, unscaled max Q of the first state)`` per episode."""
    env = gym.make("CartPole-v1")
    for episode in range(episodes):
        obs, _ = env.reset(seed=10_000 + episode)
        rnn_state, prev_action, prev_reward = None, torch.tensor(0), torch.tensor(0.0)
        for t in range(1, 10_000):
            with torch.no_grad():
                q, rnn_state = model(torch.as_tensor(obs, dtype=torch.float32), prev_action,
                                     prev_reward, rnn_state)
            if t == 1:
                q_start = q.max()
                if value_scale_eps is not None:
                    q_start = inverse_value_rescale(q_start, value_scale_eps)
            action = int(q.argmax())
            obs, reward, terminated, truncated, _ = env.step(action)
            prev_action, prev_reward = torch.tensor(action), torch.tensor(float(reward))
            if terminated or truncated:
                ended = ("truncated" if not terminated else
                         "cart off the track" if abs(obs[0]) > X_LIMIT else "pole down")
                yield t, ended, float(q_start)
                break


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("run_dirs", nargs="+", type=Path)
    p.add_argument("--episodes", type=int, default=20)
    p.add_argument("--algo-kwargs", default="{}", help="JSON overrides of the preset")
    args = p.parse_args()
    torch.set_num_threads(1)
    settings = dict(PRESETS["r2d1"].algo_kwargs, **json.loads(args.algo_kwargs))
    discount, n = settings["discount"], settings["n_step_return"]
    eps = settings.get("value_scale_eps", 1e-3)
    for run_dir in args.run_dirs:
        state = load_checkpoint(str(run_dir))
        rebuild = state["rebuild"]
        agent = import_path(rebuild["agent_class"])(**rebuild["agent_kwargs"])
        env = import_path(rebuild["env_maker"])(**rebuild["env_kwargs"])
        agent.initialize(env.spaces)
        agent.model.load_state_dict(state["agent"]["model"])
        agent.model.eval()
        copies = state["algo"]["update_counter"] // settings["target_update_interval"]
        horizon = n * copies
        predicted = (1 - discount ** horizon) / (1 - discount)
        runs = list(greedy_episodes(agent.model, args.episodes, eps))
        lengths = [length for length, _, _ in runs]
        ends = collections.Counter(ended for _, ended, _ in runs)
        q_start = sum(q for _, _, q in runs) / len(runs)
        print(f"{run_dir} (step {state['cum_steps']}): mean length "
              f"{sum(lengths) / len(lengths):.0f}, shortest {sorted(lengths)[:5]}; ends "
              f"{dict(ends)}; max Q(s0) {q_start:.1f} unscaled; {copies} target copies of "
              f"{n}-step targets see {horizon} steps: {predicted:.1f}"
              + ("" if math.isfinite(q_start) else " (non-finite Q)"), flush=True)


if __name__ == "__main__":
    main()
