"""What samplers that step envs elsewhere share, whether in worker processes or Ray
actors: the split of the envs into groups, a group's slice of the batch, each
worker's own seed, and the step timeout that tells a hung env from a slow one."""

from __future__ import annotations

import numpy as np

__all__ = ["DEFAULT_STEP_TIMEOUT_S", "check_step_timeout", "slice_samples", "split_evenly",
           "worker_seed"]

DEFAULT_STEP_TIMEOUT_S = 60.0


def split_evenly(n: int, parts: int, start: int = 0) -> list[tuple[int, int]]:
    """``parts`` contiguous ``(start, stop)`` ranges covering ``start .. start + n``;
    the first ``n % parts`` ranges are one longer."""
    bounds, lo = [], start
    for p in range(parts):
        hi = lo + n // parts + (1 if p < n % parts else 0)
        bounds.append((lo, hi))
        lo = hi
    return bounds


def slice_samples(samples, start: int, stop: int):
    """The envs ``start:stop`` of a ``Samples`` buffer (``bootstrap_value`` is ``[B]``)."""
    agent = samples.agent
    fields = {name: None if value is None else value[:, start:stop]
              for name, value in zip(agent._fields, agent) if name != "bootstrap_value"}
    if "bootstrap_value" in agent._fields:
        fields["bootstrap_value"] = agent.bootstrap_value[start:stop]
    return samples._replace(agent=type(agent)(**fields), env=samples.env[:, start:stop])


def check_step_timeout(step_timeout):
    if step_timeout is None:
        return None
    ok = isinstance(step_timeout, (int, float)) and not isinstance(step_timeout, bool)
    if not ok or not step_timeout > 0 or step_timeout != step_timeout:
        raise ValueError(f"step_timeout={step_timeout!r} is invalid: expected a positive "
                         "number of seconds, or None to wait forever")
    return float(step_timeout)


def worker_seed(seed: int, index: int) -> int:
    """Seed of a worker's own RNGs, independent of every env seed."""
    return int(np.random.SeedSequence(seed, spawn_key=(0x5A4D, index)).generate_state(1)[0])
