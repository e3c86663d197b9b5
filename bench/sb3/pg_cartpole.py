"""PPO and A2C on CartPole-v1: rlpyt vs Stable-Baselines3, side by side in one run.

Steps/s are reported twice: by wall clock, and by this process's CPU time (robust to
load from other processes on a shared machine; the ratio uses CPU time when the
machine is busy).  Both libraries get identical hyperparameters (8 envs; PPO: n_steps
32, batch 256, 20 epochs, gamma 0.98, GAE 0.8, lr 1e-3 and clip 0.2 both linearly
annealed, 100k steps; A2C: n_steps 5, RMSprop lr 7e-4, 500k steps), the same (64, 64)
tanh actor-critic, one torch thread, and the same evaluation (stochastic policy, 10
episodes on a fresh env).  Runs alternate between libraries; the script prints each
run, then medians of steps/s (training wall time, evaluation excluded) and their ratio,
then the CPU ratio of each repeat's pair of runs and the median of those.

One-off process start-up costs are paid before any timing: the first torch optimizer
built in a process lazily imports ``torch._dynamo`` (over a second of CPU), which
would otherwise be charged to whichever library happens to run first.

    python bench/sb3/pg_cartpole.py                 # full spec: PPO then A2C, 2 repeats each
    python bench/sb3/pg_cartpole.py --algos ppo --repeats 3 --ppo-steps 50000
"""

from __future__ import annotations

import argparse
import contextlib
import io
import statistics
import time

import gymnasium as gym
import numpy as np
import torch

N_ENVS = 8


def _eval_episodes(act, episodes=10, seed=12345):
    env = gym.make("CartPole-v1")
    returns = []
    for i in range(episodes):
        obs, _ = env.reset(seed=seed + i)
        done, total = False, 0.0
        while not done:
            obs, reward, terminated, truncated, _ = env.step(act(obs))
            total += reward
            done = terminated or truncated
        returns.append(total)
    return float(np.mean(returns))


# ---- rlpyt ---------------------------------------------------------------------------------
def run_rlpyt(algo_name: str, n_steps: int, seed: int):
    from rlpyt.agents.pg.categorical import CategoricalPgAgent
    from rlpyt.algos.pg.a2c import A2C
    from rlpyt.algos.pg.ppo import PPO
    from rlpyt.envs.gym import make
    from rlpyt.runners.minibatch_rl import MinibatchRl
    from rlpyt.samplers.serial.sampler import SerialSampler
    from rlpyt.utils.logging import logger

    if algo_name == "ppo":
        algo = PPO(discount=0.98, gae_lambda=0.8, learning_rate=1e-3, ratio_clip=0.2, epochs=20,
                   minibatches=1, entropy_loss_coeff=0.0, value_loss_coeff=0.5,
                   clip_grad_norm=0.5, normalize_advantage=True, linear_lr_schedule=True)
        batch_T = 32
    else:
        algo = A2C(discount=0.99, learning_rate=7e-4, entropy_loss_coeff=0.0,
                   value_loss_coeff=0.5, clip_grad_norm=0.5, gae_lambda=1.0,
                   OptimCls=torch.optim.RMSprop, optim_kwargs=dict(alpha=0.99, eps=1e-5))
        batch_T = 5
    sampler = SerialSampler(EnvCls=make, env_kwargs=dict(id="CartPole-v1"), batch_T=batch_T,
                            batch_B=N_ENVS, max_decorrelation_steps=0)
    agent = CategoricalPgAgent()
    runner = MinibatchRl(algo, agent, sampler, n_steps=n_steps, seed=seed,
                         log_interval_steps=n_steps)
    logger.set_log_tabular_only(True)
    start, cpu_start = time.perf_counter(), time.process_time()
    # The runner's diagnostics table would bury this script's summary lines.
    with contextlib.redirect_stdout(io.StringIO()):
        runner.train()
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    agent.eval_mode(0)

    def act(obs):
        with torch.no_grad():
            o = torch.as_tensor(obs, dtype=torch.float32)
            step = agent.step(o, torch.zeros((), dtype=torch.long), torch.zeros(()))
        return int(step.action)

    steps = runner.n_itr * sampler.batch_size
    return steps / elapsed, steps / cpu, _eval_episodes(act)


# ---- Stable-Baselines3 ------------------------------------------------------------------------
def run_sb3(algo_name: str, n_steps: int, seed: int):
    from stable_baselines3 import A2C, PPO
    from stable_baselines3.common.env_util import make_vec_env

    env = make_vec_env("CartPole-v1", n_envs=N_ENVS, seed=seed)

    def linear(start):
        return lambda progress_remaining: progress_remaining * start

    if algo_name == "ppo":
        model = PPO("MlpPolicy", env, n_steps=32, batch_size=256, n_epochs=20, gamma=0.98,
                    gae_lambda=0.8, learning_rate=linear(1e-3), clip_range=linear(0.2),
                    ent_coef=0.0, vf_coef=0.5, max_grad_norm=0.5, seed=seed, device="cpu",
                    verbose=0)
    else:
        model = A2C("MlpPolicy", env, n_steps=5, learning_rate=7e-4, gamma=0.99, gae_lambda=1.0,
                    ent_coef=0.0, vf_coef=0.5, max_grad_norm=0.5, seed=seed, device="cpu",
                    verbose=0)
    start, cpu_start = time.perf_counter(), time.process_time()
    model.learn(total_timesteps=n_steps)
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    steps = model.num_timesteps
    act = lambda o: int(model.predict(o, deterministic=False)[0])  # noqa: E731
    return steps / elapsed, steps / cpu, _eval_episodes(act)


def warm_up_torch() -> None:
    """Pay torch's lazy one-off imports (``torch._dynamo``, pulled in by the first
    optimizer) outside the timed runs, for both libraries alike."""
    import torch._dynamo  # noqa: F401

    param = torch.nn.Parameter(torch.zeros(1))
    param.grad = torch.zeros(1)
    for optimizer in (torch.optim.Adam([param], fused=True), torch.optim.Adam([param]),
                      torch.optim.RMSprop([param])):
        optimizer.step()


def bench(algo_name: str, n_steps: int, repeats: int):
    results = {"rlpyt": [], "sb3": []}
    for rep in range(repeats):
        for lib, fn in (("rlpyt", run_rlpyt), ("sb3", run_sb3)):
            sps, cpu_sps, ret = fn(algo_name, n_steps, seed=rep)
            results[lib].append((sps, cpu_sps, ret))
            print(f"{algo_name.upper()} repeat {rep} {lib:5s}: {sps:8.0f} steps/s wall, "
                  f"{cpu_sps:8.0f} steps/s CPU, final eval return {ret:6.1f}", flush=True)
    med = {lib: [statistics.median(x[i] for x in r) for i in range(3)]
           for lib, r in results.items()}
    ours, peer = med["rlpyt"], med["sb3"]
    print(f"{algo_name.upper()} {n_steps} steps, median of {repeats}: rlpyt {ours[0]:.0f} vs SB3 "
          f"{peer[0]:.0f} steps/s wall (ratio {ours[0] / peer[0]:.2f}x); rlpyt {ours[1]:.0f} vs "
          f"SB3 {peer[1]:.0f} steps/s CPU (ratio {ours[1] / peer[1]:.2f}x; target >= 2x); "
          f"median final eval return rlpyt {ours[2]:.1f} vs SB3 {peer[2]:.1f}", flush=True)
    # The two runs of a repeat follow each other, so they share the machine's state; the
    # median of the per-repeat ratios is less moved by load that comes and goes between
    # repeats than the ratio of medians (which may pair runs from different repeats).
    pairs = [o[1] / p[1] for o, p in zip(results["rlpyt"], results["sb3"])]
    print(f"{algo_name.upper()} per-repeat CPU ratios: {', '.join(f'{r:.2f}' for r in pairs)} "
          f"(median {statistics.median(pairs):.2f}x)", flush=True)
    return med


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--algos", default="ppo,a2c")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--ppo-steps", type=int, default=100_000)
    parser.add_argument("--a2c-steps", type=int, default=500_000)
    args = parser.parse_args()
    torch.set_num_threads(1)
    warm_up_torch()
    for name in args.algos.split(","):
        bench(name, args.ppo_steps if name == "ppo" else args.a2c_steps, args.repeats)


if __name__ == "__main__":
    main()
