"""Project-wide test set-up."""

import os

import pytest
import torch
from test_sampler_faults import leak_check  # noqa: F401  (a fixture for other fault tests)

# Tiny tensors run ~10x slower with intra-op threads on a loaded 2-core machine, and
# pytest-xdist already runs one worker per core.
torch.set_num_threads(1)
os.environ.setdefault("CI_QUIET_PROGRESS", "1")


@pytest.fixture
def run_dir(tmp_path, monkeypatch):
    """A temporary working directory for runs that write logs."""
    monkeypatch.chdir(tmp_path)
    return tmp_path
