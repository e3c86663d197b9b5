"""The MinAtar results table (markdown, printed) and learning-curve PNGs from the runs of
``dqn.py`` / ``ppo.py``.

For each algorithm and game: the final ``ReturnAverage`` of each seed (mean return of
its latest training episodes at the end of its budget), their mean, standard deviation
and range across seeds, and a uniformly random policy's mean return on the same env
(``--random-episodes`` episodes, seed 0) for scale.  One PNG per algorithm,
``<out-dir>/minatar_<algo>.png``: a panel per game, the mean curve across seeds with a
min-max band.

    python bench/minatar/report.py                       # all algorithms found
    python bench/minatar/report.py --out-dir docs/img    # the committed pictures
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from common import DEFAULT_RESULTS, GAMES, main_guard

main_guard()

import numpy as np  # noqa: E402

from rlpyt.cli.plot import aggregate, load_curve  # noqa: E402
from rlpyt.envs.minatar import MinAtarEnv  # noqa: E402


def random_return(game: str, episodes: int, seed: int = 0) -> tuple[float, float]:
    """Mean and standard error of a uniformly random policy's episode return."""
    env = MinAtarEnv(game)
    env.seed(seed)
    env.reset()
    rng = np.random.default_rng(seed)
    returns, total = [], 0.0
    while len(returns) < episodes:
        step = env.step(rng.integers(env.action_space.n))
        total += float(step.reward)
        if step.done:
            returns.append(total)
            total = 0.0
            env.reset()
    return float(np.mean(returns)), float(np.std(returns) / np.sqrt(len(returns)))


def runs_of(results: Path, algo: str, game: str) -> list[Path]:
    return sorted(p.parent for p in (results / algo / game).glob("run_*/progress.csv"))


def final_returns(runs: list[Path]) -> tuple[list[float], list[float]]:
    """Each run's last logged ReturnAverage and the env steps it was logged at."""
    finals, steps = [], []
    for run in runs:
        xs, ys, _ = load_curve(str(run), "ReturnAverage")
        if ys:
            finals.append(ys[-1])
            steps.append(xs[-1])
    return finals, steps


def table(results: Path, algos: list[str], random_episodes: int) -> str:
    lines = ["| game | algorithm | env steps | seeds | final return: mean +- std [min, max] "
             "| random policy |", "|---|---|---:|---:|---|---:|"]
    for game in GAMES:
        rand_mean, rand_sem = random_return(game, random_episodes)
        for algo in algos:
            finals, steps = final_returns(runs_of(results, algo, game))
            if not finals:
                continue
            std = statistics.pstdev(finals) if len(finals) > 1 else 0.0
            lines.append(
                f"| {game} | {algo} | {int(min(steps)):,} | {len(finals)} | "
                f"{statistics.mean(finals):.2f} +- {std:.2f} [{min(finals):.2f}, "
                f"{max(finals):.2f}] | {rand_mean:.2f} +- {rand_sem:.2f} |")
    return "\n".join(lines)


def plot(results: Path, algo: str, out: Path) -> Path | None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    games = [g for g in GAMES if runs_of(results, algo, g)]
    if not games:
        return None
    fig, axes = plt.subplots(1, len(games), figsize=(3.6 * len(games), 3.2), squeeze=False)
    for ax, game in zip(axes[0], games):
        runs = runs_of(results, algo, game)
        curves = [load_curve(str(r), "ReturnAverage")[:2] for r in runs]
        grid, mean, low, high = aggregate(curves, "minmax")
        ax.plot(grid, mean)
        ax.fill_between(grid, low, high, alpha=0.25)
        ax.set_title(f"{game} ({len(runs)} seed{'s' * (len(runs) > 1)})")
        ax.set_xlabel("env steps (frames)")
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("training return (latest 100 episodes)")
    fig.suptitle(f"rlpyt {algo.upper()} on MinAtar: mean and min-max over seeds")
    fig.tight_layout()
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"minatar_{algo}.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--results-dir", type=Path, default=DEFAULT_RESULTS)
    p.add_argument("--algos", nargs="+", default=None,
                   help="algorithms to report (default: every one under --results-dir)")
    p.add_argument("--out-dir", type=Path, default=None,
                   help="where the PNGs go (default <results-dir>)")
    p.add_argument("--random-episodes", type=int, default=100,
                   help="episodes of the random-policy baseline per game (default 100)")
    args = p.parse_args()
    algos = args.algos or sorted(d.name for d in args.results_dir.iterdir() if d.is_dir())
    for algo in algos:
        path = plot(args.results_dir, algo, args.out_dir or args.results_dir)
        if path is not None:
            print(f"{algo}: curves written to {path}")
    print(table(args.results_dir, algos, args.random_episodes))


if __name__ == "__main__":
    main()
