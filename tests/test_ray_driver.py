"""Runs each module of ``tests/ray_driver/`` in a pytest process of its own.

Those modules start a Ray driver in the test process.  Ray's driver runs gRPC threads,
and gRPC is not fork-safe: a parallel sampler forked later in the same process can die
in ``malloc`` (seen once in CI: a ``GpuSampler`` worker killed by SIGABRT right after
the Ray tests ran in the same xdist worker).  The child process gets this run's marker
expression, split into its learning and its other tests so that ``make unit`` and
``make learning`` select them as they select every other test.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import RAY_DRIVER_ENV

HERE = Path(__file__).resolve().parent
SUITES = sorted(p.name for p in (HERE / "ray_driver").glob("test_*.py"))
NO_TESTS_COLLECTED = 5  # pytest's exit code when the marker expression selects nothing


def _sibling_selected(request, suite: str, learning: bool) -> bool:
    """Whether this run also selected the suite's other half (every xdist worker holds
    the whole selection)."""
    sibling = f"[{suite}-{'learning' if learning else 'tests'}]"
    return any(item.nodeid.endswith(sibling) for item in request.session.items)


def _marker_expression(request, learning: bool) -> str:
    own = "learning" if learning else "not learning"
    outer = request.config.option.markexpr
    return f"({own}) and ({outer})" if outer else own


@pytest.mark.slow  # A whole module with its own Ray cluster: minutes.
@pytest.mark.timeout(1800)  # The whole module; each of its tests keeps its own 600 s.
@pytest.mark.parametrize("learning", [
    pytest.param(False, id="tests"),
    pytest.param(True, id="learning", marks=pytest.mark.learning),
])
@pytest.mark.parametrize("suite", SUITES)
def test_ray_driver_suite(suite: str, learning: bool, request) -> None:
    pytest.importorskip("ray")
    path = HERE / "ray_driver" / suite
    if learning and "pytest.mark.learning" not in path.read_text():
        pytest.skip(f"{suite} has no learning test")  # Spares a child's start-up.
    markers = _marker_expression(request, learning)
    both = _sibling_selected(request, suite, not learning)
    if both and learning:
        pytest.skip(f"{suite}: its learning tests run with its other tests, in one process")
    if both:  # One child, one Ray cluster start-up, for both halves (make test).
        markers = request.config.option.markexpr or "learning or not learning"
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rfE",
               "-m", markers, str(path)]
    env = dict(os.environ, **{RAY_DRIVER_ENV: "1"})
    proc = subprocess.run(command, cwd=HERE.parent, env=env, capture_output=True, text=True)
    output = proc.stdout + proc.stderr
    if proc.returncode == NO_TESTS_COLLECTED:
        pytest.skip(f"{suite}: no test selected by {_marker_expression(request, learning)!r}")
    summary = output.strip().splitlines()[-1] if output.strip() else "(no output)"
    assert proc.returncode == 0, f"{suite} failed ({summary}); its output:\n{output[-8000:]}"
    print(f"{suite}: {summary}")
