"""Peer libraries in their own virtual environments, for ``bench/peers.py``.

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
import subprocess
import sys
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
    "torchrl": Peer("torchrl", ("torchrl==0.14.1", "tensordict==0.14.3", TORCH)),
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
    line, or None (after printing why) if it could not be installed or failed."""
    python = python_of(name, log=log)
    if python is None:
        return None
    child_env = dict(os.environ, **(env or {}))
    if PEERS[name].pins is not None:  # Our library stays out of a peer's venv.
        child_env.pop("PYTHONPATH", None)
    try:
        proc = subprocess.run([python, *args], capture_output=True, text=True,
                              timeout=timeout, env=child_env, cwd=HERE)
    except subprocess.TimeoutExpired as e:
        log(f"[peers] {name} {args[0]}: no result within {timeout:.0f} s\n"
            + (e.stderr or "")[-2000:] if isinstance(e.stderr, str) else "")
        return None
    for line in proc.stdout.splitlines()[::-1]:
        if line.startswith("PEER_RESULT "):
            return json.loads(line[len("PEER_RESULT "):])
    log(f"[peers] {name} {args[0]} failed (exit {proc.returncode}):\n"
        + proc.stderr[-3000:])
    return None
