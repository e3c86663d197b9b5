"""MinibatchRl runners: determinism, snapshots, Ctrl-C and logged diagnostics."""

import csv
import os

import pytest
import torch

from rlpyt.agents.pg.categorical import CategoricalPgAgent
from rlpyt.algos.pg.ppo import PPO, PpoOptInfo
from rlpyt.envs.gym import make
from rlpyt.runners.diagnostics import TIME_KEYS
from rlpyt.runners.minibatch_rl import MinibatchRl, MinibatchRlEval
from rlpyt.samplers.serial.sampler import SerialSampler
from rlpyt.utils.logging.context import logger_context

N_STEPS = 3000  # 12 iterations of 32 x 8


def make_parts(algo_cls=PPO, eval_envs=2, **algo_kwargs):
    sampler = SerialSampler(EnvCls=make, env_kwargs=dict(id="CartPole-v1"), batch_T=32,
                            batch_B=8, max_decorrelation_steps=10, eval_n_envs=eval_envs,
                            eval_max_trajectories=4 if eval_envs else None)
    agent = CategoricalPgAgent(model_kwargs=dict(hidden_sizes=[16]))
    algo = algo_cls(epochs=2, minibatches=2, **algo_kwargs)
    return algo, agent, sampler


def train(run_root, runner_cls=MinibatchRlEval, seed=0, snapshot_mode="last", **kwargs):
    algo, agent, sampler = make_parts(eval_envs=2 if runner_cls is MinibatchRlEval else 0,
                                      **kwargs)
    runner = runner_cls(algo=algo, agent=agent, sampler=sampler, n_steps=N_STEPS, seed=seed,
                        log_interval_steps=1000)
    with logger_context(str(run_root), 0, "test", snapshot_mode=snapshot_mode,
                        override_prefix=True) as run_dir:
        summary = runner.train()
    return runner, summary, run_dir


def read_progress(run_dir):
    with open(os.path.join(run_dir, "progress.csv"), newline="") as f:
        return list(csv.DictReader(f))


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """One short PPO run (seed 7), shared by the tests that only read its outputs."""
    return train(tmp_path_factory.mktemp("trained"), seed=7)


def test_same_seed_runs_write_identical_progress(trained, tmp_path):
    _, summary_a, dir_a = trained
    _, summary_b, dir_b = train(tmp_path / "b", seed=7)
    rows_a, rows_b = read_progress(dir_a), read_progress(dir_b)
    # Itr 0 evaluation, then every 3 iterations (the most that fit in 1000 steps).
    assert len(rows_a) == len(rows_b) == 1 + 4
    for ra, rb in zip(rows_a, rows_b):
        assert ra.keys() == rb.keys()
        for key in ra:
            if key not in TIME_KEYS:
                assert ra[key] == rb[key], (key, ra[key], rb[key])
    assert summary_a == summary_b
    # A different seed changes what is learned.
    _, _, dir_c = train(tmp_path / "c", seed=8)
    rows_c = read_progress(dir_c)
    assert rows_c[-1]["LossAverage"] != rows_a[-1]["LossAverage"]


def test_progress_columns_hold_the_standard_diagnostics(trained):
    runner, summary, run_dir = trained
    rows = read_progress(run_dir)
    columns = set(rows[0])
    for key in ("Iteration", "CumSteps", "CumTime (s)", "StepsPerSecond", "UpdatesPerSecond",
                "CumUpdates", "CumCompletedTrajs", "ReplayRatio", "EvalTime (s)",
                "StepsInEval", "TrajsInEval"):
        assert key in columns, key
    for name in ("Return", "Length", "DiscountedReturn", "NonzeroRewards"):
        for stat in ("Average", "Std", "Median", "Min", "Max"):
            assert name + stat in columns
    for field in PpoOptInfo._fields:  # one column style: PascalCase (loss: LossAverage)
        for stat in ("Average", "Std", "Median", "Min", "Max"):
            column = field[0].upper() + field[1:] + stat
            assert column in columns, column
    assert all(key[0].isupper() for key in columns), sorted(columns)
    assert [int(r["CumSteps"]) for r in rows] == [0, 768, 1536, 2304, 3072]
    assert [int(r["Iteration"]) for r in rows] == [-1, 2, 5, 8, 11]
    # 12 iterations x 2 epochs x 2 minibatches.
    assert int(rows[-1]["CumUpdates"]) == 48 == runner.algo.update_counter
    assert float(rows[1]["StepsPerSecond"]) > 0
    assert 1 <= int(rows[-1]["TrajsInEval"]) <= 4
    assert summary["final_eval_return"] == pytest.approx(float(rows[-1]["ReturnAverage"]))
    assert [s for s, _ in summary["eval_history"]] == [0, 768, 1536, 2304, 3072]


def test_minibatch_rl_logs_training_trajectories(tmp_path):
    _, summary, run_dir = train(tmp_path, runner_cls=MinibatchRl)
    rows = read_progress(run_dir)
    assert len(rows) == 4
    assert "NewCompletedTrajs" in rows[0] and "EvalTime (s)" not in rows[0]
    assert float(rows[-1]["ReturnAverage"]) == pytest.approx(summary["train_return"])
    assert summary["eval_history"] == []


def test_snapshot_reloads_into_a_fresh_agent(trained):
    runner, _, run_dir = trained
    snapshot = torch.load(os.path.join(run_dir, "params.pkl"))
    assert snapshot["itr"] == 11 and snapshot["cum_steps"] == 3072
    assert "optimizer_state_dict" in snapshot
    fresh = CategoricalPgAgent(model_kwargs=dict(hidden_sizes=[16]))
    env = make("CartPole-v1")
    fresh.initialize(env.spaces)
    observation = torch.randn(10, 4)
    inputs = (observation, torch.zeros(10, dtype=torch.long), torch.zeros(10))
    before, _ = fresh(*inputs)
    fresh.load_state_dict(snapshot["agent_state_dict"])
    fresh.eval_mode(0)
    runner.agent.eval_mode(0)
    with torch.no_grad():
        (expected, expected_v), (got, got_v) = runner.agent(*inputs), fresh(*inputs)
    assert torch.equal(got.prob, expected.prob) and torch.equal(got_v, expected_v)
    assert not torch.equal(before.prob, got.prob)  # the load changed the policy
    assert torch.equal(got.prob.argmax(-1), expected.prob.argmax(-1))


class InterruptedPPO(PPO):
    """PPO whose optimize_agent is interrupted (Ctrl-C) at iteration ``interrupt_itr``."""

    interrupt_itr = 5

    def optimize_agent(self, itr, samples=None, sampler_itr=None):
        if itr == self.interrupt_itr:
            raise KeyboardInterrupt
        return super().optimize_agent(itr, samples, sampler_itr)


def test_ctrl_c_saves_a_snapshot_and_shuts_the_sampler_down(tmp_path):
    algo, agent, sampler = make_parts(InterruptedPPO)
    closed = []
    original_shutdown = sampler.shutdown
    sampler.shutdown = lambda: (closed.append(True), original_shutdown())
    runner = MinibatchRlEval(algo=algo, agent=agent, sampler=sampler, n_steps=N_STEPS, seed=0,
                             log_interval_steps=1000)
    with logger_context(str(tmp_path), 0, "test", snapshot_mode="last",
                        override_prefix=True) as run_dir:
        with pytest.raises(KeyboardInterrupt):
            runner.train()
    assert closed == [True] and sampler.envs == [] and sampler.eval_envs == []
    snapshot = torch.load(os.path.join(run_dir, "params.pkl"))
    assert snapshot["itr"] in (InterruptedPPO.interrupt_itr - 1, InterruptedPPO.interrupt_itr)
    # The saved agent is the live one at the interruption.
    for key, value in agent.state_dict().items():
        assert torch.equal(snapshot["agent_state_dict"][key], value)


def test_logging_every_iteration_snapshots_itr_0_and_counts_its_steps(tmp_path):
    algo, agent, sampler = make_parts()
    runner = MinibatchRlEval(algo=algo, agent=agent, sampler=sampler, n_steps=512, seed=0,
                             log_interval_steps=256)
    with logger_context(str(tmp_path), 0, "test", snapshot_mode="all",
                        override_prefix=True) as run_dir:
        summary = runner.train()
    assert [s for s, _ in summary["eval_history"]] == [0, 256, 512]
    assert [int(r["CumSteps"]) for r in read_progress(run_dir)] == [0, 256, 512]
    assert torch.load(os.path.join(run_dir, "itr_0.pkl"))["cum_steps"] == 256
    assert torch.load(os.path.join(run_dir, "itr_1.pkl"))["itr"] == 1
    assert not os.path.exists(os.path.join(run_dir, "itr_-1.pkl"))


def test_failed_startup_still_shuts_the_sampler_down(tmp_path):
    algo, agent, sampler = make_parts()
    algo.minibatches = 10**6  # rejected by algo.initialize, after the sampler started
    closed = []
    original_shutdown = sampler.shutdown
    sampler.shutdown = lambda: (closed.append(True), original_shutdown())
    runner = MinibatchRl(algo=algo, agent=agent, sampler=sampler, n_steps=1000, seed=0)
    with pytest.raises(ValueError, match="minibatches=1000000"):
        runner.train()
    assert closed == [True] and sampler.envs == []


@pytest.mark.parametrize(
    "kwargs, match",
    [(dict(n_steps=0), "n_steps=0"), (dict(n_steps="1e5"), "n_steps='1e5'"),
     (dict(log_interval_steps=-1), "log_interval_steps=-1")],
)
def test_bad_runner_arguments(kwargs, match):
    algo, agent, sampler = make_parts()
    args = dict(n_steps=1000, log_interval_steps=100)
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        MinibatchRl(algo=algo, agent=agent, sampler=sampler, **args)


class CountingSampler(SerialSampler):
    """A sampler with a cumulative diagnostic column, like RaySampler's ActorRestarts."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.before, self.now = 0, 0

    def diagnostics(self):
        return dict(ActorRestarts=self.before + self.now)

    def load_diagnostics(self, state):
        self.before = state["ActorRestarts"]


def test_cumulative_sampler_columns_are_kept_by_the_checkpoint(tmp_path):
    """A sampler's cumulative columns (``diagnostics``) are saved with the checkpoint and
    handed back to the resumed run's sampler (``load_diagnostics``), so a count such as
    ``ActorRestarts`` does not start again at 0 after a resume."""
    from rlpyt.runners.checkpoint_files import load_checkpoint

    sampler = CountingSampler(EnvCls=make, env_kwargs=dict(id="CartPole-v1"), batch_T=16,
                              batch_B=2, max_decorrelation_steps=0)
    sampler.now = 4
    algo = PPO(epochs=1, minibatches=1)
    runner = MinibatchRl(algo=algo, agent=CategoricalPgAgent(), sampler=sampler, n_steps=64,
                         seed=0, log_interval_steps=32, checkpoint_interval_steps=32)
    with logger_context(str(tmp_path), 0, "test", override_prefix=True) as run_dir:
        runner.train()
    state = load_checkpoint(run_dir)
    assert state["diagnostics"]["sampler"] == dict(ActorRestarts=4)
    fresh = CountingSampler(EnvCls=make, env_kwargs=dict(id="CartPole-v1"), batch_T=16,
                            batch_B=2)
    resumed = MinibatchRl(algo=PPO(), agent=CategoricalPgAgent(), sampler=fresh, n_steps=64)
    resumed.load_diagnostics_state(state["diagnostics"])
    assert fresh.diagnostics() == dict(ActorRestarts=4)
