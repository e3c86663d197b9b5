"""Same seed, same numbers, whatever the machine's load; the GPU and alternating samplers
give the serial sampler's numbers.

Two same-seed ``rlpyt train`` runs of every sampler, all started at the same time next
to a CPU-burning process (so every run is slowed down, unevenly and differently each
time), must write identical ``progress.csv`` values apart from the time columns.
The runs evaluate with an odd number of eval envs and a trajectory cap that is not a
multiple of it, so which env starts the last trajectories matters (that decision once
depended on which worker got to a shared counter first).
"""

from __future__ import annotations

import csv
import os
import subprocess
import sys

import rlpyt

SAMPLER_TYPES = ["serial", "cpu", "gpu", "alternating", "alternating-no-overlap"]
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
        for sampler_type in SAMPLER_TYPES:
            for copy in "ab":
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
    for sampler_type in SAMPLER_TYPES:
        a, b = (_values(runs[sampler_type, c][0] / "run_0" / "progress.csv") for c in "ab")
        assert len(a) == len(b) >= 3, f"{sampler_type}: {len(a)} and {len(b)} rows"
        assert int(a[-1]["TrajsInEval"]) == 5, "every evaluation runs all 5 trajectories"
        _assert_same(a, b, f"{sampler_type} run a vs b")
    # One agent in the main process drawing from one RNG stream: the serial sampler's
    # numbers exactly (a CpuSampler's workers draw from their own streams: not compared).
    serial = _values(runs["serial", "a"][0] / "run_0" / "progress.csv")
    for sampler_type in ("gpu", "alternating", "alternating-no-overlap"):
        _assert_same(serial, _values(runs[sampler_type, "a"][0] / "run_0" / "progress.csv"),
                     f"serial vs {sampler_type}")


def _assert_same(a: list, b: list, what: str) -> None:
    assert len(a) == len(b), f"{what}: {len(a)} and {len(b)} rows"
    for i, (row_a, row_b) in enumerate(zip(a, b)):
        diff = {k: (row_a[k], row_b[k]) for k in row_a if row_a[k] != row_b[k]}
        assert not diff, f"{what}: row {i} differs: {diff}"
