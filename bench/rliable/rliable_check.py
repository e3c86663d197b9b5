"""``rlpyt compare``'s statistics against rliable's own, on the same scores.

rliable 1.2 cannot share our environment (it needs arch < 8, which does not import beside
pandas 3), so it runs in a venv of its own (``bench/peers/``, peer ``rliable``).  Both
sides take the same groups of scores: synthetic ones (a few runs, ties, an outlier) and,
with ``--runs``, the runs of committed results folders.  Point estimates must agree
exactly; interval ends differ by Monte Carlo error only (each side draws its own
bootstrap samples), which the table shows beside the intervals' widths.

    python bench/rliable/rliable_check.py
    python bench/rliable/rliable_check.py --runs docs/results/classic/dqn/Acrobot-v1 \\
        docs/results/classic/cat_dqn/Acrobot-v1 --column TrainReturnAverage --at 500000
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile

import numpy as np

BENCH = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, BENCH)  # bench/peers/

import peers  # noqa: E402

from rlpyt.experiments.group_stats import GroupScores, compare, group_scores  # noqa: E402
from rlpyt.utils.logging.run_table import load_runs  # noqa: E402

SYNTHETIC = {
    "three": [1.0, 2.0, 4.0],
    "five": [0.5, 2.5, 2.5, 3.0, 9.0],
    "ten": list(np.random.default_rng(0).normal(2.0, 1.0, 10).round(3)),
}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", nargs="*", default=[], help="results folders, one group each")
    p.add_argument("--column", default="ReturnAverage")
    p.add_argument("--at", type=int, default=None)
    p.add_argument("--reps", type=int, default=50_000)
    args = p.parse_args()
    groups = ([group_scores(os.path.basename(os.path.dirname(r.rstrip("/"))) or r,
                            load_runs(r), args.column, args.at) for r in args.runs]
              or [GroupScores(k, np.asarray(v), []) for k, v in SYNTHETIC.items()])
    ours = compare(groups, reps=args.reps, seed=0)
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump({g.name: g.scores.tolist() for g in groups}, f)
    theirs = peers.run("rliable", ["rliable_stats.py", f.name, str(args.reps)], timeout=900)
    os.unlink(f.name)
    if theirs is None:
        return 1
    print("| statistic | ours (value [95% CI]) | rliable | point equal | "
          "largest end gap / CI width |")
    print("|---|---|---|---|---|")
    worst = 0.0
    rows = [(f"{name} {stat}", ours.estimates[name][stat], theirs["estimates"][name][stat])
            for name in ours.estimates for stat in ("mean", "iqm")]
    rows += [(f"P({x} > {y})", value, theirs["improvement"][f"{x}>{y}"])
             for (x, y), value in ours.improvement.items()]
    for label, (v, lo, hi), (tv, tlo, thi) in rows:
        width = max(thi - tlo, 1e-12)
        gap = max(abs(lo - tlo), abs(hi - thi)) / width
        worst = max(worst, gap)
        print(f"| {label} | {v:.4g} [{lo:.4g}, {hi:.4g}] | {tv:.4g} [{tlo:.4g}, {thi:.4g}] | "
              f"{abs(v - tv) < 1e-9} | {gap:.3f} |")
    print(f"\nlargest gap of an interval end, in interval widths: {worst:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
