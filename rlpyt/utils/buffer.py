"""Preallocated buffers of (nested) namedarraytuples, numpy <-> torch without copies.

A *buffer* here is an array, ``None``, or a namedtuple/namedarraytuple whose
fields are buffers.  Every function recurses through that structure.

Shared memory: ``np_mp_array`` returns a numpy array over an anonymous
``multiprocessing`` heap block.  Forked workers inherit it; under ``spawn`` or
``forkserver`` it pickles as a handle to the same memory (when passed as a
``Process`` argument), never as a copy.  The block is unlinked from the file
system at creation, so nothing is left behind in ``/dev/shm`` even if the
process is killed.
"""

from __future__ import annotations

import multiprocessing as mp
from collections.abc import Callable
from typing import Any

import numpy as np

from rlpyt.utils.collections import (
    is_namedarraytuple,
    is_namedtuple,
    namedarraytuple_like,
)

__all__ = [
    "SharedArray",
    "buffer_from_example",
    "buffer_func",
    "buffer_method",
    "buffer_to",
    "build_array",
    "get_leading_dims",
    "np_mp_array",
    "numpify_buffer",
    "torchify_buffer",
]


class SharedArray(np.ndarray):
    """A numpy array (or view) over a ``multiprocessing`` shared heap block.

    Views keep a reference to the block, so slices of a shared buffer pickled to a
    spawned worker still address the same memory.
    """

    def __array_finalize__(self, obj):
        self._raw = getattr(obj, "_raw", None)

    def __reduce__(self):
        raw = getattr(self, "_raw", None)
        if raw is None or mp.context.get_spawning_popen() is None:
            # Outside process start-up (queues, torch.save, deepcopy) pickle a private copy.
            return np.array(self).__reduce__()
        base_ptr = np.frombuffer(raw, dtype=np.uint8).ctypes.data
        offset = self.ctypes.data - base_ptr
        return (_rebuild_shared_array, (raw, self.dtype.str, self.shape, offset, self.strides))

    def __array_wrap__(self, obj, context=None, return_scalar=False):
        # Results of arithmetic are ordinary (private) arrays, not shared views.
        out = np.asarray(obj)
        return out[()] if return_scalar else out


def _rebuild_shared_array(raw, dtype, shape, offset, strides):
    arr = np.ndarray(shape, dtype=np.dtype(dtype), buffer=raw, offset=offset, strides=strides)
    arr = arr.view(SharedArray)
    arr._raw = raw
    return arr


def np_mp_array(shape, dtype) -> SharedArray:
    """Zero-initialised numpy array in shared memory, usable by forked and spawned workers."""
    dtype = np.dtype(dtype)
    if dtype.hasobject:
        raise TypeError(f"np_mp_array cannot hold object dtype (shape={shape})")
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(int(s) for s in shape)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    raw = mp.RawArray("b", max(nbytes, 1))  # zero-filled by the OS
    return _rebuild_shared_array(raw, dtype.str, shape, 0, None)


def build_array(example, leading_dims, share_memory: bool = False) -> np.ndarray:
    """Zero array of shape ``leading_dims + shape(example)`` with the example's dtype."""
    a = np.asarray(example)
    if a.dtype.hasobject:
        raise TypeError(
            f"buffer_from_example: example of type {type(example).__name__} has object dtype; "
            f"buffers hold numeric arrays only"
        )
    if a.dtype.kind not in "biufc":
        # Strings would silently truncate to the example's length; dates are not data.
        raise TypeError(
            f"buffer_from_example: example {example!r:.80} has non-numeric dtype {a.dtype}; "
            f"buffers hold numeric (bool, int, float, complex) arrays only"
        )
    if a.dtype == np.float64 and not isinstance(example, np.ndarray | np.generic):
        # Python floats become float32, the dtype models use; explicit float64 arrays stay.
        a = a.astype(np.float32)
    if isinstance(leading_dims, (int, np.integer)):
        leading_dims = (leading_dims,)
    shape = tuple(int(d) for d in leading_dims) + a.shape
    if share_memory:
        return np_mp_array(shape, a.dtype)
    return np.zeros(shape, dtype=a.dtype)


def buffer_from_example(example, leading_dims, share_memory: bool = False):
    """Allocate a zeroed buffer shaped like ``example`` with extra leading dims.

    Args:
        example: one sample: an array/scalar, ``None``, or a (nested) namedtuple of them.
            Namedtuples become namedarraytuples with the same name and fields.
        leading_dims: int or tuple, e.g. ``(T, B)``.
        share_memory: allocate in shared memory for worker processes.
    """
    if example is None:
        return None
    if is_namedtuple(example):
        cls = namedarraytuple_like(example)
        return cls(*(buffer_from_example(v, leading_dims, share_memory) for v in example))
    if isinstance(example, tuple):
        raise TypeError(
            "buffer_from_example: plain tuples have no field names; use a namedtuple "
            f"(got {example!r:.80})"
        )
    if isinstance(example, dict):
        raise TypeError(
            "buffer_from_example: dicts are not buffers; convert to a namedtuple first "
            f"(keys {list(example)})"
        )
    try:
        import torch

        if isinstance(example, torch.Tensor):
            example = example.detach().cpu().numpy()
    except ImportError:  # pragma: no cover - torch is a core dependency
        pass
    return build_array(example, leading_dims, share_memory)


def _is_nt(obj) -> bool:
    # Inline of ``is_namedtuple``: these walkers run several times per sampler step.
    return isinstance(obj, tuple) and hasattr(obj, "_fields")


def buffer_func(buffer, func: Callable, *args, **kwargs):
    """Apply ``func(leaf, *args, **kwargs)`` to every array leaf, keeping the structure."""
    if buffer is None:
        return None
    if _is_nt(buffer):
        return type(buffer)._make([buffer_func(b, func, *args, **kwargs) for b in buffer])
    return func(buffer, *args, **kwargs)


def buffer_method(buffer, method_name: str, *args, **kwargs):
    """Call ``leaf.<method_name>(*args, **kwargs)`` on every leaf, keeping the structure."""
    if buffer is None:
        return None
    if _is_nt(buffer):
        return type(buffer)._make(
            [buffer_method(b, method_name, *args, **kwargs) for b in buffer]
        )
    return getattr(buffer, method_name)(*args, **kwargs)


def _torchify_leaf(x, from_numpy):
    if type(x) is np.ndarray:
        return from_numpy(x)
    if isinstance(x, (np.ndarray, np.generic)):
        return from_numpy(np.asarray(x))  # Subclasses (SharedArray) and numpy scalars.
    return x


def torchify_buffer(buffer):
    """numpy -> torch sharing memory (``torch.from_numpy``); other leaves pass through.

    ``buffer`` is an array, a (named)tuple or a list of them, nested at will: e.g.
    ``torchify_buffer((observation, prev_action, prev_reward))`` gives a tuple of
    tensors for ``agent.step``. Numpy scalars (``np.float32(0)``) become 0-d tensors.
    """
    import torch  # Lazily: envs and spaces use this module without torch.

    return _torchify(buffer, torch.from_numpy)


def _torchify(x, from_numpy):
    if _is_nt(x):
        return type(x)._make([_torchify(b, from_numpy) for b in x])
    if type(x) in (tuple, list):
        return type(x)(_torchify(b, from_numpy) for b in x)
    return _torchify_leaf(x, from_numpy)


def numpify_buffer(buffer):
    """torch (CPU) -> numpy sharing memory; other leaves pass through (a tensor, or a
    (named)tuple or list of them, nested at will).

    Samplers call this on every agent step, so it walks the structure itself (no
    generic ``buffer_func`` dispatch per leaf).
    """
    import torch  # Lazily: envs and spaces use this module without torch.

    return _numpify(buffer, torch.Tensor)


def _numpify(x, tensor_cls):
    if type(x) is tensor_cls and x.is_cpu and not x.requires_grad:
        return x.numpy()  # the common leaf
    if _is_nt(x):
        return type(x)._make([_numpify(b, tensor_cls) for b in x])
    if type(x) in (tuple, list):
        return type(x)(_numpify(b, tensor_cls) for b in x)
    if isinstance(x, tensor_cls):
        return x.detach().cpu().numpy()  # on another device, in a graph, or a subclass
    return x


def _move_leaf(x, device):
    if hasattr(x, "to"):
        # Only host-to-device copies may be asynchronous: a non-blocking copy to the
        # host can still be in flight when the caller reads the result (e.g. as numpy).
        return x.to(device, non_blocking=not str(device).startswith("cpu"))
    return x


def buffer_to(buffer, device=None):
    """Move every torch leaf to ``device`` (non-blocking host-to-device copies).

    Plain tuples (such as ``(observation, prev_action, prev_reward)``) are walked
    too and come back as plain tuples.
    """
    if device is None:
        return buffer
    if type(buffer) is tuple:
        return tuple(buffer_func(b, _move_leaf, device) for b in buffer)
    return buffer_func(buffer, _move_leaf, device)


def get_leading_dims(buffer, n_dim: int = 1) -> tuple[int, ...]:
    """The first ``n_dim`` dims shared by every leaf; error naming the field that differs."""
    leaves = list(_leaves(buffer))
    if not leaves:
        raise ValueError("get_leading_dims: buffer has no array fields")
    path0, first = leaves[0]
    dims = tuple(first.shape[:n_dim])
    for path, leaf in leaves[1:]:
        if tuple(leaf.shape[:n_dim]) != dims:
            raise ValueError(
                f"get_leading_dims: field {path} has leading dims {tuple(leaf.shape[:n_dim])}, "
                f"but {path0} has {dims}"
            )
    return dims


def _leaves(buffer, path: str = "buffer") -> Any:
    if buffer is None:
        return
    if is_namedtuple(buffer):
        for field, value in zip(buffer._fields, buffer):
            yield from _leaves(value, f"{path}.{field}")
    else:
        yield path, buffer


def is_buffer(obj) -> bool:
    """True for a namedarraytuple or an array-like leaf."""
    return is_namedarraytuple(obj) or hasattr(obj, "shape")
