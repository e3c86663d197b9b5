"""Set up and tear down the logger for one run, in a standard directory layout.

A run directory holds ``progress.csv`` (one row per ``dump_tabular``), ``debug.log``
(every ``log`` line), ``params.json`` (the run config plus ``name`` and ``run_ID``),
snapshots (``params.pkl`` / ``itr_<N>.pkl``) and TensorBoard event files when asked.

Where it goes, for ``logger_context(log_dir, run_ID, ...)``:

- ``<cwd>/data/local/<YYYYMMDD>/<HHMMSS>/<log_dir>/run_<run_ID>/`` for a relative
  ``log_dir`` (the usual case);
- ``<log_dir>/run_<run_ID>/`` when ``override_prefix=True``, when ``log_dir`` is
  absolute (e.g. made by ``get_log_dir`` or an experiment launcher), or when it
  already lies under ``<cwd>/data``.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
from collections.abc import Iterator
from typing import Any

from rlpyt.utils.logging import logger
from rlpyt.utils.logging.run_dir import RunLock, check_run_dir_free

__all__ = ["add_exp_param", "get_log_dir", "logger_context", "resolve_run_dir"]


def get_log_dir(experiment_name: str, root_log_dir: str | None = None, date: bool = True) -> str:
    """Absolute ``<root>/local/<YYYYMMDD>/<HHMMSS>/<experiment_name>`` for a new experiment.

    Args:
        experiment_name: last path part(s).
        root_log_dir: defaults to ``<cwd>/data``.
        date: include the ``<YYYYMMDD>/<HHMMSS>`` parts (the time is now).
    """
    root = os.path.abspath(root_log_dir if root_log_dir is not None else "data")
    parts = [root, "local"]
    if date:
        now = datetime.datetime.now()
        parts += [now.strftime("%Y%m%d"), now.strftime("%H%M%S")]
    return os.path.join(*parts, experiment_name)


def resolve_run_dir(log_dir: str, run_ID: Any, override_prefix: bool = False) -> str:
    """The absolute run directory ``logger_context`` uses (see the module doc)."""
    data_root = os.path.abspath("data")
    as_given = (
        override_prefix
        or os.path.isabs(log_dir)
        or os.path.commonpath([os.path.abspath(log_dir), data_root]) == data_root
    )
    base = os.path.abspath(log_dir) if as_given else get_log_dir(log_dir)
    return os.path.join(base, f"run_{run_ID}")


@contextlib.contextmanager
def logger_context(
    log_dir: str,
    run_ID: Any,
    name: str,
    log_params: dict | None = None,
    snapshot_mode: str = "none",
    override_prefix: bool = False,
    use_summary_writer: bool = False,
    snapshot_gap: int = 1,
    resume: bool | None = None,
) -> Iterator[str]:
    """Log one run into its own directory; yields that directory's absolute path.

    Args:
        log_dir: experiment directory (relative: placed under ``data/local/<date>/<time>``).
        run_ID: run number (or name) within the experiment: the ``run_<run_ID>`` folder.
        name: run name; prefixes every ``log`` line as ``"<name>_<run_ID> "``.
        log_params: run configuration written to ``params.json`` (not modified).
        snapshot_mode: ``"all"``, ``"last"``, ``"gap"``, ``"last+gap"`` or ``"none"``.
        override_prefix: use ``log_dir`` as given instead of the dated ``data/local`` tree.
        use_summary_writer: also write TensorBoard event files into the run directory
            (needs the ``tensorboard`` package).
        snapshot_gap: iterations between ``itr_<N>.pkl`` files in the gap modes.
        resume: continue the run already in the directory: ``progress.csv`` and
            ``debug.log`` are appended to, ``params.json`` is kept, and the runner's
            ``train()`` loads the latest checkpoint.  False refuses a directory that
            holds a run (``RunDirExistsError``: a run is never overwritten).  Default
            None: True when the environment variable ``RLPYT_RESUME`` is ``1`` (set by
            the experiment launcher for runs it continues), else False.

    A lock (``<run_dir>/.lock``, see ``rlpyt.utils.logging.run_dir``) refuses a second
    live run on the same directory for the life of the block.

    On exit (also on error) the outputs are removed, the writer is closed, and the
    previous snapshot settings are restored.  ``logger.get_snapshot_dir()`` returns
    the run directory inside the block.
    """
    if log_params is not None and not isinstance(log_params, dict):
        raise TypeError(f"log_params must be a dict or None, got {type(log_params).__name__}")
    if snapshot_mode not in logger.SNAPSHOT_MODES:  # before the run dir is touched
        raise ValueError(f"snapshot_mode={snapshot_mode!r} is not one of {logger.SNAPSHOT_MODES}")
    if resume is None:
        resume = os.environ.get("RLPYT_RESUME", "").lower() in ("1", "true", "yes")
    run_dir = resolve_run_dir(log_dir, run_ID, override_prefix)
    lock = RunLock(run_dir).acquire()
    try:
        if not resume:
            check_run_dir_free(run_dir)
    except BaseException:
        lock.release()
        raise
    text_file = os.path.join(run_dir, "debug.log")
    tabular_file = os.path.join(run_dir, "progress.csv")
    saved = (logger.get_snapshot_dir(), logger.get_snapshot_mode(), logger.get_snapshot_gap())
    saved_writer = logger.get_tf_summary_writer()
    saved_resume = logger.resume_requested()
    writer = None
    prefix_pushed = False
    try:
        logger.set_resume(resume)
        logger.set_snapshot_mode(snapshot_mode)
        logger.set_snapshot_gap(snapshot_gap)
        if use_summary_writer:
            writer = _make_summary_writer(run_dir)
            logger.set_tf_summary_writer(writer)
        logger.set_snapshot_dir(run_dir)
        logger.add_text_output(text_file)
        logger.add_tabular_output(tabular_file, append=resume)
        logger.push_prefix(f"{name}_{run_ID} ")
        prefix_pushed = True
        params = dict(log_params or {})
        params["name"] = name
        params["run_ID"] = run_ID
        params_file = os.path.join(run_dir, "params.json")
        if not (resume and os.path.exists(params_file)):
            logger.log_parameters(params, params_file)
        yield run_dir
    finally:
        if prefix_pushed:
            logger.pop_prefix()
        logger.remove_tabular_output(tabular_file)
        logger.remove_text_output(text_file)
        if writer is not None:
            logger.get_tf_summary_writer().close()  # a resumed run may have reopened it
            logger.set_tf_summary_writer(saved_writer)
        logger.set_resume(saved_resume)
        lock.release()
        logger.set_snapshot_dir(saved[0])
        logger.set_snapshot_mode(saved[1])
        logger.set_snapshot_gap(saved[2])


def _make_summary_writer(run_dir: str):
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError as e:  # torch is present; the tensorboard package may not be.
        raise ImportError(
            "logger_context(use_summary_writer=True) needs the 'tensorboard' package "
            "(pip install tensorboard)"
        ) from e
    return SummaryWriter(log_dir=run_dir)


def add_exp_param(
    param_name: str,
    param_val: Any,
    exp_dir: str | None = None,
    overwrite: bool = False,
) -> list[str]:
    """Add ``param_name: param_val`` to every ``params.json`` under ``exp_dir``.

    Useful to tag finished runs with a setting that distinguishes them after the fact.

    Args:
        param_name: key to add.
        param_val: JSON-serialisable value.
        exp_dir: directory searched recursively (default: the working directory).
        overwrite: replace the value in files that already have ``param_name``;
            otherwise those files are left as they are.

    Returns:
        The ``params.json`` paths that were changed.
    """
    exp_dir = os.getcwd() if exp_dir is None else exp_dir
    if not os.path.isdir(exp_dir):
        raise FileNotFoundError(f"add_exp_param: exp_dir={exp_dir!r} is not a directory")
    changed = []
    for dir_path, _, file_names in os.walk(exp_dir):
        if "params.json" not in file_names:
            continue
        path = os.path.join(dir_path, "params.json")
        with open(path) as f:
            params = json.load(f)
        if param_name in params and not overwrite:
            continue
        params[param_name] = param_val
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(params, f, indent=2)
            f.write("\n")
        os.replace(tmp, path)
        changed.append(path)
    return changed
