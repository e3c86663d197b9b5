"""What every sampler does with its envs, whatever carries them (this process, worker
processes or Ray actors): build them from ``EnvCls`` (single or vectorised envs), time
their calls so a hung env can be told from a slow batch, and tell the agent copy that
steps them which envs those are.
"""

from __future__ import annotations

import time

from rlpyt.envs.vec import SingleEnvView

__all__ = ["TimedEnv", "is_vec_env", "is_vec_env_cls", "localize_agent", "make_envs",
           "make_example_env"]


def is_vec_env_cls(EnvCls) -> bool:
    return bool(getattr(EnvCls, "vectorized", False))


def is_vec_env(env) -> bool:
    return bool(getattr(env, "vectorized", False))


def make_envs(EnvCls, env_kwargs: dict, seeds, vectorize: bool = True) -> list:
    """Envs for ``seeds`` (one each): single envs, or one vectorised env holding all.

    With ``vectorize=False`` a vectorised ``EnvCls`` gives one ``num_envs=1`` env per
    seed, seen as a single env (evaluation steps envs one by one).
    """
    if is_vec_env_cls(EnvCls):
        if vectorize:
            env = EnvCls(num_envs=len(seeds), **env_kwargs)
            env.seed(list(seeds))
            return [env]
        envs = [SingleEnvView(EnvCls(num_envs=1, **env_kwargs)) for _ in seeds]
    else:
        envs = [EnvCls(**env_kwargs) for _ in seeds]
    for env, seed in zip(envs, seeds):
        env.seed(seed)
    return envs


def make_example_env(EnvCls, env_kwargs: dict):
    """One env of ``EnvCls`` with the single-env interface (for spaces and examples)."""
    if is_vec_env_cls(EnvCls):
        return SingleEnvView(EnvCls(num_envs=1, **env_kwargs))
    return EnvCls(**env_kwargs)


class TimedEnv:
    """An env whose ``step`` and ``reset`` write when they start into ``clock[slot]``, so
    the sampler can tell a hung env from a slow batch; everything else is the env's own.

    Only the start is written (one store per call): a parallel worker's mark is cleared
    when it next waits for its master, so the clock measures the latest env call plus
    whatever the worker did after it without waiting.
    """

    def __init__(self, env, clock, slot: int = 0):
        self._env, self._clock, self._slot = env, clock, slot

    def step(self, action):
        self._clock[self._slot] = time.monotonic()
        return self._env.step(action)

    def reset(self):
        self._clock[self._slot] = time.monotonic()
        return self._env.reset()

    def __getattr__(self, name):
        if name == "_env":  # Not set yet (e.g. while copying): no recursion.
            raise AttributeError(name)
        return getattr(self._env, name)


def localize_agent(agent, global_B: int, env_ranks) -> None:
    """Tell a sampler's copy of the agent which envs it steps (per-env schedules, e.g.
    each env's exploration epsilon)."""
    if hasattr(agent, "collector_initialize"):
        agent.collector_initialize(global_B=global_B, env_ranks=list(env_ranks))
    elif hasattr(agent, "env_ranks"):
        agent.env_ranks = list(env_ranks)
