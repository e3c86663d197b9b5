"""The EnvPool sampler backend (``EnvPoolAtariEnv``): our side only.

Its samples follow ``AtariEnv``'s spaces and reset rules (older frames zero after a
reset, ``done`` at a life loss while the game goes on, the horizon as a timeout), it
is seeded per sub-env, and as a sampler option it gets the fault and determinism
checks of the other samplers: a worker killed, an env raising and an env hanging
surface in the master as ``WorkerError`` and leave nothing behind; same-seed runs
under load give the same batches.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
import torch

pytest.importorskip("envpool")

from test_sampler_faults import (  # noqa: E402, F401  (leak_check: a fixture)
    DEADLINE_S,
    assert_worker_error,
    hang_forever,
    leak_check,
)

from rlpyt.agents.pg.atari import AtariFfAgent  # noqa: E402
from rlpyt.envs.atari.atari_env import AtariEnv, AtariTrajInfo  # noqa: E402
from rlpyt.envs.vec import EnvPoolAtariEnv  # noqa: E402
from rlpyt.samplers.base import WorkerError  # noqa: E402
from rlpyt.samplers.parallel.cpu.sampler import CpuSampler  # noqa: E402
from rlpyt.samplers.parallel.gpu.sampler import GpuSampler  # noqa: E402
from rlpyt.samplers.serial.sampler import SerialSampler  # noqa: E402
from rlpyt.utils.seed import env_seeds  # noqa: E402

SEED, B = 5, 4
SEEDS = env_seeds(SEED, B + 1)  # Training envs, then the example env.


def test_spaces_match_atari_env():
    for game in ("pong", "breakout"):
        ours, pool = AtariEnv(game), EnvPoolAtariEnv(game, num_envs=2)
        try:
            obs, act = ours.observation_space, pool.observation_space
            assert (act.shape, act.dtype, act.low, act.high) == (obs.shape, obs.dtype, obs.low,
                                                                   obs.high)
            a, b = ours.action_space, pool.action_space
            assert (a.n, a.shape) == (b.n, b.shape)
            assert pool.horizon == ours.horizon == 27000
        finally:
            pool.close()


def test_a_step_without_one_action_per_sub_env_is_refused():
    """EnvPool reads ``num_envs`` actions from whatever array it gets; the adapter
    checks the shape first, so a wrong one is an error, not a crash."""
    env = EnvPoolAtariEnv("pong", num_envs=2)
    try:
        env.reset()
        for actions in (np.int64(0), np.zeros(1, dtype=np.int64), np.zeros(3, dtype=np.int64)):
            with pytest.raises(ValueError, match=r"num_envs=2; expected one per sub-env"):
                env.step(actions)
        env.step(np.zeros(2, dtype=np.int64))
    finally:
        env.close()


def test_bad_keywords_are_named():
    with pytest.raises(ValueError, match="env_seed="):
        EnvPoolAtariEnv.__mro__[1]("Pong-v5", env_seed=[1])
    with pytest.raises(ValueError, match="num_threads"):
        EnvPoolAtariEnv("pong", num_threads=-1)
    with pytest.raises(ValueError, match="horizon"):
        EnvPoolAtariEnv("pong", horizon=0)


def test_reset_zeroes_older_frames_and_horizon_is_a_timeout():
    env = EnvPoolAtariEnv("pong", num_envs=2, horizon=20)
    env.seed([1, 2])
    obs = env.reset()
    assert obs.shape == (2, 4, 104, 80) and obs[:, :-1].max() == 0 and obs[:, -1].max() > 0
    for t in range(1, 41):
        out = env.step(np.zeros(2, dtype=np.int64))
        ended = t % 20 == 0
        assert out.done.tolist() == [ended] * 2
        assert out.env_info.timeout.tolist() == out.env_info.traj_done.tolist() == [ended] * 2
        if ended:  # The reset observation, and the episode's last one for bootstrapping.
            assert out.observation[:, :-1].max() == 0
            assert out.final_observation[:, :-1].min() < out.final_observation.max()
            assert out.final_observation[:, 0].max() > 0
        else:
            assert out.final_observation is None
    env.close()


def test_life_loss_ends_an_episode_not_the_game():
    """Breakout with 5 lives: 4 dones with the game going on, then game over."""
    env = EnvPoolAtariEnv("breakout", num_envs=1, fire_on_reset=True)
    env.seed([3])
    env.reset()
    rng = np.random.default_rng(0)
    traj_done, score = [], 0.0
    for _ in range(8_000):
        out = env.step(rng.integers(0, env.action_space.n, size=1))
        score += float(out.env_info.game_score[0])
        if out.done[0]:
            traj_done.append(bool(out.env_info.traj_done[0]))
            assert not out.env_info.timeout[0]
            if traj_done[-1]:
                break
    env.close()
    assert traj_done == [False] * 4 + [True]


def test_same_seed_same_samples_other_seed_other_samples():
    def run(seeds):
        env = EnvPoolAtariEnv("pong", num_envs=2)
        env.seed(seeds)
        frames = [env.reset()]
        rng = np.random.default_rng(0)
        for _ in range(150):
            frames.append(env.step(rng.integers(0, 6, size=2)).observation)
        env.close()
        return np.stack(frames)

    a, b, c = run([10, 11]), run([10, 11]), run([12, 13])
    assert np.array_equal(a, b)
    assert not np.array_equal(a[:, 0], c[:, 0])


def _make_sampler(SamplerCls, EnvCls=EnvPoolAtariEnv, **env_kwargs):
    return SamplerCls(EnvCls=EnvCls, env_kwargs=dict(game="pong", **env_kwargs), batch_T=8,
                      batch_B=B, max_decorrelation_steps=0, TrajInfoCls=AtariTrajInfo)


@pytest.mark.parametrize("SamplerCls", [SerialSampler, CpuSampler, GpuSampler])
@pytest.mark.usefixtures("leak_check")
def test_sampler_batches_follow_atari_reset_rules(SamplerCls):
    """Also on ``SerialSampler``, which steps one pool of ``batch_B`` sub-envs (before,
    it built one single-env pool per env and stepped it with a scalar action, which
    EnvPool's C++ read past: a segmentation fault)."""
    sampler = _make_sampler(SamplerCls, horizon=12)
    affinity = None if SamplerCls is SerialSampler else dict(n_workers=2)
    sampler.initialize(AtariFfAgent(), affinity=affinity, seed=SEED, bootstrap_value=True)
    infos, ends = [], 0
    try:
        for itr in range(3):
            samples, traj_infos = sampler.obtain_samples(itr)
            infos += traj_infos
            env, act = samples.env, samples.agent
            assert env.observation.shape == (8, B, 4, 104, 80)
            done = env.done[:-1]
            ends += int(done.sum())
            assert (env.observation[1:][done][:, :-1] == 0).all()  # Reset frames start.
            assert torch.equal(act.prev_action[1:][done], torch.zeros_like(act.action[:-1][done]))
            assert torch.equal(env.done, env.env_info.timeout)  # Pong lasts longer.
    finally:
        sampler.shutdown()
    assert ends and infos and {i.Length for i in infos} == {12}
    assert all(hasattr(i, "GameScore") for i in infos)


def _batches(SamplerCls, seed, n_itr=2):
    sampler = _make_sampler(SamplerCls, horizon=30)
    agent = AtariFfAgent()
    torch.manual_seed(0)
    sampler.initialize(agent, affinity=dict(n_workers=2), seed=seed, bootstrap_value=True)
    out = []
    try:
        for itr in range(n_itr):
            samples, traj_infos = sampler.obtain_samples(itr)
            out.append((samples.env.observation.clone(), samples.agent.action.clone(),
                        samples.env.reward.clone(), samples.env.done.clone(),
                        [(i.Length, i.Return) for i in traj_infos]))
    finally:
        sampler.shutdown()
    return out


@pytest.mark.parametrize("SamplerCls", [CpuSampler, GpuSampler])
def test_same_seed_runs_match_under_load(SamplerCls):
    """Two same-seed runs beside a CPU-burning process: identical batches; another seed:
    other observations."""
    burner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        a, b, c = _batches(SamplerCls, SEED), _batches(SamplerCls, SEED), \
            _batches(SamplerCls, SEED + 1)
    finally:
        burner.kill()
        burner.wait()
    for x, y in zip(a, b):
        for u, v in zip(x[:4], y[:4]):
            assert torch.equal(u, v)
        assert x[4] == y[4]
    assert not torch.equal(a[0][0], c[0][0])


class FaultyEnvPool(EnvPoolAtariEnv):
    """Raises in ``step`` number ``fail_step`` (hangs there if ``hang``) when one of its
    sub-envs has seed ``fail_seed``."""

    def __init__(self, fail_seed=None, fail_step=3, hang=False, **kwargs):
        super().__init__(**kwargs)
        self.fail_seed, self.fail_step, self.hang = fail_seed, fail_step, hang
        self.faulty, self.n = False, 0

    def seed(self, seeds):
        super().seed(seeds)
        self.faulty = self.fail_seed in list(seeds)

    def step(self, actions):
        self.n += 1
        if self.faulty and self.n == self.fail_step:
            if self.hang:
                hang_forever()
            raise RuntimeError("injected fault in step")
        return super().step(actions)


@pytest.mark.parametrize("SamplerCls", [CpuSampler, GpuSampler])
@pytest.mark.usefixtures("leak_check")
def test_env_exception_while_sampling(SamplerCls):
    sampler = _make_sampler(SamplerCls, EnvCls=FaultyEnvPool, fail_seed=SEEDS[3])
    sampler.initialize(AtariFfAgent(), affinity=dict(n_workers=2), seed=SEED)
    start = time.monotonic()
    with pytest.raises(WorkerError) as excinfo:
        sampler.obtain_samples(0)
    assert time.monotonic() - start < DEADLINE_S
    assert_worker_error(excinfo, 1, [2, 3], "injected fault in step")
    assert "Traceback" in str(excinfo.value)


@pytest.mark.parametrize("SamplerCls", [CpuSampler, GpuSampler])
@pytest.mark.usefixtures("leak_check")
def test_hung_env_is_reported(SamplerCls):
    timeout = 15.0  # Building EnvPool pools (covered by the timeout) takes seconds under load.
    sampler = SamplerCls(EnvCls=FaultyEnvPool,
                         env_kwargs=dict(game="pong", fail_seed=SEEDS[3], hang=True),
                         batch_T=8, batch_B=B, max_decorrelation_steps=0, step_timeout=timeout)
    sampler.initialize(AtariFfAgent(), affinity=dict(n_workers=2), seed=SEED)
    start = time.monotonic()
    with pytest.raises(WorkerError) as excinfo:
        sampler.obtain_samples(0)
    assert time.monotonic() - start < timeout + DEADLINE_S
    assert_worker_error(excinfo, 1, [2, 3], f"step_timeout={timeout} s")
    assert "in hang_forever" in str(excinfo.value)


@pytest.mark.parametrize("SamplerCls", [CpuSampler, GpuSampler])
@pytest.mark.usefixtures("leak_check")
def test_worker_killed_by_signal(SamplerCls):
    """A worker running EnvPool's C++ threads, killed: WorkerError within the deadline."""
    sampler = _make_sampler(SamplerCls)
    sampler.initialize(AtariFfAgent(), affinity=dict(n_workers=2), seed=SEED)
    victim = sampler.processes[1].pid
    killed_at = []

    def kill():
        killed_at.append(time.monotonic())
        os.kill(victim, signal.SIGKILL)

    timer = threading.Timer(0.5, kill)
    timer.start()
    try:
        with pytest.raises(WorkerError) as excinfo:
            for itr in range(100_000):
                sampler.obtain_samples(itr)
    finally:
        timer.cancel()
    assert time.monotonic() - killed_at[0] < DEADLINE_S
    assert_worker_error(excinfo, 1, [2, 3], "killed by signal SIGKILL")
