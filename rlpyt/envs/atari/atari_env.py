"""Atari 2600 games on the Arcade Learning Environment, with the classic DQN preprocessing.

``AtariEnv`` drives ``ale_py.ALEInterface`` directly (no Gymnasium wrappers on the
hot path).  Each ``step(action)``:

1. repeats the action for ``frame_skip`` emulator frames, summing the game reward
   (stopping early if the game ends; the final screen is then used alone);
2. takes the element-wise max of the grayscale screens of the last two of those
   frames (removes sprite flicker);
3. downsamples 210x160 -> ``frame_shape`` (H x W; default 104x80, classic rlpyt's)
   exactly as ``cv2.resize(frame, (W, H), interpolation=cv2.INTER_NEAREST)`` does
   (the flag passed by keyword: classic rlpyt passed it positionally, into ``dst``,
   and got bilinear resizing);
4. writes that frame into a preallocated ring of ``num_img_obs`` frames and returns
   a new array of them in time order, oldest first: ``observation[-1]`` is the
   newest.  On every ``reset()`` the older frames are zeros.

Steps 2-3 run in the cheapest order that gives the same pixels: nearest-neighbour
downsampling only selects pixels and grayscale conversion and max are per pixel,
so ALE's palette indices (``getScreen``) are downsampled first (``downsample.py``)
and only the kept pixels are converted, through a palette -> grayscale table
learnt from ALE's own ``getScreenGrayscale`` whenever a new colour shows up.

Episodes, lives and resets
--------------------------
With ``episodic_lives=True`` losing a life returns ``done=True`` while
``env_info.traj_done`` stays False: the agent sees an episode end, the game goes
on.  The following ``reset()`` is then a *soft* reset: the same game continues
(only ``FIRE`` is pressed if ``fire_on_reset``).  At game over, at the
``horizon`` or on any other ``reset()`` the game is reset fully: ``reset_game``,
then a uniform random number in ``[0, max_start_noops]`` of single-frame NOOPs,
then ``FIRE`` if ``fire_on_reset``.

``horizon`` counts agent steps since the last full reset (a whole game, across
lives).  Reaching it ends the trajectory with ``done=True``, ``traj_done=True`` and
``timeout=True`` (``timeout`` is False when the same step also lost a life or ended
the game, since those are true terminations).

``env_info`` is ``EnvInfo(game_score, traj_done, timeout)`` with ``game_score`` the
unclipped game reward of the step; ``reward`` is its sign when ``clip_reward``.
"""

from __future__ import annotations

import difflib
import re
from typing import Any

import numpy as np

from rlpyt.envs.atari.downsample import nearest_copy_plan, nearest_index
from rlpyt.envs.base import Env, EnvStep
from rlpyt.envs.traj_info import TrajInfo
from rlpyt.spaces.int_box import IntBox
from rlpyt.utils.collections import namedtuple

try:
    import cv2
    from ale_py import Action, ALEInterface, LoggerMode, roms
except ImportError as _import_error:  # pragma: no cover - depends on the install
    raise ImportError(
        "AtariEnv needs ale-py and opencv-python-headless: pip install 'rlpyt[atari]'"
    ) from _import_error

ALEInterface.setLoggerMode(LoggerMode.Error)

FRAME_SHAPE = (104, 80)  # Downsampled frame size, H x W (classic rlpyt).
_UNKNOWN_COLOUR = 256  # Above any grayscale value.

EnvInfo = namedtuple("EnvInfo", ["game_score", "traj_done", "timeout"], module=__name__)


class AtariTrajInfo(TrajInfo):
    """``TrajInfo`` plus ``GameScore``: the sum of unclipped game rewards."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.GameScore = 0

    def step(self, observation, action, reward, done, agent_info, env_info) -> AtariTrajInfo:
        super().step(observation, action, reward, done, agent_info, env_info)
        self.GameScore += env_info.game_score
        return self


class AtariEnv(Env):
    """An Atari game with frame skip, max-pooling, grayscale downsampled frames and stacking.

    Args:
        game: ROM name as in ``ale_py.roms`` (``"pong"``, ``"space_invaders"``;
            ``"SpaceInvaders"`` also works); default ``"pong"``.
        frame_skip: emulator frames per agent step (the action is repeated); default 4.
        num_img_obs: number of frames stacked in an observation; default 4.
        clip_reward: return the sign of the game reward; default True.
        episodic_lives: end an episode (``done``) at every life loss; default True.
        fire_on_reset: press FIRE after each reset (games such as Breakout wait for
            it); default False.
        max_start_noops: at most this many NOOP frames after a full reset (uniform);
            default 30.
        repeat_action_probability: ALE sticky actions: the chance that each emulator
            frame repeats the previous action instead; default 0.
        horizon: most agent steps per game before truncation (``None``: no limit);
            default 27000 (108k frames, 30 minutes of play).
        frame_shape: ``(height, width)`` of the downsampled frames; default ``(104, 80)``
            (classic rlpyt: every other row and column of the 210x160 screen).
            ``(84, 84)`` is the Nature DQN size that EnvPool and Sample Factory use
            (they resize by area interpolation; here it is nearest-neighbour, so thin
            sprites keep full intensity).
        seed: seed of the ALE and of the NOOP counts (``None``: fresh OS entropy); see
            ``seed()``.

    Observations are uint8 arrays ``[num_img_obs, *frame_shape]`` (a new array each
    call); actions are indices into the game's minimal action set.
    """

    def __init__(
        self,
        game: str = "pong",
        frame_skip: int = 4,
        num_img_obs: int = 4,
        clip_reward: bool = True,
        episodic_lives: bool = True,
        fire_on_reset: bool = False,
        max_start_noops: int = 30,
        repeat_action_probability: float = 0.0,
        horizon: int | None = 27000,
        seed: int | None = None,
        frame_shape: tuple[int, int] = FRAME_SHAPE,
    ) -> None:
        _check_int("frame_skip", frame_skip, minimum=1)
        _check_int("num_img_obs", num_img_obs, minimum=1)
        _check_int("max_start_noops", max_start_noops, minimum=0)
        if horizon is not None:
            _check_int("horizon", horizon, minimum=1)
        H, W = self._frame_shape = _check_frame_shape(frame_shape)
        if not 0.0 <= repeat_action_probability <= 1.0:
            raise ValueError(
                "AtariEnv: repeat_action_probability must lie in [0, 1], got "
                f"{repeat_action_probability!r}"
            )
        self.game = _rom_id(game)
        self._frame_skip = int(frame_skip)
        self._clip_reward = bool(clip_reward)
        self._episodic_lives = bool(episodic_lives)
        self._fire_on_reset = bool(fire_on_reset)
        self._max_start_noops = int(max_start_noops)
        self._horizon = None if horizon is None else int(horizon)
        self._step_limit = float("inf") if horizon is None else int(horizon)

        self.ale = ALEInterface()
        self.ale.setFloat("repeat_action_probability", float(repeat_action_probability))
        self._load_rom(seed)
        self._action_set = list(self.ale.getMinimalActionSet())
        self._n_actions = len(self._action_set)
        self._action_space = IntBox(low=0, high=self._n_actions)
        self._observation_space = IntBox(
            low=0, high=256, shape=(num_img_obs, H, W), dtype="uint8"
        )
        screen_shape = tuple(self.ale.getScreenDims())
        self._screen = np.zeros(screen_shape, dtype=np.uint8)  # ALE palette indices.
        self._small = np.zeros((H, W), dtype=np.uint8)  # The same, downsampled.
        self._gray = np.zeros((2, H, W), dtype=np.uint16)  # Second-to-last and last frame.
        self._full_gray = np.zeros(screen_shape, dtype=np.uint8)  # Only to learn colours.
        # ALE palette index -> ALE grayscale value, learnt as colours appear.
        self._palette = np.full(256, _UNKNOWN_COLOUR, dtype=np.uint16)
        # Frame stack as a ring: slot ``self._newest`` holds the newest frame.
        self._ring = np.zeros((num_img_obs, H, W), dtype=np.uint8)
        self._ring_slots = list(self._ring)
        self._newest = num_img_obs - 1
        # Views made once: the hot path only copies between them.
        self._downsample_plan = nearest_copy_plan(self._screen, self._small)
        self._screen_flat = self._screen.reshape(-1)  # A view: the same buffer.
        self._nearest = (None if self._downsample_plan is not None  # Only without a plan.
                         else nearest_index(screen_shape, (H, W)))
        self._gray_slots = self._gray0, self._gray1 = tuple(self._gray)
        self._lives = self.ale.lives()
        self._step_counter = 0
        self._soft_reset_next = False

    # ----- Seeding ------------------------------------------------------------

    def seed(self, seed: int | None) -> None:
        """Reseed the ALE and the NOOP counts; the next ``reset()`` starts a new game.

        ALE reads its seed only when a ROM is loaded, so this reloads the ROM.
        """
        self._load_rom(seed)
        self._soft_reset_next = False

    def _load_rom(self, seed: int | None) -> None:
        seed_seq = np.random.SeedSequence(seed)
        ale_seed, noop_seed = seed_seq.generate_state(2)
        self.ale.setInt("random_seed", int(ale_seed % 2**31))
        self.ale.loadROM(str(roms.get_rom_path(self.game)))
        self._rng = np.random.default_rng(noop_seed)

    # ----- Env interface -----------------------------------------------------

    def step(self, action: Any) -> EnvStep:
        index = int(action)
        if not 0 <= index < self._n_actions:
            raise ValueError(
                f"AtariEnv({self.game}): action must be in [0, {self._n_actions}), got {action!r}"
            )
        game_score = self._act_frames(self._action_set[index])
        self._push_frame()
        self._step_counter += 1
        ale = self.ale
        game_over = ale.game_over()
        lives = ale.lives()
        life_lost = self._episodic_lives and lives < self._lives and not game_over
        self._lives = lives
        at_horizon = self._step_counter >= self._step_limit
        traj_done = game_over or at_horizon
        done = traj_done or life_lost
        timeout = at_horizon and not (game_over or life_lost)
        self._soft_reset_next = done and not traj_done
        if self._clip_reward:
            reward = float((game_score > 0) - (game_score < 0))
        else:
            reward = float(game_score)
        env_info = EnvInfo(game_score=float(game_score), traj_done=traj_done, timeout=timeout)
        return EnvStep(self._observation(), reward, done, env_info)

    def reset(self) -> np.ndarray:
        """Soft reset after a life-loss ``done``, full game reset otherwise (module doc)."""
        if self._soft_reset_next:
            self._soft_reset_next = False
        else:
            self._reset_game()
        if self._fire_on_reset:
            self.ale.act(Action.FIRE)
        self._lives = self.ale.lives()
        self._ring[:] = 0
        self._grab_gray(1)
        self._gray[0] = self._gray[1]
        self._push_frame()
        return self._observation()

    @property
    def horizon(self) -> int | None:
        return self._horizon

    def render(self) -> np.ndarray:
        """The current full-colour screen, ``[210, 160, 3]`` uint8 (for videos)."""
        return self.ale.getScreenRGB()

    def get_action_meanings(self) -> list[str]:
        """Names of the actions (``"NOOP"``, ``"FIRE"``, ...), by action index."""
        return [a.name for a in self._action_set]

    # ----- Internals -----------------------------------------------------------

    def _reset_game(self) -> None:
        ale = self.ale
        ale.reset_game()
        for _ in range(int(self._rng.integers(0, self._max_start_noops + 1))):
            ale.act(Action.NOOP)
            if ale.game_over():
                ale.reset_game()
        self._step_counter = 0

    def _act_frames(self, action: Action) -> int:
        """Play ``frame_skip`` frames of ``action`` and return the summed game reward.

        Leaves the downsampled grayscale of the second-to-last and last frames in
        ``self._gray`` (the last frame twice when there is only one).
        """
        ale, reward = self.ale, 0
        for _ in range(self._frame_skip - 1):
            reward += ale.act(action)
            if ale.game_over():  # No further frames: the final screen alone.
                self._grab_gray(1)
                self._gray[0] = self._gray[1]
                return reward
        if self._frame_skip > 1:
            self._grab_gray(0)
        reward += ale.act(action)
        self._grab_gray(1)
        if self._frame_skip == 1:
            self._gray[0] = self._gray[1]
        return reward

    def _grab_gray(self, slot: int) -> None:
        """Downsampled grayscale of the current screen into ``self._gray[slot]``.

        Nearest-neighbour downsampling only selects pixels, so it is done first, on
        ALE's palette indices, and only the kept pixels go through the
        palette -> grayscale table: the same values as ALE's ``getScreenGrayscale``
        followed by the resize, at a fraction of the cost.
        """
        self.ale.getScreen(self._screen)
        if self._downsample_plan is None:  # cv2.resize's nearest pixels, gathered.
            self._screen_flat.take(self._nearest, out=self._small, mode="clip")
        else:  # The same pixels, by strided copies.
            for dst, src in self._downsample_plan:
                np.copyto(dst, src)
        gray = self._gray_slots[slot]
        cv2.LUT(self._small, self._palette, dst=gray)
        if cv2.minMaxLoc(gray)[1] > 255:  # A colour not seen before: ask ALE for it.
            self._learn_colours()
            cv2.LUT(self._small, self._palette, dst=gray)

    def _learn_colours(self) -> None:
        """Record the grayscale value of every colour on the current screen."""
        self.ale.getScreenGrayscale(self._full_gray)
        self._palette[self._screen.ravel()] = self._full_gray.ravel()

    def _push_frame(self) -> None:
        """Advance the ring one slot and write the max of the two grabbed frames
        there, in place (the oldest frame is overwritten)."""
        self._newest = newest = (self._newest + 1) % len(self._ring_slots)
        np.maximum(self._gray0, self._gray1, out=self._ring_slots[newest], casting="unsafe")

    def _observation(self) -> np.ndarray:
        """A new array of the stack in time order, oldest first."""
        split = self._newest + 1
        return np.concatenate((self._ring[split:], self._ring[:split]))


def _check_int(name: str, value: Any, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"AtariEnv: {name} must be an integer >= {minimum}, got {value!r}")


def _check_frame_shape(frame_shape: Any) -> tuple[int, int]:
    """``(height, width)``: two integers from 1 up to ALE's 210x160 screen."""
    try:
        h, w = frame_shape
    except (TypeError, ValueError):
        h = w = None
    if not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v >= 1
               for v in (h, w)) or h > 210 or w > 160:
        raise ValueError("AtariEnv: frame_shape must be (height, width), integers from 1 up "
                         f"to the 210x160 screen, got {frame_shape!r}")
    return int(h), int(w)


def _rom_id(game: str) -> str:
    """The ``ale_py.roms`` id of ``game`` (``"SpaceInvaders"`` -> ``"space_invaders"``)."""
    if not isinstance(game, str):
        raise TypeError(f"AtariEnv: game must be a string, got {game!r}")
    rom_id = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", game).lower()
    known = roms.get_all_rom_ids()
    if rom_id not in known:
        close = difflib.get_close_matches(rom_id, known, n=5, cutoff=0.6)
        hint = f"close matches: {close}" if close else f"known games: {sorted(known)}"
        raise ValueError(f"AtariEnv: unknown game {game!r}; {hint}")
    path = roms.get_rom_path(rom_id)
    # ALE ends the whole process (exit(1)) when asked to load a ROM it cannot play.
    if path is None or ALEInterface.isSupportedROM(path) is None:
        raise ValueError(
            f"AtariEnv: this ale-py version cannot play game {game!r} (unsupported ROM)"
        )
    return rom_id
