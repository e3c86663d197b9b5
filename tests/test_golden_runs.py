"""Same seed, same numbers, before and after a refactor.

Short runs of the serial and CPU-parallel samplers with PPO, DQN and SAC must write the
learning columns recorded in ``tests/golden/runs.json`` (returns, losses, gradient
norms, entropies, Q values: every column but the time ones): a change to the runners,
samplers or algorithms that is meant to change nothing a user sees is checked against
it row for row.  A change that is meant to change the numbers re-records the file:
``RLPYT_RECORD_GOLDEN=1 pytest tests/test_golden_runs.py`` (say why in the commit).

The values are compared to 1e-6 relative: bit-equal on the machine that recorded them,
and tolerant of the last bits a CPU with other vector units can round differently in
runs this short.
"""

from __future__ import annotations

import csv
import json
import math
import os

import pytest
import torch

GOLDEN = os.path.join(os.path.dirname(__file__), "golden", "runs.json")
RECORD = os.environ.get("RLPYT_RECORD_GOLDEN") == "1"
TIME_MARKS = ("Time", "PerSecond")


def _build(case: str):
    from rlpyt.envs.gym import make
    from rlpyt.runners.minibatch_rl import MinibatchRl, MinibatchRlEval
    from rlpyt.samplers.parallel.cpu.sampler import CpuSampler
    from rlpyt.samplers.serial.sampler import SerialSampler

    if case in ("ppo_serial", "ppo_cpu"):
        from rlpyt.agents.pg.categorical import CategoricalPgAgent
        from rlpyt.algos.pg.ppo import PPO

        SamplerCls = SerialSampler if case == "ppo_serial" else CpuSampler
        sampler = SamplerCls(EnvCls=make, env_kwargs=dict(id="CartPole-v1"), batch_T=32,
                             batch_B=4, max_decorrelation_steps=10, eval_n_envs=3,
                             eval_max_trajectories=5)
        affinity = dict(workers_cpus=[0, 0]) if case == "ppo_cpu" else None
        return MinibatchRlEval(PPO(epochs=2, minibatches=4), CategoricalPgAgent(), sampler,
                               n_steps=2048, seed=11, log_interval_steps=512,
                               affinity=affinity)
    if case == "dqn_serial":
        from rlpyt.agents.dqn.dqn_agent import DqnAgent
        from rlpyt.algos.dqn.dqn import DQN

        sampler = SerialSampler(EnvCls=make, env_kwargs=dict(id="CartPole-v1"), batch_T=4,
                                batch_B=2, max_decorrelation_steps=0)
        algo = DQN(min_steps_learn=200, replay_size=2000, batch_size=32, replay_ratio=8,
                   target_update_interval=50, eps_steps=1000, n_step_return=3,
                   double_dqn=True, prioritized_replay=True, learning_rate=1e-3)
        return MinibatchRl(algo, DqnAgent(model_kwargs=dict(hidden_sizes=[32])), sampler,
                           n_steps=1600, seed=12, log_interval_steps=400)
    if case == "sac_serial":
        from rlpyt.agents.qpg.sac_agent import SacAgent
        from rlpyt.algos.qpg.sac import SAC

        sampler = SerialSampler(EnvCls=make, env_kwargs=dict(id="Pendulum-v1"), batch_T=4,
                                batch_B=1, max_decorrelation_steps=0)
        agent = SacAgent(model_kwargs=dict(hidden_sizes=[32, 32]),
                         q_model_kwargs=dict(hidden_sizes=[32, 32]))
        algo = SAC(batch_size=32, min_steps_learn=200, replay_size=2000, replay_ratio=32)
        return MinibatchRl(algo, agent, sampler, n_steps=800, seed=13, log_interval_steps=200)
    raise ValueError(case)


def _learning_rows(case: str, tmp_path) -> list[dict]:
    from rlpyt.utils.logging.context import logger_context

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        runner = _build(case)
        with logger_context(str(tmp_path), 0, case, snapshot_mode="none",
                            override_prefix=True) as run_dir:
            runner.train()
    finally:
        torch.set_num_threads(threads)
    with open(os.path.join(run_dir, "progress.csv"), newline="") as f:
        return [{k: float(v) for k, v in row.items()
                 if not any(mark in k for mark in TIME_MARKS)}
                for row in csv.DictReader(f)]


def _same(a: float, b: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-9)


CASES = ["ppo_serial", "ppo_cpu", "dqn_serial", "sac_serial"]


@pytest.mark.parametrize("case", CASES)
def test_a_same_seed_run_writes_the_recorded_numbers(case, tmp_path):
    rows = _learning_rows(case, tmp_path)
    golden = {}
    if os.path.exists(GOLDEN):
        with open(GOLDEN) as f:
            golden = json.load(f)
    if RECORD:
        golden[case] = rows
        with open(GOLDEN, "w") as f:
            json.dump(golden, f, indent=0, sort_keys=True)
        return
    assert case in golden, f"no recorded rows for {case}: RLPYT_RECORD_GOLDEN=1 records them"
    expected = golden[case]
    assert len(rows) == len(expected), (case, len(rows), len(expected))
    for i, (got, want) in enumerate(zip(rows, expected)):
        assert got.keys() == want.keys(), (case, i, sorted(got.keys() ^ want.keys()))
        wrong = {k: (got[k], want[k]) for k in want if not _same(got[k], want[k])}
        assert not wrong, f"{case}, row {i}: (got, recorded) {wrong}"
