"""Collectors of the serial sampler (the training collectors are the CPU ones)."""

from rlpyt.samplers.eval import EvalCollector

__all__ = ["SerialEvalCollector"]


class SerialEvalCollector(EvalCollector):
    """Evaluation in the main process; see ``rlpyt.samplers.eval`` for the counting rule."""
