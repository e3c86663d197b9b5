"""The ``rlpyt`` command: train (presets + overrides), plot, ``python -m rlpyt``."""

import csv
import json
import os
import subprocess
import sys

import pytest
import torch

from rlpyt.cli import main
from rlpyt.cli.overrides import ConfigError, apply_overrides, parse_override_args, parse_value
from rlpyt.cli.presets import PRESETS
from rlpyt.runners.minibatch_rl import MinibatchRlEval


@pytest.fixture(scope="module")
def default_run(tmp_path_factory):
    """``rlpyt train --n-steps 2000 --log-dir D`` with the PPO preset."""
    log_dir = tmp_path_factory.mktemp("cli") / "D"
    assert main(["train", "--n-steps", "2000", "--log-dir", str(log_dir)]) == 0
    return log_dir


@pytest.fixture
def capture_runner(monkeypatch):
    """Record the runner that ``rlpyt train`` builds, to inspect its components."""
    runners = []
    original = MinibatchRlEval.train

    def train(self):
        runners.append(self)
        return original(self)

    monkeypatch.setattr(MinibatchRlEval, "train", train)
    return runners


def read_params(run_dir):
    with open(os.path.join(run_dir, "params.json")) as f:
        return json.load(f)


def test_train_writes_progress_and_the_full_config(default_run):
    run_dir = default_run / "run_0"
    with open(run_dir / "progress.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert rows and int(rows[-1]["CumSteps"]) >= 2000
    assert "ReturnAverage" in rows[-1]
    config = read_params(run_dir)["config"]
    preset = PRESETS["ppo"]
    assert config["algo_name"] == "ppo" and config["env"] == {"id": "CartPole-v1"}
    assert config["algo"] == preset.algo_kwargs
    assert config["sampler"] == preset.sampler_kwargs
    assert config["runner"] == dict(preset.runner_kwargs, n_steps=2000)
    assert config["agent_class"].endswith("CategoricalPgAgent")
    assert config["seed"] == 0 and config["sampler_type"] == "serial"
    assert os.path.exists(run_dir / "params.pkl")


def test_overrides_land_in_params_and_take_effect(tmp_path, capture_runner, capsys):
    log_dir = tmp_path / "over"
    code = main(["train", "--n-steps", "600", "--log-dir", str(log_dir),
                 "--algo.learning_rate", "3e-4", "--sampler.batch_B", "4",
                 "--agent.model_kwargs.hidden_sizes", "[32,32]", "--runner.log_interval_steps=300",
                 "--seed", "3"])
    assert code == 0
    assert "Run directory" in capsys.readouterr().out
    config = read_params(log_dir / "run_0")["config"]
    assert config["algo"]["learning_rate"] == 3e-4
    assert config["algo"]["epochs"] == PRESETS["ppo"].algo_kwargs["epochs"]  # the rest kept
    assert config["sampler"]["batch_B"] == 4
    assert config["agent"]["model_kwargs"] == {"hidden_sizes": [32, 32]}
    assert config["runner"]["log_interval_steps"] == 300 and config["seed"] == 3
    (runner,) = capture_runner
    assert runner.algo.learning_rate == 3e-4 and runner.seed == 3
    assert runner.sampler.batch_spec == (32, 4)
    linears = [m for m in runner.agent.model.pi.modules() if isinstance(m, torch.nn.Linear)]
    assert [layer.out_features for layer in linears[:-1]] == [32, 32]
    with open(log_dir / "run_0" / "progress.csv", newline="") as f:
        steps = [int(r["CumSteps"]) for r in csv.DictReader(f)]
    assert steps == [0, 256, 512, 640]  # batches of 32 x 4, a row every 2 iterations


def test_config_file_restarts_from_a_saved_run(default_run, tmp_path, capture_runner):
    params = read_params(default_run / "run_0")
    params["config"]["seed"] = 5
    params["config"]["sampler"]["batch_T"] = 16
    saved = tmp_path / "params.json"
    saved.write_text(json.dumps(params))
    code = main(["train", "--config", str(saved), "--n-steps", "300", "--log-dir",
                 str(tmp_path / "again"), "--algo.epochs", "1"])
    assert code == 0
    config = read_params(tmp_path / "again" / "run_0")["config"]
    assert config["algo"] == dict(PRESETS["ppo"].algo_kwargs, epochs=1)
    assert config["seed"] == 5 and config["sampler"]["batch_T"] == 16  # kept from the file
    runner = capture_runner[0]
    assert runner.algo.epochs == 1 and runner.seed == 5 and runner.sampler.batch_spec.T == 16


def test_a_class_keyword_takes_an_import_path(tmp_path, capture_runner, capsys):
    """``--algo.OptimCls torch.optim.SGD`` (and ``module:Name``) names the class; a path
    that does not import exits 2 naming the keyword and the path."""
    for n, path in enumerate(["torch.optim.SGD", "torch.optim:RMSprop"]):
        assert main(["train", "--n-steps", "300", "--log-dir", str(tmp_path / f"ok{n}"),
                     "--algo.OptimCls", path]) == 0
    assert [type(r.algo.optimizer) for r in capture_runner] == [torch.optim.SGD,
                                                               torch.optim.RMSprop]
    assert read_params(tmp_path / "ok0" / "run_0")["config"]["algo"]["OptimCls"] == \
        "torch.optim.SGD"  # the config keeps the path, so --config reruns it
    capsys.readouterr()
    assert main(["train", "--n-steps", "300", "--log-dir", str(tmp_path / "bad"),
                 "--algo.OptimCls", "torch.optim.Sgd"]) == 2
    err = capsys.readouterr().err
    assert "algo.OptimCls='torch.optim.Sgd' does not import" in err, err
    assert not os.path.exists(tmp_path / "bad" / "run_0")


@pytest.mark.parametrize(
    "args, expected",
    [
        (["--algo.learnig_rate", "1e-3"], ["unknown keyword 'learnig_rate'", "learning_rate",
                                           "valid keywords"]),
        (["--sampler.batch_b", "4"], ["did you mean", "batch_B", "eval_max_steps"]),
        (["--model.size", "3"], ["unknown component 'model'", "'sampler'"]),
        (["--bogus", "3"], ["unrecognised argument '--bogus'"]),
        (["--algo.learning_rate"], ["needs a value"]),
    ],
)
def test_unknown_keys_exit_2_listing_valid_keys(tmp_path, capsys, args, expected):
    code = main(["train", "--n-steps", "100", "--log-dir", str(tmp_path), *args])
    assert code == 2
    err = capsys.readouterr().err  # errors go to stderr (tests/test_cli_errors.py)
    for text in expected:
        assert text in err, err
    assert not os.path.exists(tmp_path / "run_0")  # nothing was run


def test_plot_writes_a_png(default_run, capsys):
    assert main(["plot", str(default_run)]) == 0
    png = default_run / "learning_curve.png"
    with open(png, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    assert str(png) in capsys.readouterr().out


def test_plot_errors(tmp_path, capsys):
    assert main(["plot", str(tmp_path)]) == 2  # one line, no traceback
    assert "rlpyt plot: error: no progress.csv" in capsys.readouterr().err
    with pytest.raises(FileNotFoundError, match="no progress.csv"):
        main(["--debug", "plot", str(tmp_path)])


def test_python_m_rlpyt_help():
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    result = subprocess.run([sys.executable, "-m", "rlpyt", "--help"], capture_output=True,
                            text=True, timeout=120, env=env)
    assert result.returncode == 0, result.stderr
    assert "train" in result.stdout and "plot" in result.stdout
    bare = subprocess.run([sys.executable, "-m", "rlpyt"], capture_output=True, text=True,
                          timeout=120, env=env)
    assert bare.returncode == 2 and "usage" in bare.stdout


# ---------------------------------------------------------------- override parsing


def test_parse_value():
    assert parse_value("3e-4") == 3e-4 and parse_value("[32, 32]") == [32, 32]
    assert parse_value("true") is True and parse_value("None") is None
    assert parse_value("relu") == "relu" and parse_value("{'a': 1}") == {"a": 1}


def test_parse_and_apply_overrides():
    pairs = parse_override_args(["--algo.lr", "3", "--agent.model_kwargs.h=[1]"])
    assert pairs == [("algo.lr", 3), ("agent.model_kwargs.h", [1])]
    config = {"algo": {"lr": 1}, "agent": {"model_kwargs": None}}
    out = apply_overrides(config, pairs, {"algo": {"lr"}, "agent": {"model_kwargs"}})
    assert out == {"algo": {"lr": 3}, "agent": {"model_kwargs": {"h": [1]}}}
    assert config["algo"]["lr"] == 1  # the input is not modified
    with pytest.raises(ConfigError, match="not a dict"):
        apply_overrides({"algo": {"lr": 1}}, [("algo.lr.x", 2)], {"algo": {"lr"}})


def test_tensorboard_flag_writes_event_files_and_rows_print_one_line_each(tmp_path, capsys):
    pytest.importorskip("tensorboard")
    assert main(["train", "--n-steps", "512", "--log-dir", str(tmp_path), "--tensorboard",
                 "--runner.log_interval_steps", "256"]) == 0
    run_dir = tmp_path / "run_0"
    assert any(name.startswith("events.out.tfevents") for _, _, files in os.walk(run_dir)
               for name in files)
    assert read_params(run_dir)["config"]["tensorboard"] is True  # kept by --resume
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if "| itr " in line]
    assert len(rows) == 3 and "LossAverage" not in out  # itr -1, 0, 1; no table
    assert "LossAverage" in (run_dir / "debug.log").read_text()


def test_async_runner_on_ray_builds_the_async_ray_sampler():
    """``--runner async --sampler-type ray --actors N --ray-address A`` builds
    ``AsyncRaySampler`` with those keywords (no Ray is started by building it)."""
    from rlpyt.cli import build_parser
    from rlpyt.cli.train import build_components, build_config
    from rlpyt.samplers.ray_.async_sampler import AsyncRaySampler

    args, extra = build_parser().parse_known_args(
        ["train", "--algo", "dqn", "--runner", "async", "--sampler-type", "ray",
         "--actors", "3", "--ray-address", "auto", "--sampler.batch_timeout", "30"])
    sampler, _, _ = build_components(build_config(args, extra))
    assert type(sampler) is AsyncRaySampler
    assert sampler.sampler.n_actors == 3 and sampler.sampler.ray_address == "auto"
    assert sampler.batch_timeout == 30


@pytest.mark.parametrize("extra, start_line", [
    ([], "iterations of minibatch RL"),
    (["--algo", "dqn", "--runner", "async", "--algo.min_steps_learn", "200"], "Running AsyncRl:"),
])
def test_no_evaluation_envs_picks_the_runner_without_evaluation(extra, start_line, tmp_path):
    """``--sampler.eval_n_envs 0``: no evaluation (an Atari run whose measure is the
    training games' score spends no sampling time on it); rows carry the training
    trajectories' columns."""
    assert main(["train", "--n-steps", "1200", "--log-dir", str(tmp_path),
                 "--runner.log_interval_steps", "400", "--sampler.eval_n_envs", "0",
                 *extra]) == 0
    run_dir = tmp_path / "run_0"
    with open(run_dir / "progress.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert "ReturnAverage" in rows[-1] and "EvalTime (s)" not in rows[-1]
    assert start_line in (run_dir / "debug.log").read_text()


@pytest.mark.parametrize("argv, threads", [
    (["--algo", "ppo", "--env", "PongNoFrameskip-v4", "--sampler-type", "cpu"], "all"),
    (["--algo", "ppo", "--env", "PongNoFrameskip-v4"], "all"),
    (["--algo", "ppo", "--env", "PongNoFrameskip-v4", "--torch-threads", "1"], 1),
    (["--algo", "ppo", "--env", "PongNoFrameskip-v4", "--nproc", "2"], 1),
    (["--algo", "impala", "--env", "PongNoFrameskip-v4", "--runner", "async"], 1),
    (["--algo", "a2c", "--env", "PongNoFrameskip-v4"], 1),
    (["--algo", "ppo"], 1),
])
def test_torch_threads_default_is_the_presets(argv, threads):
    """PPO's Atari preset optimizes on every CPU of a synchronous one-process run (its
    workers wait meanwhile); other presets, async and multi-rank runs keep 1 thread, and
    ``--torch-threads`` wins over both."""
    from rlpyt.cli import build_parser
    from rlpyt.cli.train import build_config
    from rlpyt.utils.process import available_cpus

    args, extra = build_parser().parse_known_args(["train", *argv])
    expected = len(available_cpus()) if threads == "all" else threads
    assert build_config(args, extra)["torch_threads"] == expected


def test_torch_threads_must_be_positive(capsys):
    assert main(["train", "--torch-threads", "0"]) != 0
    assert "argument --torch-threads: 0 must be > 0" in capsys.readouterr().err
