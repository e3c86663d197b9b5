"""Project-wide test set-up."""

import os
import platform

import pytest
import torch
from test_sampler_faults import leak_check  # noqa: F401  (a fixture for other fault tests)

from rlpyt.utils.process import available_cpus

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
    return any(item.get_closest_marker(m) is not None for m in ("learning", "slow", "soak"))


def pytest_collection_modifyitems(config, items):
    """The long tests first (marked learning, slow or soak: up to minutes each), the
    rest in file order after them: pytest-xdist hands tests out in this order, so the two
    workers end together instead of one running a long test alone at the end."""
    items.sort(key=lambda item: not _runs_long(item))


def machine_line() -> str:
    """What a failure report needs to say about the machine: the kernels torch picked
    (``ATEN_CPU_CAPABILITY`` forces them), the cores this run may use, the CPU."""
    capability = torch.backends.cpu.get_cpu_capability()
    forced = os.environ.get("ATEN_CPU_CAPABILITY")
    usable = len(available_cpus())
    return (f"machine: torch {torch.__version__}, CPU capability {capability}"
            f"{f' (ATEN_CPU_CAPABILITY={forced})' if forced else ''}, {usable} of "
            f"{os.cpu_count()} cores usable, {cpu_model()}, {platform.machine()}, "
            f"Python {platform.python_version()}")


def cpu_model() -> str:
    """The CPU's name with its vendor, family and model numbers (a virtual machine's
    name alone can be generic; MKL picks its kernels by vendor and model)."""
    fields = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                if not key.strip():
                    break  # The first processor's block is enough.
                fields[key.strip()] = value.strip()
    except OSError:
        return platform.processor() or "CPU model unknown"
    return (f"{fields.get('model name', 'CPU model unknown')} ({fields.get('vendor_id', '?')} "
            f"family {fields.get('cpu family', '?')} model {fields.get('model', '?')})")


def pytest_report_header(config):
    return machine_line()


def pytest_terminal_summary(terminalreporter):
    """The machine again after the results, where a pasted failure report ends."""
    terminalreporter.write_line(machine_line())
