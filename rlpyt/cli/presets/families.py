"""Which preset an env id gets: the env family decides (MinAtar, POPGym, Atari, MuJoCo,
classic).

Families are read from the id alone: ``MinAtar/`` and ``popgym-`` ids by prefix, Atari and MuJoCo ids by
Gymnasium's registration (the entry point of the id's env), so that every registered
version and game is covered and nothing is built to decide.
"""

from __future__ import annotations

from rlpyt.cli.overrides import ConfigError
from rlpyt.cli.presets.atari import ATARI_PRESETS
from rlpyt.cli.presets.base import Preset
from rlpyt.cli.presets.classic import PRESETS
from rlpyt.cli.presets.minatar import MINATAR_PREFIX, MINATAR_PRESETS
from rlpyt.cli.presets.mujoco import MUJOCO_PRESETS
from rlpyt.cli.presets.popgym import POPGYM_PREFIX, POPGYM_PRESETS

__all__ = ["FAMILY_PRESETS", "env_family", "env_maker", "preset_for"]

FAMILY_PRESETS: dict[str, dict[str, Preset]] = {
    "classic": PRESETS, "minatar": MINATAR_PRESETS, "atari": ATARI_PRESETS,
    "mujoco": MUJOCO_PRESETS, "popgym": POPGYM_PRESETS,
}
"""The presets of each env family (``env_family``'s names)."""
FAMILY_NAMES = {"classic": "classic control", "minatar": "MinAtar", "atari": "Atari",
                "mujoco": "MuJoCo", "popgym": "POPGym"}
ENV_MAKERS = {"atari": "rlpyt.envs.atari.ids:make_atari"}  # others: rlpyt.envs.gym:make


def _entry_point(env_id: str) -> str:
    """The entry point of ``env_id``'s registration ("" for an unknown id: ``make``
    names the closest ids later).  ALE ids are registered on first need."""
    import gymnasium as gym

    from rlpyt.envs.gym import register_ale_envs

    for attempt in range(2):
        try:
            return str(gym.spec(env_id).entry_point)
        except gym.error.Error:
            if attempt == 0 and not register_ale_envs(required=False):
                break
    return ""


def env_family(env_id: str | None) -> str:
    """``"minatar"``, ``"popgym"``, ``"atari"``, ``"mujoco"`` or ``"classic"``
    (everything else)."""
    if env_id is None:
        return "classic"
    if env_id.startswith(MINATAR_PREFIX):
        return "minatar"
    if env_id.startswith(POPGYM_PREFIX):
        return "popgym"
    entry = _entry_point(env_id)
    if entry.startswith("ale_py"):
        return "atari"
    if entry.startswith("gymnasium.envs.mujoco"):
        return "mujoco"
    return "classic"


def env_maker(env_id: str) -> str:
    """Import path of the callable that builds ``env_id``'s env from ``(id=..., **kw)``."""
    return ENV_MAKERS.get(env_family(env_id), "rlpyt.envs.gym:make")


def preset_for(algo: str, env_id: str | None) -> Preset:
    """The preset of ``algo`` for ``env_id``'s family (``PRESETS[algo]`` without an id);
    a ``ConfigError`` naming the algorithms of the family when it has none for ``algo``."""
    family = env_family(env_id)
    presets = FAMILY_PRESETS[family]
    if algo not in presets:
        kinds = set(PRESETS[algo].agents) if algo in PRESETS else set()
        family_kind = "continuous" if family == "mujoco" else "discrete"
        hint = (f" ({algo} is for {' and '.join(sorted(kinds))} actions)"
                if kinds and family_kind not in kinds else "")
        raise ConfigError(
            f"--algo {algo!r} has no {FAMILY_NAMES[family]} preset for {env_id}: "
            f"{FAMILY_NAMES[family]} algorithms: {sorted(presets)}{hint}")
    return presets[algo]
