"""SAC speed and return: rlpyt vs Stable-Baselines3 on Pendulum-v1, same hyperparameters.

Both libraries train for ``--steps`` env steps with batch 256, learning rate 1e-3,
(256, 256) ReLU networks, gamma 0.99, tau 0.005, a learned temperature starting at
1 with target entropy -|A|, uniform random actions for the first
``--learning-starts`` steps and one gradient update per env step after that, on
one env, on the CPU, with the same number of torch threads.  Each library runs in
its own subprocess, one after the other (``--concurrent``: both at once).  The script prints, per library, env
steps per second of wall time and of process CPU time (the CPU figure is steadier on
a loaded machine), and the deterministic mean return over ``--eval-episodes``
evaluation episodes, then the ratios rlpyt / SB3.

Usage::

    python bench/sb3/sac.py                     # the full spec: 20k steps per library
    python bench/sb3/sac.py --steps 5000        # a shorter run

Needs stable-baselines3 (``make bench`` installs it).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

BATCH_SIZE = 256
LEARNING_RATE = 1e-3
HIDDEN = [256, 256]
GAMMA = 0.99
TAU = 0.005
ENV_ID = "Pendulum-v1"


def evaluate(act, seed: int, episodes: int) -> float:
    """Mean return of ``act(observation) -> action`` over ``episodes`` fresh episodes."""
    import gymnasium as gym

    env = gym.make(ENV_ID)
    returns = []
    for episode in range(episodes):
        observation, _ = env.reset(seed=10_000 + seed * 100 + episode)
        total, done = 0.0, False
        while not done:
            observation, reward, terminated, truncated, _ = env.step(act(observation))
            total += float(reward)
            done = terminated or truncated
        returns.append(total)
    env.close()
    return sum(returns) / len(returns)


def run_rlpyt(args) -> dict:
    import torch

    from rlpyt.agents.qpg.sac_agent import SacAgent
    from rlpyt.algos.qpg.sac import SAC
    from rlpyt.envs.gym import make
    from rlpyt.runners.minibatch_rl import MinibatchRl
    from rlpyt.samplers.serial.sampler import SerialSampler
    from rlpyt.utils.logging.context import logger_context

    algo = SAC(
        discount=GAMMA,
        batch_size=BATCH_SIZE,
        min_steps_learn=args.learning_starts,
        replay_size=int(1e6),
        replay_ratio=BATCH_SIZE,  # one update per env step with batch_T * batch_B = 1
        target_update_tau=TAU,
        learning_rate=LEARNING_RATE,
    )
    agent = SacAgent(
        model_kwargs=dict(hidden_sizes=HIDDEN),
        q_model_kwargs=dict(hidden_sizes=HIDDEN),
        pretrain_std="uniform",
    )
    sampler = SerialSampler(
        EnvCls=make, env_kwargs=dict(id=ENV_ID), batch_T=1, batch_B=1,
        max_decorrelation_steps=0,
    )
    runner = MinibatchRl(
        algo=algo, agent=agent, sampler=sampler, n_steps=args.steps, seed=args.seed,
        log_interval_steps=args.steps,
    )
    with tempfile.TemporaryDirectory() as log_dir:
        with logger_context(log_dir, 0, "bench_sac", override_prefix=True):
            wall, cpu = time.perf_counter(), time.process_time()
            runner.train()
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    agent.eval_mode(itr=0)

    def act(observation):
        o = torch.as_tensor(observation, dtype=torch.float32)
        return agent.step(o, torch.zeros(1), torch.zeros(())).action.numpy()

    return dict(wall=wall, cpu=cpu, eval_return=evaluate(act, args.seed, args.eval_episodes))


def run_sb3(args) -> dict:
    import gymnasium as gym
    from stable_baselines3 import SAC as Sb3SAC

    env = gym.make(ENV_ID)
    model = Sb3SAC(
        "MlpPolicy", env, learning_rate=LEARNING_RATE, buffer_size=int(1e6),
        learning_starts=args.learning_starts, batch_size=BATCH_SIZE, tau=TAU, gamma=GAMMA,
        train_freq=1, gradient_steps=1, ent_coef="auto", target_entropy="auto",
        policy_kwargs=dict(net_arch=HIDDEN), seed=args.seed, device="cpu", verbose=0,
    )
    wall, cpu = time.perf_counter(), time.process_time()
    model.learn(total_timesteps=args.steps)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu

    def act(observation):
        return model.predict(observation, deterministic=True)[0]

    return dict(wall=wall, cpu=cpu, eval_return=evaluate(act, args.seed, args.eval_episodes))


def run_one(args) -> None:
    import torch

    torch.set_num_threads(args.threads)
    result = run_rlpyt(args) if args.lib == "rlpyt" else run_sb3(args)
    print("RESULT " + json.dumps(result), flush=True)


def start_library(lib: str, args) -> subprocess.Popen:
    command = [sys.executable, os.path.abspath(__file__), "--lib", lib,
               "--steps", str(args.steps), "--seed", str(args.seed),
               "--threads", str(args.threads), "--learning-starts", str(args.learning_starts),
               "--eval-episodes", str(args.eval_episodes)]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish_library(lib: str, process: subprocess.Popen, args) -> dict:
    stdout, stderr = process.communicate()
    lines = [line for line in stdout.splitlines() if line.startswith("RESULT ")]
    if process.returncode != 0 or not lines:
        raise RuntimeError(f"{lib} run failed (exit {process.returncode}):\n{stderr[-3000:]}")
    result = json.loads(lines[-1][len("RESULT "):])
    result["steps_per_s"] = args.steps / result["wall"]
    result["steps_per_cpu_s"] = args.steps / result["cpu"]
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20_000, help="env steps per library")
    parser.add_argument("--learning-starts", type=int, default=1000,
                        help="random-action steps before the first update")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1, help="torch threads per library")
    parser.add_argument("--eval-episodes", type=int, default=10)
    parser.add_argument("--concurrent", action="store_true",
                        help="run both libraries at the same time (fairer on a loaded "
                             "machine; each should get its own core)")
    parser.add_argument("--lib", choices=["rlpyt", "sb3"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.lib:
        run_one(args)
        return
    results = {}
    libs = ("rlpyt", "sb3")
    if args.concurrent:  # both at once: on a shared, loaded machine both see the same load
        processes = {lib: start_library(lib, args) for lib in libs}
        results = {lib: finish_library(lib, processes[lib], args) for lib in libs}
    for lib in libs:
        if lib not in results:
            results[lib] = finish_library(lib, start_library(lib, args), args)
        result = results[lib]
        print(f"{lib:6s} steps/s {result['steps_per_s']:8.1f} (wall)  "
              f"{result['steps_per_cpu_s']:8.1f} (per CPU second)  "
              f"final eval return {result['eval_return']:8.1f}", flush=True)
    ours, sb3 = results["rlpyt"], results["sb3"]
    print(f"ratio rlpyt/sb3: steps/s {ours['steps_per_s'] / sb3['steps_per_s']:.2f}x (wall), "
          f"{ours['steps_per_cpu_s'] / sb3['steps_per_cpu_s']:.2f}x (CPU time); "
          f"eval return {ours['eval_return']:.1f} vs {sb3['eval_return']:.1f} "
          f"({args.steps} steps, seed {args.seed})")


if __name__ == "__main__":
    main()
