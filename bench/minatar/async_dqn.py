"""The paper's DQN on MinAtar, run asynchronously (``AsyncRl``, rlpyt's async DQN).

The same algorithm, network and settings as ``dqn.py`` (the MinAtar paper's DQN: one
gradient step of batch 32 per env step, target copy every 1000 steps, epsilon 1 -> 0.1
over 100k steps after 5000 random ones), but acting and learning overlap: an
``AsyncSerialSampler`` process steps the env (``batch_T=16`` steps per hand-off) with
the latest published parameters while the main process trains, and the runner holds
the replay ratio at one update per env step both ways.  Set beside ``dqn.py`` it shows
what asynchrony changes in the learning curve (policy lag of a few hand-offs) and in
wall time.  Needs 2 cores.

    python bench/minatar/async_dqn.py --n-steps 1e5 --seeds 0
    python bench/minatar/report.py
"""

from __future__ import annotations

import functools

from common import main_guard, parse_args, sweep
from dqn import add_args, make_runner

main_guard()

from rlpyt.runners.async_rl import AsyncRl  # noqa: E402
from rlpyt.samplers.async_.serial_sampler import AsyncSerialSampler  # noqa: E402

if __name__ == "__main__":
    sweep(parse_args("async_dqn", __doc__.splitlines()[0], add_args=add_args),
          functools.partial(make_runner, RunnerCls=AsyncRl, SamplerCls=AsyncSerialSampler,
                            batch_T=16))
