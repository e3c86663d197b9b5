"""examples/example_6_vtrace_rollout.py: V-trace in a plain PyTorch loop over rlpyt.rollout."""

import importlib.util
import math
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "example_6_vtrace_rollout.py"


def load_example():
    spec = importlib.util.spec_from_file_location("example_6_vtrace_rollout", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_vtrace_rollout_example_runs_and_its_second_pass_is_off_policy():
    result = load_example().build_and_train(n_steps=1_024, batch_T=16, batch_B=8, passes=2,
                                            print_every=0)
    assert math.isfinite(result["final_loss"]) and result["n_episodes"] > 0
    rho_means = result["rho_means"]
    assert len(rho_means) == 2 * 8  # two passes over each of the 8 batches
    first, second = rho_means[0::2], rho_means[1::2]
    assert all(r == pytest.approx(1.0, abs=1e-5) for r in first)  # on-policy
    assert any(abs(r - 1.0) > 1e-4 for r in second)  # the learner moved: importance weights
