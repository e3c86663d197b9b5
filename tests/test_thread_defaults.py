"""Runners set torch's thread count of the training process (issue 30, item 1).

A launch script that passes no affinity must train at the thread count ``rlpyt train``
uses (one), not torch's default of one thread per core.  Training also flushes
denormals (``rlpyt.utils.process.flush_denormals``) and keeps freed memory for reuse
(``rlpyt.utils.malloc``, where malloc is glibc's).
"""

import torch

from rlpyt.agents.pg.categorical import CategoricalPgAgent
from rlpyt.algos.pg.ppo import PPO
from rlpyt.envs.gym import make
from rlpyt.runners.base import DEFAULT_TORCH_THREADS, training_torch_threads
from rlpyt.runners.minibatch_rl import MinibatchRl
from rlpyt.samplers.serial.sampler import SerialSampler
from rlpyt.utils.malloc import _glibc, freed_memory_kept


class ThreadRecordingPPO(PPO):
    """PPO that notes torch's thread count at every optimization."""

    def optimize_agent(self, itr, samples=None, sampler_itr=None):
        self.seen_threads.append(torch.get_num_threads())
        self.seen_flushing.append(denormals_flushed())
        self.seen_keeping.append(freed_memory_kept())
        return super().optimize_agent(itr, samples, sampler_itr)


def denormals_flushed() -> bool:
    """Whether this thread's float32 arithmetic turns a denormal (1e-39) into zero (the
    same test as ``rlpyt.utils.process.denormals_flushed``, written out)."""
    return float(torch.tensor([1e-39], dtype=torch.float64).float().mul(1.0)[0]) == 0.0


def _threads_during_training(affinity):
    sampler = SerialSampler(EnvCls=make, env_kwargs=dict(id="CartPole-v1"), batch_T=16,
                            batch_B=2, max_decorrelation_steps=0)
    algo = ThreadRecordingPPO(epochs=1, minibatches=1)
    algo.seen_threads, algo.seen_flushing, algo.seen_keeping = [], [], []
    runner = MinibatchRl(algo=algo, agent=CategoricalPgAgent(model_kwargs=dict(hidden_sizes=[8])),
                         sampler=sampler, n_steps=64, seed=0, affinity=affinity,
                         log_interval_steps=64)
    before, flushing = torch.get_num_threads(), denormals_flushed()
    torch.set_num_threads(3)  # what torch picks on a 3-core machine
    torch.set_flush_denormal(False)
    try:
        runner.train()
        assert algo.seen_flushing and all(algo.seen_flushing)  # see flush_denormals
        assert not denormals_flushed()  # the setting from before, restored at shutdown
        assert algo.seen_keeping and all(algo.seen_keeping) == (_glibc() is not None)
        assert not freed_memory_kept()  # glibc's start values again
        return algo.seen_threads
    finally:
        torch.set_num_threads(before)
        torch.set_flush_denormal(flushing)


def test_runner_without_affinity_trains_with_one_torch_thread():
    assert DEFAULT_TORCH_THREADS == 1
    seen = _threads_during_training(affinity=None)
    assert seen and set(seen) == {1}


def test_runner_takes_threads_from_the_affinity():
    seen = _threads_during_training(affinity=dict(master_torch_threads=2))
    assert seen and set(seen) == {2}


def test_thread_rule():
    assert training_torch_threads(None, None)[0] == 1
    assert training_torch_threads(None, [0, 1, 2])[0] == 3
    assert training_torch_threads(4, [0])[0] == 4
    assert training_torch_threads(None, 5)[0] == 1


def test_a_child_forked_after_pinning_may_be_pinned_to_the_parents_other_cpus():
    """The async runner pins the optimizer process, then forks the sampler process onto
    other CPUs (make_affinity(..., async_sample=True))."""
    import os
    import subprocess
    import sys

    import pytest

    cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    if len(cpus) < 2:
        pytest.skip("needs 2 CPUs")
    code = (
        "import multiprocessing as mp, os, sys\n"
        "from rlpyt.utils.process import apply_affinity\n"
        "def child(cpu):\n"
        "    apply_affinity([cpu], 1)\n"
        "    assert os.sched_getaffinity(0) == {cpu}\n"
        "if __name__ == '__main__':\n"
        f"    apply_affinity([{cpus[0]}], 1)\n"
        f"    p = mp.get_context('fork').Process(target=child, args=({cpus[1]},))\n"
        "    p.start(); p.join(); sys.exit(p.exitcode)\n")
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(
        __file__))))
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr
