"""A replay buffer's file (a checkpoint's ``replay.bin``): save its contents to an open file
and load them back in place.

Every replay buffer keeps its state in preallocated numpy arrays (sample fields,
n-step returns, frames, sum-tree levels, counters) plus a few scalars.  Saving walks
the buffer's attributes (and those of the ``rlpyt.replays`` objects it holds, such as
its ``SumTree``) and writes a small pickled header followed by each array's raw
bytes, one array after another, straight from the array's memory.  Loading reads the
bytes straight into the buffer's own arrays.  Neither direction makes a copy of
the buffer, so checkpointing a 1M-transition frame buffer costs no extra memory.

A buffer is loaded into a buffer built with the same class and sizes (the resumed
run rebuilds it from the same config); a mismatch is reported field by field.
"""

from __future__ import annotations

import pickle
from typing import Any, BinaryIO

import numpy as np

__all__ = ["load_replay_buffer", "save_replay_buffer"]

_FORMAT = 1
_SCALARS = (bool, int, float, str, type(None), np.generic)


def _walk(obj: Any, prefix: str, arrays: list, scalars: dict, seen: set) -> None:
    """Collect ``(path, array)`` and ``{path: scalar}`` of ``obj``'s attributes."""
    if id(obj) in seen:
        return
    seen.add(id(obj))
    for name, value in sorted(vars(obj).items()):
        _collect(value, prefix + name, arrays, scalars, seen)


def _collect(value: Any, path: str, arrays: list, scalars: dict, seen: set) -> None:
    if isinstance(value, np.ndarray):
        arrays.append((path, value))
    elif isinstance(value, tuple) and hasattr(value, "_fields"):  # (named)arraytuple
        for field, item in zip(value._fields, value):
            _collect(item, f"{path}.{field}", arrays, scalars, seen)
    elif isinstance(value, _SCALARS):
        scalars[path] = value
    elif type(value).__module__.startswith("rlpyt.replays") and hasattr(value, "__dict__"):
        _walk(value, path + ".", arrays, scalars, seen)
    # Anything else (locks, slices, cached tuples) is rebuilt by the buffer's __init__.


def _contents(buffer) -> tuple[list, dict]:
    arrays: list[tuple[str, np.ndarray]] = []
    scalars: dict[str, Any] = {}
    _walk(buffer, "", arrays, scalars, set())
    return arrays, scalars


def save_replay_buffer(buffer, f: BinaryIO) -> None:
    """Write ``buffer``'s arrays and scalars to the binary file ``f``."""
    arrays, scalars = _contents(buffer)
    header = dict(
        format=_FORMAT,
        cls=type(buffer).__qualname__,
        arrays=[(path, a.dtype.str, a.shape) for path, a in arrays],
        scalars=scalars,
    )
    pickle.dump(header, f, protocol=pickle.HIGHEST_PROTOCOL)
    for _path, a in arrays:
        # C-contiguous arrays (all of a buffer's) are written from their own memory.
        f.write(memoryview(np.ascontiguousarray(a)).cast("B"))


def load_replay_buffer(buffer, f: BinaryIO) -> None:
    """Fill ``buffer`` (built with the saved buffer's class and sizes) from ``f``."""
    header = pickle.load(f)
    if header.get("format") != _FORMAT:
        raise ValueError(f"replay file format {header.get('format')!r} is not {_FORMAT}")
    arrays, _ = _contents(buffer)
    if header["cls"] != type(buffer).__qualname__:
        raise ValueError(
            f"the saved replay buffer is a {header['cls']}, this run's is a "
            f"{type(buffer).__qualname__}: resume with the checkpointed run's config"
        )
    mine = [(path, a.dtype.str, a.shape) for path, a in arrays]
    if mine != header["arrays"]:
        diff = [(s, m) for s, m in zip(header["arrays"], mine) if s != m]
        raise ValueError(
            f"saved replay buffer fields do not match this buffer's (saved, here): "
            f"{diff[:3] or (len(header['arrays']), len(mine))}; was replay_size, batch_B "
            f"or the env changed?"
        )
    for path, a in arrays:
        _read_into(f, a, path)
    for path, value in header["scalars"].items():
        _set_path(buffer, path, value)


def _read_into(f: BinaryIO, a: np.ndarray, path: str) -> None:
    target = a if a.flags.c_contiguous else np.empty_like(a, order="C")
    view = memoryview(target).cast("B")
    done = 0
    while done < view.nbytes:
        n = f.readinto(view[done:])
        if not n:
            raise EOFError(f"replay file ends inside field {path!r}")
        done += n
    if target is not a:
        a[...] = target


def _set_path(obj: Any, path: str, value: Any) -> None:
    *parents, last = path.split(".")
    for name in parents:
        obj = getattr(obj, name)
    if hasattr(obj, "__dict__") and not hasattr(obj, "_fields"):
        setattr(obj, last, value)
