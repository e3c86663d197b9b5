"""The keywords each component of a ``rlpyt train`` run accepts, and their defaults.

They decide what ``--algo.KEY``, ``--agent.KEY``, ``--sampler.KEY`` and ``--runner.KEY``
may name (a misspelt keyword is refused before anything is built), and which values a
keyword takes (a keyword whose default is a number refuses ``abc``).
"""

from __future__ import annotations

import inspect

from rlpyt.cli.components import runner_path, sampler_path
from rlpyt.cli.presets import Preset, import_path

__all__ = ["ASYNC_RUNNER_KEYWORDS", "RUNNER_KEYWORDS", "class_keywords", "keyword_defaults",
           "override_keywords"]

RUNNER_KEYWORDS = {"n_steps", "log_interval_steps", "log_traj_window",
                   "checkpoint_interval_steps", "checkpoint_replay", "checkpoint_keep",
                   "max_abs_value", "divergence"}
ASYNC_RUNNER_KEYWORDS = RUNNER_KEYWORDS | {"max_ahead", "progress_timeout",
                                           "learner_channels_last"}


def override_keywords(config: dict, preset: Preset) -> tuple[dict, dict]:
    """``(valid, defaults)`` of ``apply_overrides`` for ``config``'s components: the
    keywords each accepts (None: any) and each keyword's value before the flags (the
    config's, else the class's default)."""
    valid = dict(
        algo=class_keywords(import_path(preset.algo)),
        agent=class_keywords(import_path(config["agent_class"])),
        sampler=_sampler_keywords(sampler_path(config)),
        runner=ASYNC_RUNNER_KEYWORDS if config.get("runner_type") == "async"
        else RUNNER_KEYWORDS,
        env=None,
    )
    defaults = dict(
        algo={**keyword_defaults(import_path(preset.algo)), **config["algo"]},
        agent={**keyword_defaults(import_path(config["agent_class"])), **config["agent"]},
        sampler={**keyword_defaults(import_path(sampler_path(config))),
                 **config["sampler"]},
        runner={**keyword_defaults(import_path(runner_path(config))), **config["runner"]},
    )
    return valid, defaults


def class_keywords(cls: type) -> set[str] | None:
    """Keyword names accepted by ``cls.__init__`` across its MRO (None: accepts anything)."""
    names, open_ended = set(), True
    for klass in inspect.getmro(cls):
        init = klass.__dict__.get("__init__")
        if init is None:
            continue
        params = inspect.signature(init).parameters.values()
        explicit = [p for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
        names.update(p.name for p in explicit if p.name != "self")
        if not any(p.kind == p.VAR_KEYWORD for p in params):
            open_ended = False
            break
    return None if open_ended and not names else names


def keyword_defaults(cls: type) -> dict:
    """Default values of ``cls.__init__``'s keywords across its MRO (first one wins)."""
    defaults = {}
    for klass in inspect.getmro(cls):
        init = klass.__dict__.get("__init__")
        if init is None:
            continue
        for p in inspect.signature(init).parameters.values():
            if p.default is not p.empty:
                defaults.setdefault(p.name, p.default)
    return defaults


def _sampler_keywords(path: str) -> set[str]:
    """The sampler's keywords, but for the env ones the run sets itself."""
    SamplerCls = import_path(path)
    names = class_keywords(SamplerCls) or set()
    if hasattr(SamplerCls, "SamplerCls"):  # An async sampler takes its wrapped one's too.
        names |= class_keywords(SamplerCls.SamplerCls) or set()
    return names - {"self", "EnvCls", "env_kwargs"}
