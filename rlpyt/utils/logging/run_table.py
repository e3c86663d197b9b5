"""Runs as one table: every log row of every run under some paths, beside the run's
folder, seed, parameters and whether it finished.

A run is a folder holding ``progress.csv`` (a log row per line, written by the logger)
and, for runs made by ``rlpyt train`` or ``logger_context(log_params=...)``,
``params.json``.  ``load_runs`` reads them all into one ``pandas.DataFrame``::

    import rlpyt
    runs = rlpyt.load_runs("runs/grid")                    # a folder of runs, searched
    runs = rlpyt.load_runs(["runs/a/run_0", "runs/b/*"])   # run folders and globs
    last = runs.groupby("run_dir").last()
    last.groupby("algo.learning_rate")["ReturnAverage"].mean()
"""

from __future__ import annotations

import glob
import json
import os
from collections.abc import Iterable
from pathlib import Path

__all__ = ["RUN_COLUMNS", "find_run_dirs", "flat_params", "load_runs"]

PROGRESS_FILE = "progress.csv"
PARAMS_FILE = "params.json"
RUN_COLUMNS = ("run_dir", "run_id", "seed", "n_steps", "finished")
"""The columns ``load_runs`` puts before each run's own: its folder (absolute), run id,
seed, planned env steps and whether its last row reached them."""


def find_run_dirs(paths: str | os.PathLike | Iterable[str | os.PathLike]) -> list[str]:
    """The run folders (holding ``progress.csv``) at or below each path, a glob pattern
    allowed; sorted, each once.  A ``FileNotFoundError`` names a path that holds none."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    found: set[str] = set()
    for path in paths:
        text = os.fspath(path)
        matches = sorted(glob.glob(text)) if glob.has_magic(text) else [text]
        here = set()
        for match in matches:
            for root, dirs, files in os.walk(match):
                dirs[:] = [d for d in dirs if d != "checkpoints"]
                if PROGRESS_FILE in files:
                    here.add(os.path.abspath(root))
        found |= here
        if not here:
            raise FileNotFoundError(f"no {PROGRESS_FILE} at or below {text!r}: no run there")
    return sorted(found)


def flat_params(config: dict, prefix: str = "") -> dict:
    """A nested config as ``{"algo.learning_rate": 3e-4, ...}``; lists become tuples,
    so that runs can be grouped by any parameter."""
    flat = {}
    for key, value in config.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(flat_params(value, f"{name}."))
        else:
            flat[name] = tuple(value) if isinstance(value, list) else value
    return flat


def load_runs(paths: str | os.PathLike | Iterable[str | os.PathLike], params: bool = True):
    """Every log row of every run at or below ``paths`` as one ``pandas.DataFrame``.

    Columns: ``RUN_COLUMNS`` (``run_dir``, ``run_id``, ``seed``, ``n_steps``,
    ``finished``), each run's ``progress.csv`` columns (a column one run lacks is NaN in
    its rows), then with ``params`` (default True) its flattened ``params.json`` config
    (``algo.learning_rate``, ``env.id``, ...).  ``finished`` is True when the run's last
    row has ``CumSteps`` at or past its planned ``runner.n_steps``, False when it stopped
    short (still running, or killed), and None when the run has no ``params.json`` to
    say.  A run without rows yet contributes no rows, and of a run being written only
    the lines complete when read count.  Rows that repeat an earlier
    ``CumSteps`` of the same run (a killed run's extra row, from a version that did not
    cut them back on resume) keep the later one.
    """
    import pandas as pd

    tables = []
    for run_dir in find_run_dirs(paths):
        table = _read_progress(run_dir)
        if table.empty:
            continue
        config, run_id = _read_params(run_dir)
        n_steps = config.get("runner", {}).get("n_steps")
        finished = None
        if n_steps is not None and "CumSteps" in table:
            finished = bool(table["CumSteps"].iloc[-1] >= n_steps)
        front = dict(run_dir=run_dir, run_id=run_id, seed=config.get("seed"),
                     n_steps=n_steps, finished=finished)
        if params:
            front.update({k: v for k, v in flat_params(config).items() if k not in front})
        extra = pd.DataFrame({k: [v] * len(table) for k, v in front.items()},
                             index=table.index)
        progress = table.drop(columns=[c for c in table if c in front])
        tables.append(pd.concat([extra[list(RUN_COLUMNS)], progress,
                                 extra.drop(columns=list(RUN_COLUMNS))], axis=1))
    if not tables:
        return pd.DataFrame(columns=list(RUN_COLUMNS))
    return pd.concat(tables, ignore_index=True, sort=False)


def _read_progress(run_dir: str):
    """The run's rows; of a run being written, the lines complete when read (a line cut
    short by the writer is left out)."""
    import io

    import pandas as pd

    with open(os.path.join(run_dir, PROGRESS_FILE), "rb") as f:
        text = f.read()
    text = text[:text.rfind(b"\n") + 1]
    try:
        table = pd.read_csv(io.BytesIO(text))
    except pd.errors.EmptyDataError:  # created, nothing logged yet
        return pd.DataFrame()
    if "CumSteps" in table and table["CumSteps"].duplicated().any():
        table = table.drop_duplicates("CumSteps", keep="last").reset_index(drop=True)
    return table


def _read_params(run_dir: str) -> tuple[dict, int | None]:
    """The run's config and run id from ``params.json`` (``{}`` and the ``run_<N>``
    folder's number without one)."""
    file = Path(run_dir) / PARAMS_FILE
    name = Path(run_dir).name
    folder_id = int(name[4:]) if name.startswith("run_") and name[4:].isdigit() else None
    if not file.is_file():
        return {}, folder_id
    with open(file) as f:
        params = json.load(f)
    config = params.get("config", params) if isinstance(params, dict) else {}
    run_id = params.get("run_ID", folder_id) if isinstance(params, dict) else folder_id
    return config if isinstance(config, dict) else {}, run_id
