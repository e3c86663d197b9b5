"""``rlpyt tune``: the search-space parser, the flags' checks, and studies on CartPole."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

pytest.importorskip("optuna")

import optuna  # noqa: E402

from rlpyt.cli import main  # noqa: E402
from rlpyt.cli.overrides import parse_value  # noqa: E402
from rlpyt.experiments.search_space import (  # noqa: E402
    Dimension,
    SearchSpaceError,
    as_flags,
    parse_dimension,
    split_search_flags,
)
from rlpyt.experiments.study import seed_objective, split_cpus  # noqa: E402

# Small CartPole PPO runs: 8 log rows of 1000 steps, a few seconds each.
CARTPOLE = ["--algo", "ppo", "--env", "CartPole-v1", "--runner.log_interval_steps", "1000",
            "--snapshot-mode", "none"]


# ---- the parser ------------------------------------------------------------------------------
def test_distributions_parse():
    assert parse_dimension("algo.lr", "loguniform(1e-5, 1e-2)") == Dimension(
        "algo.lr", "loguniform", 1e-5, 1e-2)
    assert parse_dimension("algo.x", "uniform(0,1)") == Dimension("algo.x", "uniform", 0.0, 1.0)
    assert parse_dimension("algo.n", "int(2, 10)") == Dimension("algo.n", "int", 2, 10)
    dim = parse_dimension("sampler.batch_B", "choice(8, 16, [1, 2], 'relu')")
    assert dim.choices == ("8", "16", "[1, 2]", "'relu'")
    assert parse_dimension("algo.lr", "3e-4") is None


@pytest.mark.parametrize("key, text, message", [
    ("algo.lr", "loguniform(0, 1)", "loguniform needs low > 0"),
    ("algo.lr", "uniform(1, 0.5)", "low 1.0 must be below high 0.5"),
    ("algo.lr", "uniform(1)", "takes two numbers, got 1"),
    ("algo.n", "int(1.5, 4)", "'1.5' is not an integer"),
    ("algo.n", "uniform(a, 4)", "'a' is not a finite number"),
    ("algo.x", "choice(1)", "at least two values"),
    ("algo.x", "choice(1, 1)", "repeats a value"),
    ("algo.x", "normal(0, 1)", "unknown distribution 'normal'"),
    ("algo.x", "uniform(low=0, high=1)", "by position"),
    ("n-steps", "int(1, 2)", "only component keywords"),
])
def test_bad_distributions_name_the_flag(key, text, message):
    with pytest.raises(SearchSpaceError, match=message) as info:
        parse_dimension(key, text)
    assert str(info.value).startswith(f"--{key} ")


def test_split_keeps_fixed_flags_in_order():
    tokens = ["--algo", "ppo", "--tensorboard", "--algo.lr", "loguniform(1e-4,1e-2)",
              "--sampler.batch_B=choice(8,16)", "--algo.epochs", "4"]
    fixed, dims = split_search_flags(tokens)
    assert fixed == ["--algo", "ppo", "--tensorboard", "--algo.epochs", "4"]
    assert [d.key for d in dims] == ["algo.lr", "sampler.batch_B"]
    with pytest.raises(SearchSpaceError, match="searched twice"):
        split_search_flags(["--algo.lr", "uniform(0,1)", "--algo.lr", "uniform(0,2)"])


@given(st.floats(min_value=1e-12, max_value=1e12, allow_nan=False),
       st.integers(-10**9, 10**9), st.sampled_from(["relu", "[64, 64]", "16"]))
def test_drawn_values_reach_train_as_the_same_values(x, n, text):
    flags = as_flags({"algo.x": x, "algo.n": n, "agent.c": text})
    assert flags[0::2] == ["--algo.x", "--algo.n", "--agent.c"]
    assert parse_value(flags[1]) == x and parse_value(flags[3]) == n
    assert parse_value(flags[5]) == parse_value(text)


def test_objective_of_a_run_against_a_loop():
    values = [1.0, math.nan, 3.0, 5.0, 7.0]
    assert seed_objective(values, last=2, auc=False) == 6.0
    assert seed_objective(values, last=10, auc=False) == 4.0
    assert seed_objective(values, last=1, auc=True) == 4.0
    assert math.isnan(seed_objective([math.nan], last=3, auc=False))


def test_cpus_are_shared_out():
    assert split_cpus(range(8), 2) == [(0, 1, 2, 3), (4, 5, 6, 7)]
    assert split_cpus(range(2), 3) == [(0,), (1,), (0,)]
    assert split_cpus([4, 5, 6], 2) == [(4,), (5,)]


# ---- the command's checks, before any trial ------------------------------------------------
@pytest.mark.parametrize("flags, message", [
    (["--algo.lerning_rate", "loguniform(1e-5,1e-2)"], "lerning_rate"),
    (["--algo.learning_rate", "loguniform(1e-2,1e-5)"], "must be below high"),
    (["--algo.learning_rate", "3e-4"], "nothing to search"),
    (["--seed", "3", "--algo.learning_rate", "uniform(0.1,0.2)"], "--seed is set by the tuner"),
    (["--algo.learning_rate", "choice(1e-3, [1, 2)"], "the arguments do not parse"),
    (["--sampler-type", "nosuch", "--algo.learning_rate", "uniform(0.1,0.2)"],
     "--sampler-type: invalid choice: 'nosuch'"),
    (["--algo.OptimCls", "choice(torch.optim.Adam, torch.optim.Nope)"], "torch.optim.Nope"),
    (["--prune-startup-trials", "-1", "--algo.learning_rate", "uniform(0.1,0.2)"],
     "--prune-startup-trials -1: must be >= 0"),
])
def test_bad_flags_fail_in_one_line_before_any_trial(tmp_path, capsys, flags, message):
    study = tmp_path / "study"
    code = main(["tune", "--study", str(study), "--trials", "2", *CARTPOLE, *flags])
    err = capsys.readouterr().err.strip()
    assert code == 2 and message in err and len(err.splitlines()) == 1, err
    assert not study.exists()


# ---- studies -----------------------------------------------------------------------------------
def _final_return(run_dir) -> float:
    import pandas as pd

    return float(pd.read_csv(os.path.join(run_dir, "progress.csv"))["ReturnAverage"].iloc[-3:]
                 .mean())


@pytest.mark.slow
def test_a_study_finds_a_better_learning_rate_than_a_bad_one(tmp_path, capsys):
    """From a learning rate far too small (1e-6: CartPole stays near its random return),
    four trials of 8k steps find a better one; the best trial is printed as a command
    that ``rlpyt train`` runs."""
    bad = tmp_path / "bad"
    assert main(["train", *CARTPOLE, "--n-steps", "8000", "--algo.learning_rate", "1e-6",
                 "--log-dir", str(bad), "--run-id", "0"]) == 0
    baseline = _final_return(bad / "run_0")
    study = tmp_path / "study"
    code = main(["tune", "--study", str(study), "--trials", "4", "--jobs", "2", *CARTPOLE,
                 "--n-steps", "8000", "--algo.learning_rate", "loguniform(1e-6, 1e-2)"])
    out = capsys.readouterr().out
    assert code == 0, out
    loaded = optuna.load_study(study_name="study", storage=f"sqlite:///{study}/study.db")
    assert len(loaded.trials) == 4
    assert loaded.best_value > baseline + 50, (loaded.best_value, baseline)
    command = (study / "best_command.txt").read_text().split()
    assert command[:2] == ["rlpyt", "train"]
    assert (study / "history.png").stat().st_size > 0
    assert (study / "importances.png").stat().st_size > 0
    assert main([*command[1:], "--n-steps", "2000", "--log-dir", str(tmp_path / "best")]) == 0


def _tune_with_space(tmp_path, text: str, *flags: str):
    """``rlpyt tune`` on CartPole with a space file of ``text``: (study folder, exit code)."""
    space = tmp_path / "space.py"
    space.write_text(text)
    study = tmp_path / "study"
    return study, main(["tune", "--study", str(study), "--space", str(space), *flags,
                        *CARTPOLE])


SPACE = """
def space(trial):
    # Trial 0 learns in a short run, every later one cannot learn in a long one: the
    # pruner has one to compare with, and stops the long one early.
    if trial.number == 0:
        return {"algo.learning_rate": 3e-3, "runner.n_steps": 8000}
    return {"algo.learning_rate": 1e-7, "runner.n_steps": 200000}
"""


def _processes_naming(path) -> list:
    import psutil

    found = []
    for proc in psutil.process_iter(["pid", "cmdline"]):
        if str(path) in " ".join(proc.info["cmdline"] or ()):
            found.append(proc)
    return found


@pytest.mark.slow
def test_a_pruned_trial_stops_its_runs_and_is_marked(tmp_path, capsys):
    study, code = _tune_with_space(tmp_path, SPACE, "--trials", "2", "--startup-trials", "1",
                                   "--prune-startup-trials", "1", "--warmup-steps", "4000")
    out = capsys.readouterr().out
    assert code == 0 and "[trial 1 PRUNED]" in out, out
    marker = json.loads((study / "trial_0001" / ".pruned").read_text())
    assert 4000 <= marker["step"] < 200_000
    assert not (study / "trial_0001" / "run_0" / ".done").exists()
    assert (study / "trial_0000" / "run_0" / ".done").exists()
    assert _processes_naming(study) == []


def _tuner(study, *extra) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "rlpyt", "tune", "--study", str(study), "--trials", "3",
         "--pruner", "none", *CARTPOLE, "--algo.learning_rate", "loguniform(1e-4,1e-2)",
         *extra],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _wait_for_line(proc, text: str, timeout: float = 120) -> list[str]:
    lines, deadline = [], time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line)
        if text in line:
            return lines
    raise AssertionError(f"no {text!r} in the tuner's output:\n{''.join(lines)}")


@pytest.mark.slow
def test_a_killed_tuner_resumes_keeping_finished_trials_and_retrying_the_interrupted(tmp_path):
    study = tmp_path / "study"
    tuner = _tuner(study, "--n-steps", "4000")
    _wait_for_line(tuner, "[trial 0 done]")
    first = optuna.load_study(study_name="study", storage=f"sqlite:///{study}/study.db")
    _wait_for_line(tuner, "[trial 1 start]")
    time.sleep(2)  # trial 1 is training
    tuner.send_signal(signal.SIGKILL)
    tuner.wait()
    deadline = time.monotonic() + 30
    while _processes_naming(study) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _processes_naming(study) == []  # the runs died with their tuner
    value0 = first.trials[0].value

    resumed = _tuner(study, "--n-steps", "4000")
    out, _ = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, out
    assert "[trial 1 interrupted] queued to run again" in out
    assert "again for trial 1]" in out
    loaded = optuna.load_study(study_name="study", storage=f"sqlite:///{study}/study.db")
    states = [t.state for t in loaded.trials]
    assert states[0] == optuna.trial.TrialState.COMPLETE and loaded.trials[0].value == value0
    assert states[1] == optuna.trial.TrialState.FAIL
    assert loaded.user_attrs["interrupted_trials"] == [1]
    retry = next(t for t in loaded.trials if t.user_attrs.get("retry_of") == 1)
    assert retry.params == loaded.trials[1].params and retry.state.is_finished()
    assert sum(s == optuna.trial.TrialState.COMPLETE for s in states) == 3


def test_dashboard_without_optuna_dashboard_says_how_to_install_it(tmp_path, capsys,
                                                                   monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no optuna-dashboard on it
    code = main(["tune", "--study", str(tmp_path / "study"), "--trials", "1", "--dashboard",
                 *CARTPOLE, "--algo.learning_rate", "uniform(1e-4,1e-3)"])
    assert code == 2 and "pip install optuna-dashboard" in capsys.readouterr().err


def test_a_study_started_with_other_settings_is_refused(tmp_path, capsys):
    study = tmp_path / "study"
    study.mkdir()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    made = optuna.create_study(study_name="study", storage=f"sqlite:///{study}/study.db")
    made.set_user_attr("plan", {"train_flags": ["--algo", "dqn"]})
    code = main(["tune", "--study", str(study), "--trials", "1", *CARTPOLE,
                 "--algo.learning_rate", "uniform(1e-4,1e-3)"])
    err = capsys.readouterr().err
    assert code == 2 and "made with other settings" in err and "train_flags" in err


FAILING_SPACE = """
def space(trial):
    # A learning rate the flags' checks let through and the optimizer refuses, then one
    # that runs.
    return {"algo.learning_rate": -1.0 if trial.number == 0 else 1e-3}
"""


@pytest.mark.slow
def test_a_failing_trial_is_reported_and_the_study_goes_on(tmp_path, capsys):
    study, code = _tune_with_space(tmp_path, FAILING_SPACE, "--trials", "2", "--pruner",
                                   "none", "--n-steps", "2000")
    out = capsys.readouterr().out
    assert code == 0, out
    assert "[trial 0 FAILED] trial_0000/run_0 exit code 2: rlpyt train: error: " in out, out
    assert "learning_rate" in out.split("[trial 0 FAILED]")[1].splitlines()[0]
    assert "[trial 1 done]" in out
    loaded = optuna.load_study(study_name="study", storage=f"sqlite:///{study}/study.db")
    assert [t.state for t in loaded.trials] == [optuna.trial.TrialState.FAIL,
                                                optuna.trial.TrialState.COMPLETE]


@pytest.mark.slow
def test_tuners_as_ray_tasks_share_the_study(tmp_path):
    """``--backend ray``: two tuners as tasks of a local Ray, each asking the shared
    SQLite study for trials, draw different trials and stop at the study's count."""
    pytest.importorskip("ray")
    study = tmp_path / "study"
    proc = subprocess.run(
        [sys.executable, "-m", "rlpyt", "tune", "--backend", "ray", "--study", str(study),
         "--trials", "3", "--jobs", "2", "--pruner", "none", *CARTPOLE, "--n-steps", "2000",
         "--algo.learning_rate", "loguniform(1e-5,1e-2)"],
        capture_output=True, text=True, timeout=400)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Started 2 tuners as Ray tasks" in proc.stdout
    loaded = optuna.load_study(study_name="study", storage=f"sqlite:///{study}/study.db")
    done = [t for t in loaded.trials if t.state == optuna.trial.TrialState.COMPLETE]
    assert 3 <= len(done) <= 4  # two tuners may each start a trial at the last count
    assert len({t.params["algo.learning_rate"] for t in done}) == len(done)
    assert len({t.user_attrs["tuner"] for t in done}) == 2
    assert not (study / ".ray_tune_token").exists()
    assert _processes_naming(study) == []


BROKEN_SPACE = """
def space(trial):
    if trial.number == 1:
        raise RuntimeError("space broke on trial 1")
    return {"algo.learning_rate": 1e-3}
"""


@pytest.mark.slow
def test_a_failing_space_function_ends_the_study_and_leaves_no_trial_running(tmp_path, capsys):
    study, code = _tune_with_space(tmp_path, BROKEN_SPACE, "--trials", "3", "--pruner",
                                   "none", "--n-steps", "2000")
    err = capsys.readouterr().err
    assert code == 1 and "space broke on trial 1" in err, err
    loaded = optuna.load_study(study_name="study", storage=f"sqlite:///{study}/study.db")
    assert [t.state for t in loaded.trials] == [optuna.trial.TrialState.COMPLETE,
                                                optuna.trial.TrialState.FAIL]
    assert _processes_naming(study) == []
