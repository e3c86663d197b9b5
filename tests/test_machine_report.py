"""``make test`` names the machine it ran on (tests/conftest.py: ``machine_line``) before
the tests and again after the results, so a pasted failure report says where it failed."""

from __future__ import annotations

import os
import subprocess
import sys

import torch
from conftest import machine_line

TESTS = os.path.dirname(os.path.abspath(__file__))


def test_the_machine_line_names_the_kernels_and_the_cores():
    line = machine_line()
    assert f"CPU capability {torch.backends.cpu.get_cpu_capability()}" in line
    assert f"of {os.cpu_count()} cores usable" in line
    assert torch.__version__ in line


def test_a_pytest_run_prints_the_machine_before_and_after_its_results(tmp_path):
    (tmp_path / "test_one.py").write_text("def test_one():\n    assert True\n")
    env = dict(os.environ, ATEN_CPU_CAPABILITY="default")
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
                           "--rootdir", str(tmp_path), "--confcutdir", TESTS, "-c",
                           os.devnull, str(tmp_path), "-p", "conftest"],
                          capture_output=True, text=True, env=env, timeout=120,
                          cwd=TESTS)
    lines = done.stdout.splitlines()
    machine = [i for i, line in enumerate(lines) if line.startswith("machine: ")]
    assert len(machine) == 2, done.stdout
    assert "CPU capability DEFAULT (ATEN_CPU_CAPABILITY=default)" in lines[machine[0]]
    result = next(i for i, line in enumerate(lines) if "test_one.py" in line)
    assert machine[0] < result < machine[1], done.stdout
