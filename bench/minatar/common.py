"""What the MinAtar reproduction scripts share: the command line and the run loop.

Each script (``dqn.py``, ``async_dqn.py``, ``ppo.py``, ``impala.py``) trains one
algorithm on every chosen game and seed, one run after another, and writes each run's
``progress.csv`` to
``<results-dir>/<algo>/<Game>/run_<seed>/``.  The measure is the paper's: the return
of training episodes (``ReturnAverage``: mean over the latest ``--traj-window``
finished episodes), logged every ``--log-interval`` env steps (1 env step = 1 frame:
MinAtar has no frame skip).

Stopping and resuming: every run writes a whole-run checkpoint (agent, optimizer,
replay, envs, random streams) every ``--checkpoint-interval`` frames into
``run_<seed>/checkpoints/``.  Started again with the same arguments, a sweep skips the
runs whose ``progress.csv`` reaches the budget and continues an unfinished run from
its latest checkpoint, bit for bit as if it had not stopped (not from zero).  A larger
``--n-steps`` extends finished runs the same way (e.g. 1M-frame runs taken on to 5M).
``report.py`` makes the table and the curves.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

GAMES = ["Asterix", "Breakout", "Freeway", "Seaquest", "SpaceInvaders"]
DEFAULT_RESULTS = Path(__file__).resolve().parents[1] / "results" / "minatar"


def parse_args(algo: str, description: str, argv: list[str] | None = None,
               add_args: Callable[[argparse.ArgumentParser], None] | None = None
               ) -> argparse.Namespace:
    """The shared command line; ``add_args`` adds a script's own options."""
    p = argparse.ArgumentParser(description=description)
    if add_args is not None:
        add_args(p)
    p.add_argument("--games", nargs="+", default=GAMES, choices=GAMES, metavar="GAME",
                   help=f"games to run (default all: {' '.join(GAMES)})")
    p.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2],
                   help="run seeds (default 0 1 2)")
    p.add_argument("--n-steps", type=float, default=5e6,
                   help="env steps (= frames) per run (default 5e6, the paper's budget)")
    p.add_argument("--log-interval", type=float, default=25_000,
                   help="env steps between progress rows (default 25k; keep it fixed across "
                        "resumes that change --n-steps)")
    p.add_argument("--checkpoint-interval", type=float, default=50_000,
                   help="env steps between whole-run checkpoints, the most a stopped run "
                        "loses (default 50k; 0: none, a stopped run starts over)")
    p.add_argument("--traj-window", type=int, default=100,
                   help="finished episodes averaged in ReturnAverage (default 100)")
    p.add_argument("--results-dir", type=Path, default=DEFAULT_RESULTS,
                   help=f"where runs go (default {DEFAULT_RESULTS}; git-ignored)")
    p.add_argument("--torch-threads", type=int, default=1, help="torch threads (default 1)")
    args = p.parse_args(argv)
    args.algo = algo
    if args.n_steps <= 0:
        p.error(f"--n-steps must be positive, got {args.n_steps}")
    args.n_steps = int(args.n_steps)
    if args.log_interval <= 0 or args.checkpoint_interval < 0:
        p.error(f"--log-interval must be positive and --checkpoint-interval >= 0, got "
                f"{args.log_interval} and {args.checkpoint_interval}")
    args.log_interval = int(args.log_interval)
    args.checkpoint_interval = int(args.checkpoint_interval)
    return args


def run_dir(args: argparse.Namespace, game: str, seed: int) -> Path:
    return args.results_dir / args.algo / game / f"run_{seed}"


def finished(path: Path, n_steps: int) -> bool:
    """Whether ``path/progress.csv`` has a row at or past ``n_steps`` env steps."""
    progress = path / "progress.csv"
    if not progress.exists():
        return False
    with open(progress, newline="") as f:
        rows = list(csv.DictReader(f))
    return bool(rows) and float(rows[-1]["CumSteps"]) >= n_steps


def sweep(args: argparse.Namespace, make_runner: Callable[[str, int, argparse.Namespace], object]
          ) -> None:
    """Train ``make_runner(game, seed, args)`` for every seed and game (seeds outer, so an
    early stop leaves every game with its first seeds), logging into ``run_dir``."""
    import torch

    from rlpyt.utils.logging.context import logger_context

    torch.set_num_threads(args.torch_threads)
    for seed in args.seeds:
        for game in args.games:
            path = run_dir(args, game, seed)
            if finished(path, args.n_steps):
                print(f"{args.algo} {game} seed {seed}: done already ({path})", flush=True)
                continue
            start = time.time()
            runner = make_runner(game, seed, args)
            log_file = path.parent / f"run_{seed}.log"
            path.parent.mkdir(parents=True, exist_ok=True)
            # resume=True: continue from the run's latest checkpoint; none yet: start fresh.
            with open(log_file, "a") as log, contextlib.redirect_stdout(log), logger_context(
                    str(path.parent), seed, f"{args.algo}_{game}",
                    log_params=dict(algo=args.algo, game=game, seed=seed, n_steps=args.n_steps),
                    override_prefix=True, resume=True):
                runner.train()
            minutes = (time.time() - start) / 60
            print(f"{args.algo} {game} seed {seed}: {args.n_steps} steps in {minutes:.1f} min "
                  f"-> {path / 'progress.csv'}", flush=True)


def main_guard() -> None:
    """Scripts run from any directory: put the repository root first on the path."""
    root = str(Path(__file__).resolve().parents[2])
    if root not in sys.path:
        sys.path.insert(0, root)
    os.environ.setdefault("PYTHONHASHSEED", "0")
