"""The run logger: text log, tabular diagnostics (CSV, terminal, TensorBoard), snapshots.

State is module-level, as in classic rlpyt, so any module can ``from
rlpyt.utils.logging import logger`` and write to the current run.  Normally
``rlpyt.utils.logging.context.logger_context`` sets the outputs up and removes
them again; the functions here can also be used directly.

Text: ``log(s)`` prints ``<timestamp> | <prefixes><s>`` and appends it to every text
output (``debug.log`` in a run).  Tabular: ``record_tabular(key, value)`` collects one
row; ``dump_tabular()`` prints it as a table, appends it to every tabular output
(``progress.csv``; a key first seen mid-run widens the header, see ``CsvOutput``) and
writes numeric values as TensorBoard scalars when a ``SummaryWriter`` is set.

Snapshot modes for ``save_itr_params(itr, params)`` (files in the snapshot dir):
``"all"``: ``itr_<itr>.pkl`` every call; ``"last"``: ``params.pkl``, overwritten;
``"gap"``: ``itr_<itr>.pkl`` when ``itr % snapshot_gap == 0``; ``"last+gap"``: both
of the previous two; ``"none"``: nothing.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from rlpyt.utils.logging.csv_output import CsvOutput
from rlpyt.utils.logging.run_dir import StorageWriteError

__all__ = [
    "SNAPSHOT_MODES",
    "add_tabular_output",
    "add_text_output",
    "column_name",
    "dump_tabular",
    "get_disable_prefix",
    "get_log_tabular_only",
    "get_snapshot_dir",
    "get_snapshot_gap",
    "get_snapshot_mode",
    "get_tabular_output",
    "get_tabular_outputs",
    "get_text_outputs",
    "get_tf_summary_writer",
    "log",
    "log_parameters",
    "pop_prefix",
    "pop_tabular_prefix",
    "prefix",
    "push_prefix",
    "push_tabular_prefix",
    "record_tabular",
    "record_tabular_misc_stat",
    "remove_tabular_output",
    "remove_text_output",
    "reset",
    "restart_summary_writer",
    "resume_requested",
    "set_resume",
    "tabular_row_count",
    "truncate_tabular_outputs",
    "save_itr_params",
    "set_disable_prefix",
    "set_iteration",
    "set_log_tabular_only",
    "set_snapshot_dir",
    "set_snapshot_gap",
    "set_snapshot_mode",
    "set_terminal_rows",
    "set_terminal_writer",
    "set_tf_summary_writer",
    "tabular_prefix",
]

SNAPSHOT_MODES = ("all", "last", "gap", "last+gap", "none")

_prefixes: list[str] = []
_tabular_prefixes: list[str] = []
_tabular: dict[str, Any] = {}
_text_outputs: dict[str, Any] = {}  # path -> open file
_tabular_outputs: dict[str, CsvOutput] = {}  # path -> writer (insertion order kept)
_snapshot_dir: str | None = None
_snapshot_mode = "all"
_snapshot_gap = 1
_log_tabular_only = False
_disable_prefix = False
_summary_writer = None
_iteration: int | None = None
_n_dumps = 0
_resume = False
# How dump_tabular prints a row on the terminal: "table" (every key, one per line) or
# "line" (the keys of _LINE_KEYS that the row has, on one line); text outputs
# (debug.log) always get the whole table.
TERMINAL_ROWS = ("table", "line")
_terminal_rows = "table"
_terminal_writer = None  # None: print(); a progress bar sets tqdm.write while it draws
# Atari rows show the whole game's unclipped score in place of the (clipped) return.
_LINE_KEYS = (("Iteration", "itr"), ("CumSteps", "steps"), ("GameScoreAverage", "score"),
              ("ReturnAverage", "return"),
              ("StepsPerSecond", "steps/s"), ("CumTime (s)", "time (s)"))


def reset() -> None:
    """Close every output and return to the initial state (for tests and notebooks)."""
    global _snapshot_dir, _snapshot_mode, _snapshot_gap, _log_tabular_only
    global _disable_prefix, _summary_writer, _iteration, _n_dumps, _terminal_rows
    for path in list(_text_outputs):
        remove_text_output(path)
    _tabular_outputs.clear()
    _prefixes.clear()
    _tabular_prefixes.clear()
    _tabular.clear()
    _snapshot_dir, _snapshot_mode, _snapshot_gap = None, "all", 1
    _log_tabular_only = _disable_prefix = False
    _summary_writer, _iteration, _n_dumps = None, None, 0
    _terminal_rows = "table"
    set_resume(False)


# ---------------------------------------------------------------- outputs


def add_text_output(file_name: str) -> None:
    """Append every ``log`` line to ``file_name`` (created with its directory)."""
    if file_name in _text_outputs:
        return
    os.makedirs(os.path.dirname(os.path.abspath(file_name)), exist_ok=True)
    _text_outputs[file_name] = open(file_name, "a")


def remove_text_output(file_name: str) -> None:
    f = _text_outputs.pop(file_name, None)
    if f is not None:
        f.close()


def get_text_outputs() -> list[str]:
    return list(_text_outputs)


def add_tabular_output(file_name: str, append: bool = False) -> None:
    """Write each ``dump_tabular`` row to the CSV ``file_name``.

    Args:
        file_name: CSV path (created with its directory).
        append: continue an existing file instead of starting it afresh.
    """
    if file_name not in _tabular_outputs:
        _tabular_outputs[file_name] = CsvOutput(file_name, append=append)


def remove_tabular_output(file_name: str) -> None:
    _tabular_outputs.pop(file_name, None)


def get_tabular_outputs() -> list[str]:
    return list(_tabular_outputs)


def get_tabular_output() -> str | None:
    """The most recently added CSV output (a run's ``progress.csv``), or ``None``."""
    return next(reversed(_tabular_outputs), None)


def set_tf_summary_writer(writer) -> None:
    """Also write dumped tabular values to this TensorBoard ``SummaryWriter`` (or None)."""
    global _summary_writer
    _summary_writer = writer


def get_tf_summary_writer():
    return _summary_writer


def set_resume(resume: bool) -> None:
    """Mark the current run as a continuation (``logger_context(resume=True)`` sets it):
    runners then load the run's latest checkpoint in ``train()``."""
    global _resume
    _resume = bool(resume)


def resume_requested() -> bool:
    return _resume


def tabular_row_count() -> int:
    """Rows already in the current run's CSV (``get_tabular_output()``), 0 without one."""
    path = get_tabular_output()
    return _tabular_outputs[path].n_rows() if path is not None else 0


def truncate_tabular_outputs(n_rows: int) -> None:
    """Keep only the first ``n_rows`` data rows of every CSV output (for resume)."""
    for output in _tabular_outputs.values():
        output.truncate(n_rows)


def restart_summary_writer(purge_step: int) -> None:
    """Reopen the TensorBoard writer so that TensorBoard drops the events at steps
    ``>= purge_step`` written by a killed run after its last checkpoint."""
    global _summary_writer
    if _summary_writer is None:
        return
    from torch.utils.tensorboard import SummaryWriter

    log_dir = _summary_writer.log_dir
    _summary_writer.close()
    _summary_writer = SummaryWriter(log_dir=log_dir, purge_step=int(purge_step))


def set_iteration(itr: int | None) -> None:
    """TensorBoard step for the following dumps (see ``dump_tabular``)."""
    global _iteration
    _iteration = itr


# ---------------------------------------------------------------- settings


def set_snapshot_dir(dir_name: str | None) -> None:
    global _snapshot_dir
    _snapshot_dir = dir_name


def get_snapshot_dir() -> str | None:
    """Directory of the current run (snapshots, CSV, logs), or ``None`` outside a run."""
    return _snapshot_dir


def set_snapshot_mode(mode: str) -> None:
    """One of ``"all"``, ``"last"``, ``"gap"``, ``"last+gap"``, ``"none"`` (see module doc)."""
    global _snapshot_mode
    if mode not in SNAPSHOT_MODES:
        raise ValueError(f"snapshot_mode={mode!r} is not one of {SNAPSHOT_MODES}")
    _snapshot_mode = mode


def get_snapshot_mode() -> str:
    return _snapshot_mode


def set_snapshot_gap(gap: int) -> None:
    """Iterations between ``itr_<N>.pkl`` snapshots in ``"gap"`` modes (positive)."""
    global _snapshot_gap
    if isinstance(gap, bool) or not isinstance(gap, (int, np.integer)) or gap < 1:
        raise ValueError(f"snapshot_gap must be a positive integer, got {gap!r}")
    _snapshot_gap = int(gap)


def get_snapshot_gap() -> int:
    return _snapshot_gap


def set_log_tabular_only(log_tabular_only: bool) -> None:
    """Quiet mode: ``log`` stops printing (files still get every line); tables still print."""
    global _log_tabular_only
    _log_tabular_only = bool(log_tabular_only)


def set_terminal_rows(mode: str) -> None:
    """How ``dump_tabular`` prints rows on the terminal: ``"table"`` (default: every key,
    one per line) or ``"line"`` (one line per row: iteration, env steps, return, speed,
    time). Text outputs such as ``debug.log`` always get the whole table."""
    global _terminal_rows
    if mode not in TERMINAL_ROWS:
        raise ValueError(f"set_terminal_rows(mode={mode!r}): valid modes are {TERMINAL_ROWS}")
    _terminal_rows = mode


def set_terminal_writer(writer) -> None:
    """Print terminal lines with ``writer(line)`` instead of ``print`` (``None``: back to
    ``print``). A progress bar sets one, so log lines appear above the bar rather than
    on it."""
    global _terminal_writer
    _terminal_writer = writer


def _emit(line: str) -> None:
    if _terminal_writer is None:
        print(line, flush=True)
    else:
        _terminal_writer(line)


def get_log_tabular_only() -> bool:
    return _log_tabular_only


def set_disable_prefix(disable_prefix: bool) -> None:
    """Leave the pushed prefixes out of ``log`` lines."""
    global _disable_prefix
    _disable_prefix = bool(disable_prefix)


def get_disable_prefix() -> bool:
    return _disable_prefix


# ---------------------------------------------------------------- prefixes


def push_prefix(key: str) -> None:
    _prefixes.append(key)


def pop_prefix() -> None:
    _prefixes.pop()


@contextlib.contextmanager
def prefix(key: str) -> Iterator[None]:
    """Prepend ``key`` to ``log`` lines inside the block."""
    push_prefix(key)
    try:
        yield
    finally:
        pop_prefix()


def push_tabular_prefix(key: str) -> None:
    _tabular_prefixes.append(key)


def pop_tabular_prefix() -> None:
    _tabular_prefixes.pop()


@contextlib.contextmanager
def tabular_prefix(key: str) -> Iterator[None]:
    """Prepend ``key`` to the keys recorded inside the block (e.g. ``"Eval"``)."""
    push_tabular_prefix(key)
    try:
        yield
    finally:
        pop_tabular_prefix()


# ---------------------------------------------------------------- text


def log(s: str, with_prefix: bool = True, with_timestamp: bool = True,
        routine: bool = False) -> None:
    """Print ``s`` (unless in tabular-only mode) and append it to every text output.

    ``routine=True`` marks a message that repeats every log row (evaluating, saving):
    with ``set_terminal_rows("line")`` it goes to the text outputs only.
    """
    line = _format_line(str(s), with_prefix, with_timestamp)
    if not _log_tabular_only and not (routine and _terminal_rows == "line"):
        _emit(line)
    _write_text(line)


def _format_line(s: str, with_prefix: bool, with_timestamp: bool) -> str:
    if with_prefix and not _disable_prefix:
        s = "".join(_prefixes) + s
    if with_timestamp:
        now = datetime.datetime.now().astimezone()
        s = f"{now.strftime('%Y-%m-%d %H:%M:%S.%f %Z')} | {s}"
    return s


def _write_text(line: str) -> None:
    for name, f in list(_text_outputs.items()):
        try:
            f.write(line + "\n")
            f.flush()
        except OSError as error:
            # Dropped, so that the lines logged while the run stops do not fail again.
            del _text_outputs[name]
            with contextlib.suppress(OSError):
                f.close()
            raise StorageWriteError("the log", name, error) from error


# ---------------------------------------------------------------- tabular


def column_name(key: str) -> str:
    """The ``progress.csv`` column stem of a diagnostic: every column is PascalCase
    (``ReturnAverage``, ``LossAverage``, ``GradNormMax``), so an ``OptInfo`` field
    ``gradNorm`` is logged as ``GradNorm<stat>``."""
    return key[:1].upper() + key[1:]


def record_tabular(key: str, val: Any) -> None:
    """Set ``key`` (after the tabular prefixes) to ``val`` in the row being built."""
    _tabular["".join(_tabular_prefixes) + str(key)] = _plain_value(val)


def record_tabular_misc_stat(key: str, values: Iterable, placement: str = "back") -> None:
    """Record ``Average``, ``Std``, ``Median``, ``Min`` and ``Max`` of ``values``.

    Args:
        key: name; the keys are ``key + "Average"`` etc. (``placement="back"``) or
            ``"Average" + key`` etc. (``placement="front"``).
        values: numbers (list, array or tensor); empty gives NaN for every statistic.
        placement: ``"back"`` or ``"front"``, where the statistic name goes.
    """
    if placement not in ("back", "front"):
        raise ValueError(f"placement={placement!r} must be 'back' or 'front'")
    arr = _as_numpy(values).astype(np.float64).ravel()
    stats = ("Average", "Std", "Median", "Min", "Max")
    if arr.size == 0:
        results = [np.nan] * len(stats)
    else:
        results = [np.mean(arr), np.std(arr), np.median(arr), np.min(arr), np.max(arr)]
    for stat, value in zip(stats, results):
        name = key + stat if placement == "back" else stat + key
        record_tabular(name, float(value))


def dump_tabular(
    with_prefix: bool = True,
    with_timestamp: bool = True,
    step: int | None = None,
) -> None:
    """Print the recorded row as a table, append it to the CSV outputs, then clear it.

    Args:
        with_prefix, with_timestamp: as in ``log``, for the printed table lines.
        step: TensorBoard global step; default: the value given to ``set_iteration``,
            else a recorded ``"Iteration"`` value, else the number of earlier dumps.
    """
    global _n_dumps
    if not _tabular:
        return
    for line in _format_table(_tabular):
        line = _format_line(line, with_prefix, with_timestamp)
        if _terminal_rows == "table":
            _emit(line)
        _write_text(line)
    if _terminal_rows == "line":
        _emit(_format_line(_format_row_line(_tabular), with_prefix, with_timestamp))
    for output in _tabular_outputs.values():
        output.write_row(_tabular)
    if _summary_writer is not None:
        _write_summary(_summary_step(step))
    _tabular.clear()
    _n_dumps += 1


def _format_table(row: dict[str, Any]) -> list[str]:
    width = max(len(k) for k in row)
    rule = "-" * (width + 16)
    lines = [rule]
    for key, val in row.items():
        text = f"{val:.6g}" if isinstance(val, (float, np.floating)) else str(val)
        lines.append(f"{key:<{width}}  {text:>14}")
    lines.append(rule)
    return lines


def _format_row_line(row: dict[str, Any]) -> str:
    parts = []
    for key, label in _LINE_KEYS:
        if key == "ReturnAverage" and "GameScoreAverage" in row:
            continue
        if key in row:
            val = row[key]
            text = f"{val:.4g}" if isinstance(val, (float, np.floating)) else str(val)
            parts.append(f"{label} {text}")
    if not parts:  # none of the usual keys: the first few of this row
        parts = [f"{k} {v}" for k, v in list(row.items())[:4]]
    return " | ".join(parts)


def _summary_step(step: int | None) -> int:
    if step is not None:
        return int(step)
    if _iteration is not None:
        return int(_iteration)
    if isinstance(_tabular.get("Iteration"), (int, np.integer)):
        return int(_tabular["Iteration"])
    return _n_dumps


def _write_summary(step: int) -> None:
    for key, val in _tabular.items():
        number = _as_float(val)
        if number is not None:
            _summary_writer.add_scalar(key, number, step)
    _summary_writer.flush()


def _plain_value(val: Any) -> Any:
    """Single-element arrays/tensors become numpy scalars (str() stays short in the CSV)."""
    if hasattr(val, "detach") and hasattr(val, "numel"):  # torch tensor
        if val.numel() == 1:
            return val.detach().cpu().numpy().reshape(())[()]
        return val
    if isinstance(val, np.ndarray) and val.size == 1:
        return val.reshape(())[()]
    return val


def _as_float(val: Any) -> float | None:
    if isinstance(val, (bool, np.bool_, int, float, np.integer, np.floating)):
        return float(val)
    return None


def _as_numpy(values: Any) -> np.ndarray:
    if hasattr(values, "detach") and hasattr(values, "numel"):  # torch tensor
        return values.detach().cpu().numpy()
    if isinstance(values, (list, tuple)):
        return np.asarray([_as_numpy(v) if hasattr(v, "detach") else v for v in values])
    return np.asarray(values)


# ---------------------------------------------------------------- files


def save_itr_params(itr: int, params: Any) -> list[str]:
    """Save ``params`` (any ``torch.save``-able object) per the snapshot mode.

    Does nothing when no snapshot dir is set.  Each file is written to a temporary
    name and then renamed, so a crash mid-save never leaves a truncated snapshot.

    Returns:
        Paths written (empty when this iteration needs no snapshot).
    """
    if _snapshot_dir is None or _snapshot_mode == "none":
        return []
    names = []
    if _snapshot_mode == "all":
        names.append(f"itr_{itr}.pkl")
    if _snapshot_mode in ("gap", "last+gap") and itr % _snapshot_gap == 0:
        names.append(f"itr_{itr}.pkl")
    if _snapshot_mode in ("last", "last+gap"):
        names.append("params.pkl")
    if not names:
        return []
    import torch  # Lazy: only runs that snapshot need torch here.

    os.makedirs(_snapshot_dir, exist_ok=True)
    paths = []
    for name in names:
        path = os.path.join(_snapshot_dir, name)
        tmp = path + ".tmp"
        torch.save(params, tmp)
        os.replace(tmp, path)
        paths.append(path)
    return paths


def log_parameters(params: dict, file_name: str | None = None) -> str:
    """Write a run's configuration as JSON (``params.json`` in the snapshot dir by default).

    Values JSON cannot hold are written as: namedtuples as objects, numpy
    scalars/arrays as numbers/lists, anything else as its ``repr``.  Non-string dict keys become their ``repr``.

    Returns:
        The path written.
    """
    if file_name is None:
        if _snapshot_dir is None:
            raise ValueError("log_parameters: give file_name or set a snapshot dir first")
        file_name = os.path.join(_snapshot_dir, "params.json")
    os.makedirs(os.path.dirname(os.path.abspath(file_name)), exist_ok=True)
    with open(file_name, "w") as f:
        json.dump(_jsonable(params), f, indent=2)
        f.write("\n")
    return file_name


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {_json_key(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):  # namedtuple: keep the names
        return {f: _jsonable(v) for f, v in zip(obj._fields, obj)}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if obj is None or isinstance(obj, (str, bool, int, float)):
        return obj
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    return repr(obj)


def _json_key(key: Any) -> Any:
    return key if key is None or isinstance(key, (str, bool, int, float)) else repr(key)
