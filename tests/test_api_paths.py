"""The API contract's sampler and runner import paths still name their classes now that
the modules defining them are named by role (``rlpyt.samplers.samples``,
``rlpyt.samplers.acting_beside_envs``): a classic script's imports resolve, and a
re-export is the defining module's object, not a copy."""

from __future__ import annotations

import importlib

import pytest

# Contract path -> names it must provide (the samplers' and runners' tables of the contract).
CONTRACT = {
    "rlpyt.samplers.collections": ["BatchSpec", "Samples", "AgentSamples", "AgentSamplesBsv",
                                   "EnvSamples", "TrajInfo"],
    "rlpyt.samplers.serial.sampler": ["SerialSampler"],
    "rlpyt.samplers.serial.collectors": ["SerialEvalCollector"],
    "rlpyt.samplers.parallel.cpu.sampler": ["CpuSampler"],
    "rlpyt.samplers.parallel.cpu.collectors": ["CpuResetCollector", "CpuWaitResetCollector",
                                               "CpuEvalCollector"],
    "rlpyt.samplers.parallel.gpu.sampler": ["GpuSampler"],
    "rlpyt.samplers.parallel.gpu.alternating_sampler": ["AlternatingSampler",
                                                        "NoOverlapAlternatingSampler"],
    "rlpyt.samplers.parallel.gpu.collectors": ["GpuResetCollector", "GpuWaitResetCollector",
                                               "GpuEvalCollector"],
    "rlpyt.samplers.async_.serial_sampler": ["AsyncSerialSampler"],
    "rlpyt.samplers.async_.cpu_sampler": ["AsyncCpuSampler"],
    "rlpyt.samplers.async_.gpu_sampler": ["AsyncGpuSampler"],
    "rlpyt.samplers.async_.alternating_sampler": ["AsyncAlternatingSampler"],
    "rlpyt.samplers.async_.collectors": ["DbCpuResetCollector", "DbCpuWaitResetCollector",
                                         "DbGpuResetCollector", "DbGpuWaitResetCollector"],
    "rlpyt.runners.minibatch_rl": ["MinibatchRl", "MinibatchRlEval"],
    "rlpyt.runners.sync_rl": ["SyncRl", "SyncRlEval"],
    "rlpyt.runners.async_rl": ["AsyncRl", "AsyncRlEval"],
}

# Contract paths that re-export what a module named by its role defines.
REEXPORTS = [
    ("rlpyt.samplers.collections", "rlpyt.samplers.samples",
     ["BatchSpec", "Samples", "AgentSamples", "AgentSamplesBsv", "EnvSamples", "StepsInfo",
      "TrajInfo"]),
    ("rlpyt.samplers.parallel.cpu.collectors", "rlpyt.samplers.acting_beside_envs",
     ["CpuResetCollector", "CpuWaitResetCollector", "CpuVecResetCollector",
      "collector_for_env"]),
]


@pytest.mark.parametrize("path", sorted(CONTRACT))
def test_contract_path_provides_its_names(path):
    module = importlib.import_module(path)
    missing = [name for name in CONTRACT[path] if not hasattr(module, name)]
    assert not missing, f"{path} lacks {missing}"


@pytest.mark.parametrize("path, home, names", REEXPORTS)
def test_contract_path_reexports_the_defining_modules_objects(path, home, names):
    module, defining = importlib.import_module(path), importlib.import_module(home)
    for name in names:
        assert getattr(module, name) is getattr(defining, name), f"{path}.{name}"
        assert name in module.__all__, f"{path}.__all__ lacks {name}"
