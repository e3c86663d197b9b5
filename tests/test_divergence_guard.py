"""A non-finite loss stops the run, naming the term, the iteration and the last checkpoint."""

from __future__ import annotations

import math
import re

import pytest

from rlpyt.agents.dqn.dqn_agent import DqnAgent
from rlpyt.agents.pg.categorical import CategoricalPgAgent
from rlpyt.algos.dqn.dqn import DQN
from rlpyt.algos.pg.ppo import PPO
from rlpyt.envs.gym import make
from rlpyt.runners.base import DivergenceError
from rlpyt.runners.minibatch_rl import MinibatchRl
from rlpyt.samplers.serial.sampler import SerialSampler
from rlpyt.utils.logging.context import logger_context

NAN_AT_ITR = 6


def cartpole_sampler():
    return SerialSampler(EnvCls=make, env_kwargs=dict(id="CartPole-v1"), batch_T=8, batch_B=2,
                         max_decorrelation_steps=0)


def train_until_nan(tmp_path, algo, agent):
    runner = MinibatchRl(algo, agent, cartpole_sampler(), n_steps=400, seed=1,
                         log_interval_steps=32, checkpoint_interval_steps=32)
    with logger_context(str(tmp_path), 0, "nan", override_prefix=True):
        with pytest.raises(DivergenceError) as info:
            runner.train()
    return str(info.value)


def test_nan_in_dqn_loss_stops_the_run(tmp_path, monkeypatch):
    original = DQN.loss

    def loss(self, batch):
        value, priorities = original(self, batch)
        if self.agent.eps_itr >= NAN_AT_ITR:  # the iteration being trained
            value = value * math.nan
        return value, priorities

    monkeypatch.setattr(DQN, "loss", loss)
    algo = DQN(min_steps_learn=16, replay_size=1000, batch_size=16, replay_ratio=4,
               learning_rate=1e-3)
    message = train_until_nan(tmp_path, algo, DqnAgent())
    assert f"DQN: loss is nan at iteration {NAN_AT_ITR} " in message
    # Checkpoints are written every 2 iterations: the last good one is after itr 5.
    assert re.search(r"Last good checkpoint: \S+/run_0/checkpoints/itr_5\b", message), message


def test_nan_in_ppo_loss_stops_the_run(tmp_path, monkeypatch):
    original = PPO.loss

    def loss(self, *args, **kwargs):
        terms = original(self, *args, **kwargs)
        if self.update_counter >= NAN_AT_ITR * self.epochs * self.minibatches:
            terms = dict(terms, piLoss=terms["piLoss"] * math.nan,
                         loss=terms["loss"] * math.nan)
        return terms

    monkeypatch.setattr(PPO, "loss", loss)
    message = train_until_nan(tmp_path, PPO(epochs=2, minibatches=1), CategoricalPgAgent())
    assert "loss term 'pi_loss' is nan" in message
    assert f"at iteration {NAN_AT_ITR} " in message
    assert re.search(r"Last good checkpoint: \S+/checkpoints/itr_5\b", message), message


def test_max_abs_value_warns_in_the_log(tmp_path, capsys):
    algo = DQN(min_steps_learn=16, replay_size=1000, batch_size=16, replay_ratio=4)
    runner = MinibatchRl(algo, DqnAgent(), cartpole_sampler(), n_steps=64, seed=1,
                         log_interval_steps=32, max_abs_value=1e-9)
    with logger_context(str(tmp_path), 0, "big", override_prefix=True) as run_dir:
        runner.train()
    log = open(f"{run_dir}/debug.log").read()
    assert "WARNING: |tdAbsErr| reached" in log and "max_abs_value=1e-09" in log
