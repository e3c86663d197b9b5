"""Same seed, same numbers, before and after a refactor, on any x86-64 CPU.

Short runs of the serial and CPU-parallel samplers with PPO, DQN and SAC must write the
learning columns recorded in ``tests/golden/runs.json`` (returns, losses, gradient
norms, entropies, Q values: every column but the time ones): a change to the runners,
samplers or algorithms that is meant to change nothing a user sees is checked against
it row for row.  A change that is meant to change the numbers re-records the file:
``RLPYT_RECORD_GOLDEN=1 pytest tests/test_golden_runs.py`` (say why in the commit).

"The same" allows for rounding, not for behaviour.  The CPU kernels torch, MKL and
oneDNN pick depend on the machine's vector units, and their sums round differently in
the last bits; training then carries those bits along (``golden_tolerance``).  A value
passes when it is within ``TOLERANCE[case]`` of its recorded one, measured in units of
its column's *scale*: the largest magnitude any statistic of the same quantity takes in
the recorded run (``ApproxKlMin`` is measured against the largest ``ApproxKl*``).
Rounding error is proportional to the numbers a statistic is computed from, not to its
own value: an approximate KL near zero is a difference of log-likelihoods near -0.7, so
a relative test on it fails on noise.  Counts (columns whose recorded values are all
whole numbers) must match exactly.

The tolerances are ten times the largest spread measured between the recorded file and
the same runs under each ``ATEN_CPU_CAPABILITY`` with MKL and oneDNN limited to older
instruction sets (docs/notes/golden_runs.md).  SAC's is wider: its Pendulum swings up
near the end of its run, where the upright pendulum's instability multiplies a
difference in an action many times a second.  ``test_a_one_line_change_fails_...``
shows each tolerance still fails real changes to PPO's, DQN's and SAC's losses.
"""

from __future__ import annotations

import csv
import json
import math
import os
import re
import subprocess
import sys

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


STATS = re.compile(r"(Average|Std|Median|Min|Max)$")

# In units of a column's scale (the module docstring); measured spread x 10.
TOLERANCE = {"ppo_serial": 1e-4, "ppo_cpu": 1e-4, "dqn_serial": 1e-5, "sac_serial": 3e-2}
CASES = list(TOLERANCE)


def column_scales(rows: list[dict]) -> dict[str, float]:
    """Each quantity's largest magnitude over the run's rows and statistics."""
    scales: dict[str, float] = {}
    for row in rows:
        for key, value in row.items():
            quantity = STATS.sub("", key)
            if not math.isnan(value):
                scales[quantity] = max(scales.get(quantity, 0.0), abs(value))
    return scales


def differences(rows: list[dict], expected: list[dict], tolerance: float) -> list[str]:
    """The values of ``rows`` that differ from ``expected`` beyond rounding, one line
    each (empty: the same run)."""
    if len(rows) != len(expected):
        return [f"{len(rows)} rows, recorded {len(expected)}"]
    scales = column_scales(expected)
    counts = {key for key in expected[0]
              if all(not math.isnan(row[key]) and float(row[key]).is_integer()
                     for row in expected)}
    wrong = []
    for i, (got, want) in enumerate(zip(rows, expected)):
        if got.keys() != want.keys():
            wrong.append(f"row {i}: columns differ: {sorted(got.keys() ^ want.keys())}")
            continue
        for key, recorded in want.items():
            value = got[key]
            if math.isnan(value) or math.isnan(recorded):
                same = math.isnan(value) and math.isnan(recorded)
            elif key in counts:
                same = value == recorded
            else:
                scale = scales[STATS.sub("", key)]
                same = abs(value - recorded) <= tolerance * scale
            if not same:
                scale = scales.get(STATS.sub("", key), 0.0)
                off = abs(value - recorded) / scale if scale else math.inf
                wrong.append(f"row {i} {key}: got {value!r}, recorded {recorded!r} "
                             f"({off:.2g} of its scale {scale:.3g}, tolerance {tolerance:g})")
    return wrong


def recorded_rows() -> dict:
    if not os.path.exists(GOLDEN):
        return {}
    with open(GOLDEN) as f:
        return json.load(f)


@pytest.mark.parametrize("case", CASES)
def test_a_same_seed_run_writes_the_recorded_numbers(case, tmp_path):
    rows = _learning_rows(case, tmp_path)
    golden = recorded_rows()
    if RECORD:
        golden[case] = rows
        with open(GOLDEN, "w") as f:
            json.dump(golden, f, indent=0, sort_keys=True)
        return
    assert case in golden, f"no recorded rows for {case}: RLPYT_RECORD_GOLDEN=1 records them"
    wrong = differences(rows, golden[case], TOLERANCE[case])
    assert not wrong, f"{case}: {len(wrong)} values differ:\n" + "\n".join(wrong[:20])


# The capabilities ATen can be told to use below the one it picks on this machine.
LOWER_CAPABILITIES = {"AVX512": ("default", "avx2"), "AVX2": ("default",)}


@pytest.mark.skipif(RECORD, reason="recording")
def test_the_recorded_numbers_hold_under_each_cpu_capability(tmp_path):
    """Every case, run again in a fresh process under each ``ATEN_CPU_CAPABILITY`` this
    machine offers below its own (the kernels a CPU without those vector units runs)."""
    native = torch.backends.cpu.get_cpu_capability()
    capabilities = LOWER_CAPABILITIES.get(native, ("default",) if native != "DEFAULT" else ())
    if not capabilities:
        pytest.skip(f"torch runs its default kernels here ({native}): nothing lower to try")
    golden = recorded_rows()
    failures = []
    for capability in capabilities:
        out = tmp_path / f"{capability}.json"
        env = dict(os.environ, ATEN_CPU_CAPABILITY=capability)
        done = subprocess.run([sys.executable, __file__, str(out)], env=env,
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, f"{capability}: {done.stderr[-3000:]}"
        with open(out) as f:
            result = json.load(f)
        assert result["capability"] == capability.upper(), result["capability"]
        for case in CASES:
            wrong = differences(result["rows"][case], golden[case], TOLERANCE[case])
            failures += [f"{capability} {case} {line}" for line in wrong[:5]]
    assert not failures, "\n".join(failures)


def _value_loss_without_its_half(monkeypatch):
    from rlpyt.algos import losses

    # The one line: ``F.mse_loss(value, target)`` where PPO's value loss halves it.
    monkeypatch.setattr(losses, "value_loss",
                        lambda value, target, valid=None: losses.valid_mean(
                            (value - target) ** 2, valid))


def _value_loss_weight_one_percent_higher(monkeypatch):
    from rlpyt.algos import losses

    value_loss = losses.value_loss
    # As ``value_loss_coeff = 1.01`` for PPO's default 1.0 in ``loss = pi_loss + c * v``.
    monkeypatch.setattr(losses, "value_loss", lambda value, target, valid=None: 1.01 * value_loss(
        value, target, valid))


def _dqn_discount_one_step_short(monkeypatch):
    from rlpyt.algos.dqn import dqn

    target = dqn.n_step_q_target
    # ``discount ** (n - 1)`` for ``discount ** n`` on the bootstrap of 3-step returns.
    monkeypatch.setattr(dqn, "n_step_q_target",
                        lambda return_, done_n, next_value, discount_n: target(
                            return_, done_n, next_value, discount_n / 0.99))


def _sac_target_without_entropy(monkeypatch):
    from rlpyt.algos.qpg import sac

    monkeypatch.setattr(sac, "soft_state_value",
                        lambda q1, q2, log_pi, alpha: sac.twin_min(q1, q2))


ONE_LINE_CHANGES = {
    "ppo value loss without its 1/2": ("ppo_serial", _value_loss_without_its_half),
    "ppo value-loss weight 1% higher": ("ppo_serial", _value_loss_weight_one_percent_higher),
    "dqn bootstrap discount one step short": ("dqn_serial", _dqn_discount_one_step_short),
    "sac target without the entropy term": ("sac_serial", _sac_target_without_entropy),
}


@pytest.mark.skipif(RECORD, reason="recording")
@pytest.mark.parametrize("change", list(ONE_LINE_CHANGES))
def test_a_one_line_change_fails_the_comparison(change, monkeypatch, tmp_path):
    """The tolerances still see a change of behaviour: each of these one-line changes
    to a loss or a target moves the run's numbers beyond its case's tolerance."""
    case, apply_change = ONE_LINE_CHANGES[change]
    apply_change(monkeypatch)
    wrong = differences(_learning_rows(case, tmp_path), recorded_rows()[case],
                        TOLERANCE[case])
    assert wrong, f"{change}: the run still matches the recorded {case} numbers"


def _write_every_case(out: str) -> None:
    """Run every case in this process and write their rows (and the CPU capability
    torch used) to ``out``: the subprocess of the capability test."""
    import pathlib
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        rows = {case: _learning_rows(case, pathlib.Path(folder) / case) for case in CASES}
    with open(out, "w") as f:
        json.dump(dict(capability=torch.backends.cpu.get_cpu_capability(), rows=rows), f)


if __name__ == "__main__":
    _write_every_case(sys.argv[1])
