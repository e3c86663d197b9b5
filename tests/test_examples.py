"""The numbered launch scripts in examples/ run as written with a small step budget."""

import importlib.util
import math
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

pytestmark = pytest.mark.slow


def load_example(name):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    "name, kwargs",
    [
        ("example_1_ppo_cartpole", dict(n_steps=1_000)),
        ("example_2_a2c_atari", dict(n_steps=800)),
        ("example_3_a2c_atari_lstm", dict(n_steps=800)),
        ("example_4_ppo_mujoco", dict(n_steps=2_048)),
        ("example_5_recurrent_ppo_masked_cartpole", dict(n_steps=1_000)),
        ("example_7_sync_ppo", dict(n_steps=1_024)),  # 2 CPU ranks (n_gpu=0)
    ],
)
def test_example_runs(name, kwargs, run_dir):
    summary = load_example(name).build_and_train(**kwargs)
    assert isinstance(summary, dict)
    logs = list(Path(run_dir).rglob("progress.csv"))
    assert logs, f"{name} wrote no progress.csv under {run_dir}"
    if name in ("example_1_ppo_cartpole", "example_5_recurrent_ppo_masked_cartpole",
                "example_7_sync_ppo"):
        assert not math.isnan(summary["final_eval_return"])  # these evaluate (MinibatchRlEval)
