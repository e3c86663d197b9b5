"""A hung env is reported within its timeout + 1 s (``step_timeout`` of the parallel
samplers, ``batch_timeout`` of the async sampler process), measured from the moment the
env stopped returning to the moment the run's error reaches the caller (with every
process stopped)."""

from __future__ import annotations

import time

import gymnasium as gym
import pytest
from test_async_rl import cartpole_sampler, small_dqn, train

from rlpyt.envs.gym import GymEnvWrapper
from rlpyt.runners.async_rl import AsyncRl, AsyncRunError
from rlpyt.runners.minibatch_rl import MinibatchRl
from rlpyt.samplers.async_.cpu_sampler import AsyncCpuSampler
from rlpyt.samplers.async_.serial_sampler import AsyncSerialSampler
from rlpyt.samplers.base import WorkerError
from rlpyt.samplers.parallel.cpu.sampler import CpuSampler

TIMEOUT_S = 2.0
HANG_AT = 150  # each env's step at which it hangs: after learning began (256 env steps)


class StampedHangingCartPole(GymEnvWrapper):
    """CartPole whose every instance hangs at its ``at``-th step, first writing the wall
    time (shared by every process) into ``stamp``."""

    def __init__(self, stamp, at=HANG_AT):
        super().__init__(gym.make("CartPole-v1"))
        self.stamp, self.at, self.n = stamp, at, 0

    def step(self, action):
        self.n += 1
        if self.n == self.at:
            with open(self.stamp, "a") as f:
                f.write(f"{time.time()!r}\n")
            time.sleep(3600)
        return super().step(action)


@pytest.mark.parametrize("kind", ["CpuSampler", "AsyncCpuSampler", "AsyncSerialSampler"])
def test_a_hung_env_is_reported_within_the_timeout_and_a_second(kind, tmp_path, leak_check):
    stamp = str(tmp_path / "hung_at")
    algo, agent = small_dqn()
    env = dict(EnvCls=StampedHangingCartPole, env_kwargs=dict(stamp=stamp))
    if kind == "CpuSampler":
        sampler = cartpole_sampler(CpuSampler, step_timeout=TIMEOUT_S, **env)
        runner = MinibatchRl(algo, agent, sampler, n_steps=20_000,
                             affinity=dict(workers_cpus=[0, 0]))
        error = WorkerError
    elif kind == "AsyncCpuSampler":
        sampler = cartpole_sampler(AsyncCpuSampler, step_timeout=TIMEOUT_S, **env)
        runner = AsyncRl(algo, agent, sampler, n_steps=20_000,
                         affinity=dict(workers_cpus=[0, 0]))
        error = AsyncRunError
    else:
        sampler = cartpole_sampler(AsyncSerialSampler, batch_timeout=TIMEOUT_S, **env)
        runner = AsyncRl(algo, agent, sampler, n_steps=20_000)
        error = AsyncRunError
    with pytest.raises(error, match="timeout="):
        train(runner, tmp_path)
    reported = time.time()
    hung_at = min(float(line) for line in open(stamp).read().split())
    delay = reported - hung_at
    print(f"{kind}: reported {delay:.2f} s after the env hung (timeout {TIMEOUT_S} s)")
    assert delay < TIMEOUT_S + 1.0, delay
