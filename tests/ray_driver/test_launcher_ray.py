"""The grid launcher's Ray backend on a local Ray instance this process starts (in its own
pytest process: see ``tests/test_ray_driver.py``)."""

from __future__ import annotations

import os

import pytest
from test_launcher import TINY_PPO, check_ppo_grid_outputs, ppo_grid, run_cpus, write_script

from rlpyt.utils.launching import ray_backend
from rlpyt.utils.launching.exp_launcher import run_experiments


@pytest.mark.slow  # About a minute on a loaded 2-core machine (Ray start-up included).
def test_ray_grid_runs_reports_failure_and_resumes(tmp_path):
    ray = pytest.importorskip("ray")
    script = write_script(tmp_path, "tiny_ppo.py", TINY_PPO)
    variants, log_dirs = ppo_grid(batch_sizes=(2,))  # 4 runs: the backend, not the grid
    exp_dir = str(tmp_path / "exp")
    kwargs = dict(script=script, affinity_code="2cpu", experiment_title="tiny",
                  runs_per_setting=2, variants=variants, log_dirs=log_dirs,
                  common_args=[256], exp_dir=exp_dir, backend="ray", verbose=False)
    # address="local": a Ray of its own, never a cluster another test process runs here.
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        summary = run_experiments(**kwargs)
        check_ppo_grid_outputs(summary, exp_dir, log_dirs, variants)
        record = run_cpus(exp_dir, summary.results[0].name)
        assert record["slot_code"] == "0slt_1cpu_0saf"  # one run's shape, unpinned
        with pytest.raises(ValueError, match=r"asks Ray for 4 CPUs .* has CPU=2"):
            run_experiments(**{**kwargs, "affinity_code": "4cpu_4cpr"})
        again = run_experiments(**kwargs)
        assert again.count("skipped") == 3 and len(again.failed) == 1
        assert ray.is_initialized()  # A Ray instance it did not start is left running.
    finally:
        ray.shutdown()
    assert not os.path.exists(os.path.join(exp_dir, ray_backend.TOKEN_FILE))
