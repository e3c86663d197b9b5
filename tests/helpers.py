"""Shared helpers for tests: partially observed envs and learning-test plumbing."""

from __future__ import annotations

import os
from dataclasses import dataclass

import gymnasium as gym
import numpy as np
import pytest

from rlpyt.envs.gym import GymEnvWrapper
from rlpyt.runners.minibatch_rl import MinibatchRlEval
from rlpyt.utils.logging.context import logger_context


class VelocityMask(gym.ObservationWrapper):
    """CartPole with the velocity entries (cart and pole) zeroed: needs memory to balance."""

    def observation(self, observation):
        masked = np.array(observation, dtype=np.float32)
        masked[[1, 3]] = 0.0
        return masked


def make_masked_cartpole(**kwargs) -> GymEnvWrapper:
    """EnvCls for velocity-masked CartPole-v1 (kwargs go to ``gymnasium.make``)."""
    return GymEnvWrapper(VelocityMask(gym.make("CartPole-v1", **kwargs)))


@dataclass(frozen=True)
class EndOfRun:
    """The rule every learning test applies to each seed: reach the threshold, and still
    hold most of it at the end of the run.

    A seed trains until ``evals`` evaluations have followed its first evaluation at or
    above ``threshold`` (or to its step budget, whichever comes first): that is the end
    of its run.  It passes when it reached ``threshold`` and the mean of its last
    ``evals`` evaluations is at least ``bar``: ``fraction`` of the threshold (for a
    negative threshold, ``(1 - fraction) * |threshold|`` below it).  A method that
    solves a task and then collapses fails; stopping ``evals`` evaluations after solving
    (not at the budget) keeps the tests' CI time near that of the first crossing.
    """

    threshold: float
    evals: int = 2
    fraction: float = 0.9

    @property
    def bar(self) -> float:
        return self.threshold - (1 - self.fraction) * abs(self.threshold)

    def reached_at(self, history) -> int | None:
        """Index of the first evaluation at or above the threshold (None: not reached)."""
        return next((i for i, (_, ret) in enumerate(history) if ret >= self.threshold), None)

    def should_stop(self, history) -> bool:
        """Whether the run has ended: ``evals`` evaluations after the first crossing."""
        first = self.reached_at(history)
        return first is not None and len(history) - 1 - first >= self.evals

    def judge(self, history) -> dict:
        """``reached_at`` (steps), ``best``, ``final`` (mean of the last ``evals``
        evaluations) and ``passed`` of one seed's ``[(steps, return), ...]``."""
        returns = [ret for _, ret in history]
        first = self.reached_at(history)
        final = sum(returns[-self.evals:]) / max(len(returns[-self.evals:]), 1)
        return dict(reached_at=None if first is None else history[first][0],
                    best=max(returns, default=float("nan")),
                    final=final if returns else float("nan"),
                    passed=first is not None and final >= self.bar)

    def describe(self, name: str, seed, history) -> str:
        v = self.judge(history)
        outcome = "passed" if v["passed"] else "FAILED"
        return (f"{name} seed {seed}: {outcome}: reached {self.threshold:g} at "
                f"{v['reached_at']} steps, mean of the last {self.evals} evaluations "
                f"{v['final']:.1f} (bar {self.bar:g}), best {v['best']:.1f}; history "
                f"{[(steps, round(ret, 1)) for steps, ret in history]}")


class EarlyStopRunner(MinibatchRlEval):
    """Ends the run by ``end_of_run`` (``EndOfRun.should_stop``), or at ``n_steps``.

    Ending early never makes a test pass that would fail on the same evaluations: the
    threshold was reached within the step budget, and the run's last evaluations are
    the ones judged.
    """

    def __init__(self, *args, end_of_run: EndOfRun, **kwargs):
        super().__init__(*args, **kwargs)
        self.end_of_run = end_of_run

    def should_stop(self) -> bool:
        return self.end_of_run.should_stop(self.eval_history)


def train_until(algo, agent, sampler, n_steps, seed, end_of_run: EndOfRun, log_dir,
                log_interval_steps) -> dict:
    """Train with evaluation to the end of the run; returns the runner summary
    (``eval_history``) with the verdict of ``end_of_run.judge`` merged in."""
    runner = EarlyStopRunner(algo=algo, agent=agent, sampler=sampler, n_steps=n_steps, seed=seed,
                             log_interval_steps=log_interval_steps, end_of_run=end_of_run)
    with logger_context(str(log_dir), seed, "learning", override_prefix=True):
        summary = runner.train()
    summary.update(end_of_run.judge(summary["eval_history"]))
    summary["steps"] = summary["eval_history"][-1][0] if summary["eval_history"] else 0
    return summary


def k_of_n(train_seed, seeds, needed: int, end_of_run: EndOfRun, name: str) -> list:
    """Train ``seeds`` in order (``train_seed(seed) -> [(steps, return), ...]``) until the
    outcome is decided, print each seed's verdict, and assert that at least ``needed``
    seeds pass ``end_of_run``; returns the printed lines."""
    passes = failures = 0
    lines = []
    for seed in seeds:
        if passes >= needed or failures > len(seeds) - needed:
            lines.append(f"{name} seed {seed}: not run (outcome already decided)")
            print(lines[-1], flush=True)
            continue
        history = train_seed(seed)
        passed = end_of_run.judge(history)["passed"]
        passes += passed
        failures += not passed
        lines.append(end_of_run.describe(name, seed, history))
        print(lines[-1], flush=True)
    assert passes >= needed, (f"{name}: {passes} of {len(seeds)} seeds passed, {needed} "
                              f"needed\n" + "\n".join(lines))
    return lines


FULL_SEEDS_ENV = "RLPYT_FULL_SEEDS"


def seed_plan(full: tuple[int, int], quick: tuple[int, int]) -> tuple[int, range]:
    """``(needed, seeds)`` of a k-of-n learning test, each plan given as ``(k, n)``: the
    ``quick`` plan in ``make test`` (kept within CI's time budget), the ``full`` one when
    ``RLPYT_FULL_SEEDS=1`` (``make learning`` sets it; the figures in docs/notes/
    come from full plans)."""
    needed, n = full if full_plans() else quick
    return needed, range(n)


def full_plans() -> bool:
    """True under ``make learning`` (``RLPYT_FULL_SEEDS=1``)."""
    return os.environ.get(FULL_SEEDS_ENV) == "1"


def make_learning_only(why: str):
    """Mark for a learning test that runs under ``make learning`` only: one that repeats
    an algorithm and task another learning test in ``make test`` already covers (on
    another sampler or runner, or with options that unit tests check), or one too long
    for CI's budget; ``why`` says which."""
    return pytest.mark.skipif(not full_plans(), reason=f"{why}: make learning runs it "
                                                       f"(RLPYT_FULL_SEEDS=1); CI's time budget")




def write_score_run(run, rows) -> None:
    """A run folder whose progress.csv has ``(CumSteps, CumTime (s), GameScoreAverage)``
    rows (the columns the Atari time-to-score table reads)."""
    import csv

    run.mkdir(parents=True)
    with open(run / "progress.csv", "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["CumSteps", "CumTime (s)", "GameScoreAverage"])
        writer.writerows(rows)


def train_config(*argv: str) -> dict:
    """The config ``rlpyt train *argv`` builds (preset values with the flags applied)."""
    import argparse

    from rlpyt.cli.train import add_train_parser, build_config

    parser = argparse.ArgumentParser()
    add_train_parser(parser.add_subparsers())
    args, extra = parser.parse_known_args(["train", *argv])
    return build_config(args, extra)


def train_preset(flags: list[str], seed: int, n_steps: int, end_of_run: EndOfRun, log_dir,
                 log_interval_steps: int, name: str) -> list:
    """Train ``rlpyt train``'s preset for ``flags`` (``["--algo", "dqn", "--env", ...]``)
    as a launch script gets it, with ``seed``, until ``end_of_run``; prints the CPU time
    and returns the run's ``eval_history``."""
    import contextlib
    import io
    import time

    from rlpyt.cli.train import build_components

    sampler, agent, algorithm = build_components(train_config(*flags, "--seed", str(seed)))
    start = time.process_time()
    with contextlib.redirect_stdout(io.StringIO()):
        summary = train_until(algorithm, agent, sampler, n_steps, seed, end_of_run, log_dir,
                              log_interval_steps)
    print(f"{name} seed {seed}: {time.process_time() - start:.0f} s CPU", flush=True)
    return summary["eval_history"]
