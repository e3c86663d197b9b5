"""Learning curves of every ``rlpyt train`` preset on its reference task, several seeds.

Each algorithm trains with its preset (the settings its learning test checks: PPO, A2C,
IMPALA, DQN, C51 and R2D1 on CartPole-v1, SAC, TD3 and DDPG on Pendulum-v1) for the
preset's budget,
one run per seed, under ``<results-dir>/<algo>/run_<seed>`` (git-ignored), then
``rlpyt plot`` draws the mean evaluation return with a min-max band across seeds into
``<out-dir>/reference_<algo>.png``.  Finished runs are kept (delete them to re-run);
an interrupted one runs again.  At the end it prints a Markdown table, one row per
algorithm: the steps to the first evaluation at or above the task's threshold and the
final evaluation return of every seed, with the final returns' mean, standard deviation
and range over seeds (``--table-only`` prints it from the kept runs without training).

    python bench/results/reference_curves.py --algos ppo a2c dqn --seeds 0 1 2 --out-dir docs/img
"""

from __future__ import annotations

import argparse
import contextlib
import io
import shutil
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from rlpyt.cli import main as rlpyt_main  # noqa: E402
from rlpyt.cli.presets import PRESETS  # noqa: E402
from rlpyt.utils.logging.run_table import load_runs  # noqa: E402

DEFAULT_RESULTS = ROOT / "bench" / "results" / "reference"
# The learning tests' thresholds of the presets' tasks (evaluation return).
THRESHOLDS = {"CartPole-v1": 475.0, "Pendulum-v1": -250.0}


def eval_history(run_dir: Path) -> list[tuple[int, float]]:
    """``[(env steps, mean evaluation return), ...]`` of a run's ``progress.csv``."""
    table = load_runs(run_dir, params=False)
    return [(int(s), float(r)) for s, r in zip(table["CumSteps"], table["ReturnAverage"])]


def summary_row(algo: str, seeds, results: Path) -> str:
    """One Markdown table row: steps to the threshold and final return of each seed,
    then the final returns' mean +- std and [min, max] over seeds."""
    env = PRESETS[algo].env
    threshold = THRESHOLDS.get(env)
    reached, finals = [], []
    for seed in seeds:
        history = eval_history(results / algo / f"run_{seed}")
        first = next((s for s, ret in history if threshold is not None and ret >= threshold),
                     None)
        reached.append("never" if first is None else f"{first / 1000:.0f}k")
        finals.append(history[-1][1])
    mean = statistics.fmean(finals)
    std = statistics.pstdev(finals)
    return (f"| {algo} | {env} | {threshold:g} | {', '.join(reached)} | "
            f"{', '.join(f'{f:.0f}' for f in finals)} | {mean:.0f} +- {std:.0f} "
            f"[{min(finals):.0f}, {max(finals):.0f}] |")


def finished(run_dir: Path, n_steps: int) -> bool:
    """Whether the run's ``progress.csv`` reaches ``n_steps`` (an interrupted run does not)."""
    if not (run_dir / "progress.csv").exists():
        return False
    table = load_runs(run_dir, params=False)
    return len(table) > 0 and float(table["CumSteps"].iloc[-1]) >= n_steps


def run(algo: str, seed: int, results: Path) -> None:
    run_dir = results / algo / f"run_{seed}"
    if finished(run_dir, PRESETS[algo].runner_kwargs["n_steps"]):
        print(f"{algo} seed {seed}: kept ({run_dir})", flush=True)
        return
    if run_dir.exists():  # an interrupted run starts again from scratch
        shutil.rmtree(run_dir)
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
    p.add_argument("--table-only", action="store_true",
                   help="print the summary table of the kept runs; train and plot nothing")
    args = p.parse_args()
    out_dir = args.out_dir or args.results_dir
    for algo in [] if args.table_only else args.algos:
        for seed in args.seeds:
            run(algo, seed, args.results_dir)
        preset = PRESETS[algo]
        rlpyt_main(["plot", str(args.results_dir / algo), "--out",
                    str(out_dir / f"reference_{algo}.png"), "--labels", algo, "--title",
                    f"{algo} on {preset.env}: mean evaluation return, min-max over "
                    f"{len(args.seeds)} seeds"])
    print(f"| preset | task | threshold | first evaluation >= threshold (seeds "
          f"{', '.join(map(str, args.seeds))}) | final evaluation return | final: mean "
          f"+- std [min, max] |")
    print("|---|---|---|---|---|---|")
    for algo in args.algos:
        print(summary_row(algo, args.seeds, args.results_dir))


if __name__ == "__main__":
    main()
