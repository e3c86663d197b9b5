"""A launched grid whose run was killed continues that run from its checkpoint."""

from __future__ import annotations

import csv
import os
import textwrap

from rlpyt.utils.launching.affinity import encode_affinity
from rlpyt.utils.launching.exp_launcher import run_experiments
from rlpyt.utils.launching.variant import VariantLevel, make_variants

# Serial PPO on CartPole; on its first attempt the run SIGKILLs itself right after
# the checkpoint of iteration 3 (as a pre-empted job would die).
SCRIPT = """
import os, signal, sys

slot_code, log_dir, run_ID = sys.argv[1], sys.argv[2], int(sys.argv[3])
from rlpyt.agents.pg.categorical import CategoricalPgAgent
from rlpyt.algos.pg.ppo import PPO
from rlpyt.envs.gym import make
from rlpyt.runners.minibatch_rl import MinibatchRl
from rlpyt.samplers.serial.sampler import SerialSampler
from rlpyt.utils.logging.context import logger_context


class PreemptedRunner(MinibatchRl):
    def save_checkpoint(self, itr):
        path = super().save_checkpoint(itr)
        if itr == 3 and not os.environ.get("RLPYT_RESUME"):
            os.kill(os.getpid(), signal.SIGKILL)
        return path


runner = PreemptedRunner(
    PPO(epochs=1, minibatches=1), CategoricalPgAgent(),
    SerialSampler(EnvCls=make, env_kwargs=dict(id="CartPole-v1"), batch_T=16, batch_B=2),
    n_steps=320, log_interval_steps=64, seed=run_ID)
with logger_context(log_dir, run_ID, "grid", dict(run_ID=run_ID)):
    runner.train()
"""


def test_relaunched_grid_resumes_a_killed_run(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(SCRIPT))
    variants, log_dirs = make_variants(VariantLevel([("x",)], [(1,)], ["only"]))
    launch = dict(script=str(script), affinity_code=encode_affinity(n_cpu_core=1),
                  experiment_title="g", runs_per_setting=1, variants=variants,
                  log_dirs=log_dirs, exp_dir=str(tmp_path / "exp"))
    first = run_experiments(**launch)
    assert first.count("failed") == 1
    run_dir = tmp_path / "exp" / "only" / "run_0"
    assert os.path.isdir(run_dir / "checkpoints" / "itr_3")
    second = run_experiments(**launch)
    assert second.count("done") == 1
    assert not os.path.exists(tmp_path / "exp" / "only" / "failed_attempts")
    log = (run_dir / "launch.log").read_text()
    assert "# resumed:" in log and "Resuming from" in log and "after iteration 3" in log
    with open(run_dir / "progress.csv", newline="") as f:
        iterations = [int(r["Iteration"]) for r in csv.DictReader(f)]
    assert iterations == [1, 3, 5, 7, 9]  # every row once: 1, 3 before the kill, 5-9 after
