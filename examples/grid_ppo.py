"""Grid file: PPO on two envs, learning rate x batch size, two seeds each.

Run it on this machine's cores (one core per run; resumes if run again)::

    rlpyt launch examples/grid_ppo.py
    rlpyt launch examples/grid_ppo.py --exp-dir runs/grid_short -- --n-steps 2000  # short runs

or on Ray (a local instance, or a running cluster)::

    rlpyt launch examples/grid_ppo.py --backend ray
    rlpyt launch examples/grid_ppo.py --backend ray --ray-address auto

2 learning rates x 2 batch sizes x 2 envs = 8 settings, x 2 seeds = 16 runs, each
writing to ``data/local/grid_ppo/<lr>/<batch>/<env>/run_<seed>/``. Plot them with
``rlpyt plot data/local/grid_ppo/*/*/*``. ``examples/grid_ppo_launch.py`` is the same
grid written as a plain launcher script.
"""

from rlpyt.utils.launching.cpus import available_cpus
from rlpyt.utils.launching.variant import VariantLevel

script = "train_grid_ppo.py"  # Relative to this file.
experiment_title = "grid_ppo"
runs_per_setting = 2  # Run ids 0 and 1 are the seeds.

variants = [
    VariantLevel(
        keys=[("algo", "learning_rate")],
        values=[(3e-4,), (1e-3,)],
        dir_names=["lr_3e-4", "lr_1e-3"],
    ),
    VariantLevel(  # The batch is batch_T steps of batch_B envs.
        keys=[("sampler", "batch_T"), ("sampler", "batch_B")],
        values=[(64, 4), (128, 8)],
        dir_names=["batch_256", "batch_1024"],
    ),
    VariantLevel(
        keys=[("env", "id")],
        values=[("CartPole-v1",), ("Acrobot-v1",)],
        dir_names=["cartpole", "acrobot"],
    ),
]

# One run per core of this machine; see docs/launching.md for bigger machines, e.g.
# affinity = dict(n_cpu_core=32, cpu_per_run=2, hyperthread_offset=32, n_socket=2).
_n_cores = len(available_cpus())
affinity = dict(n_cpu_core=_n_cores, cpu_per_run=1)

common_args = ["--n-steps", "50000"]
