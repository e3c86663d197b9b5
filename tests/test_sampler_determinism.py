"""Same seed, same numbers, whatever the machine's load.

Same-seed ``rlpyt train`` runs of every sampler, all started at the same time next to
a CPU-burning process (so every run is slowed down, unevenly and differently each
time), must write identical ``progress.csv`` values apart from the time columns:
two ``CpuSampler`` runs must match each other, and the GPU and alternating runs must
match the serial run (one agent in the main process, one RNG stream: the serial
numbers exactly, which do not depend on timing at all).  The runs evaluate with an
odd number of eval envs and a trajectory cap that is not a multiple of it, so which
env starts the last trajectories matters (that decision once depended on which worker
got to a shared counter first).
"""

from __future__ import annotations

import csv
import os
import subprocess
import sys

import rlpyt

RUNS = [("serial", "a"), ("cpu", "a"), ("cpu", "b"), ("gpu", "a"), ("alternating", "a"),
        ("alternating-no-overlap", "a")]
TIME_COLUMNS = ("Time", "PerSecond")
RUN_TIMEOUT_S = 400


def _train_command(sampler_type: str, log_dir) -> list:
    return [
        sys.executable, "-m", "rlpyt", "train", "--algo", "ppo", "--seed", "7",
        "--n-steps", "2048", "--sampler-type", sampler_type, "--workers", "2",
        "--log-dir", str(log_dir), "--snapshot-mode", "none",
        "--runner.log_interval_steps", "512", "--algo.epochs", "2",
        "--sampler.batch_T", "16", "--sampler.max_decorrelation_steps", "20",
        "--sampler.eval_n_envs", "3", "--sampler.eval_max_trajectories", "5",
    ]


def _values(path) -> list[dict]:
    with open(path) as f:
        rows = list(csv.DictReader(f))
    return [{k: v for k, v in row.items() if not any(t in k for t in TIME_COLUMNS)}
            for row in rows]


def test_same_seed_runs_match_under_load(tmp_path):
    root = os.path.dirname(os.path.dirname(os.path.abspath(rlpyt.__file__)))
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    burner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    runs = {}
    try:
        for sampler_type, copy in RUNS:
            log_dir = tmp_path / f"{sampler_type}-{copy}"
            runs[sampler_type, copy] = (log_dir, subprocess.Popen(
                _train_command(sampler_type, log_dir), env=env,
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True))
        for (sampler_type, copy), (_, proc) in runs.items():
            _, stderr = proc.communicate(timeout=RUN_TIMEOUT_S)
            assert proc.returncode == 0, f"{sampler_type} run {copy} failed:\n{stderr[-3000:]}"
    finally:
        burner.kill()
        burner.wait()
        for _, proc in runs.values():
            proc.kill()
            proc.wait()
    values = {run: _values(log_dir / "run_0" / "progress.csv")
              for run, (log_dir, _) in runs.items()}
    serial = values["serial", "a"]
    assert len(serial) >= 3, f"{len(serial)} rows"
    assert int(serial[-1]["TrajsInEval"]) == 5, "every evaluation runs all 5 trajectories"
    _assert_same(values["cpu", "a"], values["cpu", "b"], "cpu run a vs b")
    for sampler_type in ("gpu", "alternating", "alternating-no-overlap"):
        _assert_same(serial, values[sampler_type, "a"], f"serial vs {sampler_type}")


def _assert_same(a: list, b: list, what: str) -> None:
    assert len(a) == len(b), f"{what}: {len(a)} and {len(b)} rows"
    for i, (row_a, row_b) in enumerate(zip(a, b)):
        diff = {k: (row_a[k], row_b[k]) for k in row_a if row_a[k] != row_b[k]}
        assert not diff, f"{what}: row {i} differs: {diff}"
