"""Peer libraries in their own virtual environments, for the side-by-side benchmarks.

A peer whose pins clash with ours (Sample Factory needs ``numpy<2`` and
``gymnasium<1``) cannot share our environment, so each peer gets one venv of its own
under ``bench/peers/.venvs/<name>`` (git-ignored), created with ``python -m venv`` and
filled by pip with that peer's pins on first use; the venv is reused while its pins are
unchanged.  Torch is pinned to the CPU build this machine's pip finds
(``torch==2.13.0``), never a CUDA build.  A peer runs its own public entry points in a
subprocess of its venv's Python (``run``); the scripts here print one line
``PEER_RESULT {json}`` that ``run`` reads back.  A peer that cannot be installed
prints pip's own error and ``python_of`` returns None, so the benchmark goes on.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass

HERE = os.path.dirname(os.path.abspath(__file__))
VENVS = os.path.join(HERE, ".venvs")
TORCH = "torch==2.13.0"  # The CPU wheel on this machine's local indexes.


@dataclass(frozen=True)
class Peer:
    """One peer library: its venv's pins (``None``: it runs in our own environment)."""

    name: str
    pins: tuple[str, ...] | None


PEERS = {
    "envpool": Peer("envpool", ("envpool==1.2.5", "numpy==2.4.6", "gymnasium==1.4.0", TORCH)),
    "sample-factory": Peer("sample-factory", (
        "sample-factory==2.1.1", "numpy<2", "gymnasium<1", "ale-py==0.12.1",
        "minatar==1.0.15", TORCH)),
    # TorchRL steps the same EnvPool Pong as the EnvPool rows (its ``MultiThreadedEnv``,
    # which builds EnvPool's gym-API envs, reads their specs through the old ``gym`` and
    # their outputs with ``treevalue``).
    "torchrl": Peer("torchrl", ("torchrl==0.14.1", "tensordict==0.14.3", "envpool==1.2.5",
                                "gym==0.26.2", "treevalue==1.5.0", "numpy==2.4.6",
                                "gymnasium==1.4.0", TORCH)),
    # SB3's A2C as the RL Baselines3 Zoo trains it on MuJoCo (bench/sb3/a2c_mujoco.py).
    "sb3": Peer("sb3", ("stable-baselines3==2.9.2", "gymnasium[mujoco]==1.4.0",
                        "mujoco==4.0.0", "numpy==2.4.6", TORCH)),
    # The RL Baselines3 Zoo's ``--optimize`` (bench/zoo/zoo_tune.py), with the Optuna we pin.
    "zoo": Peer("zoo", ("rl_zoo3==2.9.2", "stable-baselines3==2.9.2", "sb3_contrib==2.9.2",
                        "optuna==5.0.0", "pandas==3.1.1", "gymnasium==1.4.0",
                        "numpy==2.4.6", TORCH)),
    # rliable 1.2 needs arch < 8, and arch 7 does not import beside pandas 3 (ours).
    "rliable": Peer("rliable", ("rliable==1.2.0", "arch==7.2.0", "pandas<3",
                                "numpy==2.4.6", "scipy==1.17.1")),
    # The CleanRL-style loop is written for the bench and needs nothing beyond EnvPool
    # and torch, which our environment has.
    "cleanrl-style": Peer("cleanrl-style", None),
}


def python_of(name: str, log=print) -> str | None:
    """The Python of peer ``name``'s venv, created and filled on first use; None (after
    printing pip's error) when the peer cannot be installed."""
    peer = PEERS[name]
    if peer.pins is None:
        return sys.executable
    os.makedirs(VENVS, exist_ok=True)
    with open(os.path.join(VENVS, f"{name}.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # One creator at a time; the others wait.
        return _python_of_locked(peer, log)


def _python_of_locked(peer: Peer, log) -> str | None:
    name = peer.name
    venv = os.path.join(VENVS, name)
    python = os.path.join(venv, "bin", "python")
    stamp = os.path.join(venv, ".pins")
    wanted = "\n".join(peer.pins)
    if os.path.exists(stamp) and open(stamp).read() == wanted:
        return python
    log(f"[peers] {name}: creating {venv} with {' '.join(peer.pins)}")
    if not os.path.exists(python):
        subprocess.run([sys.executable, "-m", "venv", venv], check=True)
    proc = subprocess.run([python, "-m", "pip", "install", "--quiet", *peer.pins],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        errors = [line for line in proc.stderr.splitlines() if not line.startswith("WARNING")]
        log(f"[peers] {name} cannot be installed (pip exit {proc.returncode}):\n"
            + "\n".join(errors[-25:]))
        return None
    with open(stamp, "w") as f:
        f.write(wanted)
    return python


def run(name: str, args: list[str], timeout: float, env: dict | None = None,
        log=print) -> dict | None:
    """Run ``python args...`` in peer ``name``'s venv; the dict of its ``PEER_RESULT``
    line, or None (after printing why) if it could not be installed or failed.

    The peer runs in a session of its own, and its whole process group is killed at
    the end: after ``timeout`` seconds without a result (a stalled Sample Factory leaves
    several worker processes), ``EXIT_GRACE`` seconds after it printed its result
    without exiting (TorchRL's multi-process collector can hang at interpreter exit),
    and after a normal exit (workers it left behind)."""
    python = python_of(name, log=log)
    if python is None:
        return None
    child_env = dict(os.environ, **(env or {}))
    if PEERS[name].pins is not None:  # Our library stays out of a peer's venv.
        child_env.pop("PYTHONPATH", None)
    proc = subprocess.Popen([python, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=child_env, cwd=HERE, start_new_session=True)
    out, err, got_result = [], [], threading.Event()
    readers = [threading.Thread(target=_drain, args=(proc.stdout, out, got_result),
                                daemon=True),
               threading.Thread(target=_drain, args=(proc.stderr, err, None), daemon=True)]
    for reader in readers:
        reader.start()
    why = _wait(proc, timeout, got_result)
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()
    for reader in readers:
        reader.join(timeout=10)
    stderr = "".join(err)
    for line in out[::-1]:
        if line.startswith("PEER_RESULT "):
            if why:
                log(f"[peers] {name} {args[0]}: {why}; its result stands")
            return json.loads(line[len("PEER_RESULT "):])
    log(f"[peers] {name} {args[0]} failed ({why or f'exit {proc.returncode}'}):\n"
        + _first_error(stderr))
    return None


EXIT_GRACE = 30.0  # Seconds a peer may take to exit after printing its result.


def _wait(proc: subprocess.Popen, timeout: float, got_result: threading.Event) -> str:
    """Wait for the peer to exit; '' if it did, else why the wait ended."""
    deadline = time.monotonic() + timeout
    while proc.poll() is None:
        if got_result.is_set():
            try:
                proc.wait(timeout=EXIT_GRACE)
                return ""
            except subprocess.TimeoutExpired:
                return f"did not exit within {EXIT_GRACE:.0f} s of its result, killed"
        left = deadline - time.monotonic()
        if left <= 0:
            return f"no result within {timeout:.0f} s, killed"
        got_result.wait(min(1.0, left))
    return ""


def _drain(stream, lines: list, got_result: threading.Event | None) -> None:
    for line in stream:
        lines.append(line)
        if got_result is not None and line.startswith("PEER_RESULT "):
            got_result.set()


def _first_error(stderr: str, tail: int = 3000) -> str:
    """The first traceback in a peer's stderr (where a peer's worker died first, before
    the rest of it stalled or was killed), else the stderr's tail."""
    start = stderr.find("Traceback (most recent call last)")
    if start < 0:
        return stderr[-tail:]
    return stderr[start:start + tail]
