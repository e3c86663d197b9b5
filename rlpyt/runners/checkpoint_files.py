"""The files of whole-run checkpoints: write them atomically, find the latest, load.

A checkpoint is a directory ``<run_dir>/checkpoints/itr_<N>/`` holding

- ``state.pt``: a ``torch.save``-d dict from the runner's ``checkpoint_state()``
  (agent, algorithm, counters, RNG states, diagnostics, the sampler's env state);
- ``replay.bin`` (optional): the replay buffer, streamed field by field with
  ``rlpyt.replays.replay_file`` so that saving never copies the buffer in memory.

Atomicity: everything is written into ``itr_<N>.tmp-<pid>/``, flushed to disk, and
the directory is then renamed to ``itr_<N>`` (a rename is atomic on POSIX file
systems).  Only then are older checkpoints deleted.  A kill at any moment leaves
either the previous complete checkpoint or the new one; ``latest_checkpoint``
ignores ``*.tmp-*`` leftovers, and the next save removes them.  A write that fails (no
space, a read-only folder, a quota) removes its partial directory and raises
``StorageWriteError`` naming the checkpoint, the cause and the last complete
checkpoint; a ``state.pt`` that cannot be loaded raises ``CheckpointUnreadableError``
naming the file (a resume passes over it to an earlier checkpoint when ``keep`` kept
one: ``rlpyt.runners.checkpointer.load_newest_readable``).

The helpers for RNG and (serial) sampler state live here too, so that every runner
(``MinibatchRl``, ``AsyncRl``, ``SyncRl``) checkpoints the same way.
"""

from __future__ import annotations

import os
import pickle
import random
import shutil
from typing import Any

import numpy as np
import torch

from rlpyt.utils.logging.run_dir import (
    CHECKPOINT_DIR,
    STATE_FILE,
    CheckpointUnreadableError,
    StorageWriteError,
    latest_checkpoint,
    list_checkpoints,
)

# The layout (and finding checkpoints) lives with the other run-dir rules, so that the
# experiment launcher (a lower layer) can tell a resumable run without importing torch.
from rlpyt.utils.supervisor import process_alive

__all__ = [
    "CHECKPOINT_DIR",
    "capture_rng_state",
    "capture_sampler_state",
    "latest_checkpoint",
    "list_checkpoints",
    "load_checkpoint",
    "load_replay",
    "rebuild_info",
    "restore_rng_state",
    "restore_sampler_state",
    "save_checkpoint",
    "write_part",
]

REPLAY_FILE = "replay.bin"


def save_checkpoint(run_dir: str, itr: int, state: dict, replay_buffer=None,
                    keep: int = 1, parts: dict[str, str] | None = None) -> str:
    """Write ``state`` (and the replay buffer) as checkpoint ``itr``; returns its path.

    Args:
        run_dir: the run directory.
        itr: the iteration the state is after (the checkpoint's name).
        state: ``torch.save``-able dict.
        replay_buffer: a replay buffer to stream into ``replay.bin``, or None.
        keep: number of newest checkpoints kept (older ones are deleted after the new
            one is complete). Default 1.
        parts: ``{name: directory}`` written by other processes (``write_part``) and
            moved into the checkpoint as ``<name>/`` before it becomes visible, so that
            the whole set appears at once (``SyncRl``'s other ranks).
    """
    root = os.path.join(run_dir, CHECKPOINT_DIR)
    final = os.path.join(root, f"itr_{itr}")
    tmp = f"{final}.tmp-{os.getpid()}"
    try:
        os.makedirs(root, exist_ok=True)
        _remove_partial(root)
        os.makedirs(tmp)
        _write_files(tmp, state, replay_buffer)
        for name, part in (parts or {}).items():
            os.rename(part, os.path.join(tmp, name))
        if os.path.exists(final):  # The same iteration saved again (e.g. a final save).
            shutil.rmtree(final)
        os.rename(tmp, final)
        _fsync_dir(root)
    except OSError as error:
        shutil.rmtree(tmp, ignore_errors=True)
        last = latest_checkpoint(run_dir)
        note = (f"; the last complete checkpoint is {last}" if last else
                "; no complete checkpoint was written before")
        raise StorageWriteError("checkpoint", final, error, note) from error
    for _itr, path in list_checkpoints(run_dir)[:-max(1, keep)]:
        shutil.rmtree(path, ignore_errors=True)
    return final


def write_part(run_dir: str, itr: int, state: dict, replay_buffer=None) -> str:
    """Write one process's share of checkpoint ``itr`` into a temporary directory of the
    run's checkpoint folder; returns it, for the process that calls ``save_checkpoint``
    with ``parts``.  A part whose writer died is removed like any partial save."""
    root = os.path.join(run_dir, CHECKPOINT_DIR)
    tmp = os.path.join(root, f"itr_{itr}.part.tmp-{os.getpid()}")
    try:
        os.makedirs(root, exist_ok=True)
        if os.path.exists(tmp):
            shutil.rmtree(tmp)
        os.makedirs(tmp)
        _write_files(tmp, state, replay_buffer)
    except OSError as error:
        shutil.rmtree(tmp, ignore_errors=True)
        raise StorageWriteError("this rank's part of checkpoint", tmp, error) from error
    return tmp


def _write_files(directory: str, state: dict, replay_buffer) -> None:
    with open(os.path.join(directory, STATE_FILE), "wb") as f:
        writer = _RecordingWriter(f)
        try:
            torch.save(state, writer)
        except RuntimeError:
            if writer.error is None:
                raise
            raise writer.error from None
        _flush(f)
    if replay_buffer is not None:
        with open(os.path.join(directory, REPLAY_FILE), "wb") as f:
            replay_buffer.save_state(f)
            _flush(f)


class _RecordingWriter:
    """A binary file's ``write`` and ``flush`` that keep the first ``OSError``: torch's
    zip writer turns a failed write into a RuntimeError of its own, without the
    system's reason (no space left, a quota)."""

    def __init__(self, f):
        self._f, self.error = f, None

    def write(self, data) -> int:
        try:
            return self._f.write(data)
        except OSError as error:
            self.error = self.error or error
            raise

    def flush(self) -> None:
        self._f.flush()


def load_checkpoint(path: str) -> dict:
    """The state dict of checkpoint directory ``path`` (or of a run dir's latest)."""
    if not os.path.isfile(os.path.join(path, STATE_FILE)):
        latest = latest_checkpoint(path)
        if latest is None:
            raise FileNotFoundError(
                f"no checkpoint in {path!r}: expected {STATE_FILE} there or "
                f"{CHECKPOINT_DIR}/itr_<N>/{STATE_FILE} below it"
            )
        path = latest
    file = os.path.join(path, STATE_FILE)
    try:
        with open(file, "rb") as f:
            # Our own files: they hold numpy RNG states and pickled envs, not only tensors.
            state = torch.load(f, map_location="cpu", weights_only=False)
    except (RuntimeError, pickle.UnpicklingError, EOFError, ValueError) as error:
        raise CheckpointUnreadableError(
            f"checkpoint {file} is unreadable ({type(error).__name__}: "
            f"{' '.join(str(error).split())[:200]}): it is truncated or not a checkpoint"
        ) from error
    if not isinstance(state, dict):
        raise CheckpointUnreadableError(f"checkpoint {file} holds a {type(state).__name__}, "
                                        f"not a checkpoint's state")
    state["_path"] = path
    return state


def load_replay(path: str, replay_buffer) -> bool:
    """Fill ``replay_buffer`` from checkpoint ``path``; False if it holds no replay."""
    file = os.path.join(path, REPLAY_FILE)
    if not os.path.isfile(file):
        return False
    with open(file, "rb") as f:
        replay_buffer.load_state(f)
    return True


def _remove_partial(root: str) -> None:
    """Delete ``*.tmp-<pid>`` dirs left by killed saves (their pid is gone or is us)."""
    for name in os.listdir(root):
        if ".tmp-" not in name:
            continue
        pid = name.rsplit(".tmp-", 1)[1]
        if pid.isdigit() and int(pid) != os.getpid() and process_alive(int(pid)):
            continue  # Another live process is writing it (should not happen: run lock).
        shutil.rmtree(os.path.join(root, name), ignore_errors=True)


def _flush(f) -> None:
    f.flush()
    os.fsync(f.fileno())


def _fsync_dir(path: str) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory fds
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)


# ---------------------------------------------------------------- random state


def capture_rng_state() -> dict:
    """Python, numpy and torch (CPU and, if used, CUDA) global RNG states."""
    state = dict(python=random.getstate(), numpy=np.random.get_state(),
                 torch=torch.get_rng_state())
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def restore_rng_state(state: dict) -> None:
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


# ---------------------------------------------------------------- sampler state

# Per-env flags of the wait-reset collectors; the agent's recurrent state.
_COLLECTOR_ARRAYS = ("need_reset", "done")
_AGENT_STATE = ("_prev_rnn_state", "_sample_rnn_state")


def capture_sampler_state(sampler, agent) -> tuple[bytes | None, str]:
    """Pickled env/collector state of a sampler whose envs live in this process.

    Returns ``(blob, why)``: ``blob`` is None when the envs cannot be captured (a
    parallel sampler's envs live in its workers, or an env does not pickle), and
    ``why`` then says why; a resumed run then restarts its envs (see docs/runners.md).
    """
    envs = getattr(sampler, "envs", None)
    if not envs or getattr(sampler, "agent_inputs", None) is None:
        return None, f"{type(sampler).__name__} steps its envs in worker processes"
    collector = getattr(sampler, "collector", None)
    state = dict(
        envs=list(envs),
        eval_envs=list(getattr(sampler, "eval_envs", []) or []),
        agent_inputs=sampler.agent_inputs,
        traj_infos=sampler.traj_infos,
        collector={k: getattr(collector, k) for k in _COLLECTOR_ARRAYS
                   if hasattr(collector, k)},
        agent={k: getattr(agent, k) for k in _AGENT_STATE if hasattr(agent, k)},
    )
    try:
        return pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL), ""
    except Exception as e:  # Any env attribute may refuse to pickle (sockets, emulators).
        return None, f"its envs do not pickle ({type(e).__name__}: {e})"


def restore_sampler_state(sampler, agent, blob: bytes) -> None:
    """Put the envs, agent inputs and trajectory stats of ``blob`` into ``sampler``.

    Lists and arrays are replaced in place: the collectors hold references to them.
    """
    state: dict[str, Any] = pickle.loads(blob)
    for old, new in ((sampler.envs, state["envs"]),
                     (getattr(sampler, "eval_envs", []), state["eval_envs"])):
        if len(old) != len(new):
            raise ValueError(
                f"checkpoint holds {len(new)} envs where the sampler has {len(old)}: the "
                f"sampler's batch_B / eval_n_envs differ from the checkpointed run"
            )
        for env in old:
            env.close()
        old[:] = new
    sampler.agent_inputs[:] = state["agent_inputs"]
    sampler.traj_infos[:] = state["traj_infos"]
    collector = getattr(sampler, "collector", None)
    for key, value in state["collector"].items():
        getattr(collector, key)[:] = value
    for key, value in state["agent"].items():
        setattr(agent, key, value)


def rebuild_info(agent, sampler) -> dict:
    """How to build a run's agent and env again (``rlpyt evaluate`` of a script's run):
    import paths of the agent class and the env maker, and their keywords
    (``agent_kwargs`` None when the agent was built with positional arguments)."""
    n_args, kwargs = getattr(agent, "_init_keywords", (0, {}))
    maker = sampler.EnvCls
    return dict(
        agent_class=f"{type(agent).__module__}:{type(agent).__qualname__}",
        agent_kwargs=None if n_args else kwargs,
        env_maker=f"{getattr(maker, '__module__', '?')}:"
                  f"{getattr(maker, '__qualname__', repr(maker))}",
        env_kwargs=dict(sampler.env_kwargs),
    )
