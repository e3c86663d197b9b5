"""Env steps per second of C51 and DQN on MinAtar with denormals flushed and without.

The runners flush denormals in the training process (``rlpyt.utils.process
.flush_denormals``): Adam's moment estimates of weights that see no gradient for long
stretches (MinAtar channels of rare objects) decay into denormal floats, where the CPU
is many times slower.  Each measurement is a fresh process training the MinAtar
``cat_dqn`` or ``dqn`` preset's settings on Breakout, its rate taken between log rows
after learning has run for a while (``--warmup`` env steps, so the moments have had
time to decay); the "kept" side turns the flush off.  Repeats alternate the order; medians and their ratio are printed.

    python bench/speed/denormals.py --repeats 3
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

CHILD = r"""
import json, sys
from row_rate import rate_between_rows
import rlpyt.runners.minibatch_rl as minibatch_rl
from rlpyt.agents.dqn.minatar import MinAtarCatDqnAgent, MinAtarDqnAgent
from rlpyt.algos.dqn.cat_dqn import CategoricalDQN
from rlpyt.algos.dqn.dqn import DQN
from rlpyt.cli.presets import MINATAR_PRESETS
from rlpyt.envs.minatar import MinAtarEnv
from rlpyt.runners.minibatch_rl import MinibatchRl
from rlpyt.samplers.serial.sampler import SerialSampler

algo_name, flush, warmup, measured = sys.argv[1], sys.argv[2] == "flush", *map(int, sys.argv[3:5])
if not flush:
    minibatch_rl.flush_denormals = lambda on=True: False
preset = MINATAR_PRESETS["cat_dqn" if algo_name == "c51" else "dqn"]
AlgoCls, AgentCls = ((CategoricalDQN, MinAtarCatDqnAgent) if algo_name == "c51"
                     else (DQN, MinAtarDqnAgent))
algo, agent = AlgoCls(**preset.algo_kwargs), AgentCls(**preset.agent_kwargs)
sampler = SerialSampler(MinAtarEnv, dict(game="breakout"), batch_T=4, batch_B=1,
                        max_decorrelation_steps=0)
runner = MinibatchRl(algo=algo, agent=agent, sampler=sampler, n_steps=warmup + measured,
                     log_interval_steps=measured, seed=0)
print(json.dumps(rate_between_rows(runner, from_steps=warmup)))
"""


def measure(algo: str, flush: bool, warmup: int, measured: int) -> float:
    out = subprocess.run([sys.executable, "-c", CHILD, algo, "flush" if flush else "keep",
                          str(warmup), str(measured)], capture_output=True, text=True,
                         check=True, cwd=sys.path[0])
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--algos", nargs="+", default=["c51", "dqn"], choices=["c51", "dqn"])
    p.add_argument("--warmup", type=int, default=40_000,
                   help="env steps before the measured stretch, a multiple of --measured "
                        "(default 40000)")
    p.add_argument("--measured", type=int, default=10_000,
                   help="env steps measured (default 10000)")
    a = p.parse_args()
    for algo in a.algos:
        rates = {True: [], False: []}
        for repeat in range(a.repeats):
            for flush in ((True, False) if repeat % 2 == 0 else (False, True)):
                rates[flush].append(measure(algo, flush, a.warmup, a.measured))
        flushed, kept = (statistics.median(rates[f]) for f in (True, False))
        print(f"{algo}: {flushed:.0f} env steps/s flushed, {kept:.0f} kept; "
              f"flushed / kept = {flushed / kept:.2f}x (medians of {a.repeats})")


if __name__ == "__main__":
    main()
