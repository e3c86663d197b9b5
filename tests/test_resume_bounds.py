"""Resuming with an ``n_steps`` the checkpoint already holds, or below it, for every
synchronous runner (``tests/test_async_runs.py`` has AsyncRl's): a finished run is
complete at once, with nothing built (no env, no worker, no rank) and its log
untouched; an ``n_steps`` below the checkpoint is refused with one error naming both
numbers (a resumed run can only go on; it used to end without a word)."""

from __future__ import annotations

import os

import pytest

from rlpyt.agents.pg.categorical import CategoricalPgAgent
from rlpyt.algos.pg.ppo import PPO
from rlpyt.envs.gym import make
from rlpyt.runners import sync_rl
from rlpyt.runners.minibatch_rl import MinibatchRl, MinibatchRlEval
from rlpyt.samplers.serial.sampler import SerialSampler
from rlpyt.utils.logging.context import logger_context

BATCH = 16 * 2  # env steps of one iteration (of each rank)


def _runner(RunnerCls, n_steps, **kwargs):
    sampler = SerialSampler(EnvCls=make, env_kwargs=dict(id="CartPole-v1"), batch_T=16,
                            batch_B=2, max_decorrelation_steps=0, eval_n_envs=1,
                            eval_max_trajectories=1)
    agent = CategoricalPgAgent(model_kwargs=dict(hidden_sizes=[16]))
    return RunnerCls(PPO(epochs=1, minibatches=1), agent, sampler, n_steps=n_steps, seed=2,
                     log_interval_steps=2 * BATCH, checkpoint_interval_steps=2 * BATCH,
                     **kwargs)


def _progress(run_dir) -> str:
    with open(os.path.join(run_dir, "progress.csv")) as f:
        return f.read()


def _nothing_built(runner):
    def startup():
        raise AssertionError("a finished run was set up to train again")
    runner.startup = startup


def _check_resumes(make_runner, run_dir, done_steps, first):
    before = _progress(run_dir)
    # Finished: the run's summary at once, nothing built.
    summary = make_runner(done_steps).train(resume=run_dir)
    for key in ("train_return", "eval_history"):
        assert summary[key] == first[key], key
    # One batch fewer rounds up to the same iterations: complete too.
    assert make_runner(done_steps - BATCH // 2).train(resume=run_dir) is not None
    # Below: refused, naming both numbers.
    below = done_steps - 2 * BATCH
    with pytest.raises(ValueError, match=f"n_steps={below} is below the {done_steps} env "
                                         f"steps the checkpoint .* already holds"):
        make_runner(below).train(resume=run_dir)
    assert _progress(run_dir) == before


@pytest.mark.parametrize("RunnerCls", [MinibatchRl, MinibatchRlEval])
def test_minibatch_resume_of_a_finished_run_and_below_its_checkpoint(RunnerCls, tmp_path):
    with logger_context(str(tmp_path), 0, "bounds", override_prefix=True,
                        snapshot_mode="none") as run_dir:
        first = _runner(RunnerCls, 4 * BATCH).train()

    def make_runner(n_steps):
        runner = _runner(RunnerCls, n_steps)
        _nothing_built(runner)
        return runner

    _check_resumes(make_runner, run_dir, 4 * BATCH, first)


@pytest.mark.timeout(300)
def test_sync_rl_resume_of_a_finished_run_and_below_its_checkpoint(tmp_path, monkeypatch):
    ranks = [dict(master_torch_threads=1, set_affinity=False)] * 2
    with logger_context(str(tmp_path), 0, "bounds", override_prefix=True,
                        snapshot_mode="none") as run_dir:
        first = _runner(sync_rl.SyncRlEval, 4 * 2 * BATCH, affinity=ranks).train()

    def no_ranks(*args, **kwargs):
        raise AssertionError("ranks were spawned to resume a finished run")

    # The launcher decides before spawning any rank (that takes seconds per rank).
    monkeypatch.setattr(sync_rl, "spawn_ranks", no_ranks)
    _check_resumes(lambda n: _runner(sync_rl.SyncRlEval, n, affinity=ranks), run_dir,
                   4 * 2 * BATCH, first)
