"""The runner's parts through their public methods, each on its own: the checkpointer
records where a run resumed from, the diagnostics take another rank's values, and a
runner class names its checkpointer."""

from __future__ import annotations

from types import SimpleNamespace

import torch

from rlpyt.runners import checkpoint_files as ckpt
from rlpyt.runners.checkpointer import Checkpointer
from rlpyt.runners.diagnostics import RunDiagnostics


def test_a_checkpointer_records_the_checkpoint_it_resumes_from(tmp_path):
    run_dir = str(tmp_path)
    path = ckpt.save_checkpoint(run_dir, 4, dict(itr=4, cum_steps=40,
                                                 weights=torch.zeros(3)))
    checkpoints = Checkpointer(100)
    assert checkpoints.last is None
    state = checkpoints.find(run_dir)
    assert state["itr"] == 4 and checkpoints.last == path
    assert Checkpointer(100).find(False) is None


def test_gathered_values_count_as_trajectories_without_moving_the_progress_bar():
    algo = SimpleNamespace(update_counter=0, batch_size=32, opt_info_fields=("loss",))
    diagnostics = RunDiagnostics(algo, SimpleNamespace(), log_traj_window=3, with_eval=False,
                                 eval_pauses_training=True)
    diagnostics.start(n_itr=10, itr_batch_size=8, log_interval_itrs=5, replay_batch_size=32)
    moved = []
    diagnostics.progress = SimpleNamespace(update=moved.append)
    diagnostics.add_gathered([{"Return": 1.0}, {"Return": 2.0}], {"loss": [0.5]})
    diagnostics.add_gathered([{"Return": 3.0}, {"Return": 4.0}], {"loss": [0.25],
                                                                  "extra": [1.0]})
    assert diagnostics.cum_completed_trajs == diagnostics.new_completed_trajs == 4
    assert [t["Return"] for t in diagnostics.traj_infos] == [2.0, 3.0, 4.0]  # the window
    assert diagnostics.opt_infos == {"loss": [0.5, 0.25], "extra": [1.0]}
    assert moved == []


def test_a_sync_runner_checkpoints_through_its_own_checkpointer():
    from rlpyt.agents.pg.categorical import CategoricalPgAgent
    from rlpyt.algos.pg.ppo import PPO
    from rlpyt.envs.gym import make
    from rlpyt.runners.minibatch_rl import MinibatchRl
    from rlpyt.runners.sync_checkpointer import RankCheckpointer
    from rlpyt.runners.sync_rl import SyncRl
    from rlpyt.samplers.serial.sampler import SerialSampler

    def parts():
        sampler = SerialSampler(EnvCls=make, env_kwargs=dict(id="CartPole-v1"), batch_T=4,
                                batch_B=2, max_decorrelation_steps=0)
        return PPO(), CategoricalPgAgent(), sampler

    settings = dict(n_steps=1000, checkpoint_interval_steps=200, checkpoint_replay=False,
                    checkpoint_keep=3)
    plain = MinibatchRl(*parts(), **settings).checkpoints
    ranks = SyncRl(*parts(), affinity=[{}, {}], **settings).checkpoints
    assert type(plain) is Checkpointer and type(ranks) is RankCheckpointer
    for checkpoints in (plain, ranks):
        assert (checkpoints.interval_steps, checkpoints.include_replay, checkpoints.keep) == \
            (200, False, 3)
