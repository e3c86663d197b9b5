"""What a preset is: the classes and keyword defaults of one algorithm on one env family."""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field

__all__ = ["Preset", "env_name", "import_path", "resolve_classes"]


def import_path(path: str):
    """``"package.module:Name"`` (or ``"package.module.Name"``) -> the object."""
    module, _, name = path.partition(":") if ":" in path else path.rpartition(".")
    return getattr(importlib.import_module(module), name)


def resolve_classes(kwargs: dict, component: str) -> dict:
    """``kwargs`` with each class keyword (a name ending in ``Cls``) given as an import
    path (``"torch.optim.RMSprop"``, as a JSON config or ``--algo.OptimCls`` gives it)
    replaced by the class; a ``ValueError`` naming the keyword and path if it does not
    import."""
    resolved = dict(kwargs)
    for key, value in kwargs.items():
        if key.endswith("Cls") and isinstance(value, str):
            try:
                resolved[key] = import_path(value)
            except (ImportError, AttributeError, ValueError) as e:
                raise ValueError(
                    f"{component}.{key}={value!r} does not import ({e}); give a class path "
                    f"such as 'torch.optim.RMSprop' or 'package.module:Name'") from None
    return resolved


@dataclass
class Preset:
    """One algorithm's default run on one env family.

    Args:
        algo: import path of the algorithm class.
        agents: import path of the agent class per action kind ("discrete", "continuous").
        env: default env id.
        algo_kwargs, agent_kwargs, sampler_kwargs, runner_kwargs: keyword defaults.
        env_kwargs: env keywords the algorithm needs on this family (e.g. unclipped
            rewards for R2D2's value rescaling), over the family's own (default none).
        env_overrides: per env name (the id without its version, e.g. ``"HalfCheetah"``),
            keyword defaults that differ from the family's, as
            ``{"algo": {...}, "agent": {...}, ...}``, and a ``"source"`` string where
            they come from elsewhere than ``source`` (default none).
        source: where the values come from, printed when a run starts.
        description: one line for ``rlpyt train --help``.
        torch_threads: torch threads of the main process when ``--torch-threads`` is not
            given (default 1: fastest for small models).  None: every CPU of the run, in
            a synchronous one-process run (for conv nets whose updates are the larger
            part of an iteration: the sampler's workers wait while the optimizer runs);
            1 in asynchronous and ``--nproc`` runs, whose CPUs are shared out.
    """

    algo: str
    agents: dict
    env: str
    algo_kwargs: dict = field(default_factory=dict)
    agent_kwargs: dict = field(default_factory=dict)
    sampler_kwargs: dict = field(default_factory=dict)
    runner_kwargs: dict = field(default_factory=dict)
    env_kwargs: dict = field(default_factory=dict)
    env_overrides: dict = field(default_factory=dict)
    source: str = ""
    description: str = ""
    torch_threads: int | None = 1

    def overrides_for(self, env_id: str) -> dict:
        """The ``env_overrides`` entry of ``env_id`` (``{}`` when it has none)."""
        return self.env_overrides.get(env_name(env_id), {})

    def source_for(self, env_id: str) -> str:
        """Where the values for ``env_id`` come from."""
        return self.overrides_for(env_id).get("source", self.source)


def env_name(env_id: str) -> str:
    """An env id without its namespace and version: ``"ALE/Pong-v5"`` -> ``"Pong"``."""
    return env_id.split("/")[-1].rsplit("-v", 1)[0]
