"""Experiment grids: the ``rlpyt launch`` grid-file runner."""
