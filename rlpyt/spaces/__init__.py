"""Spaces: the shapes, dtypes and bounds of env observations and actions (numpy only)."""

from rlpyt.spaces.base import Space
from rlpyt.spaces.composite import Composite
from rlpyt.spaces.float_box import FloatBox
from rlpyt.spaces.int_box import IntBox

__all__ = ["Composite", "FloatBox", "IntBox", "Space"]
