"""Project-wide test set-up."""

import os

import pytest
import torch
from test_sampler_faults import leak_check  # noqa: F401  (a fixture for other fault tests)

# Tiny tensors run ~10x slower with intra-op threads on a loaded 2-core machine, and
# pytest-xdist already runs one worker per core.
torch.set_num_threads(1)
os.environ.setdefault("CI_QUIET_PROGRESS", "1")

# Tests that run a Ray driver in the test process live in ray_driver/ and run in a pytest
# process of their own (test_ray_driver.py): Ray's gRPC threads make a later fork in the
# same process unsafe, and the sampler tests fork.
RAY_DRIVER_ENV = "RLPYT_RAY_DRIVER_SUITE"
if not os.environ.get(RAY_DRIVER_ENV):
    collect_ignore = ["ray_driver"]


@pytest.fixture
def run_dir(tmp_path, monkeypatch):
    """A temporary working directory for runs that write logs."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _runs_long(item) -> bool:
    return any(item.get_closest_marker(m) is not None for m in ("learning", "slow"))


def pytest_collection_modifyitems(config, items):
    """The long tests first (marked learning or slow: up to minutes each), the
    rest in file order after them: pytest-xdist hands tests out in this order, so the two
    workers end together instead of one running a long test alone at the end."""
    items.sort(key=lambda item: not _runs_long(item))
