"""Vectorised env backends (one call steps a whole batch) behind one adapter.

``VecEnvAdapter`` wraps any Gymnasium ``VectorEnv``: Gymnasium's own
``SyncVectorEnv``/``AsyncVectorEnv``, ale-py's native ``AtariVectorEnv`` (C++ threads)
and EnvPool's Gymnasium interface.  The samplers recognise an ``EnvCls`` whose class
attribute ``vectorized`` is True: each worker then builds one adapter with
``num_envs`` equal to its share of ``batch_B`` and steps its batch in one call.

Constructors: ``GymVecEnv`` (a registered Gymnasium id), ``AleVecEnv`` (ale-py),
``EnvPoolVecEnv`` (EnvPool, when installed) and ``EnvPoolAtariEnv`` (an Atari game
on EnvPool with ``AtariEnv``'s keywords and samples).  Usage::

    GpuSampler(EnvCls=AleVecEnv, env_kwargs=dict(game="pong"), batch_T=5, batch_B=16)

Semantics match rlpyt's reset collectors: a sub-env whose episode ends is reset
inside the same ``step`` call (the backend's ``SAME_STEP`` autoreset, or an explicit
masked reset for backends with autoreset disabled).  ``step`` returns the reset
observation in ``observation`` and the episode's last observation in
``final_observation`` (for bootstrapping through time limits).  ``env_info`` is a
namedtuple of ``[num_envs]`` arrays whose fields are fixed by the first step's info
(numeric entries only) plus ``timeout`` (truncated and not terminated).
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from rlpyt.envs.base import EnvSpaces, EnvStep
from rlpyt.spaces.gym_wrapper import GymSpaceWrapper, to_field_names
from rlpyt.utils.collections import NamedTupleSchema, namedtuple

__all__ = [
    "AleVecEnv",
    "EnvPoolAtariEnv",
    "EnvPoolVecEnv",
    "GymVecEnv",
    "SingleEnvView",
    "VecEnvAdapter",
    "VecEnvStep",
]

VecEnvStep = namedtuple(
    "VecEnvStep", ["observation", "reward", "done", "env_info", "final_observation"],
    module=__name__,
)

_SKIPPED_INFO_KEYS = ("final_obs", "final_info", "final_observation", "env_id")


class VecEnvAdapter:
    """A Gymnasium ``VectorEnv`` as a batch of rlpyt envs.

    Args:
        vector_env: the backend, with autoreset mode ``SAME_STEP`` or ``DISABLED``
            (``NEXT_STEP`` would feed the agent a stale observation for a step).
        act_null_value: null value of the single-env action space; default 0.
        obs_null_value: null value of the single-env observation space; default 0.
        force_float32: float64 observations become float32; default True.

    Attributes: ``num_envs``; ``spaces``/``observation_space``/``action_space`` of
    *one* env (rlpyt spaces via ``GymSpaceWrapper``); ``horizon``.
    """

    vectorized = True

    def __init__(self, vector_env, act_null_value: Any = 0, obs_null_value: Any = 0,
                 force_float32: bool = True):
        self.vector_env = vector_env
        self.num_envs = int(vector_env.num_envs)
        self._mode = _autoreset_mode(vector_env)
        self._action_space = GymSpaceWrapper(vector_env.single_action_space,
                                             null_value=act_null_value, name="act")
        self._observation_space = GymSpaceWrapper(
            vector_env.single_observation_space, null_value=obs_null_value, name="obs",
            force_float32=force_float32)
        if self._observation_space.space.__class__.__name__ == "Composite":
            raise TypeError(f"VecEnvAdapter: Dict/Tuple observation spaces are not supported "
                            f"(got {vector_env.single_observation_space!r})")
        self._obs_dtype = self._observation_space.space.dtype
        self._act_dtype = getattr(vector_env.single_action_space, "dtype", None)
        self._pending_seeds = None
        self._info_fields = None
        self._info_keys = ()
        self._timeout = np.zeros(self.num_envs, dtype=bool)

    # ---- spaces -----------------------------------------------------------------------
    @property
    def action_space(self):
        return self._action_space

    @property
    def observation_space(self):
        return self._observation_space

    @property
    def spaces(self) -> EnvSpaces:
        return EnvSpaces(observation=self._observation_space, action=self._action_space)

    @property
    def horizon(self) -> int | None:
        spec = getattr(self.vector_env, "spec", None)
        steps = getattr(spec, "max_episode_steps", None)
        return None if steps is None else int(steps)

    # ---- stepping ---------------------------------------------------------------------
    def seed(self, seeds) -> None:
        """Seeds for the next ``reset()``: one per sub-env (a list), or one int."""
        if isinstance(seeds, (int, np.integer)):
            seeds = [int(seeds) + i for i in range(self.num_envs)]
        seeds = [int(s) for s in seeds]
        if len(seeds) != self.num_envs:
            raise ValueError(f"VecEnvAdapter.seed: got {len(seeds)} seeds for "
                             f"num_envs={self.num_envs}")
        self._pending_seeds = seeds
        self._action_space.seed(seeds[0])

    def reset(self) -> np.ndarray:
        """Reset every sub-env; returns observations ``[num_envs, ...]``."""
        if self._pending_seeds is None:
            obs, _ = self.vector_env.reset()
        else:
            obs, _ = self.vector_env.reset(seed=self._seed_arg(self._pending_seeds))
            self._pending_seeds = None
        return self._obs(obs)

    def step(self, actions) -> VecEnvStep:
        """Step every sub-env once; finished sub-envs are reset in the same call."""
        actions = np.asarray(actions)
        if actions.ndim == 0 or actions.shape[0] != self.num_envs:
            # A C++ backend (EnvPool) reads num_envs actions from whatever it is given.
            raise ValueError(
                f"{type(self).__name__}.step: actions of shape {list(actions.shape)} for "
                f"num_envs={self.num_envs}; expected one per sub-env, [num_envs, ...] (a "
                f"sampler steps a vectorised env only through CpuVecResetCollector or a "
                f"SingleEnvView)")
        if self._act_dtype is not None and actions.dtype != self._act_dtype:
            actions = actions.astype(self._act_dtype)
        obs, reward, terminated, truncated, info = self.vector_env.step(actions)
        done = np.logical_or(terminated, truncated)
        np.logical_and(truncated, np.logical_not(terminated), out=self._timeout)
        obs = self._obs(obs)
        final = None
        if done.any():
            obs, final = self._finish_episodes(obs, done, info)
        env_info = self._env_info(info)
        return VecEnvStep(obs, np.asarray(reward, dtype=np.float32), done, env_info, final)

    def _finish_episodes(self, obs, done, info):
        if self._mode == "disabled":
            final = obs.copy()
            reset_obs, _ = self.vector_env.reset(options={"reset_mask": done})
            obs = np.array(obs)
            obs[done] = self._obs(reset_obs)[done]
            return obs, final
        final_obs = info.get("final_obs", info.get("final_observation"))
        if final_obs is None:
            raise RuntimeError(
                f"{type(self.vector_env).__name__} reported episode ends without "
                "info['final_obs']; construct it with autoreset_mode=SAME_STEP")
        if final_obs.dtype == object:  # Gymnasium: one entry per env, None where not done.
            final = obs.copy()
            for b in np.flatnonzero(done):
                final[b] = final_obs[b]
            return obs, final
        return obs, self._obs(final_obs)

    def _env_info(self, info: dict):
        if self._info_fields is None:
            self._info_keys = tuple(k for k, v in info.items() if _is_batch_array(v, self.num_envs)
                                    and not k.startswith("_") and k not in _SKIPPED_INFO_KEYS)
            names = to_field_names(list(self._info_keys) + ["timeout"])
            self._info_fields = NamedTupleSchema("EnvInfo", names)
            self._info_null = [np.zeros_like(np.asarray(info[k])) for k in self._info_keys]
        values = [np.asarray(info[k]) if k in info else null
                  for k, null in zip(self._info_keys, self._info_null)]
        return self._info_fields(*values, self._timeout)

    def _obs(self, obs) -> np.ndarray:
        obs = np.asarray(obs)
        return obs if obs.dtype == self._obs_dtype else obs.astype(self._obs_dtype)

    def _seed_arg(self, seeds):
        # ale-py wants an array of seeds; Gymnasium accepts a list.
        if type(self.vector_env).__module__.startswith("ale_py"):
            return np.asarray(seeds, dtype=np.int64) % 2**31
        return seeds

    def close(self) -> None:
        self.vector_env.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({type(self.vector_env).__name__}, num_envs={self.num_envs})"


def _is_batch_array(value, n: int) -> bool:
    if not isinstance(value, np.ndarray) or value.dtype.kind not in "biuf":
        return False
    return value.ndim >= 1 and value.shape[0] == n


def _autoreset_mode(vector_env) -> str:
    mode = getattr(vector_env, "autoreset_mode", None)
    if mode is None:
        mode = getattr(vector_env, "metadata", {}).get("autoreset_mode")
    name = str(getattr(mode, "value", mode)).lower().replace("_", "")
    if name in ("samestep", "disabled"):
        return "disabled" if name == "disabled" else "same_step"
    raise ValueError(
        f"VecEnvAdapter: {type(vector_env).__name__} has autoreset mode {mode!r}; "
        "construct it with autoreset_mode=SAME_STEP (or DISABLED) so finished "
        "sub-envs are reset in the step that ends them")


class GymVecEnv(VecEnvAdapter):
    """Gymnasium's ``make_vec`` behind ``VecEnvAdapter``.

    Args:
        id: registered env id (e.g. ``"CartPole-v1"``).
        num_envs: sub-envs (the sampler sets this to each worker's share). Default 1.
        vectorization_mode: ``"sync"`` (one process) or ``"async"`` (a subprocess per
            sub-env). Default ``"sync"``.
        wrappers: Gymnasium wrappers applied to each sub-env. Default None.
        **kwargs: passed to ``gymnasium.make`` for each sub-env.
    """

    def __init__(self, id: str, num_envs: int = 1, vectorization_mode: str = "sync",
                 wrappers=None, **kwargs):
        import gymnasium as gym
        from gymnasium.vector import AutoresetMode

        if isinstance(id, str) and id.startswith("ALE/"):
            import ale_py

            gym.register_envs(ale_py)
        vector_env = gym.make_vec(
            id, num_envs=num_envs, vectorization_mode=vectorization_mode,
            vector_kwargs=dict(autoreset_mode=AutoresetMode.SAME_STEP), wrappers=wrappers,
            **kwargs)
        super().__init__(vector_env)


class AleVecEnv(VecEnvAdapter):
    """ale-py's native ``AtariVectorEnv`` (C++ emulators and preprocessing, threaded).

    Args:
        game: ROM name (``"pong"``). Default ``"pong"``.
        num_envs: sub-envs (the sampler sets this). Default 1.
        num_threads: emulator threads (0: one per sub-env, up to the CPU count);
            inside a sampler worker 1 keeps each worker on its own core. Default 1.
        **kwargs: other ``AtariVectorEnv`` keywords (``frameskip=4``, ``stack_num=4``,
            ``img_height=84``, ``img_width=84``, ``noop_max=30``, ``episodic_life``, ...).
    """

    def __init__(self, game: str = "pong", num_envs: int = 1, num_threads: int = 1, **kwargs):
        from ale_py.vector_env import AtariVectorEnv

        vector_env = AtariVectorEnv(game, num_envs, num_threads=num_threads,
                                    autoreset_mode="SameStep", **kwargs)
        super().__init__(vector_env)


class EnvPoolVecEnv(VecEnvAdapter):
    """EnvPool's Gymnasium interface (``pip install envpool``; in the ``dev`` extra).

    Args:
        task_id: EnvPool task (``"Pong-v5"``, ``"CartPole-v1"``).
        num_envs: sub-envs (the sampler sets this). Default 1.
        num_threads: EnvPool's C++ threads; inside a sampler worker 1 keeps each
            worker on its own core (0: EnvPool's own choice). Default 1.
        **kwargs: other ``envpool.make_gymnasium`` keywords (``max_episode_steps``,
            ``img_height``, ...); not ``env_seed``/``seed``, which ``seed()`` sets.

    EnvPool resets a finished sub-env on the *next* step; this adapter takes that step
    at once for the finished sub-envs only, so samples follow rlpyt's reset semantics
    (and an Atari game goes on after a life loss with ``episodic_life``).  EnvPool
    reads its seeds only when a pool is built, so ``seed()`` rebuilds the pool with
    one seed per sub-env (EnvPool's ``env_seed``) at the next ``reset()``.
    """

    def __init__(self, task_id: str, num_envs: int = 1, num_threads: int = 1, **kwargs):
        try:
            import envpool
        except ImportError as e:
            raise ImportError("EnvPoolVecEnv needs EnvPool: pip install envpool") from e
        for key in ("env_seed", "seed", "num_envs", "batch_size"):
            if key in kwargs:
                raise ValueError(f"EnvPoolVecEnv: {key}={kwargs[key]!r} is not accepted; "
                                 "seeds come from seed() and num_envs from the sampler")
        if isinstance(num_threads, bool) or not isinstance(num_threads, (int, np.integer)) \
                or num_threads < 0:
            raise ValueError(f"EnvPoolVecEnv: num_threads must be an integer >= 0, "
                             f"got {num_threads!r}")

        def make_pool(env_seed=None):
            extra = {} if env_seed is None else dict(env_seed=list(env_seed))
            return envpool.make_gymnasium(task_id, num_envs=num_envs,
                                          num_threads=int(num_threads), **kwargs, **extra)

        spec = envpool.make_spec(task_id, num_envs=num_envs, **kwargs)
        self._pool = _EnvPoolAsDisabled(make_pool, spec, num_envs)
        super().__init__(self._pool)

    @property
    def pool(self):
        """The EnvPool object in use (built at the first ``reset()``, a new one after
        each seeded ``reset()``; None before)."""
        return self._pool.pool


class _EnvPoolAsDisabled:
    """EnvPool seen as a Gymnasium vector env with autoreset disabled (masked resets).

    The pool (threads, emulators) is built at the first ``reset()``, with that reset's
    seeds, not at construction: building one takes seconds on a loaded machine.
    """

    autoreset_mode = "disabled"

    def __init__(self, make_pool, spec, num_envs: int):
        self._make_pool = make_pool
        self.pool = None
        self.num_envs = int(num_envs)
        self.single_observation_space = spec.gymnasium_observation_space
        self.single_action_space = spec.gymnasium_action_space
        self.spec = None

    def reset(self, seed=None, options=None):
        mask = None if options is None else options.get("reset_mask")
        if mask is None:
            if seed is not None or self.pool is None:  # EnvPool takes seeds at build.
                self.close()
                env_seed = None if seed is None else [int(s) % 2**31 for s in seed]
                self.pool = self._make_pool(env_seed=env_seed)
            return self.pool.reset()
        # One step of the finished sub-envs only: EnvPool resets a finished env on its
        # next step (ignoring the action), and that is the reset that keeps a game
        # going after a life loss; an explicit reset(env_id) would restart the game.
        ids = np.flatnonzero(mask).astype(np.int32)
        null = np.zeros((len(ids), *self.single_action_space.shape),
                        dtype=self.single_action_space.dtype)
        obs, _, _, _, info = self.pool.step(null, ids)
        full = np.zeros((self.num_envs, *obs.shape[1:]), dtype=obs.dtype)
        full[np.asarray(info["env_id"])] = obs
        return full, info

    def step(self, actions):
        return self.pool.step(actions)

    def close(self):
        close = getattr(self.pool, "close", None)
        if close is not None:
            close()
        self.pool = None


class EnvPoolAtariEnv(EnvPoolVecEnv):
    """An Atari game on EnvPool, configured like ``rlpyt.envs.atari.AtariEnv``.

    The keywords, their defaults and the sample semantics are ``AtariEnv``'s:
    observations ``[num_img_obs, 104, 80]`` uint8 with the older frames zero after
    every reset, actions in the game's minimal action set, ``done`` at each life loss
    when ``episodic_lives`` (the game goes on), ``env_info`` =
    ``(game_score, traj_done, timeout)`` and a ``horizon`` in agent steps per game.
    EnvPool does the emulation and preprocessing in C++ (its own resize: the pixels
    are not ``AtariEnv``'s nearest-neighbour ones).

    Args:
        game: ROM name (``"pong"``, ``"space_invaders"`` or ``"SpaceInvaders"``).
            Default ``"pong"``.
        num_envs: sub-envs (the sampler sets this). Default 1.
        num_threads: EnvPool threads (see ``EnvPoolVecEnv``). Default 1.
        frame_skip, num_img_obs, clip_reward, episodic_lives, fire_on_reset,
        max_start_noops, repeat_action_probability, horizon: as in ``AtariEnv``
            (defaults 4, 4, True, True, False, 30, 0.0, 27000).
    """

    def __init__(self, game: str = "pong", num_envs: int = 1, num_threads: int = 1,
                 frame_skip: int = 4, num_img_obs: int = 4, clip_reward: bool = True,
                 episodic_lives: bool = True, fire_on_reset: bool = False,
                 max_start_noops: int = 30, repeat_action_probability: float = 0.0,
                 horizon: int | None = 27000):
        if not isinstance(game, str):
            raise TypeError(f"EnvPoolAtariEnv: game must be a string, got {game!r}")
        if horizon is not None and (isinstance(horizon, bool) or horizon < 1):
            raise ValueError(f"EnvPoolAtariEnv: horizon must be an integer >= 1 or None, "
                             f"got {horizon!r}")
        words = re.split(r"[_\s]+", re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", game))
        task_id = "".join(w[:1].upper() + w[1:].lower() for w in words if w) + "-v5"
        super().__init__(
            task_id, num_envs=num_envs, num_threads=num_threads, frame_skip=frame_skip,
            stack_num=num_img_obs, reward_clip=clip_reward, episodic_life=episodic_lives,
            use_fire_reset=fire_on_reset, noop_max=max_start_noops,
            repeat_action_probability=repeat_action_probability,
            # EnvPool needs a step limit; 2**30 agent steps is none in practice.
            max_episode_steps=2**30 if horizon is None else int(horizon),
            img_height=104, img_width=80, gray_scale=True)
        self._horizon_steps = horizon
        self._traj_done = np.zeros(self.num_envs, dtype=bool)

    @property
    def horizon(self) -> int | None:
        return self._horizon_steps

    def _finish_episodes(self, obs, done, info):
        obs, final = super()._finish_episodes(obs, done, info)
        obs[done, :-1] = 0  # AtariEnv: the older frames are zeros after every reset.
        return obs, final

    def reset(self) -> np.ndarray:
        obs = np.array(super().reset())
        obs[:, :-1] = 0
        return obs

    def _env_info(self, info: dict):
        # EnvPool's info["terminated"] is game over; terminated itself may be a life loss.
        np.logical_or(np.asarray(info["terminated"], dtype=bool), self._timeout,
                      out=self._traj_done)
        return AtariVecInfo(np.asarray(info["reward"], dtype=np.float32),
                            self._traj_done.copy(), self._timeout.copy())


AtariVecInfo = namedtuple("AtariVecInfo", ["game_score", "traj_done", "timeout"],
                          module=__name__)


class SingleEnvView:
    """A ``num_envs=1`` vectorised env seen as one rlpyt ``Env`` (example and eval envs)."""

    def __init__(self, vec_env: VecEnvAdapter):
        if vec_env.num_envs != 1:
            raise ValueError(f"SingleEnvView needs num_envs=1, got {vec_env.num_envs}")
        self.vec_env = vec_env
        self._next_obs = None

    @property
    def action_space(self):
        return self.vec_env.action_space

    @property
    def observation_space(self):
        return self.vec_env.observation_space

    @property
    def spaces(self) -> EnvSpaces:
        return self.vec_env.spaces

    @property
    def horizon(self):
        return self.vec_env.horizon

    def seed(self, seed) -> None:
        self.vec_env.seed([seed])

    def reset(self):
        """The reset observation (already reset by the vectorised env after a ``done``)."""
        if self._next_obs is not None:
            obs, self._next_obs = self._next_obs, None
            return obs
        return self.vec_env.reset()[0]

    def step(self, action) -> EnvStep:
        out = self.vec_env.step(np.asarray(action)[None])
        done = bool(out.done[0])
        obs = out.observation[0]
        if done:
            self._next_obs = obs
            obs = out.final_observation[0]
        env_info = type(out.env_info)(*(np.asarray(v)[0] for v in out.env_info))
        return EnvStep(obs, float(out.reward[0]), done, env_info)

    def close(self) -> None:
        self.vec_env.close()
