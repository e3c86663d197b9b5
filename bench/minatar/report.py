"""The MinAtar results table (markdown, printed) and learning-curve PNGs from the runs of
``dqn.py``, ``async_dqn.py``, ``ppo.py`` and ``impala.py``.

For each algorithm and game, across seeds (mean +- standard deviation):

* the return at ``--at`` frames (default 100k, the budget every algorithm reached), so
  algorithms run to different budgets are compared at equal experience;
* the final return (mean return of the latest 100 training episodes at the end of
  the run's budget), with its range;
* the training speed, frames per second of wall time (median over seeds), on the
  machine that ran it;
* a uniformly random policy's mean return (``--random-episodes`` episodes, seed 0) for
  scale.

Against the paper (``paper.py``: Young & Tian 2019, Figure 2, read from the figure):
for each game, our return at 0.25M, 0.5M, 1M, 2M and 5M frames (mean and standard
error over seeds) beside the paper's value and its reading error, with a verdict per
cell; DQN against the paper's DQN, and PPO and IMPALA beside the paper's AC(0.8) for
scale only (a different algorithm).

Pictures: ``<out-dir>/minatar_<algo>.png`` (a panel per game, the mean curve across
seeds with a min-max band), ``<out-dir>/minatar_all.png`` (every algorithm on one
panel per game, the first ``--at`` frames on a log axis so short and long budgets
show side by side, the paper's DQN and AC(0.8) dashed) and
``<out-dir>/minatar_dqn_vs_paper_<Game>.png`` (ours and the paper's DQN, one per game).

    python bench/minatar/report.py                       # all algorithms found
    python bench/minatar/report.py --out-dir docs/img    # the committed pictures
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from common import DEFAULT_RESULTS, GAMES, main_guard
from paper import ALGORITHM_LABELS, COMPARE_AT, mean_sem, paper_curve, paper_point, verdict

main_guard()

import numpy as np  # noqa: E402

from rlpyt.cli.plot import aggregate, load_curve  # noqa: E402
from rlpyt.envs.minatar import MinAtarEnv  # noqa: E402
from rlpyt.utils.logging.run_table import load_runs  # noqa: E402

LABELS = {"dqn": "DQN", "async_dqn": "DQN, AsyncRl", "ppo": "PPO", "impala": "IMPALA"}
COLORS = {"dqn": "tab:blue", "async_dqn": "tab:cyan", "ppo": "tab:orange",
          "impala": "tab:green"}


def label(algo: str) -> str:
    return LABELS.get(algo, algo)


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


def return_at(run: Path, frames: float, column: str = "ReturnAverage") -> float | None:
    """The run's ``column`` at its last row at or before ``frames`` (None if it logged
    no value by then or never reached ``frames``)."""
    xs, ys, _ = load_curve(str(run), column)
    if not xs or xs[-1] < frames:
        return None
    before = [y for x, y in zip(xs, ys) if x <= frames]
    return before[-1] if before else None


def frames_per_second(run: Path) -> float:
    """Frames over wall time of the whole run (start-up and logging included)."""
    last = load_runs(run, params=False).iloc[-1]
    return float(last["CumSteps"]) / float(last["CumTime (s)"])


def _mean_std(values: list[float]) -> str:
    std = statistics.pstdev(values) if len(values) > 1 else 0.0
    return f"{statistics.mean(values):.2f} +- {std:.2f}"


def table(results: Path, algos: list[str], random_episodes: int, at: float) -> str:
    lines = [f"| game | algorithm | frames | seeds | return at {at / 1e3:g}k frames | final "
             "return [min, max] | frames/s | random policy |",
             "|---|---|---:|---:|---|---|---:|---:|"]
    for game in GAMES:
        rand_mean, rand_sem = random_return(game, random_episodes)
        for algo in algos:
            runs = runs_of(results, algo, game)
            finals, steps = final_returns(runs)
            if not finals:
                continue
            early = [r for r in (return_at(run, at) for run in runs) if r is not None]
            speed = statistics.median(frames_per_second(run) for run in runs)
            lines.append(
                f"| {game} | {label(algo)} | {int(min(steps)):,} | {len(finals)} | "
                f"{_mean_std(early) if len(early) == len(runs) else '-'} | "
                f"{_mean_std(finals)} [{min(finals):.2f}, {max(finals):.2f}] | "
                f"{speed:,.0f} | {rand_mean:.2f} +- {rand_sem:.2f} |")
    return "\n".join(lines)


PAPER_PEER = {"dqn": "dqn", "async_dqn": "dqn", "ppo": "ac_lambda_0.8",
              "impala": "ac_lambda_0.8"}


def paper_table(results: Path, algo: str) -> str:
    """Our returns at ``COMPARE_AT`` frames beside the paper's curve, with verdicts."""
    peer = PAPER_PEER.get(algo)
    if peer is None:
        return ""
    lines = [f"| game | frames | {label(algo)} (mean +- s.e., seeds) | "
             f"{ALGORITHM_LABELS[peer]} +- reading error | verdict |",
             "|---|---:|---|---|---|"]
    for game in GAMES:
        runs = runs_of(results, algo, game)
        for frames in COMPARE_AT:
            values = [r for r in (return_at(run, frames) for run in runs) if r is not None]
            point = paper_point(game, frames, peer)
            if not values or point is None:
                continue
            mean, sem = mean_sem(values)
            result = verdict(values, point) if peer == "dqn" else "(other algorithm)"
            lines.append(f"| {game} | {frames / 1e6:g}M | {mean:.2f} +- {sem:.2f} "
                         f"({len(values)}) | {point.value:.2f} +- {point.reading_err:.2f} | "
                         f"{result} |")
    return "\n".join(lines) if len(lines) > 2 else ""


def save_figure(fig, out: Path, name: str) -> Path:
    """Lay ``fig`` out, write it to ``out / name`` (100 dpi) and free it."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    out.mkdir(parents=True, exist_ok=True)
    path = out / name
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def plot_paper_curve(ax, game: str, algorithm: str, **style) -> None:
    points = [p for p in paper_curve(game, algorithm) if p.comparable]
    ax.errorbar([p.frames for p in points], [p.value for p in points],
                yerr=[p.reading_err for p in points], label=ALGORITHM_LABELS[algorithm],
                capsize=2, **style)


def plot_vs_paper(results: Path, algo: str, game: str, out: Path, spread: str = "sem"
                  ) -> Path | None:
    """Our mean curve (a ``spread`` band across seeds as ``rlpyt.cli.plot.aggregate``
    takes it, and each seed thin) with the paper's DQN drawn over it."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = runs_of(results, algo, game)
    if not runs:
        return None
    curves = [load_curve(str(r), "ReturnAverage")[:2] for r in runs]
    fig, ax = plt.subplots(figsize=(5.2, 3.6))
    for xs, ys in curves:
        ax.plot(xs, ys, color="tab:blue", alpha=0.25, linewidth=0.8)
    grid, mean, low, high = aggregate(curves, spread)
    seeds = f"{len(runs)} seed{'s' * (len(runs) > 1)}"
    ax.plot(grid, mean, color="tab:blue", label=f"rlpyt {label(algo)} ({seeds})")
    ax.fill_between(grid, low, high, color="tab:blue", alpha=0.25)
    plot_paper_curve(ax, game, PAPER_PEER[algo], color="black", linestyle="--", marker=".")
    ax.set_title(f"MinAtar {game}: {label(algo)} against the paper")
    ax.set_xlabel("frames")
    ax.set_ylabel("return, latest 100 training episodes")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return save_figure(fig, out, f"minatar_{algo}_vs_paper_{game}.png")


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
    fig.suptitle(f"rlpyt {label(algo)} on MinAtar: mean and min-max over seeds")
    return save_figure(fig, out, f"minatar_{algo}.png")


def plot_all(results: Path, algos: list[str], out: Path) -> Path:
    """Every algorithm on one panel per game (log frames axis)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import LogLocator, NullFormatter

    fig, axes = plt.subplots(1, len(GAMES), figsize=(3.6 * len(GAMES), 3.4), squeeze=False)
    for ax, game in zip(axes[0], GAMES):
        for algo in algos:
            runs = runs_of(results, algo, game)
            if not runs:
                continue
            curves = [load_curve(str(r), "ReturnAverage")[:2] for r in runs]
            grid, mean, low, high = aggregate(curves, "minmax")
            color = COLORS.get(algo)
            ax.plot(grid, mean, label=f"{label(algo)} ({len(runs)})", color=color)
            ax.fill_between(grid, low, high, alpha=0.2, color=color)
        for algorithm, color in (("dqn", "tab:blue"), ("ac_lambda_0.8", "tab:orange")):
            plot_paper_curve(ax, game, algorithm, color=color, linestyle="--", alpha=0.6)
        ax.set_xscale("log")
        ax.xaxis.set_major_locator(LogLocator(base=10))
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_title(game)
        ax.set_xlabel("frames (log scale)")
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("training return (latest 100 episodes)")
    handles = {}
    for ax in axes[0]:  # One legend entry per algorithm, whichever panels it has.
        handles.update(zip(*ax.get_legend_handles_labels()[::-1]))
    axes[0][-1].legend(handles.values(), handles.keys(), title="algorithm (seeds)",
                       fontsize=8)
    fig.suptitle("rlpyt on MinAtar: mean and min-max over seeds; dashed: the paper's "
                 "curves (Young & Tian 2019, Fig. 2)")
    return save_figure(fig, out, "minatar_all.png")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--results-dir", type=Path, default=DEFAULT_RESULTS)
    p.add_argument("--algos", nargs="+", default=None,
                   help="algorithms to report (default: every one under --results-dir)")
    p.add_argument("--out-dir", type=Path, default=None,
                   help="where the PNGs go (default <results-dir>)")
    p.add_argument("--random-episodes", type=int, default=100,
                   help="episodes of the random-policy baseline per game (default 100)")
    p.add_argument("--at", type=float, default=1e5,
                   help="frames at which every algorithm's return is compared (default 1e5)")
    args = p.parse_args()
    found = sorted(d.name for d in args.results_dir.iterdir() if d.is_dir())
    algos = args.algos or [a for a in LABELS if a in found] + [a for a in found
                                                                if a not in LABELS]
    out = args.out_dir or args.results_dir
    for algo in algos:
        path = plot(args.results_dir, algo, out)
        if path is not None:
            print(f"{label(algo)}: curves written to {path}")
    print(f"all: curves written to {plot_all(args.results_dir, algos, out)}")
    for algo in ("dqn",):
        for game in GAMES if algo in algos else ():
            path = plot_vs_paper(args.results_dir, algo, game, out)
            if path is not None:
                print(f"{label(algo)} {game}: against the paper in {path}")
    print(table(args.results_dir, algos, args.random_episodes, args.at))
    for algo in algos:
        text = paper_table(args.results_dir, algo)
        if text:
            print(f"\n{label(algo)} against the paper:\n{text}")


if __name__ == "__main__":
    main()
