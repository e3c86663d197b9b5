"""A divergence that stays finite stops the run: every family at learning_rate=1e6, while
short normal runs of every family are left alone (the rule: rlpyt.runners.divergence)."""

from __future__ import annotations

import re

import pytest

from rlpyt.cli import build_parser
from rlpyt.cli.train import build_components, build_config
from rlpyt.runners.base import DivergenceError
from rlpyt.runners.divergence import DivergenceWatch
from rlpyt.runners.minibatch_rl import MinibatchRl
from rlpyt.utils.logging.context import logger_context

# The CLI presets of every family, made small: a few hundred env steps, learning early.
_REPLAY = ["--algo.min_steps_learn", "200", "--algo.replay_ratio", "8"]
_QPG = ["--algo.min_steps_learn", "200", "--algo.replay_ratio", "16", "--sampler.batch_T", "16"]
SMALL = {
    "ppo": ["--sampler.batch_T", "16", "--sampler.batch_B", "4", "--algo.epochs", "4"],
    "a2c": [],
    "impala": [],
    "dqn": _REPLAY,
    "cat_dqn": _REPLAY,
    "r2d1": ["--algo.min_steps_learn", "400", "--algo.replay_ratio", "4",
             "--sampler.batch_B", "4", "--algo.batch_B", "8"],
    "ddpg": _QPG,
    "td3": _QPG,
    "sac": _QPG,
}


def small_runner(algo: str, n_steps: int, *extra: str) -> MinibatchRl:
    args, rest = build_parser().parse_known_args(["train", "--algo", algo, *SMALL[algo],
                                                  *extra])
    config = build_config(args, rest)
    sampler, agent, algo_obj = build_components(config)
    runner_kwargs = dict(config["runner"], n_steps=n_steps, log_interval_steps=n_steps)
    return MinibatchRl(algo_obj, agent, sampler, seed=1, **runner_kwargs)


@pytest.mark.parametrize("algo", sorted(SMALL))
def test_learning_rate_1e6_stops_every_family(algo, tmp_path):
    runner = small_runner(algo, 3000, "--algo.learning_rate", "1e6")
    with logger_context(str(tmp_path), 0, algo, override_prefix=True):
        with pytest.raises(DivergenceError) as info:
            runner.train()
    message = str(info.value)
    # The non-finite guard's message: term, iteration, env steps, last good checkpoint.
    assert re.search(r"(jumped to|is nan|is inf)", message), message
    assert re.search(r"at iteration \d+ \(\d+ env steps\): training stopped\. "
                     r"Last good checkpoint: ", message), message
    assert runner.algo.update_counter < 200, "stopped long after the blow-up"


@pytest.mark.parametrize("algo", sorted(SMALL))
def test_normal_short_runs_of_every_family_are_not_stopped(algo):
    steps = {"r2d1": 1600, "ddpg": 800, "td3": 800, "sac": 800, "dqn": 1500,
             "cat_dqn": 1500}.get(algo, 2000)
    runner = small_runner(algo, steps)  # divergence="stop", the default
    runner.train()
    assert runner.algo.update_counter > 10
    assert runner.guard.watch.state_dict()["paramNorm"]


def test_warn_logs_once_and_off_trains_on(tmp_path):
    runner = small_runner("a2c", 400, "--algo.learning_rate", "1e6",
                          "--runner.divergence", "warn")
    with logger_context(str(tmp_path), 0, "warn", override_prefix=True) as run_dir:
        runner.train()
    log = open(f"{run_dir}/debug.log").read()
    assert log.count("WARNING: A2C: paramNorm jumped to") == 1, log
    small_runner("a2c", 400, "--algo.learning_rate", "1e6", "--runner.divergence",
                 "off").train()


def test_bad_divergence_keyword_is_named():
    with pytest.raises(ValueError, match=r"divergence='halt' must be one of \('stop', "
                                         r"'warn', 'off'\)"):
        small_runner("a2c", 400, "--runner.divergence", "halt")


def test_the_rule():
    watch = DivergenceWatch()
    assert watch.observe("paramNorm", 10.0, warmup=1) is None  # the start: no history yet
    assert watch.observe("paramNorm", 9_999.0, warmup=1) is None  # 999.9 x
    assert "jumped to 1.01e+07" in watch.observe("paramNorm", 1.01e7, warmup=1)
    loss = DivergenceWatch()
    for value in [1e-6] * 5:  # a term near zero: the floor of 1.0 is its scale
        assert loss.observe("loss", value) is None
    assert loss.observe("loss", 999.0) is None
    assert loss.observe("loss", 1e7) is not None
    early = DivergenceWatch()
    assert all(early.observe("loss", v) is None for v in (1.0, 1e9, 1e18, 1e27, 1e36))
    assert early.observe("loss", float("nan")) is None  # the non-finite guard's business
