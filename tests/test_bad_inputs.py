"""Bad inputs stop a run before any env is built, naming the argument, value and fix."""

from __future__ import annotations

import os
import re

import pytest
import torch

from rlpyt.agents.dqn.dqn_agent import DqnAgent
from rlpyt.agents.dqn.r2d1_agent import R2d1Agent
from rlpyt.agents.pg.categorical import CategoricalPgAgent
from rlpyt.agents.qpg.sac_agent import SacAgent
from rlpyt.algos.dqn.dqn import DQN
from rlpyt.algos.dqn.r2d1 import R2D1
from rlpyt.algos.pg.ppo import PPO
from rlpyt.algos.qpg.sac import SAC
from rlpyt.cli import main
from rlpyt.runners.minibatch_rl import MinibatchRl
from rlpyt.samplers.serial.sampler import SerialSampler


def untouchable_env(**kwargs):
    raise AssertionError("an env was built before the bad input was reported")


def run(algo, agent, n_steps=1000, batch_T=4, batch_B=2, **runner_kwargs):
    sampler = SerialSampler(EnvCls=untouchable_env, env_kwargs={}, batch_T=batch_T,
                            batch_B=batch_B)
    MinibatchRl(algo, agent, sampler, n_steps=n_steps, seed=0, **runner_kwargs).train()


@pytest.mark.parametrize("algo, agent, match", [
    (lambda: SAC(), CategoricalPgAgent, r"SAC cannot train a CategoricalPgAgent.*SacAgent"),
    (lambda: DQN(), CategoricalPgAgent, r"DQN cannot train a CategoricalPgAgent.*DqnAgent"),
    (lambda: PPO(), DqnAgent, r"PPO cannot train a DqnAgent.*policy-gradient agent"),
    (lambda: R2D1(), DqnAgent, r"R2D1 cannot train a DqnAgent.*R2d1Agent"),
])
def test_algorithm_given_an_agent_of_another_family(algo, agent, match):
    with pytest.raises(TypeError, match=match):
        run(algo(), agent())


@pytest.mark.parametrize("algo, agent", [
    (lambda: DQN(replay_size=16, batch_size=32, min_steps_learn=10), DqnAgent),
    (lambda: SAC(replay_size=100, batch_size=256, min_steps_learn=10), SacAgent),
])
def test_replay_smaller_than_a_training_batch(algo, agent):
    with pytest.raises(ValueError, match=r"replay_size=\d+ is smaller than batch_size=\d+"):
        run(algo(), agent())


def test_replay_smaller_than_a_sampler_batch():
    algo = DQN(replay_size=64, batch_size=8, min_steps_learn=10)
    with pytest.raises(ValueError, match=r"replay_size=64 gives 2 steps.*batch_B=32.*"
                                         r"batch_T=16.*replay_size >= 512"):
        run(algo, DqnAgent(), batch_T=16, batch_B=32, n_steps=10_000)


def test_replay_shorter_than_an_r2d1_sequence():
    algo = R2D1(replay_size=200, batch_B=2, batch_T=40, warmup_T=20, min_steps_learn=10)
    with pytest.raises(ValueError, match=r"warmup_T=20, batch_T=40.*replay_size >= "):
        run(algo, R2d1Agent(), batch_B=4)


def test_min_steps_learn_at_or_above_n_steps():
    with pytest.raises(ValueError, match=r"min_steps_learn=1000 is not below .*n_steps=1000"):
        run(DQN(min_steps_learn=1000, replay_size=1000, batch_size=8), DqnAgent(), n_steps=1000)


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a CPU-only torch")
def test_cuda_idx_on_cpu_only_torch():
    with pytest.raises(ValueError, match=r"cuda_idx=0, but this torch has no usable CUDA"):
        run(PPO(), CategoricalPgAgent(), affinity=dict(cuda_idx=0))


def test_mistyped_model_kwargs_key_names_the_valid_ones():
    agent = CategoricalPgAgent(model_kwargs=dict(hiden_sizes=[8]))
    with pytest.raises(ValueError, match=r"'hiden_sizes'.*did you mean 'hidden_sizes'.*valid "
                                         r"keys: \[.*'hidden_sizes'"):
        run(PPO(), agent)


@pytest.mark.parametrize("hidden_sizes", ["[a,b]", "64", [64, 0], [True], 0])
def test_hidden_sizes_that_are_not_widths_are_shown_as_given(hidden_sizes):
    """A string is refused whole, not read as a list of its characters."""
    from rlpyt.models.mlp import MlpModel

    with pytest.raises(ValueError, match=r"hidden_sizes must be a positive int or a sequence "
                                         r"of positive ints, got " + re.escape(repr(hidden_sizes))
                       + "$"):
        MlpModel(4, hidden_sizes, 2)


# ---- the command line: one line on stderr, exit code 2, nothing written -----------------

@pytest.mark.parametrize("args, expected", [
    (["--algo.learning_rate", "abc"], "--algo.learning_rate 'abc': not a number; the default"),
    (["--algo.learnin_rate", "1e-3"], "did you mean learning_rate?"),
    (["--workers", "0"], "argument --workers: 0 must be > 0"),
    (["--n-steps", "0"], "argument --n-steps: 0 must be > 0"),
    (["--config", "/no/such/params.json"], "--config '/no/such/params.json': no such file"),
    (["--agent.model_kwargs.hiden_sizes", "[8]"], "did you mean 'hidden_sizes'?"),
    (["--algo", "dqn", "--algo.min_steps_learn", "5000", "--n-steps", "5000"],
     "min_steps_learn=5000 is not below the run's n_steps=5000"),
    (["--algo", "dqn", "--algo.replay_size", "16"], "replay_size=16 is smaller than batch_size"),
    (["--algo", "sac", "--algo.replay_size", "32"], "replay_size=32 is smaller than batch_size"),
] + ([] if torch.cuda.is_available() else
     [(["--cuda-idx", "0"], "--cuda-idx 0: cuda_idx=0, but this torch has no usable CUDA")]))
def test_cli_bad_inputs_exit_2_with_one_line(tmp_path, capsys, args, expected):
    code = main(["train", "--log-dir", str(tmp_path / "runs"), *args])
    assert code == 2
    captured = capsys.readouterr()
    text = (captured.out + captured.err).strip()
    assert expected in text, text
    assert "Traceback" not in text and len(text.splitlines()) == 1, text
    assert not os.path.exists(tmp_path / "runs" / "run_0")


def test_cli_debug_flag_shows_the_traceback(tmp_path):
    with pytest.raises(ValueError, match="min_steps_learn"):
        main(["--debug", "train", "--algo", "dqn", "--algo.min_steps_learn", "9000",
              "--n-steps", "5000", "--log-dir", str(tmp_path)])


# ---- a mistyped keyword in the Python API suggests the nearest valid one ------------------
@pytest.mark.parametrize("build,typo,suggestion", [
    ("rlpyt.algos.pg.ppo:PPO", "learnin_rate", "learning_rate"),
    ("rlpyt.algos.dqn.dqn:DQN", "replay_ration", "replay_ratio"),
    ("rlpyt.agents.dqn.r2d1_agent:R2d1Agent", "eps_finl", "eps_final"),
    ("rlpyt.samplers.serial.sampler:SerialSampler", "batch_t", "batch_T"),
    ("rlpyt.samplers.async_.cpu_sampler:AsyncCpuSampler", "bach_timeout", "batch_timeout"),
    ("rlpyt.runners.minibatch_rl:MinibatchRlEval", "log_interval_step", "log_interval_steps"),
])
def test_python_api_typo_suggests_the_nearest_keyword(build, typo, suggestion):
    import importlib

    module, name = build.split(":")
    cls = getattr(importlib.import_module(module), name)
    with pytest.raises(TypeError, match=f"{name} got an unexpected keyword argument "
                                        f"'{typo}'; did you mean '{suggestion}'"):
        cls(**{typo: 1})
