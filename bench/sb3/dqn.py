"""Training speed and result of rlpyt's DQN next to Stable-Baselines3's DQN on CartPole-v1.

Both train the same Q-network (MLP 128-128, ReLU) with the same hyperparameters:

| setting | rlpyt ``DQN`` / ``SerialSampler`` | SB3 ``DQN`` |
|---|---|---|
| envs, steps between updates | ``batch_B=B``, ``batch_T=T`` | ``n_envs=B``, ``train_freq=T`` |
| gradient steps per ``T x B`` env steps | ``replay_ratio * T * B / batch_size`` | ``gradient_steps`` |
| batch, learning rate, discount | ``batch_size``, ``learning_rate``, ``discount`` | same names |
| Huber loss (threshold 1), grad clip 10 | ``delta_clip=1``, ``clip_grad_norm=10`` | ``smooth_l1_loss``, ``max_grad_norm=10`` |
| hard target copy every K env steps | ``target_update_interval`` = K in gradient steps | ``target_update_interval=K`` |
| learning starts | ``min_steps_learn`` | ``learning_starts`` |
| epsilon 1 -> ``eps_final`` | over ``[min_steps_learn, eps_steps]`` | over the first ``eps_steps`` steps |
| time limits bootstrap | ``bootstrap_timelimit=True`` | ``handle_timeout_termination=True`` |

Repeats are interleaved (each repeat trains both, alternating which goes first) so
that load from other processes spreads over both; medians are reported.  Speed is
env steps per second of this process's CPU time (``--clock cpu``, the default,
which other processes sharing the cores disturb far less than wall-clock time), or
of wall-clock time (``--clock wall``).  Torch runs one thread for both (tiny
tensors).  The final evaluation is the mean return of ``--eval-episodes`` greedy
episodes (epsilon 0) on fresh envs, outside the timed part.

    python bench/sb3/dqn.py --steps 20000 --repeats 3
    python bench/sb3/dqn.py --replay      # then parts (b) and (c): bench/speed/replay.py
"""

from __future__ import annotations

import argparse
import contextlib
import io
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch

from rlpyt.agents.dqn.dqn_agent import DqnAgent
from rlpyt.algos.dqn.dqn import DQN
from rlpyt.envs.gym import make
from rlpyt.runners.minibatch_rl import MinibatchRl
from rlpyt.samplers.serial.sampler import SerialSampler
from rlpyt.utils.logging.context import logger_context

ENV_ID = "CartPole-v1"
HIDDEN = [128, 128]
HP = dict(  # Shared hyperparameters: the robust CartPole settings of examples/dqn_cartpole.py.
    batch_B=8,
    batch_T=4,
    batch_size=64,
    replay_ratio=32,  # -> 16 gradient steps per 32 env steps
    learning_rate=1e-3,
    discount=0.99,
    buffer_size=100_000,
    learning_starts=1000,
    target_update_steps=200,  # env steps (= 100 gradient steps)
    eps_steps=10_000,
    eps_final=0.02,
)


def gradient_steps() -> int:
    return round(HP["replay_ratio"] * HP["batch_T"] * HP["batch_B"] / HP["batch_size"])


def train_rlpyt(n_steps: int, seed: int, clock) -> tuple[float, object]:
    """Returns (env steps per second, greedy policy: obs [4] -> action)."""
    updates_per_step = gradient_steps() / (HP["batch_T"] * HP["batch_B"])
    sampler = SerialSampler(EnvCls=make, env_kwargs=dict(id=ENV_ID), batch_T=HP["batch_T"],
                            batch_B=HP["batch_B"], max_decorrelation_steps=0)
    algo = DQN(discount=HP["discount"], batch_size=HP["batch_size"],
               min_steps_learn=HP["learning_starts"], replay_size=HP["buffer_size"],
               replay_ratio=HP["replay_ratio"], learning_rate=HP["learning_rate"],
               target_update_interval=max(1, round(HP["target_update_steps"] * updates_per_step)),
               eps_steps=HP["eps_steps"], delta_clip=1.0, clip_grad_norm=10.0)
    agent = DqnAgent(eps_final=HP["eps_final"], model_kwargs=dict(hidden_sizes=HIDDEN))
    runner = MinibatchRl(algo=algo, agent=agent, sampler=sampler, n_steps=n_steps, seed=seed,
                         log_interval_steps=n_steps)
    with tempfile.TemporaryDirectory() as log_dir, contextlib.redirect_stdout(io.StringIO()):
        with logger_context(log_dir, 0, "bench", override_prefix=True):
            start = clock()
            runner.train()
            elapsed = clock() - start

    def policy(obs: np.ndarray) -> int:
        with torch.no_grad():
            q = agent.model(torch.as_tensor(obs, dtype=torch.float32), None, None)
        return int(q.argmax())

    return runner.n_itr * HP["batch_T"] * HP["batch_B"] / elapsed, policy


def train_sb3(n_steps: int, seed: int, clock) -> tuple[float, object]:
    from stable_baselines3 import DQN as SB3DQN
    from stable_baselines3.common.env_util import make_vec_env

    env = make_vec_env(ENV_ID, n_envs=HP["batch_B"], seed=seed)
    model = SB3DQN(
        "MlpPolicy", env, learning_rate=HP["learning_rate"], buffer_size=HP["buffer_size"],
        learning_starts=HP["learning_starts"], batch_size=HP["batch_size"], tau=1.0,
        gamma=HP["discount"], train_freq=HP["batch_T"], gradient_steps=gradient_steps(),
        target_update_interval=HP["target_update_steps"],
        exploration_fraction=HP["eps_steps"] / n_steps, exploration_initial_eps=1.0,
        exploration_final_eps=HP["eps_final"], max_grad_norm=10.0,
        policy_kwargs=dict(net_arch=HIDDEN), seed=seed, verbose=0, device="cpu",
    )
    start = clock()
    model.learn(total_timesteps=n_steps)
    elapsed = clock() - start

    def policy(obs: np.ndarray) -> int:
        return int(model.predict(obs, deterministic=True)[0])

    return model.num_timesteps / elapsed, policy


def evaluate(policy, episodes: int, seed: int) -> float:
    env = gym.make(ENV_ID)
    returns = []
    for i in range(episodes):
        obs, _ = env.reset(seed=seed + i)
        total, done = 0.0, False
        while not done:
            obs, reward, terminated, truncated, _ = env.step(policy(obs))
            total += reward
            done = terminated or truncated
        returns.append(total)
    env.close()
    return float(np.mean(returns))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20_000, help="env steps per training run")
    parser.add_argument("--repeats", type=int, default=3, help="interleaved repeats")
    parser.add_argument("--eval-episodes", type=int, default=5)
    parser.add_argument("--clock", choices=["cpu", "wall"], default="cpu")
    parser.add_argument("--replay", action="store_true",
                        help="also run bench/speed/replay.py (prioritized replay throughput at "
                             "100k capacity, frame-buffer bytes per transition)")
    args = parser.parse_args()
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    torch.set_num_threads(1)
    warnings.filterwarnings("ignore", category=UserWarning)
    contenders = {"rlpyt": train_rlpyt, "sb3": train_sb3}
    train_rlpyt(2000, 0, clock)  # Warm-up: imports and first-use costs, untimed.
    train_sb3(2000, 0, clock)
    speeds = {name: [] for name in contenders}
    evals = {name: [] for name in contenders}
    for repeat in range(args.repeats):
        order = list(contenders) if repeat % 2 == 0 else list(reversed(contenders))
        for name in order:
            speed, policy = contenders[name](args.steps, seed=repeat, clock=clock)
            speeds[name].append(speed)
            evals[name].append(evaluate(policy, args.eval_episodes, seed=1000 + repeat))
            print(f"repeat {repeat} {name:6s} {speed:8.0f} steps/s  eval {evals[name][-1]:6.1f}",
                  flush=True)
    print(f"\n{ENV_ID}, {args.steps} env steps per run, {args.repeats} repeats, "
          f"{gradient_steps()} gradient steps (batch {HP['batch_size']}) per "
          f"{HP['batch_T'] * HP['batch_B']} env steps, clock={args.clock}")
    print(f"{'':8s}{'median steps/s':>16s}{'median final eval':>20s}")
    for name in contenders:
        print(f"{name:8s}{statistics.median(speeds[name]):16.0f}"
              f"{statistics.median(evals[name]):20.1f}")
    ratio = statistics.median(speeds["rlpyt"]) / statistics.median(speeds["sb3"])
    print(f"speed ratio rlpyt / sb3: {ratio:.2f}x")
    if args.replay:
        run_replay_bench(clock)


def run_replay_bench(clock) -> None:
    """Parts (b) and (c) of the DQN benchmark, from ``bench/speed/replay.py``."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "speed"))
    import replay

    replay.CLOCK = clock
    print()
    replay.report_throughput(capacity=100_000, iterations=100, repeats=3)
    print()
    replay.report_frame_bytes()


if __name__ == "__main__":
    main()
