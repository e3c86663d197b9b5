"""SyncRl: data-parallel replicas on torch.distributed (gloo ranks on CPU).

The equivalence tests drive the algorithms directly on fixed data in spawned gloo ranks:
two ranks with half a batch each must end where one process with the whole batch ends
(gradients averaged before clipping and the optimizer step), and bitwise equal to each
other.  The runner tests train through ``SyncRl`` itself (spawned ranks, ``torchrun``,
failing ranks).
"""

from __future__ import annotations

import csv
import os
import signal
import subprocess
import sys
import time

import psutil
import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from helpers import EndOfRun, k_of_n, make_learning_only

from rlpyt.agents.dqn.dqn_agent import DqnAgent
from rlpyt.agents.pg.categorical import CategoricalPgAgent
from rlpyt.agents.pg.gaussian import GaussianPgAgent
from rlpyt.agents.qpg.sac_agent import SacAgent
from rlpyt.algos.dqn.dqn import DQN
from rlpyt.algos.pg.a2c import A2C
from rlpyt.algos.pg.ppo import PPO
from rlpyt.algos.qpg.sac import SAC
from rlpyt.envs.gym import make
from rlpyt.models.running_mean_std import RunningMeanStdModel
from rlpyt.runners.sync_rl import SyncRl, SyncRlError, SyncRlEval, agent_digest
from rlpyt.samplers.samples import BatchSpec
from rlpyt.samplers.serial.sampler import SerialSampler
from rlpyt.utils.launching.affinity import make_affinity
from rlpyt.utils.logging.context import logger_context
from rlpyt.utils.seed import set_seed
from rlpyt.utils.supervisor import exit_now

PYTHON = sys.executable
TORCHRUN = os.path.join(os.path.dirname(PYTHON), "torchrun")
N_UPDATES = 4


# ---- fixed data and one replica, in-process or in a spawned gloo rank -----------------------
def _split(tree, lo, hi, t_dim):
    """Envs (or replay rows) ``lo:hi`` of a batch: the B dim is 1 for [T, B] fields."""
    if tree is None:
        return None
    if isinstance(tree, torch.Tensor):
        return tree[:, lo:hi] if (t_dim and tree.dim() >= 2) else tree[lo:hi]
    return type(tree)(*(_split(v, lo, hi, t_dim) for v in tree))


def _cartpole_sampler(B, **kwargs):
    return SerialSampler(make, dict(id="CartPole-v1"), batch_T=8, batch_B=B,
                         max_decorrelation_steps=0, **kwargs)


def _pg_batches(B_total, k):
    """``k`` fixed [8, B_total] CartPole batches from a random policy (same in every process)."""
    set_seed(123)
    sampler = _cartpole_sampler(B_total)
    agent = CategoricalPgAgent(model_kwargs=dict(hidden_sizes=[16]))
    examples = sampler.initialize(agent, seed=5, bootstrap_value=True)
    batches = [_clone(sampler.obtain_samples(i)[0]) for i in range(k)]
    spaces = sampler.envs[0].spaces
    sampler.shutdown()
    return batches, examples, spaces


def _dqn_batches(B_total, k):
    """``k`` fixed replay batches of ``B_total`` rows, drawn once (same in every process)."""
    set_seed(321)
    sampler = _cartpole_sampler(8)
    agent = DqnAgent(model_kwargs=dict(hidden_sizes=[16]))
    examples = sampler.initialize(agent, seed=6)
    algo = DQN(min_steps_learn=0, replay_size=1000, batch_size=B_total, replay_ratio=1)
    algo.initialize(agent, 10, sampler.batch_spec, True, examples)
    for itr in range(6):
        algo.replay_buffer.append_samples(algo.samples_to_buffer(sampler.obtain_samples(itr)[0]))
    batches = [_clone(algo.replay_buffer.sample_batch(B_total)) for _ in range(k)]
    spaces = sampler.envs[0].spaces
    sampler.shutdown()
    return batches, examples, spaces


def _clone(tree):
    if tree is None:
        return None
    if isinstance(tree, torch.Tensor):
        return tree.clone()
    return type(tree)(*(_clone(v) for v in tree))


def _replica(family, rank, world_size, B, data):
    """Train one replica (DDP-wrapped when world_size > 1, as SyncRl does) on its share
    of the fixed data; returns its agent state."""
    batches, examples, spaces = data
    set_seed(0)  # every replica starts from the same weights
    lo, hi = rank * B, (rank + 1) * B
    if family == "a2c":
        agent = CategoricalPgAgent(model_kwargs=dict(hidden_sizes=[16]))
        agent.initialize(spaces, global_B=B * world_size, env_ranks=range(lo, hi))
        if world_size > 1:
            agent.data_parallel()
        # clip_grad_norm small enough to clip: averaging must come before clipping.
        # normalize_returns: the returns' statistics are all-reduced over the ranks.
        algo = A2C(learning_rate=1e-2, clip_grad_norm=0.05, normalize_returns=True)
        algo.initialize(agent, N_UPDATES, BatchSpec(8, B), True, examples, world_size, rank)
        for itr, batch in enumerate(batches):
            algo.optimize_agent(itr, _split(batch, lo, hi, t_dim=True))
    else:
        agent = DqnAgent(model_kwargs=dict(hidden_sizes=[16]))
        agent.initialize(spaces, global_B=8 * world_size, env_ranks=range(8))
        if world_size > 1:
            agent.data_parallel()
        algo = DQN(min_steps_learn=0, replay_size=1000, batch_size=B, replay_ratio=1,
                   double_dqn=True, clip_grad_norm=0.5, target_update_interval=2,
                   learning_rate=1e-2)
        algo.initialize(agent, N_UPDATES, BatchSpec(8, 8), True, examples, world_size, rank)
        for batch in batches:
            algo.gradient_step(_split(batch, lo, hi, t_dim=False))
    return {k: v.clone() for k, v in _flat_state(agent.state_dict()).items()}


def _flat_state(state, prefix=""):
    out = {}
    for key, value in state.items():
        if isinstance(value, dict):
            out.update(_flat_state(value, f"{prefix}{key}."))
        elif isinstance(value, torch.Tensor):
            out[prefix + key.removeprefix("module.").replace(".module.", ".")] = value
    return out


B_PER_RANK = dict(a2c=4, dqn=16)


def _make_data(family, B_total, k):
    return (_pg_batches if family == "a2c" else _dqn_batches)(B_total, k)


def _rank_main(rank, world_size, out_dir):
    """One gloo rank: both families' replicas, then a running-statistics update.  The
    ranks meet at a file store, not a TCP port: a port found free before the spawn
    could be taken by another xdist worker's test before rank 0 binds it.  A rank that
    is done ends as SyncRl's own ranks do (``exit_now``): the interpreter's teardown
    can free a gloo group that a DDP wrapper in uncollected garbage still holds, and
    that aborts the process (SIGABRT) after its work was saved."""
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{out_dir}/rendezvous", rank=rank,
                            world_size=world_size)
    try:
        for family, B in B_PER_RANK.items():
            state = _replica(family, rank, world_size, B, _make_data(family, 2 * B, N_UPDATES))
            torch.save(state, os.path.join(out_dir, f"{family}{rank}.pt"))
        rms = RunningMeanStdModel((3,))
        rms.update(_RMS_DATA[rank * 10:(rank + 1) * 10])
        torch.save(rms.state_dict(), os.path.join(out_dir, f"rms{rank}.pt"))
        for family in FAMILIES:
            torch.save(_train_family(family, rank, world_size),
                       os.path.join(out_dir, f"family_{family}{rank}.pt"))
    finally:
        dist.destroy_process_group()
    exit_now(0)


_RMS_DATA = torch.arange(60, dtype=torch.float64).reshape(20, 3) ** 1.5


@pytest.fixture(scope="module")
def two_gloo_ranks(tmp_path_factory, worker_id):
    """Directory holding what each of two spawned gloo ranks saved: one spawn for the
    whole session, shared by the xdist workers through a file lock (the workers' base
    temporary directories have a common parent), not one per worker."""
    from filelock import FileLock

    root = tmp_path_factory.getbasetemp()
    if worker_id != "master":
        root = root.parent
    out, done = root / "gloo_ranks", root / "gloo_ranks.done"
    with FileLock(str(root / "gloo_ranks.lock")):
        if not done.exists():
            out.mkdir(exist_ok=True)
            # A rendezvous file left by another worker's failed spawn is not reused.
            (out / "rendezvous").unlink(missing_ok=True)
            mp.start_processes(_rank_main, args=(2, str(out)), nprocs=2, start_method="spawn")
            done.touch()
    return out


FAMILIES = ("recurrent_ppo", "appo", "cat_dqn", "r2d1", "ddpg", "td3", "sac")


def _family_parts(family):
    from rlpyt.agents.dqn.catdqn_agent import CatDqnAgent
    from rlpyt.agents.dqn.r2d1_agent import R2d1Agent
    from rlpyt.agents.pg.categorical import RecurrentCategoricalPgAgent
    from rlpyt.agents.qpg.ddpg_agent import DdpgAgent
    from rlpyt.agents.qpg.td3_agent import Td3Agent
    from rlpyt.algos.dqn.cat_dqn import CategoricalDQN
    from rlpyt.algos.dqn.r2d1 import R2D1
    from rlpyt.algos.qpg.ddpg import DDPG
    from rlpyt.algos.qpg.td3 import TD3

    replay = dict(min_steps_learn=64, replay_size=1000, batch_size=16)
    small = dict(model_kwargs=dict(hidden_sizes=[16]))
    if family == "recurrent_ppo":
        return PPO(epochs=2, minibatches=2), RecurrentCategoricalPgAgent(), "CartPole-v1", 8
    if family == "appo":
        from rlpyt.agents.pg.categorical import CategoricalPgAgent
        from rlpyt.algos.pg.appo import APPO

        return APPO(epochs=2, minibatches=2), CategoricalPgAgent(), "CartPole-v1", 8
    if family == "cat_dqn":
        return (CategoricalDQN(**replay, replay_ratio=8, double_dqn=True),
                CatDqnAgent(**small), "CartPole-v1", 8)
    if family == "r2d1":
        return (R2D1(batch_T=8, batch_B=4, warmup_T=4, store_rnn_state_interval=4,
                     min_steps_learn=64, replay_size=1000, replay_ratio=4),
                R2d1Agent(), "CartPole-v1", 8)
    qpg = dict(**replay, replay_ratio=16)
    QpgAlgo, QpgAgent = dict(ddpg=(DDPG, DdpgAgent), td3=(TD3, Td3Agent),
                             sac=(SAC, SacAgent))[family]
    return (QpgAlgo(**qpg), QpgAgent(model_kwargs=dict(hidden_sizes=[16]),
                                     q_model_kwargs=dict(hidden_sizes=[16])),
            "Pendulum-v1", 8)


def _train_family(family, rank, world_size, n_itr=12):
    """SyncRl's own start-up and iterations in this rank (its sampler sees this rank's
    envs); returns the agent digest and how far the agent moved."""
    algo, agent, env_id, T = _family_parts(family)
    sampler = SerialSampler(make, dict(id=env_id), batch_T=T, batch_B=2,
                            max_decorrelation_steps=0)
    runner = SyncRl(algo, agent, sampler, n_steps=n_itr * T * 2 * world_size, seed=4,
                    log_interval_steps=1e9)
    runner.rank, runner.world_size, runner.affinity = rank, world_size, {}
    try:
        runner.startup()
        before = _flat_state(agent.state_dict())
        before = {k: v.clone() for k, v in before.items()}
        for itr in range(n_itr):
            runner._train_itr(itr)
        after = _flat_state(agent.state_dict())
        moved = max((after[k] - before[k]).abs().max().item() for k in after
                    if after[k].is_floating_point())
        return dict(digest=agent_digest(agent), moved=moved, updates=algo.update_counter)
    finally:
        runner.shutdown()


@pytest.mark.parametrize("family", FAMILIES)
def test_every_family_keeps_its_replicas_identical(family, two_gloo_ranks):
    """Each rank trains on its own envs (its own replay), DDP averages the gradients:
    after several updates the two replicas are still bitwise identical."""
    ranks = [torch.load(two_gloo_ranks / f"family_{family}{r}.pt") for r in range(2)]
    assert ranks[0]["updates"] == ranks[1]["updates"] > 0
    assert ranks[0]["moved"] > 0
    assert ranks[0]["digest"] == ranks[1]["digest"]


@pytest.mark.parametrize("family", ["a2c", "dqn"])
def test_two_ranks_match_one_process_with_twice_the_batch(family, two_gloo_ranks):
    """A2C (clipping active, returns normalized) and DQN (double DQN, target updates,
    clipping active), both averaged by DDP: 2 ranks x B == 1 process x 2B within 1e-6,
    ranks bitwise equal."""
    B = B_PER_RANK[family]
    ranks = [torch.load(two_gloo_ranks / f"{family}{r}.pt") for r in range(2)]
    batches, *rest = _make_data(family, 2 * B, N_UPDATES)
    single = _replica(family, 0, 1, 2 * B, (batches, *rest))
    initial = _replica(family, 0, 1, 2 * B, ([], *rest))
    assert ranks[0].keys() == ranks[1].keys() == single.keys()
    moved = 0.0
    for key, value in single.items():
        assert torch.equal(ranks[0][key], ranks[1][key]), f"ranks differ in {key}"
        torch.testing.assert_close(ranks[0][key], value, atol=1e-6, rtol=0, msg=key)
        if value.is_floating_point():
            moved = max(moved, (value - initial[key]).abs().max().item())
    assert moved > 1e-3  # the updates did change the weights: the comparison means something


def test_running_mean_std_is_synchronised(two_gloo_ranks):
    """Each rank folds in half the data; both hold the statistics of all of it."""
    for rank in range(2):
        state = torch.load(two_gloo_ranks / f"rms{rank}.pt")
        torch.testing.assert_close(state["mean"], _RMS_DATA.mean(0))
        torch.testing.assert_close(state["var"], _RMS_DATA.var(0, unbiased=False))
        assert state["count"].item() == 20


# ---- the runner ------------------------------------------------------------------------------
def _read_rows(run_dir):
    with open(os.path.join(run_dir, "progress.csv"), newline="") as f:
        return list(csv.DictReader(f))


def _cpu_ranks(n=2):
    """One affinity per rank as a classic script builds it (CPU ranks: n_gpu=0)."""
    affinity = make_affinity(n_cpu_core=n, n_gpu=0, gpu_per_run=n, set_affinity=False)
    return affinity if n > 1 else [affinity]


def _no_children_left():
    """No process of the run is left.  multiprocessing's own helpers (the resource tracker,
    and a fork server another test of this worker may have started) live as long as this
    process, by design."""
    from multiprocessing import forkserver

    helpers = {getattr(forkserver._forkserver, "_forkserver_pid", None)}
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        children = [p for p in psutil.Process().children(recursive=True)
                    if "resource_tracker" not in " ".join(_cmdline(p))
                    and p.pid not in helpers]
        if not children:
            return True
        time.sleep(0.1)
    return False


def _cmdline(proc):
    try:
        return proc.cmdline()
    except psutil.Error:
        return []


class _EvalUntil(SyncRlEval):
    """Ends the run by ``end_of_run`` (two evaluations after the first at or above its
    threshold): ``should_stop`` runs on rank 0 (the one that evaluates) and SyncRl hands
    its answer to every rank."""

    def __init__(self, *args, end_of_run: EndOfRun, **kwargs):
        super().__init__(*args, **kwargs)
        self.end_of_run = end_of_run

    def should_stop(self):
        return self.end_of_run.should_stop(self.eval_history)


@pytest.mark.learning
@make_learning_only("PPO's CartPole test on 2 SyncRl ranks (test_pg_learning.py trains the "
                    "preset in make test, and two ranks train as one process with twice "
                    "the batch: test_two_ranks_match_one_process_with_twice_the_batch)")
def test_ppo_learns_cartpole_with_two_ranks(tmp_path):
    """PPO (CartPole preset, each rank 8 envs) reaches an evaluation return of 475 in at
    most 100k env steps over both ranks, and the mean of the two evaluations after is at
    least 427.5, in 2 seeds of 2 (``make learning`` only; PPO's own k-of-n test is in
    test_pg_learning.py)."""
    from rlpyt.cli.presets import PRESETS

    preset = PRESETS["ppo"]
    end_of_run = EndOfRun(475)

    def train_seed(seed):
        sampler = SerialSampler(make, dict(id="CartPole-v1"), **preset.sampler_kwargs)
        runner = _EvalUntil(PPO(**preset.algo_kwargs), CategoricalPgAgent(), sampler,
                            n_steps=100_000, seed=seed, affinity=_cpu_ranks(),
                            log_interval_steps=8192, end_of_run=end_of_run)
        with logger_context(str(tmp_path), seed, "ppo", override_prefix=True):
            return runner.train()["eval_history"]

    k_of_n(train_seed, range(2), 2, end_of_run, "SyncRl PPO")


def test_sync_rl_logs_once_and_counts_all_ranks(tmp_path):
    """Pendulum episodes last exactly 200 steps, so the trajectory count is known: 2 ranks
    x 2 envs x 400 steps = 8 trajectories, all in rank 0's log; the running observation
    statistics count every rank's samples."""
    sampler = SerialSampler(make, dict(id="Pendulum-v1"), batch_T=50, batch_B=2,
                            max_decorrelation_steps=0, eval_n_envs=1, eval_max_trajectories=1)
    agent = GaussianPgAgent(model_kwargs=dict(hidden_sizes=[16], normalize_observation=True))
    runner = SyncRlEval(PPO(epochs=1, minibatches=1), agent, sampler, n_steps=1600, seed=3,
                        affinity=_cpu_ranks(), log_interval_steps=800)
    with logger_context(str(tmp_path), 0, "sync", override_prefix=True,
                        snapshot_mode="last") as run_dir:
        summary = runner.train()
    rows = _read_rows(run_dir)
    # Evaluation at itr 0, then every 800 env steps of both ranks (4 iterations of 2x100).
    assert [int(r["CumSteps"]) for r in rows] == [0, 800, 1600]
    assert [int(r["Iteration"]) for r in rows] == [-1, 3, 7]
    assert int(rows[-1]["CumCompletedTrajs"]) == 8
    with open(os.path.join(run_dir, "debug.log")) as f:
        log = f.read()
    assert log.count("Running 8 iterations") == 1  # rank 1 writes nothing
    assert "SyncRl: 2 ranks, backend gloo" in log
    assert len(summary["eval_history"]) == 3
    snapshot = torch.load(os.path.join(run_dir, "params.pkl"), weights_only=False)
    obs_rms_count = [v for k, v in snapshot["agent_state_dict"].items() if k.endswith("count")]
    assert [c.item() for c in obs_rms_count] == [1600]
    assert _no_children_left()


def test_each_rank_seeds_its_envs_differently():
    def first_observations(rank, seed=1):
        sampler = _cartpole_sampler(2)
        sampler.initialize(CategoricalPgAgent(), seed=seed, rank=rank, world_size=2)
        try:
            return sampler.obtain_samples(0)[0].env.observation[0]
        finally:
            sampler.shutdown()

    rank0, rank1 = first_observations(0), first_observations(1)
    assert not torch.equal(rank0, rank1)
    assert torch.equal(rank0, first_observations(0))  # one run seed: reproducible


@pytest.mark.parametrize("seed", [0, 1, 7, 2**32 - 1])
def test_rank_streams_are_distinct_from_every_env_and_worker_stream(seed):
    """Rank r's own seed (exploration, replay sampling) is none of the run's env seeds
    (it was env r's), nor a parallel worker's, nor another rank's; the same run seed
    gives the same rank seeds."""
    from rlpyt.runners.sync_rl import rank_seed
    from rlpyt.samplers.workers import worker_seed
    from rlpyt.utils.seed import env_seeds

    ranks = [rank_seed(seed, r) for r in range(16)]
    others = set(env_seeds(seed, 4096)) | {worker_seed(seed, i) for i in range(256)}
    assert not set(ranks) & others
    assert len(set(ranks)) == len(ranks)
    assert ranks == [rank_seed(seed, r) for r in range(16)]


@pytest.mark.parametrize("family", [
    "dqn",
    pytest.param("sac", marks=[pytest.mark.learning, make_learning_only(
        "SAC's family on 2 SyncRl ranks (80 s of CI: the DQN family here checks SyncRl's "
        "replay path, test_qpg_learning.py trains SAC, and test_every_family_keeps_its_"
        "replicas_identical checks SAC's DDP updates)")]),
])
def test_replay_families_train_and_improve(family, tmp_path):
    """Per-rank replay, DDP-averaged updates; the trained agent beats the untrained one
    (the SAC family under ``make learning`` only)."""
    if family == "dqn":
        sampler = SerialSampler(make, dict(id="CartPole-v1"), batch_T=4, batch_B=4,
                                max_decorrelation_steps=0, eval_n_envs=4,
                                eval_max_trajectories=8)
        algo = DQN(batch_size=64, min_steps_learn=500, replay_size=20_000, replay_ratio=32,
                   target_update_interval=100, learning_rate=1e-3, eps_steps=4000)
        agent = DqnAgent(eps_final=0.02, model_kwargs=dict(hidden_sizes=[64, 64]))
        n_steps, margin = 6000, 50.0
    else:
        sampler = SerialSampler(make, dict(id="Pendulum-v1"), batch_T=4, batch_B=1,
                                max_decorrelation_steps=0, eval_n_envs=2,
                                eval_max_trajectories=4)
        algo = SAC(batch_size=64, replay_ratio=64, min_steps_learn=1000, replay_size=20_000,
                   learning_rate=1e-3)
        agent = SacAgent(model_kwargs=dict(hidden_sizes=[64, 64]),
                         q_model_kwargs=dict(hidden_sizes=[64, 64]))
        n_steps, margin = 6000, 300.0
    runner = SyncRlEval(algo, agent, sampler, n_steps=n_steps, seed=0, affinity=_cpu_ranks(),
                        log_interval_steps=n_steps // 4)
    with logger_context(str(tmp_path), 0, family, override_prefix=True) as run_dir:
        summary = runner.train()
    history = summary["eval_history"]
    print(family, history)
    assert max(ret for _, ret in history[1:]) > history[0][1] + margin
    # Both ranks' updates over both ranks' steps: the replay ratio asked for.
    assert float(_read_rows(run_dir)[-2]["ReplayRatio"]) == pytest.approx(algo.replay_ratio)


# ---- faults ------------------------------------------------------------------------------
class FailingA2C(A2C):
    """Rank 1 fails at iteration 2: by raising, or by killing itself with SIGKILL."""

    def __init__(self, how, stamp, **kwargs):
        super().__init__(**kwargs)
        self.how, self.stamp = how, stamp

    def optimize_agent(self, itr, samples=None, sampler_itr=None):
        if self.rank == 1 and itr == 2:
            with open(self.stamp, "w") as f:
                f.write(repr(time.time()))
            if self.how == "raise":
                raise ValueError("rank one gives up on purpose")
            os.kill(os.getpid(), signal.SIGKILL)
        return super().optimize_agent(itr, samples, sampler_itr)


@pytest.mark.parametrize("how", ["raise", "sigkill"])
def test_a_failing_rank_stops_the_job_with_its_traceback(how, tmp_path):
    stamp = tmp_path / "failed_at"
    runner = SyncRl(FailingA2C(how, str(stamp)), CategoricalPgAgent(), _cartpole_sampler(2),
                    n_steps=100_000, seed=0, affinity=_cpu_ranks(), log_interval_steps=1e9)
    with logger_context(str(tmp_path), 0, "fail", override_prefix=True):
        with pytest.raises(SyncRlError) as info:
            runner.train()
    elapsed = time.time() - float(stamp.read_text())
    message = str(info.value)
    assert message.startswith("SyncRl rank 1 failed")
    if how == "raise":
        assert "ValueError: rank one gives up on purpose" in message
        assert "optimize_agent" in message  # the rank's own traceback
    else:
        assert "killed by signal SIGKILL" in message
    print(f"{how}: the launcher raised {elapsed:.2f} s after the failure")
    assert elapsed < 10, elapsed  # from the failure to the launcher's error
    assert _no_children_left()


class DivergingA2C(A2C):
    """Steps a private copy of the model: the classic mistake of training through
    DDP's ``.module``, which averages nothing."""

    def optimize_agent(self, itr, samples=None, sampler_itr=None):
        info = super().optimize_agent(itr, samples, sampler_itr)
        with torch.no_grad():
            for p in self.agent.model.parameters():
                p.add_(0.001 * (self.rank + 1))  # a rank-local update
        return info


def test_replicas_that_diverge_are_reported(tmp_path):
    runner = SyncRl(DivergingA2C(), CategoricalPgAgent(), _cartpole_sampler(2), n_steps=64,
                    seed=0, affinity=_cpu_ranks(), log_interval_steps=32)
    with logger_context(str(tmp_path), 0, "diverge", override_prefix=True):
        with pytest.raises(SyncRlError, match="agent states differ"):
            runner.train()
    assert _no_children_left()


# ---- pieces ------------------------------------------------------------------------------
def test_agent_digest_sees_one_changed_bit():
    agent = CategoricalPgAgent()
    agent.initialize(_cartpole_env_spaces())
    before = agent_digest(agent)
    with torch.no_grad():
        next(agent.model.parameters()).view(-1)[0] += 1e-7
    assert agent_digest(agent) != before


def _cartpole_env_spaces():
    env = make(id="CartPole-v1")
    try:
        return env.spaces
    finally:
        env.close()


def test_bad_affinity_is_rejected():
    with pytest.raises(ValueError, match="affinity=.*list of affinity dicts"):
        SyncRl(A2C(), CategoricalPgAgent(), _cartpole_sampler(2), n_steps=10, affinity=[1, 2])
    with pytest.raises(ValueError, match="async layout"):
        SyncRl(A2C(), CategoricalPgAgent(), _cartpole_sampler(2), n_steps=10,
               affinity=dict(optimizer=[], sampler={}))
    with pytest.raises(ValueError, match="backend='tcp'"):
        SyncRl(A2C(), CategoricalPgAgent(), _cartpole_sampler(2), n_steps=10, backend="tcp")


def test_cli_builds_one_affinity_per_rank(monkeypatch):
    from rlpyt.cli.run_affinity import rank_affinities as _rank_affinities

    for key in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"):
        monkeypatch.delenv(key, raising=False)
    cpu = _rank_affinities(dict(nproc=2, sampler_type="serial", torch_threads=1))
    assert [a["cuda_idx"] for a in cpu] == [None, None]
    gpu = _rank_affinities(dict(nproc=3, cuda_idx=1, sampler_type="serial"))
    assert [a["cuda_idx"] for a in gpu] == [1, 2, 3]
    workers = _rank_affinities(dict(nproc=2, sampler_type="cpu"))
    if len(os.sched_getaffinity(0)) >= 2:  # each rank's workers on its own CPUs
        assert not set(workers[0]["workers_cpus"]) & set(workers[1]["workers_cpus"])
    monkeypatch.setenv("RANK", "3")
    monkeypatch.setenv("WORLD_SIZE", "4")
    monkeypatch.setenv("LOCAL_RANK", "1")
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "2")
    assert len(_rank_affinities(dict(sampler_type="serial"))) == 2  # torchrun: this node's


def test_cli_rejects_a_bad_nproc(capsys):
    from rlpyt.cli import main

    assert main(["train", "--nproc", "0"]) == 2
    assert "rlpyt train: error: --nproc 0" in capsys.readouterr().err


def test_cli_resumes_an_nproc_run_with_its_ranks(tmp_path):
    """``rlpyt train --resume`` of a 2-rank run trains on with 2 ranks from the
    checkpoint (each rank's part loaded), extending the same progress.csv."""
    from rlpyt.cli import main

    log_dir = str(tmp_path / "runs")
    assert main(["train", "--algo", "ppo", "--nproc", "2", "--n-steps", "1024",
                 "--log-dir", log_dir, "--runner.log_interval_steps=512",
                 "--sampler.batch_B=2", "--sampler.batch_T=32"]) == 0
    run_dir = os.path.join(log_dir, "run_0")
    checkpoint = os.path.join(run_dir, "checkpoints", "itr_7")
    assert os.path.isfile(os.path.join(checkpoint, "rank_1", "state.pt"))
    assert main(["train", "--resume", run_dir, "--n-steps", "2048"]) == 0
    with open(os.path.join(run_dir, "debug.log")) as f:
        assert "(after iteration 7, 1024 env steps)" in f.read()
    rows = _read_rows(run_dir)
    assert [int(r["CumSteps"]) for r in rows] == [0, 512, 1024, 1536, 2048]
    assert _no_children_left()


def test_resume_with_another_number_of_ranks_is_refused(tmp_path):
    sampler = _cartpole_sampler(2)
    runner = SyncRl(A2C(), CategoricalPgAgent(), sampler, n_steps=64, seed=0,
                    affinity=_cpu_ranks(), log_interval_steps=32)
    with logger_context(str(tmp_path), 0, "two", override_prefix=True) as run_dir:
        runner.train()
    one = SyncRl(A2C(), CategoricalPgAgent(), _cartpole_sampler(2), n_steps=128, seed=0,
                 affinity=_cpu_ranks(1), log_interval_steps=32)
    with pytest.raises(SyncRlError, match=r"written by 2 rank\(s\).*resume it with 2 ranks"):
        one.train(resume=run_dir)
    # An n_steps that one rank would have finished (2 iterations of 16 steps) is refused
    # for the rank count too, not taken as complete by the launcher.
    one = SyncRl(A2C(), CategoricalPgAgent(), _cartpole_sampler(2), n_steps=32, seed=0,
                 affinity=_cpu_ranks(1), log_interval_steps=32)
    with pytest.raises(SyncRlError, match=r"written by 2 rank\(s\).*resume it with 2 ranks"):
        one.train(resume=run_dir)
    assert _no_children_left()


# ---- torchrun ------------------------------------------------------------------------------
@pytest.mark.skipif(not os.path.exists(TORCHRUN), reason="torchrun is not installed")
def test_torchrun_launch_trains_logs_once_and_resumes(tmp_path):
    env = dict(os.environ, PYTHONPATH=os.getcwd(), OMP_NUM_THREADS="1")
    cmd = [TORCHRUN, "--standalone", "--nnodes", "1", "--nproc-per-node", "2", "-m", "rlpyt",
           "train", "--algo", "a2c", "--n-steps", "1024", "--log-dir", str(tmp_path),
           "--runner.log_interval_steps", "512", "--snapshot-mode", "last"]
    start = time.monotonic()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    run_dir = tmp_path / "run_0"
    rows = _read_rows(run_dir)
    steps = [int(r["CumSteps"]) for r in rows]
    assert steps[0] == 0 and steps[-1] >= 1024 and len(steps) == len(set(steps))
    with open(run_dir / "debug.log") as f:
        assert f.read().count("SyncRl: 2 ranks, backend gloo") == 1
    assert proc.stdout.count("Run directory:") == 1  # only rank 0 reports
    # The same job launched again with --resume: each rank loads its part and goes on.
    resume = [TORCHRUN, "--standalone", "--nnodes", "1", "--nproc-per-node", "2", "-m",
              "rlpyt", "train", "--resume", str(run_dir), "--n-steps", "2048"]
    proc = subprocess.run(resume, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    more = [int(r["CumSteps"]) for r in _read_rows(run_dir)]
    assert more[:len(steps)] == steps and more[-1] >= 2048 and len(more) == len(set(more))
    with open(run_dir / "debug.log") as f:
        assert f.read().count(f", {steps[-1]} env steps).") == 1  # resumed once, at the end
    print(f"torchrun run and resume: {time.monotonic() - start:.1f} s")


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available() or torch.cuda.device_count() < 2,
                    reason="NCCL ranks need two CUDA devices")
def test_nccl_ranks_on_two_gpus(tmp_path):
    affinity = make_affinity(n_cpu_core=2, n_gpu=2, gpu_per_run=2, set_affinity=False)
    runner = SyncRl(A2C(), CategoricalPgAgent(), _cartpole_sampler(2), n_steps=512, seed=0,
                    affinity=affinity, log_interval_steps=256)
    with logger_context(str(tmp_path), 0, "nccl", override_prefix=True) as run_dir:
        runner.train()
    assert "backend nccl" in open(os.path.join(run_dir, "debug.log")).read()
