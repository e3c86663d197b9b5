"""Gymnasium's ALE env ids, played on ``AtariEnv`` with the protocol the literature uses
for each id family.

Gymnasium registers every game under several ids whose settings differ (``ale_py``'s
registration: ``gymnasium.spec(id).kwargs``).  ``atari_protocol(id)`` reads the id's own
sticky-action probability and frame skip from that registration and adds the
agent-side pipeline of the id's family:

* ``ALE/<Game>-v5`` (Machado et al. 2018, "Revisiting the Arcade Learning
  Environment"): sticky actions 0.25 and a frame skip of 4, as Gymnasium's env for the
  id has them; no no-op starts (the sticky actions make the start random), no life-loss
  signal (an episode is a whole game), up to 108k frames per game.
* ``<Game>NoFrameskip-v4`` (and ``-v0``) (Mnih et al. 2015, the DQN Nature pipeline):
  the id has no frame skip, so the pipeline's own: 4 frames per step with max-pooling
  over the last two; up to 30 no-op frames after each reset, a life loss ends a
  training episode (the game goes on), FIRE pressed after a reset in games that
  have it; sticky actions as the id has them (0 for v4, 0.25 for v0).

Both families: 4 stacked 84x84 grayscale frames, rewards clipped to their sign for
training.  The scores reported are whole games' unclipped scores (``GameScore`` of
``AtariTrajInfo``; a trajectory ends at game over, never at a life loss).  Ids with a
random frame skip (``<Game>-v4``, ``<Game>-v0``: 2-4 frames per step) are refused:
``AtariEnv`` repeats a fixed number of frames.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from typing import Any

__all__ = ["AtariProtocol", "atari_protocol", "is_atari_id", "make_atari"]

NATURE_FRAME_SHAPE = (84, 84)
PIPELINE_FRAME_SKIP = 4  # The DQN pipeline's skip, for ids that have none of their own.
DQN_START_NOOPS = 30


@dataclass(frozen=True)
class AtariProtocol:
    """How an ALE id is played: ``AtariEnv`` keywords and the family's name.

    Args:
        env_id: the Gymnasium id.
        family: ``"machado"`` (``ALE/*-v5``) or ``"dqn_nature"`` (``*NoFrameskip-v*``).
        env_kwargs: the ``AtariEnv`` keywords.
    """

    env_id: str
    family: str
    env_kwargs: dict = field(default_factory=dict)

    def describe(self) -> str:
        """One line for the start of a run: the family and its settings."""
        kw = self.env_kwargs
        source = ("Machado et al. 2018" if self.family == "machado"
                  else "DQN Nature pipeline, Mnih et al. 2015")
        return (f"{self.env_id} on AtariEnv ({source}): sticky actions "
                f"{kw['repeat_action_probability']}, frame skip {kw['frame_skip']}, "
                f"no-op starts {kw['max_start_noops']}, life loss ends an episode "
                f"{'yes' if kw['episodic_lives'] else 'no'}, "
                f"{kw['num_img_obs']}x{kw['frame_shape'][0]}x{kw['frame_shape'][1]} frames, "
                f"rewards clipped for training; scores reported are whole games'")


def _ale_spec(env_id: str):
    """Gymnasium's registration of ``env_id`` if it is an ALE id, else None."""
    import gymnasium as gym

    try:
        import ale_py
    except ImportError:  # pragma: no cover - depends on the install
        return None
    gym.register_envs(ale_py)
    try:
        spec = gym.spec(env_id)
    except gym.error.Error:
        return None
    return spec if str(spec.entry_point).startswith("ale_py") else None


def is_atari_id(env_id: str) -> bool:
    """Whether ``env_id`` is one of Gymnasium's ALE ids."""
    return isinstance(env_id, str) and _ale_spec(env_id) is not None


@cache  # every env of a run asks; the registry look-up and a ROM load are done once
def atari_protocol(env_id: str) -> AtariProtocol:
    """The ``AtariEnv`` settings for ``env_id`` (see the module doc); ``ValueError`` for an
    id that is not an ALE id or whose settings ``AtariEnv`` cannot reproduce.  The
    returned ``env_kwargs`` are shared: copy them before changing any."""
    spec = _ale_spec(env_id)
    if spec is None:
        raise ValueError(f"{env_id!r} is not a Gymnasium ALE id (e.g. 'ALE/Pong-v5', "
                         f"'PongNoFrameskip-v4')")
    kwargs = spec.kwargs
    game = kwargs["game"]
    if kwargs.get("obs_type", "rgb") not in ("rgb", "grayscale"):
        raise ValueError(f"{env_id!r}: observations of type {kwargs['obs_type']!r}; AtariEnv "
                         f"plays from the screen only")
    if kwargs.get("full_action_space", False):
        raise ValueError(f"{env_id!r}: the full 18-action set; AtariEnv uses each game's "
                         f"minimal action set")
    frameskip = kwargs.get("frameskip", PIPELINE_FRAME_SKIP)
    if not isinstance(frameskip, int):
        camel = env_id.split("/")[-1].split("-")[0]
        raise ValueError(f"{env_id!r} repeats each action a random {frameskip[0]}-"
                         f"{frameskip[1] - 1} frames, which AtariEnv does not reproduce; use "
                         f"'{camel}NoFrameskip-v4' (the DQN Nature pipeline) or "
                         f"'ALE/{camel}-v5' (sticky actions, Machado et al. 2018)")
    frames_per_game = kwargs.get("max_num_frames_per_episode") or 108_000
    common = dict(game=game, num_img_obs=4, frame_shape=NATURE_FRAME_SHAPE, clip_reward=True,
                  repeat_action_probability=float(kwargs.get("repeat_action_probability", 0)))
    if frameskip > 1:  # ALE/*-v5: the env's own skip, nothing else on top
        family = "machado"
        env_kwargs = dict(common, frame_skip=frameskip, max_start_noops=0,
                          episodic_lives=False, fire_on_reset=False,
                          horizon=frames_per_game // frameskip)
    else:
        family = "dqn_nature"
        env_kwargs = dict(common, frame_skip=PIPELINE_FRAME_SKIP,
                          max_start_noops=DQN_START_NOOPS, episodic_lives=True,
                          fire_on_reset=_has_fire(game),
                          horizon=frames_per_game // PIPELINE_FRAME_SKIP)
    return AtariProtocol(env_id=env_id, family=family, env_kwargs=env_kwargs)


def _has_fire(game: str) -> bool:
    """Whether FIRE is in ``game``'s minimal action set (the pipeline presses it after a
    reset, since games such as Breakout wait for it)."""
    from ale_py import Action, ALEInterface, LoggerMode, roms

    ALEInterface.setLoggerMode(LoggerMode.Error)
    ale = ALEInterface()
    ale.loadROM(str(roms.get_rom_path(game)))
    return Action.FIRE in ale.getMinimalActionSet()


def make_atari(id: str, render_mode: str | None = None, **overrides: Any):  # noqa: A002
    """``AtariEnv`` for the Gymnasium ALE id ``id`` with its family's protocol
    (``atari_protocol``); ``overrides`` replace single keywords
    (``make_atari("ALE/Pong-v5", frame_shape=(104, 80))``).  ``render_mode`` is
    Gymnasium's keyword: ``"rgb_array"`` (``render()`` returns the screen) or None."""
    from rlpyt.envs.atari.atari_env import AtariEnv

    if render_mode not in (None, "rgb_array"):
        raise ValueError(f"make_atari: render_mode={render_mode!r}; AtariEnv renders "
                         f"'rgb_array' frames only")
    return AtariEnv(**{**atari_protocol(id).env_kwargs, **overrides})
