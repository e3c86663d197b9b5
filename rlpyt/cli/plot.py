"""``rlpyt plot``: learning curves (mean and spread across runs) from ``progress.csv``.

Each RUN_DIR is one run (it holds ``progress.csv``) or a directory of runs; runs that
share a parent directory are one setting (the seeds of one experiment), drawn as their
mean with a band: min-max (default), standard deviation or standard error across runs.
Several settings overlay on one axis; several ``--y`` columns make one panel each.

    rlpyt plot runs/ppo_CartPole-v1                       # ReturnAverage vs env steps
    rlpyt plot runs/a runs/b --y ReturnAverage LossAverage --spread std --smooth 3
"""

from __future__ import annotations

import difflib
import os
from collections import defaultdict
from collections.abc import Sequence

from rlpyt.utils.logging.run_table import RUN_COLUMNS, find_run_dirs, load_runs

__all__ = [
    "SPREADS",
    "add_plot_parser",
    "aggregate",
    "find_runs",
    "load_curve",
    "plot_runs",
    "resolve_column",
    "run_plot",
]

SPREADS = ("minmax", "std", "sem", "none")


def add_plot_parser(subparsers):
    p = subparsers.add_parser(
        "plot",
        help="plot learning curves of run directories",
        description="Plot logged columns against env steps. Each RUN_DIR is a run (holding "
        "progress.csv) or a directory of runs (run_*/progress.csv); runs under the same "
        "parent are one setting, drawn as their mean with a band across runs.",
    )
    p.add_argument("run_dirs", nargs="+", metavar="RUN_DIR")
    p.add_argument("--out", default=None,
                   help="PNG path (default: <first RUN_DIR>/learning_curve.png)")
    p.add_argument("--y", nargs="+", default=None, metavar="COLUMN",
                   help="column(s) to plot, one panel each (default ReturnAverage, else the "
                        "first *Return* column); any progress.csv column, e.g. LossAverage")
    p.add_argument("--x", default="CumSteps",
                   help="column for the horizontal axis (default CumSteps; e.g. 'CumTime (s)')")
    p.add_argument("--spread", default="minmax", choices=SPREADS,
                   help="band across runs: min-max (default), mean +- std, mean +- standard "
                        "error, or none")
    p.add_argument("--smooth", type=int, default=1,
                   help="moving average over this many logged rows, per run (default 1: none)")
    p.add_argument("--labels", nargs="+", default=None,
                   help="legend label per setting, in order (default: directory names)")
    p.add_argument("--title", default=None, help="figure title")
    p.set_defaults(handler=run_plot)
    return p


def find_runs(paths: list[str]) -> dict[str, list[str]]:
    """Group run directories by setting (their parent directory)."""
    groups = defaultdict(list)
    for run_dir in find_run_dirs(paths):
        groups[os.path.dirname(run_dir)].append(run_dir)
    return dict(groups)


def load_curve(run_dir: str, y_key: str | None = None, x_key: str = "CumSteps"
               ) -> tuple[list[float], list[float], str]:
    """``(xs, ys, y_key)`` of one run's ``progress.csv`` (rows with a non-numeric or NaN
    value are skipped); ``y_key=None`` picks ReturnAverage or the first *Return* column."""
    import pandas as pd

    table = load_runs(run_dir, params=False)
    keys = [k for k in table.columns if k not in RUN_COLUMNS]
    if table.empty:
        raise ValueError(f"{run_dir}/progress.csv has no rows yet")
    if y_key is None:
        candidates = ["ReturnAverage"] + [k for k in keys if "Return" in k]
        y_key = next((k for k in candidates if k in keys), None)
    y_key = resolve_column(y_key, keys, run_dir, "--y")
    x_key = resolve_column(x_key, keys, run_dir, "--x")
    xs = pd.to_numeric(table[x_key], errors="coerce")
    ys = pd.to_numeric(table[y_key], errors="coerce")
    kept = xs.notna() & ys.notna()
    return xs[kept].tolist(), ys[kept].tolist(), y_key


def resolve_column(key: str | None, keys, run_dir: str, flag: str = "--y") -> str:
    """The column of ``keys`` that ``key`` names: itself, else the one equal to it up to
    case (a run directory may hold camelCase columns such as ``lossAverage`` where the
    library writes ``LossAverage``); otherwise a ``KeyError`` naming the nearest column."""
    keys = list(keys)
    if key in keys:
        return key
    if key is not None:
        folded = [k for k in keys if k.lower() == key.lower()]
        if len(folded) == 1:
            return folded[0]
    lowered = {k.lower(): k for k in keys}
    near = difflib.get_close_matches(str(key).lower(), list(lowered), n=1, cutoff=0.6)
    hint = f"did you mean {lowered[near[0]]!r}? " if near else ""
    raise KeyError(f"{flag} column {key!r} not in {run_dir}/progress.csv; {hint}columns: "
                   f"{sorted(keys)}")


def _smooth(values, window: int):
    """Trailing moving average over ``window`` points (shorter at the start)."""
    import numpy as np

    values = np.asarray(values, dtype=float)
    if window <= 1 or len(values) == 0:
        return values
    sums = np.cumsum(np.insert(values, 0, 0.0))
    idx = np.arange(1, len(values) + 1)
    start = np.maximum(idx - window, 0)
    return (sums[idx] - sums[start]) / (idx - start)


def aggregate(curves: Sequence[tuple[Sequence[float], Sequence[float]]], spread: str = "minmax",
              smooth: int = 1):
    """Mean and band of several runs' ``(xs, ys)`` on the union of their x values.

    Each run is interpolated linearly between its own logged points (no extrapolation
    past its ends, so a shorter run only counts where it has data).  Returns ``(grid,
    mean, low, high)``; ``low``/``high`` are the min and max (``"minmax"``), mean -+ the
    standard deviation (``"std"``, ddof 0) or standard error (``"sem"``), or the mean
    itself (``"none"``).
    """
    import numpy as np

    if spread not in SPREADS:
        raise ValueError(f"spread={spread!r} is not one of {SPREADS}")
    if not isinstance(smooth, int) or smooth < 1:
        raise ValueError(f"smooth={smooth!r} must be an int >= 1")
    grid = np.array(sorted({x for xs, _ in curves for x in xs}), dtype=float)
    ys = np.array([np.interp(grid, xs, _smooth(vals, smooth), left=np.nan, right=np.nan)
                   for xs, vals in curves])
    ys = ys.reshape(len(curves), len(grid))
    count = np.sum(~np.isnan(ys), axis=0)
    keep = count > 0
    grid, ys, count = grid[keep], ys[:, keep], count[keep]
    mean = np.nanmean(ys, axis=0)
    if spread == "minmax":
        low, high = np.nanmin(ys, axis=0), np.nanmax(ys, axis=0)
    elif spread in ("std", "sem"):
        width = np.nanstd(ys, axis=0)
        if spread == "sem":
            width = width / np.sqrt(count)
        low, high = mean - width, mean + width
    else:
        low = high = mean
    return grid, mean, low, high


def plot_runs(groups: dict[str, list[str]], out: str, y_key: str | Sequence[str] | None = None,
              x_key: str = "CumSteps", spread: str = "minmax", smooth: int = 1,
              labels: Sequence[str] | None = None, title: str | None = None) -> str:
    """Draw every setting of ``groups`` (``find_runs``) into the PNG ``out``; one panel per
    column of ``y_key`` (a name, a list of names, or ``None`` for the return)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    y_keys = [y_key] if y_key is None or isinstance(y_key, str) else list(y_key)
    if labels is not None and len(labels) != len(groups):
        raise ValueError(f"--labels: {len(labels)} labels for {len(groups)} settings "
                         f"({', '.join(os.path.basename(s) for s in groups)})")
    fig, axes = plt.subplots(1, len(y_keys), figsize=(7 * len(y_keys), 4.5), squeeze=False)
    for ax, key in zip(axes[0], y_keys):
        label_key = key
        for i, (setting, runs) in enumerate(groups.items()):
            loaded = [load_curve(r, key, x_key) for r in runs]
            label_key = loaded[0][2]
            grid, mean, low, high = aggregate([(xs, ys) for xs, ys, _ in loaded], spread,
                                              smooth)
            name = labels[i] if labels is not None else os.path.basename(setting)
            line, = ax.plot(grid, mean, label=f"{name} ({len(runs)} run{'s' * (len(runs) > 1)})")
            if len(runs) > 1 and spread != "none":
                ax.fill_between(grid, low, high, alpha=0.25, color=line.get_color())
        ax.set_xlabel("env steps" if x_key == "CumSteps" else x_key)
        ax.set_ylabel(label_key)
        ax.grid(alpha=0.3)
        ax.legend()
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out


def run_plot(args, extra: list[str]) -> int:
    if extra:
        print(f"rlpyt plot: unrecognised arguments {extra}")
        return 2
    if args.smooth < 1:
        print(f"rlpyt plot: --smooth must be >= 1, got {args.smooth}")
        return 2
    groups = find_runs(args.run_dirs)
    out = args.out or os.path.join(args.run_dirs[0], "learning_curve.png")
    try:
        plot_runs(groups, out, args.y, x_key=args.x, spread=args.spread, smooth=args.smooth,
                  labels=args.labels, title=args.title)
    except (KeyError, ValueError) as e:
        print(f"rlpyt plot: {e.args[0] if e.args else e}")
        return 2
    print(f"Learning curve written to {os.path.abspath(out)}")
    return 0
