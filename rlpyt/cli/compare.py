"""``rlpyt compare``: which group of runs is better, with bootstrap confidence intervals.

Each GROUP is one setting: a run folder, a folder of runs or a glob (quote it).  For a
column at a budget, every group's mean and interquartile mean with 95%
stratified-bootstrap intervals, the probability that each group improves on each other,
and a performance-profile PNG (``rlpyt.experiments.group_stats``, statistics by ``rliable``).

    rlpyt compare runs/lr_1e-3 runs/lr_3e-4 --column ReturnAverage --at 100000
"""

from __future__ import annotations

import os

__all__ = ["add_compare_parser", "run_compare"]


def add_compare_parser(subparsers):
    p = subparsers.add_parser(
        "compare",
        help="compare groups of runs: IQM and mean with confidence intervals, P(X > Y)",
        description="Compare groups of runs (each a run folder, a folder of runs, or a "
        "quoted glob) on one progress.csv column at a budget: mean and interquartile mean "
        "with 95%% stratified-bootstrap intervals, the probability of improvement of each "
        "group over each other, and a performance-profile PNG (rliable).",
    )
    p.add_argument("groups", nargs="+", metavar="GROUP")
    p.add_argument("--column", default="ReturnAverage",
                   help="the score column (default ReturnAverage)")
    p.add_argument("--at", type=float, default=None, metavar="STEPS",
                   help="env steps at which each run is scored (its last row at or before "
                        "them; runs short of them are left out); default: each run's last row")
    p.add_argument("--labels", nargs="+", default=None, help="a name per group, in order")
    p.add_argument("--reps", type=int, default=10_000,
                   help="bootstrap samples (default 10000)")
    p.add_argument("--seed", type=int, default=0, help="seed of the bootstrap (default 0)")
    p.add_argument("--out", default=None,
                   help="performance-profile PNG (default <first GROUP>/compare.png, or "
                        "./compare.png for a glob); 'none' for no picture")
    p.set_defaults(handler=run_compare)
    return p


def _error(message: str) -> int:
    print(f"rlpyt compare: {message}")
    return 2


def run_compare(args, extra: list[str]) -> int:
    from rlpyt.experiments.group_stats import compare, group_scores, plot_profiles
    from rlpyt.utils.logging.run_table import load_runs

    if extra:
        return _error(f"unrecognised arguments {extra}")
    if args.labels is not None and len(args.labels) != len(args.groups):
        return _error(f"{len(args.labels)} labels for {len(args.groups)} groups")
    if args.reps < 100:
        return _error(f"--reps must be >= 100, got {args.reps}")
    names = args.labels or [os.path.basename(os.path.normpath(g)) or g for g in args.groups]
    if len(set(names)) != len(names):
        return _error(f"two groups have the same name ({names}); name them with --labels")
    at = None if args.at is None else int(args.at)
    try:
        groups = [group_scores(name, load_runs(path), args.column, at)
                  for name, path in zip(names, args.groups)]
        result = compare(groups, reps=args.reps, seed=args.seed)
    except (FileNotFoundError, KeyError, ValueError) as e:
        return _error(e.args[0] if e.args else str(e))
    budget = f"at {at} env steps" if at is not None else "at each run's last row"
    print(f"{args.column} {budget}; 95% stratified-bootstrap intervals, {args.reps} samples")
    print(f"{'group':<24} {'runs':>4}  {'mean [95% CI]':<28} IQM [95% CI]")
    for group in groups:
        est = result.estimates[group.name]
        cells = [f"{v:.4g} [{lo:.4g}, {hi:.4g}]" for v, lo, hi in (est["mean"], est["iqm"])]
        print(f"{group.name:<24} {len(group.scores):>4}  {cells[0]:<28} {cells[1]}")
        if group.short:
            print(f"{'':<24}       left out, short of the budget: {', '.join(group.short)}")
    for (x, y), (p, lo, hi) in result.improvement.items():
        print(f"P({x} > {y}) = {p:.2f} [{lo:.2f}, {hi:.2f}]")
    if args.out != "none":
        first = args.groups[0]
        out = args.out or (os.path.join(first, "compare.png") if os.path.isdir(first)
                           else "compare.png")
        plot_profiles(groups, out, args.column, seed=args.seed)
        print(f"Performance profiles written to {os.path.abspath(out)}")
    return 0
