"""Env steps per second of rlpyt's samplers next to other vectorised-env libraries.

Envs: Pong (rlpyt ``AtariEnv`` defaults: frame skip 4, 104x80 grayscale, 4-frame
stack; the other libraries use their own Atari preprocessing at 84x84) and
CartPole-v1.  Agents: uniformly random actions, and a model agent (``AtariFfAgent``
on Pong, ``CategoricalPgAgent`` on CartPole) whose forward pass on the whole batch
selects the actions (the other libraries run that same forward pass in the main
process each step).

Contenders: ``SerialSampler``; ``CpuSampler`` and ``GpuSampler`` with 1 and 2 workers
(on this CPU-only machine ``GpuSampler``'s master runs the agent on the CPU);
``GpuSampler`` with ale-py's vectorised backend (``AleVecEnv``, one call per worker);
``CpuSampler`` and ``GpuSampler`` with the EnvPool backend (``EnvPoolAtariEnv``, one
EnvPool thread per worker) when EnvPool is installed;
Gymnasium ``AsyncVectorEnv`` (``AtariPreprocessing`` + ``FrameStackObservation``);
Stable-Baselines3 ``SubprocVecEnv`` (same env functions); ale-py ``AtariVectorEnv``
(2 threads); EnvPool (2 threads) when installed.  Every contender steps the same
number of envs.

Load: each measurement records the CPU time that *other* processes used during it
(system busy time minus this process tree's), in cores.  A measurement with more
than ``--max-other-load`` cores of other load is discarded and retried (up to
``--attempts`` times per contender); the table reports the median of the kept
measurements, their other load, and how many were kept.

    python bench/speed/samplers.py --out bench_samplers.md
"""

from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import dataclass

import numpy as np
import psutil
import torch

from rlpyt.agents.base import AgentStep
from rlpyt.agents.pg.atari import AtariFfAgent
from rlpyt.agents.pg.categorical import CategoricalPgAgent
from rlpyt.envs.atari.atari_env import AtariEnv
from rlpyt.envs.gym import make
from rlpyt.envs.vec import AleVecEnv
from rlpyt.samplers.parallel.cpu.sampler import CpuSampler
from rlpyt.samplers.parallel.gpu.sampler import GpuSampler
from rlpyt.samplers.serial.sampler import SerialSampler
from rlpyt.utils.collections import namedarraytuple

FRAME_SKIP = 4
RandomInfo = namedarraytuple("RandomInfo", ["placeholder"])


class RandomAgent:
    """Uniform random actions; no model (isolates the cost of stepping envs)."""

    recurrent = False
    alternating = False

    def initialize(self, env_spaces, share_memory=False, global_B=1, env_ranks=None):
        self.n = int(env_spaces.action.n)
        self.generator = torch.Generator().manual_seed(0)

    def step(self, observation, prev_action, prev_reward) -> AgentStep:
        B = prev_reward.shape[0]
        action = torch.randint(self.n, (B,), generator=self.generator)
        return AgentStep(action=action, agent_info=RandomInfo(torch.zeros(B)))

    def reset(self):
        pass

    def reset_one(self, idx):
        pass

    def sample_mode(self, itr):
        pass

    def eval_mode(self, itr):
        pass

    def train_mode(self, itr):
        pass

    def sync_shared_memory(self):
        pass


# ---- load measurement -------------------------------------------------------------------------
def _busy_seconds() -> float:
    t = psutil.cpu_times()
    return sum(t) - t.idle - getattr(t, "iowait", 0.0)


def _own_cpu_seconds() -> dict:
    seconds = {}
    me = psutil.Process()
    for proc in [me, *me.children(recursive=True)]:
        try:
            c = proc.cpu_times()
            seconds[proc.pid] = c.user + c.system
        except psutil.Error:
            continue
    return seconds


class LoadMeter:
    """Wall time, cores used by processes outside this process tree (``other_cores``) and
    by the whole machine (``busy_cores``), over a window."""

    def __enter__(self):
        self.busy0, self.own0, self.t0 = _busy_seconds(), _own_cpu_seconds(), time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.wall = time.perf_counter() - self.t0
        own1 = _own_cpu_seconds()
        own = sum(v - self.own0.get(pid, 0.0) for pid, v in own1.items())
        busy = _busy_seconds() - self.busy0
        self.busy_cores = busy / self.wall
        self.other_cores = max(0.0, (busy - own) / self.wall)


@dataclass
class Result:
    env: str
    agent: str
    contender: str
    parallelism: str
    steps_per_s: float
    other_load: float
    kept: int
    attempts: int


# ---- contenders -------------------------------------------------------------------------------
def make_agent(kind: str, env: str):
    if kind == "random":
        return RandomAgent()
    return AtariFfAgent() if env == "pong" else CategoricalPgAgent()


def sampler_run(SamplerCls, n_workers, env, agent_kind, n_steps, B, T, EnvCls=None):
    """Returns a callable timing ``n_steps`` env steps (after warm-up), and a closer."""
    if EnvCls is None:
        EnvCls, env_kwargs = (AtariEnv, {}) if env == "pong" else (make, dict(id="CartPole-v1"))
    else:
        env_kwargs = dict(game="pong") if env == "pong" else dict(id="CartPole-v1")
    sampler = SamplerCls(EnvCls=EnvCls, env_kwargs=env_kwargs, batch_T=T, batch_B=B,
                         max_decorrelation_steps=0)
    agent = make_agent(agent_kind, env)
    affinity = None if SamplerCls is SerialSampler else dict(n_workers=n_workers)
    sampler.initialize(agent, affinity=affinity, seed=0)
    for itr in range(2):
        sampler.obtain_samples(itr)
    n_batches = max(1, n_steps // (B * T))

    def run():
        for itr in range(n_batches):
            sampler.obtain_samples(itr)
        return n_batches * B * T

    return run, sampler.shutdown


def vec_run(make_vec, env, agent_kind, n_steps, B):
    """A vectorised env stepped by a loop in this process (random or model actions)."""
    vec = make_vec()
    obs, _ = vec.reset(seed=0)
    n_actions = int(vec.single_action_space.n)
    policy = _policy(agent_kind, env, vec.single_observation_space.shape, n_actions, B)
    for _ in range(10):
        obs, *_ = vec.step(policy(obs))
    n = max(1, n_steps // B)

    def run():
        nonlocal obs
        for _ in range(n):
            obs, *_ = vec.step(policy(obs))
        return n * B

    return run, vec.close


def _policy(agent_kind, env, obs_shape, n_actions, B):
    rng = np.random.default_rng(0)
    if agent_kind == "random":
        return lambda obs: rng.integers(n_actions, size=B)
    from rlpyt.spaces.int_box import IntBox

    agent = make_agent(agent_kind, env)
    space = IntBox(0, n_actions)
    obs_space = IntBox(0, 256, shape=obs_shape, dtype="uint8") if env == "pong" else \
        _FloatSpace(obs_shape)
    from rlpyt.envs.base import EnvSpaces

    agent.initialize(EnvSpaces(observation=obs_space, action=space))
    prev_action, prev_reward = torch.zeros(B, dtype=torch.long), torch.zeros(B)

    def act(obs):
        o = torch.from_numpy(np.asarray(obs, dtype=np.uint8 if env == "pong" else np.float32))
        return agent.step(o, prev_action, prev_reward).action.numpy()

    return act


class _FloatSpace:
    def __init__(self, shape):
        self.shape = tuple(shape)


def gym_async(env, B):
    import gymnasium as gym

    def make_fn():
        if env == "pong":
            import ale_py
            from gymnasium.wrappers import AtariPreprocessing, FrameStackObservation

            gym.register_envs(ale_py)
            e = gym.make("ALE/Pong-v5", frameskip=1, repeat_action_probability=0.0)
            e = AtariPreprocessing(e, noop_max=30, frame_skip=FRAME_SKIP, screen_size=84)
            return FrameStackObservation(e, 4)
        return gym.make("CartPole-v1")

    return make_fn


def sb3_subproc(env, B):
    from stable_baselines3.common.vec_env import SubprocVecEnv

    vec = SubprocVecEnv([gym_async(env, B)] * B)
    return _Sb3AsGym(vec)


class _Sb3AsGym:
    """SB3's VecEnv API (reset -> obs, step -> 4-tuple) seen with Gymnasium's signatures."""

    def __init__(self, vec):
        self.vec = vec
        self.single_action_space = vec.action_space
        self.single_observation_space = vec.observation_space

    def reset(self, seed=None):
        self.vec.seed(seed)
        return self.vec.reset(), {}

    def step(self, actions):
        obs, reward, done, info = self.vec.step(actions)
        return obs, reward, done, done, info

    def close(self):
        self.vec.close()


def contenders(env, n_steps, B, T, have_sb3, have_envpool):
    """(name, parallelism, agent kinds, factory(agent_kind) -> (run, close))."""
    import gymnasium as gym

    rows = [("SerialSampler", "1 process",
             lambda a: sampler_run(SerialSampler, 1, env, a, n_steps, B, T))]
    for Cls in (CpuSampler, GpuSampler):
        for w in (1, 2):
            rows.append((Cls.__name__, f"{w} worker{'s' * (w > 1)}",
                         lambda a, Cls=Cls, w=w: sampler_run(Cls, w, env, a, n_steps, B, T)))
    if env == "pong":
        rows.append(("GpuSampler + AleVecEnv", "2 workers",
                     lambda a: sampler_run(GpuSampler, 2, env, a, n_steps, B, T, AleVecEnv)))
    if env == "pong" and have_envpool:
        from rlpyt.envs.vec import EnvPoolAtariEnv

        for Cls in (CpuSampler, GpuSampler):
            rows.append((f"{Cls.__name__} + EnvPoolAtariEnv", "2 workers",
                         lambda a, Cls=Cls: sampler_run(Cls, 2, env, a, n_steps, B, T,
                                                        EnvPoolAtariEnv)))
    rows.append(("Gymnasium AsyncVectorEnv", f"{B} processes", lambda a: vec_run(
        lambda: gym.vector.AsyncVectorEnv([gym_async(env, B)] * B), env, a, n_steps, B)))
    if have_sb3:
        rows.append(("SB3 SubprocVecEnv", f"{B} processes",
                     lambda a: vec_run(lambda: sb3_subproc(env, B), env, a, n_steps, B)))
    if env == "pong":
        from ale_py.vector_env import AtariVectorEnv

        rows.append(("ale-py AtariVectorEnv", "2 threads", lambda a: vec_run(
            lambda: AtariVectorEnv("pong", B, num_threads=2), env, a, n_steps, B)))
    if have_envpool:
        import envpool

        task = "Pong-v5" if env == "pong" else "CartPole-v1"
        rows.append(("EnvPool", "2 threads", lambda a: vec_run(
            lambda: envpool.make_gymnasium(task, num_envs=B, num_threads=2), env, a,
            n_steps, B)))
    return rows


def measure(factory, agent_kind, repeats, attempts, max_other_load):
    run, close = factory(agent_kind)
    kept, seen = [], []
    try:
        for _ in range(attempts):
            with LoadMeter() as meter:
                steps = run()
            sample = (steps / meter.wall, meter.other_cores)
            seen.append(sample)
            if meter.other_cores <= max_other_load:
                kept.append(sample)
            if len(kept) >= repeats:
                break
    finally:
        close()
    use = kept or [min(seen, key=lambda s: s[1])]  # All noisy: report the quietest.
    return (statistics.median(s[0] for s in use), statistics.median(s[1] for s in use),
            len(kept), len(seen))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--envs", default="pong,cartpole")
    p.add_argument("--agents", default="random,model")
    p.add_argument("--B", type=int, default=16, help="envs stepped by every contender")
    p.add_argument("--pong-steps", type=int, default=6400)
    p.add_argument("--cartpole-steps", type=int, default=40960)
    p.add_argument("--repeats", type=int, default=3, help="kept measurements wanted")
    p.add_argument("--attempts", type=int, default=6, help="most measurements per contender")
    p.add_argument("--max-other-load", type=float, default=0.25,
                   help="discard measurements with more other-process load (cores)")
    p.add_argument("--only", default="", help="comma-separated contender names to run")
    p.add_argument("--out", default=None, help="write the markdown table here")
    args = p.parse_args()
    torch.set_num_threads(1)
    have_sb3 = _importable("stable_baselines3")
    have_envpool = _importable("envpool")
    results = []
    for env in args.envs.split(","):
        n_steps = args.pong_steps if env == "pong" else args.cartpole_steps
        T = 20 if env == "pong" else 128
        for agent_kind in args.agents.split(","):
            for name, par, factory in contenders(env, n_steps, args.B, T, have_sb3,
                                                 have_envpool):
                if args.only and name not in args.only.split(","):
                    continue
                sps, load, kept, seen = measure(factory, agent_kind, args.repeats,
                                                args.attempts, args.max_other_load)
                r = Result(env, agent_kind, name, par, sps, load, kept, seen)
                results.append(r)
                print(_row(r), flush=True)
    table = _table(results, args)
    print(table)
    if args.out:
        with open(args.out, "w") as f:
            f.write(table + "\n")


def _importable(name) -> bool:
    try:
        __import__(name)
        return True
    except Exception:  # noqa: BLE001 - any import failure means "not installed here"
        return False


def _row(r: Result) -> str:
    frames = f"{r.steps_per_s * FRAME_SKIP:,.0f}" if r.env == "pong" else ""
    return (f"| {r.env} | {r.agent} | {r.contender} | {r.parallelism} | {r.steps_per_s:,.0f} | "
            f"{frames} | {r.other_load:.2f} | {r.kept}/{r.attempts} |")


def _table(results, args) -> str:
    lines = [
        f"{args.B} envs per contender; {psutil.cpu_count()} CPUs; max other load "
        f"{args.max_other_load} cores.",
        "",
        "| env | agent | contender | parallelism | steps/s | frames/s | other load (cores) "
        "| kept/runs |",
        "|---|---|---|---|---:|---:|---:|---:|",
        *(_row(r) for r in results),
    ]
    lines += ["", *_ratios(results)]
    return "\n".join(lines)


def _ratios(results) -> list[str]:
    def sps(env, agent, contender, par=None):
        for r in results:
            if (r.env, r.agent, r.contender) == (env, agent, contender) and \
                    (par is None or r.parallelism == par):
                return r.steps_per_s
        return None

    out = []
    for Cls in ("CpuSampler", "GpuSampler"):
        two, one = sps("pong", "random", Cls, "2 workers"), sps("pong", "random", Cls, "1 worker")
        ale = sps("pong", "random", "ale-py AtariVectorEnv")
        gym_async_sps = sps("pong", "random", "Gymnasium AsyncVectorEnv")
        if two and ale:
            out.append(f"- Pong, random agent, {Cls} 2 workers / ale-py AtariVectorEnv: "
                       f"{two / ale:.2f}x (target >= 0.9x)")
        if two and gym_async_sps:
            out.append(f"- Pong, random agent, {Cls} 2 workers / Gymnasium AsyncVectorEnv: "
                       f"{two / gym_async_sps:.2f}x (target >= 1.5x)")
        if two and one:
            out.append(f"- Pong, random agent, {Cls} 2 workers / 1 worker: {two / one:.2f}x "
                       "(target >= 1.8x)")
    return out


if __name__ == "__main__":
    main()
