"""Parallel samplers: batch-for-batch equivalence with SerialSampler, evaluation caps,
affinity, start methods, vectorised env backends."""

from __future__ import annotations

import math
import sys
import time
import warnings

import numpy as np
import psutil
import pytest
import torch

from rlpyt.agents.pg.atari import AtariFfAgent
from rlpyt.agents.pg.categorical import (
    AlternatingRecurrentCategoricalPgAgent,
    CategoricalPgAgent,
    RecurrentCategoricalPgAgent,
)
from rlpyt.envs.base import Env, EnvStep
from rlpyt.envs.gym import make
from rlpyt.envs.vec import AleVecEnv, GymVecEnv
from rlpyt.samplers.parallel.cpu.collectors import CpuResetCollector, CpuWaitResetCollector
from rlpyt.samplers.parallel.cpu.sampler import CpuSampler
from rlpyt.samplers.parallel.gpu.action_server import ActionServer
from rlpyt.samplers.parallel.gpu.alternating_sampler import (
    AlternatingSampler,
    NoOverlapAlternatingSampler,
)
from rlpyt.samplers.parallel.gpu.collectors import GpuResetCollector, GpuWaitResetCollector
from rlpyt.samplers.parallel.gpu.sampler import GpuSampler
from rlpyt.samplers.serial.sampler import SerialSampler
from rlpyt.spaces.float_box import FloatBox
from rlpyt.spaces.int_box import IntBox
from rlpyt.utils.collections import namedtuple
from rlpyt.utils.process import apply_affinity, available_cpus

T, B, N_ITR, SEED = 16, 4, 4, 7
ENV_KWARGS = dict(id="CartPole-v1", max_episode_steps=12)  # Short: truncations happen.


# ---- deterministic agents (module level: picklable for spawn) ---------------------------------
class ArgmaxAgent(CategoricalPgAgent):
    def select_action(self, dist_info):
        return torch.argmax(dist_info.prob, dim=-1)


class ArgmaxRnnAgent(RecurrentCategoricalPgAgent):
    def select_action(self, dist_info):
        return torch.argmax(dist_info.prob, dim=-1)


class ArgmaxAltRnnAgent(AlternatingRecurrentCategoricalPgAgent):
    def select_action(self, dist_info):
        return torch.argmax(dist_info.prob, dim=-1)


_STATE_DICTS = {}


def reference_state_dict(recurrent: bool) -> dict:
    """One set of weights per model kind, shared by every sampler's agent."""
    if recurrent not in _STATE_DICTS:
        torch.manual_seed(123)
        agent = ArgmaxRnnAgent() if recurrent else ArgmaxAgent()
        env = make(**ENV_KWARGS)
        agent.initialize(env.spaces)
        env.close()
        _STATE_DICTS[recurrent] = {k: v.clone() for k, v in agent.state_dict().items()}
    return _STATE_DICTS[recurrent]


def perturb(agent, itr: int) -> None:
    """Change the parameters in place, the same way on every sampler (tests the sync)."""
    gen = torch.Generator().manual_seed(1000 + itr)
    with torch.no_grad():
        for p in agent.parameters():
            p.add_(0.1 * torch.randn(p.shape, generator=gen))


def collect(SamplerCls, AgentCls, CollectorCls, recurrent, n_itr=N_ITR, env_kwargs=ENV_KWARGS,
            EnvCls=make, pause_s=0.0, **sampler_kwargs):
    """Batches (deep copies) and sorted (Length, Return) of completed trajectories per itr."""
    agent = AgentCls(initial_model_state_dict=reference_state_dict(recurrent))
    kwargs = dict(max_decorrelation_steps=10, eval_n_envs=2, eval_max_trajectories=3)
    kwargs.update(sampler_kwargs)
    sampler = SamplerCls(EnvCls=EnvCls, env_kwargs=env_kwargs, batch_T=T, batch_B=B,
                         CollectorCls=CollectorCls, **kwargs)
    affinity = None if SamplerCls is SerialSampler else dict(n_workers=2)
    sampler.initialize(agent, affinity=affinity, seed=SEED, bootstrap_value=True)
    batches, trajs = [], []
    try:
        for itr in range(n_itr):
            agent.sample_mode(itr)
            samples, traj_infos = sampler.obtain_samples(itr)
            batches.append(torch.utils._pytree.tree_map(torch.clone, samples))
            trajs.append([(i.Length, i.Return) for i in traj_infos])  # In order.
            agent.train_mode(itr)
            perturb(agent, itr)
            time.sleep(pause_s)  # A long optimization step: workers must keep waiting.
            if itr == 1:  # Evaluating must not disturb the sampling envs or agent state.
                agent.eval_mode(itr)
                assert len(sampler.evaluate_agent(itr)) == 3
    finally:
        sampler.shutdown()
    return batches, trajs


def assert_same_batches(expected, got):
    exp_batches, exp_trajs = expected
    got_batches, got_trajs = got
    assert got_trajs == exp_trajs
    for itr, (a, b) in enumerate(zip(exp_batches, got_batches)):
        for name, x, y in zip(_leaf_names(a), _leaves(a), _leaves(b)):
            if x.is_floating_point() and name.startswith("agent."):
                # Agent outputs: the same up to float rounding of different batch sizes.
                torch.testing.assert_close(y, x, rtol=1e-5, atol=1e-5,
                                           msg=f"itr {itr} field {name}")
            else:
                assert torch.equal(x, y), f"itr {itr} field {name} differs"
    assert any(t for t in exp_trajs), "no trajectory completed: the test would be weak"
    assert any(bool(b.env.env_info.timeout.any()) for b in exp_batches), "no truncation seen"
    assert any(bool((b.env.done & ~b.env.env_info.timeout).any()) for b in exp_batches), \
        "no termination seen"


def _leaves(x):
    return torch.utils._pytree.tree_leaves(x)


def _leaf_names(x, prefix=""):
    names = []
    for field, value in zip(x._fields, x):
        if value is None:
            continue
        if hasattr(value, "_fields"):
            names += _leaf_names(value, f"{prefix}{field}.")
        else:
            names.append(f"{prefix}{field}")
    return names


_SERIAL_CACHE = {}


def serial_reference(wait_reset: bool, recurrent: bool):
    key = (wait_reset, recurrent)
    if key not in _SERIAL_CACHE:
        _SERIAL_CACHE[key] = collect(
            SerialSampler, ArgmaxRnnAgent if recurrent else ArgmaxAgent,
            CpuWaitResetCollector if wait_reset else CpuResetCollector, recurrent)
    return _SERIAL_CACHE[key]


CASES = [
    # (sampler, wait_reset, recurrent)
    *[(CpuSampler, w, r) for w in (False, True) for r in (False, True)],
    *[(GpuSampler, w, r) for w in (False, True) for r in (False, True)],
    (AlternatingSampler, False, False),
    (AlternatingSampler, True, True),
    (NoOverlapAlternatingSampler, False, True),
    (NoOverlapAlternatingSampler, True, False),
]


@pytest.mark.parametrize("SamplerCls,wait_reset,recurrent", CASES,
                         ids=lambda v: getattr(v, "__name__", str(v)))
def test_parallel_batches_equal_serial(SamplerCls, wait_reset, recurrent):
    if SamplerCls is CpuSampler:
        CollectorCls = CpuWaitResetCollector if wait_reset else CpuResetCollector
    else:
        CollectorCls = GpuWaitResetCollector if wait_reset else GpuResetCollector
    if recurrent:
        AgentCls = ArgmaxAltRnnAgent if SamplerCls.alternating else ArgmaxRnnAgent
    else:
        AgentCls = ArgmaxAgent
    got = collect(SamplerCls, AgentCls, CollectorCls, recurrent)
    assert_same_batches(serial_reference(wait_reset, recurrent), got)


def test_alternating_agent_on_non_alternating_samplers():
    """An Alternating... agent behaves like the plain recurrent agent elsewhere."""
    expected = serial_reference(False, True)
    assert_same_batches(expected, collect(SerialSampler, ArgmaxAltRnnAgent, CpuResetCollector,
                                          True))
    assert_same_batches(expected, collect(GpuSampler, ArgmaxAltRnnAgent, GpuResetCollector,
                                          True))


def test_vectorised_env_backend_equals_serial():
    """GymVecEnv in the workers (one call per worker and step), or in the serial sampler
    (one env of batch_B sub-envs), gives the serial batches of single envs."""
    expected = collect(SerialSampler, ArgmaxAgent, CpuResetCollector, False,
                       max_decorrelation_steps=0)
    for SamplerCls, CollectorCls in ((GpuSampler, GpuResetCollector),
                                     (CpuSampler, CpuResetCollector),
                                     (SerialSampler, CpuResetCollector)):
        got = collect(SamplerCls, ArgmaxAgent, CollectorCls, False, EnvCls=GymVecEnv,
                      max_decorrelation_steps=0)
        assert_same_batches(expected, got)


@pytest.mark.parametrize("SamplerCls", [GpuSampler, CpuSampler])
def test_ale_vector_env_backend(SamplerCls):
    """ale-py's AtariVectorEnv in the workers: episodes of 25 steps (100 frames) end in
    truncations that reset the sub-env in the same step."""
    sampler = SamplerCls(EnvCls=AleVecEnv, env_kwargs=dict(game="pong",
                                                           max_num_frames_per_episode=100),
                         batch_T=10, batch_B=4, max_decorrelation_steps=0)
    agent = AtariFfAgent()
    sampler.initialize(agent, affinity=dict(n_workers=2), seed=0, bootstrap_value=True)
    lengths = []
    try:
        for itr in range(3):
            samples, traj_infos = sampler.obtain_samples(itr)
            lengths += [info.Length for info in traj_infos]
            env, act = samples.env, samples.agent
            assert env.observation.shape == (10, 4, 4, 84, 84)
            done = env.done[:-1]
            assert torch.equal(act.prev_action[1:][done], torch.zeros_like(act.action[:-1][done]))
            assert torch.equal(env.prev_reward[1:][done], torch.zeros(int(done.sum())))
            assert torch.equal(env.done, env.env_info.timeout)  # Pong lasts longer.
            assert (act.timeout_value[env.done] != 0).all()
    finally:
        sampler.shutdown()
    assert lengths and set(lengths) == {25}


def test_envpool_backend():
    """EnvPool resets on the step after an episode ends; the adapter resets at once."""
    pytest.importorskip("envpool")
    from rlpyt.envs.vec import EnvPoolVecEnv

    sampler = GpuSampler(EnvCls=EnvPoolVecEnv,
                         env_kwargs=dict(task_id="CartPole-v1", max_episode_steps=12),
                         batch_T=32, batch_B=4, max_decorrelation_steps=0)
    sampler.initialize(ArgmaxAgent(initial_model_state_dict=reference_state_dict(False)),
                       affinity=dict(n_workers=2), seed=0, bootstrap_value=True)
    try:
        samples, traj_infos = sampler.obtain_samples(0)
    finally:
        sampler.shutdown()
    env, act = samples.env, samples.agent
    done = env.done[:-1]
    assert done.any() and env.env_info.timeout.any()
    assert torch.equal(act.prev_action[1:][done], torch.zeros_like(act.action[:-1][done]))
    # A reset observation starts the next step: CartPole starts within +-0.05.
    assert env.observation[1:][done].abs().max() <= 0.05
    assert all(1 <= info.Length <= 12 for info in traj_infos)


@pytest.mark.parametrize("SamplerCls", [CpuSampler, SerialSampler])
def test_vectorised_env_rejects_wait_reset(SamplerCls):
    with pytest.raises(TypeError, match=f"{SamplerCls.__name__}: a vectorised EnvCls "
                                        r"\(GymVecEnv\).*CollectorCls=CpuResetCollector"):
        SamplerCls(EnvCls=GymVecEnv, env_kwargs=dict(id="CartPole-v1"), batch_T=2, batch_B=2,
                   CollectorCls=CpuWaitResetCollector)


def test_recurrent_agent_needs_alternating_version():
    sampler = AlternatingSampler(EnvCls=make, env_kwargs=ENV_KWARGS, batch_T=4, batch_B=4)
    with pytest.raises(TypeError, match="Alternating version of ArgmaxRnnAgent"):
        sampler.initialize(ArgmaxRnnAgent(), affinity=dict(n_workers=2), seed=0)


@pytest.mark.parametrize("SamplerCls,CollectorCls", [(CpuSampler, GpuResetCollector),
                                                     (GpuSampler, CpuResetCollector)])
def test_collector_must_fit_the_sampler(SamplerCls, CollectorCls):
    with pytest.raises(TypeError, match="CollectorCls="):
        SamplerCls(EnvCls=make, env_kwargs=ENV_KWARGS, batch_T=4, batch_B=4,
                   CollectorCls=CollectorCls)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="fork is Linux's default")
def test_default_start_method_avoids_fork_under_a_ray_driver(monkeypatch):
    """Ray's driver runs gRPC threads that a fork does not survive: forkserver then."""
    from types import SimpleNamespace

    from rlpyt.samplers.parallel.base import default_start_method

    monkeypatch.setitem(sys.modules, "ray", SimpleNamespace(is_initialized=lambda: False))
    assert default_start_method() == "fork"
    monkeypatch.setitem(sys.modules, "ray", SimpleNamespace(is_initialized=lambda: True))
    assert default_start_method() == "forkserver"


def test_bad_start_method_is_named():
    with pytest.raises(ValueError, match="start_method='threads'"):
        CpuSampler(EnvCls=make, env_kwargs=ENV_KWARGS, batch_T=4, batch_B=4,
                   start_method="threads")


@pytest.mark.parametrize("start_method,SamplerCls,CollectorCls", [
    ("spawn", GpuSampler, GpuResetCollector),
    ("forkserver", CpuSampler, CpuResetCollector),
])
def test_other_start_methods(start_method, SamplerCls, CollectorCls):
    """Workers started by spawn/forkserver receive the shared buffers by handle."""
    expected = serial_reference(False, False)
    got = collect(SamplerCls, ArgmaxAgent, CollectorCls, False, start_method=start_method,
                  pause_s=1.2)
    assert_same_batches(expected, got)


# ---- evaluation --------------------------------------------------------------------------
EvalInfo = namedtuple("EvalInfo", ["timeout"], module=__name__)


class FixedLengthEnv(Env):
    """Episodes of a fixed length per env: ``length`` steps, reward 1 each step."""

    def __init__(self, lengths=(3, 20)):
        self.lengths = lengths
        self.length = lengths[0]
        self._action_space = IntBox(0, 2)
        self._observation_space = FloatBox(0, 100, shape=(1,))
        self.t = 0

    def seed(self, seed):
        # Env seeds differ per env: pick this env's episode length from its seed.
        self.length = self.lengths[int(seed) % len(self.lengths)]
        self._action_space.seed(seed)

    def reset(self):
        self.t = 0
        return np.zeros(1, dtype=np.float32)

    def step(self, action):
        self.t += 1
        obs = np.full(1, self.t, dtype=np.float32)
        return EnvStep(obs, 1.0, self.t >= self.length, EvalInfo(False))


@pytest.mark.parametrize("SamplerCls,eval_n_envs", [
    (CpuSampler, 3), (GpuSampler, 3), (AlternatingSampler, 3), (CpuSampler, 1), (GpuSampler, 1)])
def test_evaluation_trajectory_cap(SamplerCls, eval_n_envs):
    """Exactly the cap; with 1 eval env, the worker without eval envs sits evaluation out."""
    sampler = SamplerCls(EnvCls=make, env_kwargs=ENV_KWARGS, batch_T=4, batch_B=4,
                         eval_n_envs=eval_n_envs, eval_max_trajectories=7)
    agent = ArgmaxAgent(initial_model_state_dict=reference_state_dict(False))
    sampler.initialize(agent, affinity=dict(n_workers=2), seed=1)
    try:
        for itr in range(2):
            agent.eval_mode(itr)
            traj_infos = sampler.evaluate_agent(itr)
            assert len(traj_infos) == 7  # Every started trajectory ran to its end.
            agent.sample_mode(itr)
            sampler.obtain_samples(itr)
    finally:
        sampler.shutdown()


@pytest.mark.parametrize("SamplerCls", [CpuSampler, GpuSampler, AlternatingSampler])
def test_evaluation_step_cap_is_global_and_unbiased(SamplerCls):
    """Short (3) and long (20) episodes; trajectories start only below 40 total steps.

    Eval envs step in lockstep over the workers and the master applies the serial rule,
    so the parallel evaluation reports exactly the serial one's trajectories, in order.
    """
    max_steps = 40
    eval_kwargs = dict(eval_n_envs=4, eval_max_steps=max_steps)
    sampler = SamplerCls(EnvCls=FixedLengthEnv, env_kwargs={}, batch_T=4, batch_B=2,
                         max_decorrelation_steps=0, **eval_kwargs)
    serial = SerialSampler(EnvCls=FixedLengthEnv, env_kwargs={}, batch_T=4, batch_B=2,
                           max_decorrelation_steps=0, **eval_kwargs)
    results = {}
    for name, s in (("parallel", sampler), ("serial", serial)):
        agent = ArgmaxAgent()
        s.initialize(agent, affinity=dict(n_workers=2) if name == "parallel" else None, seed=5)
        try:
            agent.eval_mode(0)
            results[name] = [[i.Length for i in s.evaluate_agent(itr)] for itr in range(2)]
        finally:
            s.shutdown()
    lengths = sorted(results["parallel"][0])
    assert set(lengths) <= {3, 20}, "every reported trajectory is complete"
    assert 20 in lengths and 3 in lengths, "long episodes are reported, not cut off"
    # Trajectories start only while fewer than max_steps steps were taken (globally), so
    # at most one more trajectory per env can follow the last start.
    assert sum(lengths) < max_steps + 4 * 20
    assert results["parallel"] == results["serial"]


# ---- affinity and threads ----------------------------------------------------------------
ThreadInfo = namedtuple("ThreadInfo", ["torch_threads", "timeout"], module=__name__)


class ThreadReportingEnv(Env):
    """Reports the torch thread count of the process that steps it."""

    def __init__(self):
        self._action_space = IntBox(0, 2)
        self._observation_space = FloatBox(0, 1, shape=(1,))

    def seed(self, seed):
        self._action_space.seed(seed)

    def reset(self):
        return np.zeros(1, dtype=np.float32)

    def step(self, action):
        return EnvStep(np.zeros(1, dtype=np.float32), 0.0, False,
                       ThreadInfo(torch.get_num_threads(), False))


def test_workers_pinned_and_single_threaded():
    cpus = available_cpus()
    workers_cpus = [cpus[0], cpus[-1]]
    sampler = GpuSampler(EnvCls=ThreadReportingEnv, env_kwargs={}, batch_T=3, batch_B=2,
                         max_decorrelation_steps=0)
    sampler.initialize(ArgmaxAgent(), affinity=dict(workers_cpus=workers_cpus), seed=0)
    try:
        samples, _ = sampler.obtain_samples(0)
        assert samples.env.env_info.torch_threads.eq(1).all()
        pinned = [psutil.Process(p.pid).cpu_affinity() for p in sampler.processes]
        assert pinned == [[c] for c in workers_cpus]
    finally:
        sampler.shutdown()


def test_unavailable_cpu_is_named():
    bad = max(available_cpus()) + 1000
    sampler = CpuSampler(EnvCls=make, env_kwargs=ENV_KWARGS, batch_T=2, batch_B=2)
    with pytest.raises(ValueError, match=f"CPUs \\[{bad}\\]"):
        sampler.initialize(ArgmaxAgent(), affinity=dict(workers_cpus=[bad, 0]), seed=0)


def test_more_workers_than_envs_is_capped():
    sampler = GpuSampler(EnvCls=make, env_kwargs=ENV_KWARGS, batch_T=2, batch_B=2)
    with pytest.warns(UserWarning, match="using 2 workers"):
        sampler.initialize(ArgmaxAgent(), affinity=dict(n_workers=3), seed=0)
    try:
        assert len(sampler.processes) == 2
        assert math.isfinite(float(sampler.obtain_samples(0)[0].env.reward.sum()))
    finally:
        sampler.shutdown()


# ---- scheduling of the alternating samplers ------------------------------------------------
class _ScriptedServer(ActionServer):
    """The action server's schedule with the env and agent work replaced by a log."""

    def __init__(self, overlap: bool, T: int = 3):
        from types import SimpleNamespace

        from rlpyt.samplers.samples import BatchSpec

        self.overlap = overlap
        self.batch_spec = BatchSpec(T, 4)
        self.groups = [SimpleNamespace(index=g, stepping=False,
                                       samples=SimpleNamespace(agent=SimpleNamespace()))
                       for g in (0, 1)]
        self.log = []

    def _await(self, group):
        if group.stepping:
            self.log.append(("await", group.index))
            group.stepping = False

    def _release(self, group):
        group.stepping = True
        self.log.append(("release", group.index))

    def _finish_step(self, group, t):
        pass

    def _select_actions(self, group, t):
        self.log.append(("select", group.index, t))


def _max_stepping_while_selecting(log) -> int:
    """Most groups stepping envs at a time, once every group's first step was awaited."""
    stepping, awaited, most = {0, 1}, set(), 0
    for event in log:
        kind, g = event[0], event[1]
        if kind == "await":
            stepping.discard(g)
            awaited.add(g)
        elif kind == "release":
            stepping.add(g)
        if awaited == {0, 1}:
            most = max(most, len(stepping))
    return most


@pytest.mark.parametrize("overlap", [True, False])
def test_alternating_schedule(overlap):
    server = _ScriptedServer(overlap)
    server.serve_actions(0)
    selects = [e for e in server.log if e[0] == "select"]
    assert selects == [("select", g, t) for t in range(3) for g in (0, 1)]
    # Overlap: both groups may step at once; no overlap: never after start-up.
    assert _max_stepping_while_selecting(server.log) == (2 if overlap else 1)
    # Either way, one group's actions are selected while the other group steps.
    for i, event in enumerate(server.log):
        if event[0] == "select" and event[2] > 0:
            other = 1 - event[1]
            released = [e for e in server.log[:i] if e[1] == other and e[0] != "select"]
            assert released[-1][0] == "release"


def test_apply_affinity_pins_and_names_unavailable_cpus():
    cpus = available_cpus()
    me = psutil.Process()
    before = me.cpu_affinity()
    try:
        apply_affinity([cpus[-1]], torch_threads=1)
        assert me.cpu_affinity() == [cpus[-1]]
    finally:
        me.cpu_affinity(before)
    with pytest.raises(ValueError, match=f"affinity CPUs \\[{max(cpus) + 1000}\\] are not"):
        apply_affinity([max(cpus) + 1000])


def test_apply_affinity_warns_once_where_pinning_is_unsupported(monkeypatch):
    from rlpyt.utils import process

    class NoAffinity:  # psutil.Process on macOS has no cpu_affinity
        pass

    monkeypatch.setattr(process, "_warned_unpinned", False)
    monkeypatch.setattr(psutil, "Process", lambda *args: NoAffinity())
    cpu = available_cpus()[0]
    with pytest.warns(UserWarning, match="running unpinned"):
        apply_affinity([cpu], torch_threads=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        apply_affinity([cpu], torch_threads=1)  # Once is enough.
