"""rlpyt.utils.launching.exp_launcher (local and Ray) and rlpyt.experiments.launch_grid."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from rlpyt.experiments.launch_grid import launch_grid, load_grid
from rlpyt.experiments.launch_grid import main as launch_main
from rlpyt.utils.launching import ray_backend
from rlpyt.utils.launching.affinity import affinity_from_code, encode_affinity
from rlpyt.utils.launching.cpus import available_cpus
from rlpyt.utils.launching.exp_launcher import run_experiments
from rlpyt.utils.launching.runs import RunRequest, read_done_marker
from rlpyt.utils.launching.variant import VariantLevel, make_variants

N_SLOTS = min(2, len(available_cpus()))
AFFINITY_CODE = encode_affinity(n_cpu_core=N_SLOTS, cpu_per_run=1)

# A real rlpyt launch script: serial PPO on CartPole for a few hundred steps. It
# fails on purpose when its variant says so, and records the CPUs it was pinned to.
TINY_PPO = """
import json, os, sys

slot_code, log_dir, run_ID = sys.argv[1], sys.argv[2], int(sys.argv[3])
from rlpyt.utils.launching.variant import load_variant, update_config

variant = load_variant(log_dir)
if variant.pop("fail_run_ID", None) == run_ID:
    sys.exit(f"deliberate failure of run {run_ID}")

from rlpyt.agents.pg.categorical import CategoricalPgAgent
from rlpyt.algos.pg.ppo import PPO
from rlpyt.envs.gym import make as gym_make
from rlpyt.runners.minibatch_rl import MinibatchRl
from rlpyt.samplers.serial.sampler import SerialSampler
from rlpyt.utils.launching.affinity import affinity_cpus, affinity_from_code
from rlpyt.utils.logging.context import logger_context

config = update_config(
    dict(algo=dict(learning_rate=1e-3, epochs=2, minibatches=2),
         sampler=dict(batch_T=32, batch_B=2)),
    variant,
)
affinity = affinity_from_code(slot_code)
runner = MinibatchRl(
    algo=PPO(**config["algo"]),
    agent=CategoricalPgAgent(),
    sampler=SerialSampler(EnvCls=gym_make, env_kwargs=dict(id="CartPole-v1"),
                          **config["sampler"]),
    n_steps=int(sys.argv[4]),
    log_interval_steps=64,
    seed=run_ID,
    affinity=affinity,
)
with logger_context(log_dir, run_ID, "tiny_ppo", config) as run_dir:
    runner.train()
with open(os.path.join(run_dir, "cpus.json"), "w") as f:
    json.dump(dict(slot_code=slot_code, affinity_cpus=affinity_cpus(affinity),
                   pinned=sorted(os.sched_getaffinity(0))
                   if hasattr(os, "sched_getaffinity") else None), f)
"""


def write_script(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return str(path)


def ppo_grid(batch_sizes: tuple = (2, 4)):
    """2 learning rates x the batch sizes; run 1 of the first setting fails on purpose."""
    variants, log_dirs = make_variants(
        VariantLevel([("algo", "learning_rate")], [(1e-3,), (3e-4,)], ["lr_1e-3", "lr_3e-4"]),
        VariantLevel([("sampler", "batch_B")], [(b,) for b in batch_sizes],
                     [f"B_{b}" for b in batch_sizes]),
    )
    variants[0]["fail_run_ID"] = 1
    return variants, log_dirs


def check_ppo_grid_outputs(summary, exp_dir, log_dirs, variants):
    statuses = {r.name: r.status for r in summary.results}
    failed_name = f"{log_dirs[0]}/run_1"
    assert statuses.pop(failed_name) == "failed"
    assert set(statuses.values()) == {"done"} and len(statuses) == 2 * len(variants) - 1
    (failed,) = summary.failed
    assert failed.returncode == 1
    with open(failed.log_path) as f:
        assert "deliberate failure of run 1" in f.read()
    assert read_done_marker(failed.run_dir) is None
    for log_dir, variant in zip(log_dirs, variants):
        setting = os.path.join(exp_dir, log_dir)
        with open(os.path.join(setting, "variant_config.json")) as f:
            assert json.load(f) == variant
        for run_ID in (0, 1):
            if f"{log_dir}/run_{run_ID}" == failed_name:
                continue
            run_dir = os.path.join(setting, f"run_{run_ID}")
            with open(os.path.join(run_dir, "progress.csv")) as f:
                rows = f.read().strip().splitlines()
            assert len(rows) >= 2 and "CumSteps" in rows[0]
            assert read_done_marker(run_dir)["returncode"] == 0
            assert os.path.isfile(os.path.join(run_dir, "launch.log"))
    tree = open(os.path.join(exp_dir, "experiments_tree.txt")).read()
    last_batch = log_dirs[-1].rsplit("/", 1)[-1]
    assert "lr_1e-3/" in tree and f"{last_batch}/  run_0 run_1" in tree
    text = open(os.path.join(exp_dir, "experiments_summary.txt")).read()
    assert "FAILED" in text and failed.log_path in text


def run_cpus(exp_dir, name):
    with open(os.path.join(exp_dir, name, "cpus.json")) as f:
        return json.load(f)


# ---------------------------------------------------------------- local grid


def test_local_grid_runs_reports_failure_and_resumes(tmp_path, capsys):
    script = write_script(tmp_path, "tiny_ppo.py", TINY_PPO)
    variants, log_dirs = ppo_grid()
    exp_dir = str(tmp_path / "exp")
    kwargs = dict(script=script, affinity_code=AFFINITY_CODE, experiment_title="tiny",
                  runs_per_setting=2, variants=variants, log_dirs=log_dirs,
                  common_args=[256], exp_dir=exp_dir)
    summary = run_experiments(**kwargs)
    check_ppo_grid_outputs(summary, exp_dir, log_dirs, variants)
    out = capsys.readouterr().out
    assert "8 runs, 7 done, 0 skipped (completed earlier), 1 failed" in out
    assert f"log: {summary.failed[0].log_path}" in out
    # Each run was pinned to its own slot's CPU, and resolved its slot on the same list.
    slot_cpus = [affinity_from_code(f"{s}slt_{AFFINITY_CODE}")["master_cpus"]
                 for s in range(N_SLOTS)]
    for result in summary.results:
        if result.status == "done":
            record = run_cpus(exp_dir, result.name)
            slot = int(record["slot_code"].split("slt")[0])
            if record["pinned"] is not None:
                assert tuple(record["pinned"]) == slot_cpus[slot]
            assert tuple(record["affinity_cpus"]) == slot_cpus[slot]

    done_markers = {r.name: os.path.getmtime(os.path.join(r.run_dir, ".done"))
                    for r in summary.results if r.status == "done"}
    again = run_experiments(**kwargs)
    assert again.count("skipped") == 7 and again.count("done") == 0
    assert [r.name for r in again.failed] == [summary.failed[0].name]  # only it ran again
    for name, mtime in done_markers.items():
        assert os.path.getmtime(os.path.join(exp_dir, name, ".done")) == mtime
    attempts = os.listdir(os.path.join(exp_dir, log_dirs[0], "failed_attempts"))
    assert len(attempts) == 1 and attempts[0].startswith("run_1_")


SLEEPER = """
import os, subprocess, sys, time
run_dir = os.path.join(sys.argv[2], f"run_{sys.argv[3]}")
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
with open(os.path.join(run_dir, "pids.txt"), "w") as f:
    f.write(f"{os.getpid()} {child.pid}")
block = os.path.join(os.path.dirname(os.path.abspath(__file__)), "block")
while os.path.exists(block):
    time.sleep(0.05)
child.kill()
"""

LAUNCH_SLEEPERS = """
import signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)
from rlpyt.utils.launching.exp_launcher import run_experiments
run_experiments(sys.argv[1], sys.argv[2], "sleepers", 1, [{{}}, {{}}, {{}}], ["a", "b", "c"],
                exp_dir=sys.argv[3], poll_interval=0.05)
"""


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # A zombie is dead for our purpose.
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return True


def wait_for(predicate, timeout=30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def start_sleeper_grid(tmp_path):
    (tmp_path / "block").write_text("")
    script = write_script(tmp_path, "sleeper.py", SLEEPER)
    launcher = write_script(tmp_path, "launch.py", LAUNCH_SLEEPERS.format())
    exp_dir = tmp_path / "exp"
    process = subprocess.Popen(
        [sys.executable, launcher, script, AFFINITY_CODE, str(exp_dir)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    pid_files = [exp_dir / d / "run_0" / "pids.txt" for d in ("a", "b")[:N_SLOTS]]
    assert wait_for(lambda: all(p.exists() and p.read_text() for p in pid_files)), \
        "runs did not start"
    pids = [int(p) for f in pid_files for p in f.read_text().split()]
    assert all(alive(p) for p in pids)
    return process, script, exp_dir, pids


@pytest.mark.skipif(not hasattr(os, "killpg"), reason="needs POSIX process groups")
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_interrupted_grid_stops_run_trees_and_resumes(tmp_path, signum):
    process, script, exp_dir, pids = start_sleeper_grid(tmp_path)
    process.send_signal(signum)
    out, _ = process.communicate(timeout=60)
    assert process.returncode != 0
    assert wait_for(lambda: not any(alive(p) for p in pids), 15), "orphans left behind"
    assert f"{N_SLOTS} stopped, {3 - N_SLOTS} not started" in out
    # Launched again, the stopped and unstarted runs run to completion.
    (tmp_path / "block").unlink()
    summary = run_experiments(script, AFFINITY_CODE, "sleepers", 1, [{}, {}, {}],
                              ["a", "b", "c"], exp_dir=str(exp_dir), verbose=False)
    assert summary.ok and summary.count("done") == 3
    assert os.listdir(exp_dir / "a" / "failed_attempts")  # the stopped attempt, set aside


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="parent-death signal is Linux")
def test_killed_launcher_leaves_no_orphans(tmp_path):
    process, _, _, pids = start_sleeper_grid(tmp_path)
    process.kill()
    process.communicate(timeout=30)
    assert wait_for(lambda: not any(alive(p) for p in pids), 15), "orphans left behind"


# ---------------------------------------------------------------- launcher checks


@pytest.fixture
def quick_script(tmp_path):
    return write_script(tmp_path, "quick.py", """
        import os, sys
        from rlpyt.utils.launching.variant import load_variant
        run_dir = os.path.join(sys.argv[2], f"run_{sys.argv[3]}")
        with open(os.path.join(run_dir, "out.txt"), "w") as f:
            f.write(repr((load_variant(sys.argv[2]), sys.argv[4:])))
    """)


def test_args_reach_the_script_and_changed_runs_are_not_skipped(tmp_path, quick_script):
    exp_dir = str(tmp_path / "exp")
    kwargs = dict(experiment_title="q", runs_per_setting=1, variants=[{"x": 1}, {"x": 2}],
                  log_dirs=["s1", "s2"], exp_dir=exp_dir, verbose=False)
    summary = run_experiments(quick_script, AFFINITY_CODE, common_args=["--a", 1],
                              runs_args=[["p"], ["q"]], **kwargs)
    assert summary.ok
    out = open(os.path.join(exp_dir, "s2", "run_0", "out.txt")).read()
    assert out == repr(({"x": 2}, ["--a", "1", "q"]))
    with pytest.raises(ValueError, match="completed with a different variant or args"):
        run_experiments(quick_script, AFFINITY_CODE, common_args=["--a", 2],
                        runs_args=[["p"], ["q"]], **kwargs)


def test_default_exp_dir_is_under_data_local(tmp_path, quick_script, monkeypatch):
    monkeypatch.chdir(tmp_path)
    summary = run_experiments(quick_script, AFFINITY_CODE, "title", 1, [{}], ["s"],
                              verbose=False)
    assert summary.exp_dir == str(tmp_path / "data" / "local" / "title")
    assert summary.ok


@pytest.mark.parametrize(
    "change, error, match",
    [
        (dict(affinity_code="64cpu"), ValueError, r"n_cpu_core=64 but only \d+ CPUs"),
        (dict(affinity_code="0slt_2cpu"), ValueError, r"names a run slot"),
        (dict(backend="slurm"), ValueError, r"backend='slurm' is invalid"),
        (dict(runs_per_setting=0), ValueError, r"runs_per_setting=0 is invalid"),
        (dict(log_dirs=["a"]), ValueError, r"2 variants but 1 log_dirs"),
        (dict(log_dirs=["a", "a"]), ValueError, r"log_dirs repeat \['a'\]"),
        (dict(log_dirs=["a", "/b"]), ValueError, r"'/b' must be a relative path"),
        (dict(runs_args=[[]]), ValueError, r"1 runs_args for 2 variants"),
        (dict(script="missing.py"), FileNotFoundError, r"script='missing.py' is not a file"),
    ],
)
def test_bad_requests_fail_before_any_run_starts(tmp_path, quick_script, change, error, match):
    kwargs = dict(script=quick_script, affinity_code="1cpu", experiment_title="t",
                  runs_per_setting=1, variants=[{}, {}], log_dirs=["a", "b"],
                  exp_dir=str(tmp_path / "exp"), verbose=False)
    kwargs.update(change)
    with pytest.raises(error, match=match):
        run_experiments(**kwargs)
    assert not (tmp_path / "exp" / "a" / "run_0").exists()


# ---------------------------------------------------------------- grid files


GRID = """
from rlpyt.utils.launching.variant import VariantLevel
script = "quick.py"
variants = [VariantLevel([("x",)], [(1,), (2,)], ["x1", "x2"])]
affinity = dict(n_cpu_core={n}, cpu_per_run=1)
runs_per_setting = 2
common_args = ["--from-grid"]
"""


def test_launch_grid_runs_a_grid_file(tmp_path, quick_script):
    grid = write_script(tmp_path, "my_grid.py", GRID.format(n=N_SLOTS))
    exp_dir = str(tmp_path / "exp")
    summary = launch_grid(grid, exp_dir=exp_dir)
    assert summary.ok and summary.count("done") == 4
    out = open(os.path.join(exp_dir, "x2", "run_1", "out.txt")).read()
    assert out == repr(({"x": 2}, ["--from-grid"]))
    assert load_grid(grid)["experiment_title"] == "my_grid"
    assert load_grid(grid)["exp_dir"] is None  # run_experiments: data/local/my_grid


def test_rlpyt_launch_command_overrides_and_extra_args(tmp_path, quick_script, capsys):
    grid = write_script(tmp_path, "my_grid.py", GRID.format(n=999))  # too big: overridden
    exp_dir = str(tmp_path / "exp")
    code = launch_main([grid, "--affinity-code", "1cpu", "--runs-per-setting", "1",
                        "--exp-dir", exp_dir, "--", "--n-steps", "5"])
    assert code == 0
    out = open(os.path.join(exp_dir, "x1", "run_0", "out.txt")).read()
    assert out == repr(({"x": 1}, ["--from-grid", "--n-steps", "5"]))
    assert "2 runs, 2 done" in capsys.readouterr().out


def test_rlpyt_launch_exit_codes(tmp_path, capsys):
    write_script(tmp_path, "quick.py", "import sys; sys.exit(3)")
    grid = write_script(tmp_path, "g.py", GRID.format(n=1))
    assert launch_main([grid, "--exp-dir", str(tmp_path / "exp")]) == 1  # runs failed
    assert launch_main([grid, "--exp_dir", str(tmp_path / "exp")]) == 2
    assert "unrecognised option '--exp_dir'; did you mean --exp-dir?" in capsys.readouterr().err
    assert launch_main([str(tmp_path / "nope.py")]) == 2
    assert "grid file" in capsys.readouterr().err


@pytest.mark.parametrize(
    "text, overrides, match",
    [
        ("variants = []", {}, r"does not define \['script'\]"),
        ("script = 'quick.py'\nvariants = [{}]\naffinity_code = '1cpu'", {},
         r"variants given as dicts need log_dirs"),
        ("script = 'quick.py'\nvariants = [{}]\nlog_dirs = ['a']", {},
         r"exactly one of affinity .* or affinity_code"),
        ("script = 'quick.py'\nvariants = [{}]\nlog_dirs = ['a']\naffinity_code = '1cpu'",
         {"affinty": 1}, r"unknown grid overrides \['affinty'\]"),
        ("script = 'nope.py'\nvariants = [{}]\nlog_dirs = ['a']\naffinity_code = '1cpu'", {},
         r"script='nope.py' of grid .* is not a file"),
        ("script = 'quick.py'\nvariants = [1]\naffinity_code = '1cpu'", {},
         r"variants must be a non-empty list of VariantLevel"),
    ],
)
def test_bad_grid_files_are_explained(tmp_path, quick_script, text, overrides, match):
    grid = write_script(tmp_path, "bad_grid.py", text)
    with pytest.raises((ValueError, FileNotFoundError), match=match):
        load_grid(grid, **overrides)


# ---------------------------------------------------------------- Ray


def test_ray_task_sends_the_run_dir_back_when_it_cannot_see_exp_dir(tmp_path, quick_script):
    exp_dir = tmp_path / "driver_exp"
    exp_dir.mkdir()
    request = RunRequest(script=quick_script, setting_dir=str(exp_dir / "s"), log_dir="s",
                         run_ID=0, variant={"x": 3}, args=("a",))
    # The token does not match: the task behaves as on a node without shared storage.
    result, archive = ray_backend.run_task(request, "0slt_1cpu_0saf", str(exp_dir), "other")
    assert result.status == "done" and archive is not None
    assert not (exp_dir / "s").exists()  # Nothing was written to the driver's tree.
    ray_backend._unpack(archive, request.run_dir)
    assert (exp_dir / "s" / "run_0" / "out.txt").read_text() == repr(({"x": 3}, ["a"]))
    assert read_done_marker(request.run_dir)["variant"] == {"x": 3}


def test_backend_ray_without_ray_explains_the_extra(tmp_path, quick_script, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    with pytest.raises(ImportError, match=r"pip install 'rlpyt\[ray\]'"):
        run_experiments(quick_script, "1cpu", "t", 1, [{}], ["a"], exp_dir=str(tmp_path),
                        backend="ray", verbose=False)
