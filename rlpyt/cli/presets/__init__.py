"""Default training configurations for ``rlpyt train``, one set per env family.

Each preset names its classes by import path (imported only when used) and gives
keyword defaults known to learn on its family, from a named source.  The env id picks
the family (``families.env_family``): MinAtar ids, POPGym ids, Gymnasium's ALE ids, its MuJoCo ids,
and everything else (classic control, Box2D, user-registered envs).  Every value can be
overridden on the command line (``--algo.learning_rate 3e-4``).
"""

from rlpyt.cli.presets.atari import ATARI_PRESETS
from rlpyt.cli.presets.base import Preset, import_path, resolve_classes
from rlpyt.cli.presets.classic import PRESETS
from rlpyt.cli.presets.families import FAMILY_PRESETS, env_family, env_maker, preset_for
from rlpyt.cli.presets.minatar import MINATAR_PREFIX, MINATAR_PRESETS
from rlpyt.cli.presets.mujoco import MUJOCO_PRESETS
from rlpyt.cli.presets.popgym import POPGYM_PREFIX, POPGYM_PRESETS

__all__ = ["ATARI_PRESETS", "FAMILY_PRESETS", "MINATAR_PREFIX", "MINATAR_PRESETS",
           "MUJOCO_PRESETS", "POPGYM_PREFIX", "POPGYM_PRESETS", "PRESETS", "Preset",
           "env_family", "env_maker", "import_path", "preset_for", "resolve_classes"]
