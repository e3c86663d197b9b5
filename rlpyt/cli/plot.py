"""``rlpyt plot``: learning curves (mean and spread across runs) from ``progress.csv``."""

from __future__ import annotations

import csv
import math
import os
from collections import defaultdict

__all__ = ["add_plot_parser", "find_runs", "load_curve", "plot_runs", "run_plot"]


def add_plot_parser(subparsers):
    p = subparsers.add_parser(
        "plot",
        help="plot learning curves of run directories",
        description="Plot return against env steps. Each RUN_DIR is a run (holding "
        "progress.csv) or a directory of runs (run_*/progress.csv); runs under the same "
        "parent are one setting, drawn as their mean with a min-max band.",
    )
    p.add_argument("run_dirs", nargs="+", metavar="RUN_DIR")
    p.add_argument("--out", default=None, help="PNG path (default: <first RUN_DIR>/learning_curve.png)")
    p.add_argument("--y", default=None,
                   help="column to plot (default ReturnAverage, else the first *Return* column)")
    p.set_defaults(handler=run_plot)
    return p


def find_runs(paths: list[str]) -> dict[str, list[str]]:
    """Group run directories by setting (their parent directory)."""
    groups = defaultdict(list)
    for path in paths:
        path = os.path.abspath(path)
        if os.path.isfile(os.path.join(path, "progress.csv")):
            groups[os.path.dirname(path)].append(path)
            continue
        found = False
        for root, _dirs, files in os.walk(path):
            if "progress.csv" in files:
                groups[os.path.dirname(root)].append(root)
                found = True
        if not found:
            raise FileNotFoundError(f"no progress.csv under {path}")
    return {k: sorted(v) for k, v in groups.items()}


def load_curve(run_dir: str, y_key: str | None = None) -> tuple[list[float], list[float], str]:
    with open(os.path.join(run_dir, "progress.csv"), newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        raise ValueError(f"{run_dir}/progress.csv has no rows yet")
    keys = rows[0].keys()
    if y_key is None:
        candidates = ["ReturnAverage"] + [k for k in keys if "Return" in k]
        y_key = next((k for k in candidates if k in keys), None)
    if y_key not in keys:
        raise KeyError(f"column {y_key!r} not in {run_dir}/progress.csv; columns: {sorted(keys)}")
    xs, ys = [], []
    for row in rows:
        x, y = _num(row.get("CumSteps")), _num(row.get(y_key))
        if x is not None and y is not None and not math.isnan(y):
            xs.append(x)
            ys.append(y)
    return xs, ys, y_key


def _num(text):
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


def plot_runs(groups: dict[str, list[str]], out: str, y_key: str | None = None) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for setting, runs in groups.items():
        curves = [load_curve(r, y_key) for r in runs]
        label_key = curves[0][2]
        grid = sorted(set(x for xs, _, _ in curves for x in xs))
        ys = np.array([np.interp(grid, xs, vals, left=np.nan, right=np.nan)
                       for xs, vals, _ in curves])
        mean = np.nanmean(ys, axis=0)
        label = f"{os.path.basename(setting)} ({len(runs)} run{'s' * (len(runs) > 1)})"
        ax.plot(grid, mean, label=label)
        if len(runs) > 1:
            ax.fill_between(grid, np.nanmin(ys, axis=0), np.nanmax(ys, axis=0), alpha=0.25)
    ax.set_xlabel("env steps")
    ax.set_ylabel(label_key)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out


def run_plot(args, extra: list[str]) -> int:
    if extra:
        print(f"rlpyt plot: unrecognised arguments {extra}")
        return 2
    groups = find_runs(args.run_dirs)
    out = args.out or os.path.join(args.run_dirs[0], "learning_curve.png")
    plot_runs(groups, out, args.y)
    print(f"Learning curve written to {os.path.abspath(out)}")
    return 0
