"""Learning curves of every ``rlpyt train`` preset on its reference task, several seeds.

Each algorithm trains with its preset (the settings its learning test checks: PPO, A2C,
IMPALA, DQN, C51 and R2D1 on CartPole-v1, SAC, TD3 and DDPG on Pendulum-v1) for the
preset's budget,
one run per seed, under ``<results-dir>/<algo>/run_<seed>`` (git-ignored), then
``rlpyt plot`` draws the mean evaluation return with a min-max band across seeds into
``<out-dir>/reference_<algo>.png``.  Finished runs are kept (delete them to re-run);
an interrupted one runs again.

    python bench/reference_curves.py --algos ppo a2c dqn --seeds 0 1 2 --out-dir docs/img
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import io
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from rlpyt.cli import main as rlpyt_main  # noqa: E402
from rlpyt.cli.presets import PRESETS  # noqa: E402

DEFAULT_RESULTS = ROOT / "bench" / "results" / "reference"


def finished(run_dir: Path, n_steps: int) -> bool:
    """Whether the run's ``progress.csv`` reaches ``n_steps`` (an interrupted run does not)."""
    progress = run_dir / "progress.csv"
    if not progress.exists():
        return False
    with open(progress, newline="") as f:
        rows = list(csv.DictReader(f))
    return bool(rows) and float(rows[-1]["CumSteps"]) >= n_steps


def run(algo: str, seed: int, results: Path) -> None:
    run_dir = results / algo / f"run_{seed}"
    if finished(run_dir, PRESETS[algo].runner_kwargs["n_steps"]):
        print(f"{algo} seed {seed}: kept ({run_dir})", flush=True)
        return
    start = time.time()
    with contextlib.redirect_stdout(io.StringIO()):
        code = rlpyt_main(["train", "--algo", algo, "--seed", str(seed), "--run-id", str(seed),
                           "--log-dir", str(results / algo), "--snapshot-mode", "none"])
    if code != 0:
        raise SystemExit(f"{algo} seed {seed}: rlpyt train exited with {code}")
    print(f"{algo} seed {seed}: {time.time() - start:.0f} s", flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--algos", nargs="+", default=sorted(PRESETS), choices=sorted(PRESETS))
    p.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    p.add_argument("--results-dir", type=Path, default=DEFAULT_RESULTS)
    p.add_argument("--out-dir", type=Path, default=None,
                   help="where the PNGs go (default <results-dir>)")
    args = p.parse_args()
    out_dir = args.out_dir or args.results_dir
    for algo in args.algos:
        for seed in args.seeds:
            run(algo, seed, args.results_dir)
        preset = PRESETS[algo]
        rlpyt_main(["plot", str(args.results_dir / algo), "--out",
                    str(out_dir / f"reference_{algo}.png"), "--labels", algo, "--title",
                    f"{algo} on {preset.env}: mean evaluation return, min-max over "
                    f"{len(args.seeds)} seeds"])


if __name__ == "__main__":
    main()
