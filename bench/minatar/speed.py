"""CPU cost of a MinAtar frame: rlpyt's DQN and PPO against plain single-file loops.

Side by side in one process, with interleaved repeats (the order alternates), on one
torch thread, measured in process CPU time (``time.process_time``), so that other jobs
on a shared machine slow the wall clock but not the figures much:

* **DQN**, the paper's settings (``bench/minatar/dqn.py``: batch 32, replay 100k, one
  gradient step per frame, centered RMSProp, target copy every 1000 updates, 5000
  random frames first): rlpyt (``MinibatchRl`` + ``SerialSampler`` with ``batch_T=4,
  batch_B=1``, the reproduction's runner) against ``PlainDqn``, the obvious
  CleanRL-style loop written for this benchmark: the same network, a numpy ring-buffer
  replay of ``(obs, action, reward, next_obs, done)``, one ``minatar.Environment``,
  ``torch.optim.RMSprop`` with the same keywords.  Timed: the learning frames after the
  5000 random ones and 400 warm-up frames, CPU seconds per 1k frames.  rlpyt runs twice,
  with the optimizer step a run of the paper's 5M frames picks (RMSprop compiled,
  ``CompiledRmspropStep``; the compile falls in the warm-up) and with the one a short
  run picks (``RMSprop.step()``), whatever this benchmark's own length.
* **The floor**: the update's arithmetic alone, rlpyt's model, target network and
  optimizer (with the long-run step) on one fixed replay batch (forward of both
  networks, Huber loss, backward, optimizer step), timed in a tight loop.  Printed as a share of rlpyt's frame: what
  is left above it is everything else (env, acting, replay, runner).
* **PPO**, ``bench/minatar/ppo.py``'s settings (16 envs x 128 steps, 4 epochs x 4
  minibatches, Adam 2.5e-4 annealed, clip 0.1, GAE 0.95, grad-norm clip 0.5): rlpyt
  against ``PlainPpo``, a CleanRL-style loop over a list of the same envs.

Epsilon: both DQNs use the same schedule; by default it is at its final 0.1 as soon as
learning starts (``--eps-steps 5000``), the regime of almost all of a 5M-frame run
(the paper's decay over frames 5k-105k would let the plain loop, which computes Q
only for greedy actions, skip most acting forwards in a short benchmark).

    python bench/minatar/speed.py                           # a few minutes
    python bench/minatar/speed.py --dqn-frames 20000 --repeats 5 --ppo-frames 262144
    python bench/minatar/speed.py --profile                 # where rlpyt's frame goes

Each figure is a CPU time of this process only (an inductor compile's C++ compiler
runs as a child and is not in it; the compile is outside the timed frames anyway).
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import io
import random
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import GAMES, main_guard  # noqa: E402

main_guard()

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

LEARN_START = 5_000  # the paper's random frames before learning (dqn.py's min_steps_learn)
WARMUP = 400  # learning frames before the timer starts (first allocations, compiling)


def cpu() -> float:
    return time.process_time()


# ---- rlpyt -------------------------------------------------------------------------------
def rlpyt_dqn_runner(game: str, seed: int, n_steps: int, eps_steps: int):
    import dqn

    from rlpyt.agents.dqn.minatar import MinAtarDqnAgent
    from rlpyt.algos.dqn.dqn import DQN
    from rlpyt.envs.minatar import MinAtarEnv
    from rlpyt.runners.minibatch_rl import MinibatchRl
    from rlpyt.samplers.serial.sampler import SerialSampler

    algo_kwargs = dict(dqn.ALGO_KWARGS, eps_steps=eps_steps)
    assert algo_kwargs["min_steps_learn"] == LEARN_START, algo_kwargs
    sampler = SerialSampler(EnvCls=MinAtarEnv, env_kwargs=dict(game=game), batch_T=4,
                            batch_B=1, max_decorrelation_steps=0)
    return MinibatchRl(algo=DQN(**algo_kwargs), agent=MinAtarDqnAgent(**dqn.AGENT_KWARGS),
                       sampler=sampler, n_steps=n_steps, seed=seed, log_interval_steps=n_steps)


def rlpyt_ppo_runner(game: str, seed: int, n_steps: int):
    import ppo

    from rlpyt.agents.pg.minatar import MinAtarPgAgent
    from rlpyt.algos.pg.ppo import PPO
    from rlpyt.envs.minatar import MinAtarEnv
    from rlpyt.runners.minibatch_rl import MinibatchRl
    from rlpyt.samplers.serial.sampler import SerialSampler

    sampler = SerialSampler(EnvCls=MinAtarEnv, env_kwargs=dict(game=game), batch_T=128,
                            batch_B=16, max_decorrelation_steps=0)
    return MinibatchRl(algo=PPO(**ppo.ALGO_KWARGS), agent=MinAtarPgAgent(), sampler=sampler,
                       n_steps=n_steps, seed=seed, log_interval_steps=n_steps)


class SegmentTimer:
    """CPU time of a runner's iterations ``[first_itr, last_itr]``, taken around
    ``algo.optimize_agent`` (the sampling of ``first_itr`` precedes its first call, so
    the timer starts at the end of the call before it), startup and final log excluded."""

    def __init__(self, runner, first_itr: int, on_start=None):
        self.first_itr, self.start, self.stop = first_itr, None, None
        self.on_start = on_start or (lambda: None)
        runner_startup = runner.startup

        def startup():
            n_itr = runner_startup()
            self.last_itr = n_itr - 1
            self._wrap(runner.algo)
            if self.first_itr == 0:
                self._start()
            return n_itr

        runner.startup = startup
        self.runner = runner

    def _wrap(self, algo):
        optimize = algo.optimize_agent

        def timed(itr, *args, **kwargs):
            result = optimize(itr, *args, **kwargs)
            if itr == self.first_itr - 1:
                self._start()
            if itr == self.last_itr:
                self.stop = cpu()
            return result

        algo.optimize_agent = timed

    def _start(self):
        self.on_start()
        self.start = cpu()

    def seconds(self) -> float:
        return self.stop - self.start


def run_rlpyt(runner, first_itr: int, profile: bool = False):
    """Train ``runner`` in a temporary log dir; the CPU seconds of iterations from
    ``first_itr`` on, the runner, and the breakdown when ``profile``."""
    from rlpyt.utils.logging.context import logger_context

    breakdown = Breakdown(runner) if profile else None
    timer = SegmentTimer(runner, first_itr, on_start=breakdown and breakdown.activate)
    with tempfile.TemporaryDirectory(prefix="rlpyt_speed_") as log_dir, \
            contextlib.redirect_stdout(io.StringIO()), \
            logger_context(log_dir, 0, "speed", override_prefix=True):
        runner.train()
    return timer.seconds(), runner, breakdown


class Breakdown:
    """CPU time of each part of rlpyt's DQN frame (``--profile``): wrappers around the
    env, agent, replay and algorithm methods, counted only inside the timed segment.
    Each wrapper adds about a microsecond (two ``process_time`` calls)."""

    PARTS = [  # (label, owner, method)
        ("env step (MinAtar)", "env", "step"),
        ("env reset", "env", "reset"),
        ("acting forward (agent.step)", "agent", "step"),
        ("sampler total", "sampler", "obtain_samples"),
        ("replay append", "replay", "append_samples"),
        ("replay sample (4 batches)", "replay", "sample_batch"),
        ("update: forward + loss", "algo", "loss"),
        ("update: backward", "dqn_module", "backward"),
        ("update: grad norm", "algo", "_clip_gradients"),
        ("update: optimizer step", "algo", "_optimizer_step"),
        ("update: whole gradient step", "algo", "gradient_step"),
        ("target sync", "agent", "update_target"),
        ("algorithm total", "algo", "optimize_agent"),
    ]

    def __init__(self, runner):
        self.times, self.calls, self.active = Counter(), Counter(), False
        runner_startup = runner.startup

        def startup():
            n_itr = runner_startup()
            self._install(runner)
            return n_itr

        runner.startup = startup

    def _install(self, runner):
        import rlpyt.algos.dqn.dqn as dqn_module

        owners = dict(env=runner.sampler.envs[0], agent=runner.agent, sampler=runner.sampler,
                      replay=runner.algo.replay_buffer, algo=runner.algo, dqn_module=dqn_module)
        for label, owner, name in self.PARTS:
            self._wrap(owners[owner], name, label)

    def _wrap(self, obj, name, label):
        inner = getattr(obj, name)

        def timed(*args, **kwargs):
            if not self.active:
                return inner(*args, **kwargs)
            start = cpu()
            result = inner(*args, **kwargs)
            self.times[label] += cpu() - start
            self.calls[label] += 1
            return result

        setattr(obj, name, timed)

    def activate(self):
        self.active = True

    def report(self, frames: int, frame_seconds: float) -> str:
        lines = [f"{'part':32s} {'ms/frame':>9s} {'share':>6s} {'calls':>7s} {'us/call':>8s}"]
        for label, _, _ in self.PARTS:
            if self.calls[label]:
                t = self.times[label]
                lines.append(f"{label:32s} {t / frames * 1e3:9.3f} {t / frame_seconds:6.1%} "
                             f"{self.calls[label]:7d} {t / self.calls[label] * 1e6:8.1f}")
        accounted = self.times["sampler total"] + self.times["algorithm total"]
        rest = frame_seconds - accounted
        lines.append(f"{'runner, logging (the rest)':32s} {rest / frames * 1e3:9.3f} "
                     f"{rest / frame_seconds:6.1%}")
        lines.append(f"{'whole frame':32s} {frame_seconds / frames * 1e3:9.3f} {1:6.1%}")
        return "\n".join(lines)


# ---- the plain DQN -------------------------------------------------------------------------
class QNetwork(torch.nn.Module):
    """The paper's network: 3x3 conv of 16, 128 hidden units, a linear Q head."""

    def __init__(self, in_channels: int, n_actions: int):
        super().__init__()
        self.conv = torch.nn.Conv2d(in_channels, 16, kernel_size=3, stride=1)
        self.fc = torch.nn.Linear(16 * 8 * 8, 128)
        self.out = torch.nn.Linear(128, n_actions)

    def forward(self, x):
        x = F.relu(self.conv(x))
        return self.out(F.relu(self.fc(x.flatten(1))))


def minatar_env(game: str, seed: int):
    import minatar

    from rlpyt.envs.minatar import GAMES as MODULES

    env = minatar.Environment(MODULES[game], sticky_action_prob=0.1, difficulty_ramping=True)
    env.seed(seed)
    env.reset()
    return env


def observe(env) -> np.ndarray:
    return env.state().transpose(2, 0, 1)


def plain_dqn(game: str, seed: int, n_steps: int, eps_steps: int) -> tuple[float, float]:
    """The CleanRL-style DQN loop; returns (CPU seconds of the learning frames, mean
    return of the finished episodes)."""
    import dqn

    kw = dqn.ALGO_KWARGS
    gamma, batch_size, buffer_size = kw["discount"], kw["batch_size"], kw["replay_size"]
    learning_starts, target_interval = kw["min_steps_learn"], kw["target_update_interval"]
    eps_start, eps_end = 1.0, dqn.AGENT_KWARGS["eps_final"]
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    env = minatar_env(game, seed)
    obs = observe(env)
    n_actions = env.num_actions()
    q_network = QNetwork(obs.shape[0], n_actions)
    target_network = QNetwork(obs.shape[0], n_actions)
    target_network.load_state_dict(q_network.state_dict())
    optimizer = torch.optim.RMSprop(q_network.parameters(), lr=kw["learning_rate"],
                                    **kw["optim_kwargs"])
    observations = np.zeros((buffer_size, *obs.shape), dtype=bool)
    next_observations = np.zeros_like(observations)
    actions = np.zeros(buffer_size, dtype=np.int64)
    rewards = np.zeros(buffer_size, dtype=np.float32)
    dones = np.zeros(buffer_size, dtype=np.float32)
    pos, full = 0, False
    episode_return, returns = 0.0, []
    start = None
    for global_step in range(n_steps):
        if global_step == learning_starts + WARMUP:
            start = cpu()
        fraction = max(0.0, min(1.0, (global_step - learning_starts) /
                                max(eps_steps - learning_starts, 1)))
        epsilon = eps_start + fraction * (eps_end - eps_start)
        if random.random() < epsilon:
            action = random.randrange(n_actions)
        else:
            with torch.no_grad():
                q_values = q_network(torch.tensor(obs, dtype=torch.float32).unsqueeze(0))
            action = int(q_values.argmax(dim=1).item())
        reward, terminal = env.act(action)
        next_obs = observe(env)
        observations[pos], next_observations[pos] = obs, next_obs
        actions[pos], rewards[pos], dones[pos] = action, reward, terminal
        pos = (pos + 1) % buffer_size
        full = full or pos == 0
        episode_return += reward
        if terminal:
            returns.append(episode_return)
            episode_return = 0.0
            env.reset()
            next_obs = observe(env)
        obs = next_obs
        if global_step >= learning_starts:
            idx = np.random.randint(0, buffer_size if full else pos, size=batch_size)
            b_obs = torch.as_tensor(observations[idx], dtype=torch.float32)
            b_next = torch.as_tensor(next_observations[idx], dtype=torch.float32)
            b_actions = torch.as_tensor(actions[idx])
            b_rewards = torch.as_tensor(rewards[idx])
            b_dones = torch.as_tensor(dones[idx])
            with torch.no_grad():
                target_max = target_network(b_next).max(dim=1).values
                td_target = b_rewards + gamma * target_max * (1 - b_dones)
            old_val = q_network(b_obs).gather(1, b_actions.unsqueeze(1)).squeeze(1)
            loss = F.smooth_l1_loss(old_val, td_target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if (global_step - learning_starts + 1) % target_interval == 0:
                target_network.load_state_dict(q_network.state_dict())
    seconds = cpu() - start
    return seconds, float(np.mean(returns)) if returns else float("nan")


# ---- the floor -----------------------------------------------------------------------------
def update_floor(runner, iters: int) -> float:
    """CPU seconds of one update's arithmetic alone: copies of rlpyt's trained model,
    target and optimizer, one fixed replay batch, the forward passes, Huber loss,
    backward and optimizer step in a tight loop (median of 5 blocks)."""
    from rlpyt.algos.optim import CompiledRmspropStep

    algo, agent = runner.algo, runner.agent
    model, target = copy.deepcopy(agent.model), copy.deepcopy(agent.target_model)
    optimizer = type(algo.optimizer)(model.parameters(), **{
        k: v for k, v in algo.optimizer.defaults.items()})
    optimizer.load_state_dict(algo.optimizer.state_dict())
    batch = algo.replay_buffer.sample_batch(algo.batch_size)
    obs, next_obs = batch.agent_inputs.observation, batch.target_inputs.observation
    action, return_, done_n = batch.action, batch.return_, batch.done_n
    discount = algo.discount
    step = optimizer.step
    if isinstance(getattr(algo, "_direct_step", None), CompiledRmspropStep):
        step = CompiledRmspropStep(optimizer).step  # the run's own step, compiled

    def update():
        q = model(obs, None, None).gather(-1, action.unsqueeze(-1)).squeeze(-1)
        with torch.no_grad():
            y = return_ + discount * target(next_obs, None, None).amax(-1).masked_fill(done_n, 0)
        loss = F.huber_loss(q, y, delta=algo.delta_clip)
        for p in model.parameters():
            p.grad = None
        loss.backward()
        step()

    for _ in range(20):
        update()
    blocks = []
    for _ in range(5):
        start = cpu()
        for _ in range(iters):
            update()
        blocks.append((cpu() - start) / iters)
    return statistics.median(blocks)


# ---- the plain PPO -------------------------------------------------------------------------
class ActorCritic(torch.nn.Module):
    """The paper's torso with softmax-policy logits and value heads."""

    def __init__(self, in_channels: int, n_actions: int):
        super().__init__()
        self.conv = torch.nn.Conv2d(in_channels, 16, kernel_size=3, stride=1)
        self.fc = torch.nn.Linear(16 * 8 * 8, 128)
        self.actor = torch.nn.Linear(128, n_actions)
        self.critic = torch.nn.Linear(128, 1)

    def forward(self, x):
        h = F.relu(self.fc(F.relu(self.conv(x)).flatten(1)))
        return self.actor(h), self.critic(h).squeeze(-1)


def plain_ppo(game: str, seed: int, n_steps: int) -> tuple[float, float]:
    """The CleanRL-style PPO loop over a list of envs; (CPU seconds, mean episode return)."""
    import ppo

    kw = ppo.ALGO_KWARGS
    num_envs, num_steps = 16, 128
    minibatch_size = num_envs * num_steps // kw["minibatches"]
    np.random.seed(seed)
    torch.manual_seed(seed)
    envs = [minatar_env(game, seed + i) for i in range(num_envs)]
    n_actions = envs[0].num_actions()
    obs_shape = observe(envs[0]).shape
    agent = ActorCritic(obs_shape[0], n_actions)
    optimizer = torch.optim.Adam(agent.parameters(), lr=kw["learning_rate"], eps=1e-5)
    obs_buf = torch.zeros((num_steps, num_envs, *obs_shape))
    actions = torch.zeros((num_steps, num_envs), dtype=torch.long)
    logprobs = torch.zeros((num_steps, num_envs))
    rewards = torch.zeros((num_steps, num_envs))
    dones = torch.zeros((num_steps, num_envs))
    values = torch.zeros((num_steps, num_envs))
    next_obs = torch.tensor(np.stack([observe(e) for e in envs]), dtype=torch.float32)
    next_done = torch.zeros(num_envs)
    episode_returns, returns = np.zeros(num_envs), []
    n_updates = n_steps // (num_envs * num_steps)
    start = cpu()
    for update in range(n_updates):
        lr = kw["learning_rate"] * (1.0 - update / n_updates)
        optimizer.param_groups[0]["lr"] = lr
        for step in range(num_steps):
            obs_buf[step], dones[step] = next_obs, next_done
            with torch.no_grad():
                logits, value = agent(next_obs)
                dist = torch.distributions.Categorical(logits=logits)
                action = dist.sample()
            values[step], actions[step], logprobs[step] = value, action, dist.log_prob(action)
            step_obs, step_rewards, step_dones = [], [], []
            for i, (env, a) in enumerate(zip(envs, action.tolist())):
                r, terminal = env.act(a)
                episode_returns[i] += r
                if terminal:
                    returns.append(episode_returns[i])
                    episode_returns[i] = 0.0
                    env.reset()
                step_obs.append(observe(env))
                step_rewards.append(r)
                step_dones.append(terminal)
            rewards[step] = torch.tensor(step_rewards)
            next_obs = torch.tensor(np.stack(step_obs), dtype=torch.float32)
            next_done = torch.tensor(step_dones, dtype=torch.float32)
        with torch.no_grad():
            next_value = agent(next_obs)[1]
            advantages = torch.zeros_like(rewards)
            lastgaelam = 0
            for t in reversed(range(num_steps)):
                if t == num_steps - 1:
                    nextnonterminal, nextvalues = 1.0 - next_done, next_value
                else:
                    nextnonterminal, nextvalues = 1.0 - dones[t + 1], values[t + 1]
                delta = rewards[t] + kw["discount"] * nextvalues * nextnonterminal - values[t]
                lastgaelam = delta + kw["discount"] * kw["gae_lambda"] * nextnonterminal \
                    * lastgaelam
                advantages[t] = lastgaelam
            b_returns = (advantages + values).reshape(-1)
        b_obs = obs_buf.reshape((-1, *obs_shape))
        b_logprobs, b_actions = logprobs.reshape(-1), actions.reshape(-1)
        b_advantages = advantages.reshape(-1)
        clip = kw["ratio_clip"] * (1.0 - update / n_updates)
        b_inds = np.arange(num_envs * num_steps)
        for _epoch in range(kw["epochs"]):
            np.random.shuffle(b_inds)
            for begin in range(0, len(b_inds), minibatch_size):
                mb = b_inds[begin:begin + minibatch_size]
                logits, newvalue = agent(b_obs[mb])
                dist = torch.distributions.Categorical(logits=logits)
                logratio = dist.log_prob(b_actions[mb]) - b_logprobs[mb]
                ratio = logratio.exp()
                mb_adv = b_advantages[mb]
                mb_adv = (mb_adv - mb_adv.mean()) / (mb_adv.std() + 1e-8)
                pg_loss = torch.max(-mb_adv * ratio,
                                    -mb_adv * torch.clamp(ratio, 1 - clip, 1 + clip)).mean()
                v_loss = 0.5 * ((newvalue - b_returns[mb]) ** 2).mean()
                loss = pg_loss - kw["entropy_loss_coeff"] * dist.entropy().mean() \
                    + kw["value_loss_coeff"] * v_loss
                optimizer.zero_grad()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(agent.parameters(), kw["clip_grad_norm"])
                optimizer.step()
    seconds = cpu() - start
    return seconds, float(np.mean(returns)) if returns else float("nan")


# ---- the comparison ------------------------------------------------------------------------
def per_1k(seconds: float, frames: int) -> float:
    return seconds / frames * 1e3


@contextlib.contextmanager
def optimizer_step(kind: str):
    """Build rlpyt's optimizer step as a run of the paper's 5M frames does (``long``:
    RMSprop compiled) or as a short run does (``short``: ``RMSprop.step()``), whatever
    this benchmark's own length (``rlpyt.algos.optim.COMPILE_MIN_WORK`` decides)."""
    from rlpyt.algos import optim

    saved = optim.COMPILE_MIN_WORK
    optim.COMPILE_MIN_WORK = 0.0 if kind == "long" else float("inf")
    try:
        yield
    finally:
        optim.COMPILE_MIN_WORK = saved


def bench_dqn(args) -> dict:
    n_steps = LEARN_START + WARMUP + args.dqn_frames
    first_itr = (LEARN_START + WARMUP) // 4  # 4 env steps per iteration
    times = {"long": [], "short": [], "plain": []}
    floor = []
    for rep in range(args.repeats):
        order = ["long", "short", "plain"]
        order = order[rep % 3:] + order[:rep % 3]
        for who in order:
            if who == "plain":
                seconds, _ = plain_dqn(args.game, rep, n_steps, args.eps_steps)
            else:
                with optimizer_step(who):
                    runner = rlpyt_dqn_runner(args.game, rep, n_steps, args.eps_steps)
                    seconds, runner, _ = run_rlpyt(runner, first_itr)
                if who == "long":
                    floor.append(update_floor(runner, args.floor_iters) * 1e3)  # s per 1k
            times[who].append(per_1k(seconds, args.dqn_frames))
            extra = f" (update floor {floor[-1]:.2f})" if who == "long" else ""
            print(f"  repeat {rep}: {DQN_LABELS[who]:28s} {times[who][-1]:7.2f} CPU s / 1k "
                  f"frames{extra}", flush=True)
    breakdowns = {}
    if args.profile:
        for kind in ("long", "short"):
            with optimizer_step(kind):
                runner = rlpyt_dqn_runner(args.game, 0, n_steps, args.eps_steps)
                seconds, _, breakdown = run_rlpyt(runner, first_itr, profile=True)
            breakdowns[kind] = breakdown.report(args.dqn_frames, seconds)
    return dict(times=times, floor=floor, breakdowns=breakdowns)


DQN_LABELS = {"long": "rlpyt DQN (long-run step)", "short": "rlpyt DQN (short-run step)",
              "plain": "plain DQN"}


def bench_ppo(args) -> dict:
    ours, plain = [], []
    batch = 16 * 128
    n_steps = args.ppo_frames // batch * batch
    for rep in range(args.repeats):
        order = ["ours", "plain"] if rep % 2 == 0 else ["plain", "ours"]
        for who in order:
            if who == "ours":
                seconds, _, _ = run_rlpyt(rlpyt_ppo_runner(args.game, rep, n_steps), 0)
                ours.append(per_1k(seconds, n_steps))
            else:
                seconds, _ = plain_ppo(args.game, rep, n_steps)
                plain.append(per_1k(seconds, n_steps))
            print(f"  repeat {rep}: {'rlpyt' if who == 'ours' else 'plain'} PPO   "
                  f"{(ours if who == 'ours' else plain)[-1]:7.3f} CPU s / 1k frames",
                  flush=True)
    return dict(ours=ours, plain=plain, frames=n_steps)


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--game", default="Breakout", choices=GAMES)
    p.add_argument("--algos", nargs="+", default=["dqn", "ppo"], choices=["dqn", "ppo"])
    p.add_argument("--repeats", type=int, default=3, help="interleaved pairs (default 3)")
    p.add_argument("--dqn-frames", type=int, default=3000,
                   help="timed learning frames per DQN run, after the 5000 random ones "
                        "(default 3000)")
    p.add_argument("--eps-steps", type=int, default=LEARN_START,
                   help="frame at which epsilon reaches 0.1, both DQNs (default 5000: from "
                        "the start of learning; the paper's is 105000)")
    p.add_argument("--floor-iters", type=int, default=200,
                   help="updates per block of the floor's tight loop (default 200)")
    p.add_argument("--ppo-frames", type=int, default=65536,
                   help="PPO frames per run, whole 2048-frame batches (default 65536)")
    p.add_argument("--torch-threads", type=int, default=1, help="torch threads (default 1)")
    p.add_argument("--profile", action="store_true",
                   help="also break one more rlpyt DQN run down by part")
    args = p.parse_args(argv)
    for name in ("repeats", "dqn_frames", "floor_iters", "torch_threads"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    if args.ppo_frames < 2048:
        p.error(f"--ppo-frames must be >= 2048 (one batch), got {args.ppo_frames}")
    if args.eps_steps < LEARN_START:
        p.error(f"--eps-steps must be >= {LEARN_START}, got {args.eps_steps}")
    return args


def summarize(name: str, ours: list[float], plain: list[float]) -> str:
    mo, mp = statistics.median(ours), statistics.median(plain)
    pairs = [p / o for o, p in zip(ours, plain)]
    return (f"{name}: rlpyt {mo:.3f}, plain loop {mp:.3f} CPU s / 1k frames (medians); "
            f"ratio of medians {mp / mo:.2f}x; per pair "
            f"{', '.join(f'{r:.2f}' for r in pairs)}")


def main(argv=None) -> None:
    args = parse_args(argv)
    torch.set_num_threads(args.torch_threads)
    print(f"MinAtar {args.game}, torch {torch.__version__}, {args.torch_threads} thread(s), "
          f"{args.repeats} interleaved repeats, CPU time", flush=True)
    lines = []
    if "dqn" in args.algos:
        print(f"DQN: {args.dqn_frames} learning frames per run (after {LEARN_START} random)",
              flush=True)
        r = bench_dqn(args)
        t = r["times"]
        lines.append(summarize("DQN, long-run step (compiled RMSprop)", t["long"], t["plain"]))
        lines.append(summarize("DQN, short-run step (RMSprop.step)", t["short"], t["plain"]))
        lines.append(summarize("DQN, long-run step against short-run step", t["long"],
                               t["short"]).replace("plain loop", "short-run step"))
        share = statistics.median(r["floor"]) / statistics.median(t["long"])
        lines.append(f"DQN update floor (arithmetic alone, tight loop, long-run step): "
                     f"{statistics.median(r['floor']):.3f} CPU s / 1k updates = "
                     f"{share:.1%} of rlpyt's frame")
        for kind, text in r["breakdowns"].items():
            lines.append(f"rlpyt DQN frame by part ({kind}-run step, one run):\n{text}")
    if "ppo" in args.algos:
        print(f"PPO: {args.ppo_frames // 2048 * 2048} frames per run", flush=True)
        r = bench_ppo(args)
        lines.append(summarize("PPO", r["ours"], r["plain"]))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
