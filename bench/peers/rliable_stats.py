"""rliable's own estimates for ``bench/rliable/rliable_check.py``: reads ``{name:
[scores]}`` as JSON from argv[1] (a file), prints ``PEER_RESULT {json}`` with each
group's mean and IQM and their 95% stratified-bootstrap intervals, and P(X > Y) of each
ordered pair."""

import itertools
import json
import sys

import numpy as np
from rliable import library as rly
from rliable import metrics

REPS = int(sys.argv[2]) if len(sys.argv) > 2 else 50_000

with open(sys.argv[1]) as f:
    groups = {k: np.asarray(v, dtype=float).reshape(-1, 1) for k, v in json.load(f).items()}


def aggregates(x):
    return np.array([metrics.aggregate_mean(x), metrics.aggregate_iqm(x)])


points, intervals = rly.get_interval_estimates(groups, aggregates, reps=REPS,
                                               random_state=np.random.RandomState(0))
result = {"estimates": {k: {"mean": [float(points[k][0]), *map(float, intervals[k][:, 0])],
                            "iqm": [float(points[k][1]), *map(float, intervals[k][:, 1])]}
                        for k in groups}}
pairs = {f"{x}>{y}": (groups[x], groups[y]) for x, y in itertools.permutations(groups, 2)}
p_points, p_intervals = rly.get_interval_estimates(
    pairs, metrics.probability_of_improvement, reps=REPS,
    random_state=np.random.RandomState(0))
result["improvement"] = {k: [float(np.ravel(p_points[k])[0]),
                              *map(float, np.ravel(p_intervals[k]))] for k in pairs}
print("PEER_RESULT " + json.dumps(result), flush=True)
