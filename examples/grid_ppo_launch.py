"""Launcher script: the PPO grid of ``grid_ppo.py``, written out with ``run_experiments``.

    python examples/grid_ppo_launch.py                     # local, one run per core
    python examples/grid_ppo_launch.py --backend ray       # a local Ray instance
    python examples/grid_ppo_launch.py --backend ray --ray-address auto   # a cluster
    python examples/grid_ppo_launch.py --n-steps 2000      # a quick smoke run

Launching again with the same ``--exp-dir`` skips the runs that already completed.
"""

import argparse
import os

from rlpyt.utils.launching.affinity import encode_affinity
from rlpyt.utils.launching.cpus import available_cpus
from rlpyt.utils.launching.exp_launcher import run_experiments
from rlpyt.utils.launching.variant import VariantLevel, make_variants

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "train_grid_ppo.py")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=("local", "ray"), default="local")
    parser.add_argument("--ray-address", default=None)
    parser.add_argument("--exp-dir", default=None)
    parser.add_argument("--n-steps", type=int, default=50_000)
    args = parser.parse_args()

    learning_rate = VariantLevel([("algo", "learning_rate")], [(3e-4,), (1e-3,)],
                                 ["lr_3e-4", "lr_1e-3"])
    batch = VariantLevel([("sampler", "batch_T"), ("sampler", "batch_B")],
                         [(64, 4), (128, 8)], ["batch_256", "batch_1024"])
    env = VariantLevel([("env", "id")], [("CartPole-v1",), ("Acrobot-v1",)],
                       ["cartpole", "acrobot"])
    variants, log_dirs = make_variants(learning_rate, batch, env)

    # One run per core. Under Ray the code gives one run's shape (1 CPU) instead,
    # and Ray fits as many runs as the cluster holds.
    affinity_code = encode_affinity(n_cpu_core=len(available_cpus()), cpu_per_run=1)
    summary = run_experiments(
        script=SCRIPT,
        affinity_code=affinity_code,
        experiment_title="grid_ppo",
        runs_per_setting=2,
        variants=variants,
        log_dirs=log_dirs,
        common_args=["--n-steps", args.n_steps],
        exp_dir=args.exp_dir,
        backend=args.backend,
        ray_address=args.ray_address,
    )
    raise SystemExit(0 if summary.ok else 1)


if __name__ == "__main__":
    main()
