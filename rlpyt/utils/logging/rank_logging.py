"""The logger in the processes of a multi-process run: rank 0 keeps writing into the
launcher's run directory, every other rank writes nothing.

``capture_logger_state`` in the launcher, ``rank_logging(rank, state)`` around a rank's
training in its own process.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from rlpyt.utils.logging import logger

__all__ = ["capture_logger_state", "rank_logging"]


def capture_logger_state() -> dict:
    """What a spawned rank 0 needs to keep writing into the launcher's run directory."""
    writer = logger.get_tf_summary_writer()
    return dict(
        text_outputs=logger.get_text_outputs(),
        tabular_outputs=logger.get_tabular_outputs(),
        snapshot_dir=logger.get_snapshot_dir(),
        snapshot_mode=logger.get_snapshot_mode(),
        snapshot_gap=logger.get_snapshot_gap(),
        log_tabular_only=logger.get_log_tabular_only(),
        disable_prefix=logger.get_disable_prefix(),
        prefixes=list(logger._prefixes),
        tabular_prefixes=list(logger._tabular_prefixes),
        summary_dir=getattr(writer, "log_dir", None),
    )


@contextmanager
def rank_logging(rank: int, log_state: dict | None) -> Iterator[None]:
    """Rank 0 writes the run's outputs (a spawned one re-opens the launcher's); every other
    rank writes nothing at all: no console lines, files or snapshots."""
    if rank == 0:
        if log_state is None:  # torchrun: this process's own logger context is the run's
            yield
            return
        _restore_logger_state(log_state)
        yield
        return
    saved = capture_logger_state()
    for path in saved["text_outputs"]:
        logger.remove_text_output(path)
    for path in saved["tabular_outputs"]:
        logger.remove_tabular_output(path)
    writer = logger.get_tf_summary_writer()
    logger.set_tf_summary_writer(None)
    logger.set_snapshot_dir(None)
    logger.set_log_tabular_only(True)
    try:
        yield
    finally:
        for path in saved["text_outputs"]:
            logger.add_text_output(path)
        for path in saved["tabular_outputs"]:
            logger.add_tabular_output(path, append=True)
        logger.set_tf_summary_writer(writer)
        logger.set_snapshot_dir(saved["snapshot_dir"])
        logger.set_log_tabular_only(saved["log_tabular_only"])


def _restore_logger_state(state: dict) -> None:
    for path in state["text_outputs"]:
        logger.add_text_output(path)
    for path in state["tabular_outputs"]:
        logger.add_tabular_output(path, append=True)
    logger.set_snapshot_dir(state["snapshot_dir"])
    logger.set_snapshot_mode(state["snapshot_mode"])
    logger.set_snapshot_gap(state["snapshot_gap"])
    logger.set_log_tabular_only(state["log_tabular_only"])
    logger.set_disable_prefix(state["disable_prefix"])
    for prefix in state["prefixes"]:
        logger.push_prefix(prefix)
    for prefix in state["tabular_prefixes"]:
        logger.push_tabular_prefix(prefix)
    if state["summary_dir"] is not None:
        from torch.utils.tensorboard import SummaryWriter

        logger.set_tf_summary_writer(SummaryWriter(log_dir=state["summary_dir"]))
