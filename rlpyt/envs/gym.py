"""Gymnasium envs as rlpyt envs.

``make("CartPole-v1")`` (or ``make(id="CartPole-v1", **gym_kwargs)``) is the
``EnvCls`` to give samplers.  It returns a ``GymEnvWrapper``, which

* converts observations with ``GymSpaceWrapper`` (float64 -> float32, ``Dict`` ->
  namedtuple) and reverts numpy actions to the Gymnasium form (a numpy scalar of a
  ``Discrete`` space's dtype, as ``Discrete.sample()`` gives, goes through as it is);
* clips actions of a float ``Box`` space to its bounds before ``env.step``
  (``clip_actions=True``): a Gaussian policy's samples fall outside the bounds, and
  envs such as MuJoCo's apply the clipped control but charge their control cost on
  the action they were given.  Samplers keep the unclipped action, whose
  log-probability the policy gradient needs;
* reports ``done = terminated or truncated`` and ``env_info.timeout = truncated and
  not terminated``: a step that both ends the task and hits the time limit is a real
  termination, so algorithms must not bootstrap through it;
* turns the ``info`` dict into a namedtuple with a fixed schema (see ``InfoSchema``)
  so that samplers can preallocate ``env_info`` buffers.

The env_info schema
-------------------
The fields are fixed once, then never change:

1. from ``info_example`` if given, else
2. at the first ``step()``, from the keys of the info returned by the latest
   ``reset()`` followed by the keys of that first step's info (reset keys first,
   each key once, in order of appearance); a key present in both takes its example
   value from the reset info.

Then a final field ``timeout`` is added (an info key that is itself named
``timeout`` is replaced by it).  Keys become valid field names with
``to_field_names`` (``"TimeLimit.truncated"`` -> ``TimeLimit_truncated``).  Values
must be numeric: bools, ints, floats or numeric numpy arrays; a nested dict becomes
a nested namedtuple with its own schema.  Non-numeric values (strings, ``None``,
objects) are dropped with one warning naming them.  A key of the schema missing
from a later info dict (or ``None`` there) gets its null value: zeros of the
example's dtype and shape.  A key first seen after the schema was fixed is dropped
with one warning per key; pass ``info_example`` to keep keys that appear only
sometimes (for example only at the end of an episode).
"""

from __future__ import annotations

import difflib
import warnings
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import error as gym_error

from rlpyt.envs.base import Env, EnvStep
from rlpyt.spaces.gym_wrapper import GymSpaceWrapper, to_field_names
from rlpyt.utils.collections import NamedTupleSchema

__all__ = ["EnvInfoWrapper", "GymEnvWrapper", "InfoSchema", "info_to_nt", "make"]

_MISSING = object()


def info_to_nt(value: Any, name: str = "info") -> Any:
    """Convert a (nested) info dict into (nested) namedtuples, once, keeping all values.

    Keys become valid field names with ``to_field_names``; non-dict values are
    returned unchanged.  Unlike ``GymEnvWrapper`` this fixes no schema: two dicts with
    different keys give namedtuples with different fields.
    """
    if not isinstance(value, dict):
        return value
    fields = to_field_names(value.keys())
    schema = NamedTupleSchema(name, fields)
    return schema(*(info_to_nt(v, f"{name}_{f}") for f, v in zip(fields, value.values())))


def _null_like(value: Any) -> np.ndarray | None:
    """Zeros shaped and typed like a numeric value, or ``None`` if it is not numeric."""
    if value is None or isinstance(value, (str, bytes)):
        return None
    try:
        array = np.asarray(value)
    except (ValueError, TypeError):  # Ragged sequences and other oddities.
        return None
    if array.dtype.kind not in "biuf":
        return None
    return np.zeros_like(array)


class InfoSchema:
    """The fixed fields of an info dict, built from example dicts (see module doc).

    Args:
        examples: info dicts, in priority order (earlier ones give example values).
        name: typename of the namedtuple; nested dicts are named ``<name>_<field>``.
        owner: how warnings name the env.
        reserved: field names filled by the caller (appended after the info fields);
            info keys with these names are ignored.
    """

    def __init__(
        self, examples: list[dict], name: str, owner: str, reserved: tuple[str, ...] = ()
    ) -> None:
        self._owner = owner
        self._known_keys: set = set()
        merged: dict = {}
        for example in examples:
            for key, value in example.items():
                self._known_keys.add(key)
                merged.setdefault(key, []).append(value)
        dropped: list[str] = []
        self._entries: list[tuple[Any, Any, InfoSchema | None]] = []
        fields: list[str] = []
        names = dict(zip(merged, to_field_names(list(merged) + list(reserved))))
        for key, values in merged.items():
            if names[key] in reserved:
                continue
            entry = self._make_entry(key, values, f"{name}_{names[key]}", owner, dropped)
            if entry is not None:
                self._entries.append(entry)
                fields.append(names[key])
        if dropped:
            warnings.warn(
                f"{owner}: env_info drops non-numeric info entries: {', '.join(dropped)}",
                stacklevel=3,
            )
        self._warned: set = set()
        self.fields = tuple(fields) + tuple(reserved)
        self.NamedTupleCls = NamedTupleSchema(name, self.fields)
        self._cls = self.NamedTupleCls.cls  # The class itself: no cache look-up per step.
        self.null = self.NamedTupleCls(*(null for _, null, _ in self._entries),
                                       *(np.zeros((), bool) for _ in reserved))

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        del state["_cls"]  # Made at run time: pickle the schema, rebuild the class.
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._cls = self.NamedTupleCls.cls

    @staticmethod
    def _make_entry(key, values: list, name: str, owner: str, dropped: list):
        dicts = [v for v in values if isinstance(v, dict)]
        if dicts:
            sub = InfoSchema(dicts, name, owner)
            if not sub.fields:
                dropped.append(f"{key!r} (a dict with no numeric entries)")
                return None
            return key, sub.null, sub
        null = _null_like(values[0])
        if null is None:
            dropped.append(f"{key!r} ({type(values[0]).__name__})")
            return None
        return key, null, None

    def values(self, info: dict) -> list:
        """The schema's values from ``info``, nulls where missing (reserved ones excluded)."""
        values = []
        for key, null, sub in self._entries:
            value = info.get(key, _MISSING)
            if sub is not None:
                value = sub(value) if isinstance(value, dict) else null
            elif value is _MISSING or value is None:
                value = null
            values.append(value)
        if not self._known_keys.issuperset(info):
            self._warn_new_keys(info)
        return values

    def __call__(self, info: dict) -> tuple:
        return self._cls(*self.values(info))

    def make(self, info: dict, *reserved: Any) -> tuple:
        """The namedtuple of ``info``'s values followed by the ``reserved`` fields' values."""
        if not info and not self._entries:  # Info-less envs (CartPole): nothing to look up.
            return self._cls(*reserved)
        return self._cls(*self.values(info), *reserved)

    def _warn_new_keys(self, info: dict) -> None:
        new = [k for k in info if k not in self._known_keys and k not in self._warned]
        for key in new:
            self._warned.add(key)
            warnings.warn(
                f"{self._owner}: info key {key!r} first appeared after the env_info schema "
                f"was fixed (fields {self.fields}); it is dropped. Pass info_example= "
                "to make() or GymEnvWrapper to keep keys that appear only sometimes.",
                stacklevel=4,
            )


class GymEnvWrapper(Env):
    """A Gymnasium env as an rlpyt ``Env`` (see the module doc for the details).

    Args:
        env: a Gymnasium env (typically from ``gymnasium.make``).
        act_null_value: null value of the action space (the "previous action" before
            an episode's first step); default 0.
        obs_null_value: null value of the observation space; default 0.
        force_float32: convert float64 Box spaces to float32; default True.
        info_example: a dict whose keys and values fix the env_info schema; default
            ``None`` fixes it from the reset info and the first step's info.
        clip_actions: clip the actions of a float ``Box`` action space to its bounds
            before ``env.step`` (default True, as the PPO reference code does); other
            spaces are unaffected.

    ``seed(seed)`` makes the next ``reset()`` call ``env.reset(seed=seed)`` and seeds
    the action spaces; later resets continue the env's random stream.  ``horizon`` is
    the ``TimeLimit`` of the env (``None`` without one).
    """

    def __init__(
        self,
        env: gym.Env,
        act_null_value: Any = 0,
        obs_null_value: Any = 0,
        force_float32: bool = True,
        info_example: dict | None = None,
        clip_actions: bool = True,
    ) -> None:
        self.env = env
        self._action_space = GymSpaceWrapper(
            env.action_space, null_value=act_null_value, name="act", force_float32=force_float32
        )
        self._observation_space = GymSpaceWrapper(
            env.observation_space, null_value=obs_null_value, name="obs",
            force_float32=force_float32,
        )
        self._horizon = _time_limit(env)
        self._revert_action = self._action_space.revert
        space = env.action_space
        if isinstance(space, gym.spaces.Discrete) and int(space.start) == 0:
            self._discrete_type = space.dtype.type
            self._revert_action = self._revert_discrete
        elif clip_actions and _is_bounded_float_box(space):
            self._action_low, self._action_high = space.low, space.high
            self._revert_action = self._revert_clipped
        self._pending_seed: int | None = None
        self._reset_info: dict = {}
        self._info_schema: InfoSchema | None = None
        if info_example is not None:
            if not isinstance(info_example, dict):
                raise TypeError(
                    f"GymEnvWrapper: info_example must be a dict, got {info_example!r}"
                )
            self._info_schema = self._make_info_schema([info_example])

    def _make_info_schema(self, examples: list[dict]) -> InfoSchema:
        return InfoSchema(examples, "EnvInfo", owner=repr(self), reserved=("timeout",))

    def _revert_discrete(self, action: Any) -> Any:
        """``revert`` for a ``Discrete`` space starting at 0, with a short cut.

        A numpy scalar of the space's dtype (what sampler buffers hold) is already a
        valid Gymnasium action, the type ``Discrete.sample()`` returns, so it is passed
        as it is; anything else is reverted to an ``int``.
        """
        if type(action) is self._discrete_type:
            return action
        return self._action_space.revert(action)

    def _revert_clipped(self, action: Any) -> np.ndarray:
        """``revert`` for a float ``Box`` space, clipped to the space's bounds."""
        return np.clip(self._action_space.revert(action), self._action_low, self._action_high)

    def step(self, action: Any) -> EnvStep:
        obs, reward, terminated, truncated, info = self.env.step(self._revert_action(action))
        schema = self._info_schema
        if schema is None:
            schema = self._info_schema = self._make_info_schema([self._reset_info, info])
            self._reset_info = {}
        env_info = schema.make(info, bool(truncated) and not terminated)  # timeout
        done = bool(terminated or truncated)
        return EnvStep(self._observation_space.convert(obs), reward, done, env_info)

    def reset(self) -> Any:
        if self._pending_seed is None:
            obs, info = self.env.reset()
        else:
            obs, info = self.env.reset(seed=self._pending_seed)
            self._pending_seed = None
        if self._info_schema is None:
            self._reset_info = info
        return self._observation_space.convert(obs)

    def seed(self, seed: int | None) -> None:
        """Seed the next reset (``env.reset(seed=seed)``) and the action spaces."""
        self._pending_seed = None if seed is None else int(seed)
        self.env.action_space.seed(seed)
        self._action_space.seed(seed)
        self._observation_space.seed(seed)

    @property
    def horizon(self) -> int | None:
        return self._horizon

    def render(self) -> Any:
        return self.env.render()

    def close(self) -> None:
        self.env.close()

    def __repr__(self) -> str:
        spec = getattr(self.env, "spec", None)
        return f"GymEnvWrapper({spec.id if spec is not None else type(self.env.unwrapped).__name__})"


class EnvInfoWrapper(gym.Wrapper):
    """A Gymnasium wrapper that fills info keys missing from a step's or reset's info.

    Args:
        env: the Gymnasium env.
        info_example: dict of every key the info may hold, with example values; a
            missing key gets zeros of its example's dtype and shape (nested dicts are
            filled recursively).  Non-numeric example values are filled as given.

    ``GymEnvWrapper`` fixes its own schema, so this wrapper is only needed by code
    that reads Gymnasium infos directly and wants the same keys every step.
    """

    def __init__(self, env: gym.Env, info_example: dict) -> None:
        super().__init__(env)
        if not isinstance(info_example, dict):
            raise TypeError(f"EnvInfoWrapper: info_example must be a dict, got {info_example!r}")
        self._fill = _fill_values(info_example)

    def step(self, action: Any):
        obs, reward, terminated, truncated, info = self.env.step(action)
        return obs, reward, terminated, truncated, _infill(info, self._fill)

    def reset(self, **kwargs: Any):
        obs, info = self.env.reset(**kwargs)
        return obs, _infill(info, self._fill)


def _fill_values(example: dict) -> dict:
    fill = {}
    for key, value in example.items():
        if isinstance(value, dict):
            fill[key] = _fill_values(value)
        else:
            null = _null_like(value)
            fill[key] = value if null is None else null
    return fill


def _infill(info: dict, fill: dict) -> dict:
    info = dict(info)
    for key, value in fill.items():
        if isinstance(value, dict):
            sub = info.get(key)
            info[key] = _infill(sub if isinstance(sub, dict) else {}, value)
        elif key not in info:
            info[key] = value.copy() if isinstance(value, np.ndarray) else value
    return info


def make(
    *args: Any, info_example: dict | None = None, clip_actions: bool = True, **kwargs: Any
) -> Env:
    """``gymnasium.make(*args, **kwargs)`` wrapped in a ``GymEnvWrapper``.

    ``MinAtar/<Game>`` ids make a ``rlpyt.envs.minatar.MinAtarEnv`` instead (``kwargs``
    as its keywords); ``popgym-*`` ids go through ``rlpyt.envs.popgym.make`` (one-hot
    index observations).

    Args:
        *args, **kwargs: passed to ``gymnasium.make`` (``make("CartPole-v1")`` or
            ``make(id="Pendulum-v1", g=9.81)``).
        info_example: fixes the env_info schema (see the module doc).
        clip_actions: clip float ``Box`` actions to the space's bounds (default True; see
            ``GymEnvWrapper``).

    An unknown id raises ``ValueError`` listing the closest registered ids.
    """
    env_id = args[0] if args else kwargs.get("id")
    if isinstance(env_id, str) and env_id.startswith("MinAtar/"):
        from rlpyt.envs.minatar import make as make_minatar

        if info_example is not None:
            raise ValueError("make: info_example is not supported for MinAtar ids (their "
                             "env_info is fixed: EnvInfo(timeout))")
        return make_minatar(*args, **kwargs)
    if isinstance(env_id, str) and env_id.startswith("popgym-"):
        from rlpyt.envs.popgym import make as make_popgym

        return make_popgym(*args, info_example=info_example, **kwargs)
    if isinstance(env_id, str) and env_id.startswith("ALE/"):
        register_ale_envs()
    try:
        env = gym.make(*args, **kwargs)
    except (gym_error.UnregisteredEnv, gym_error.DeprecatedEnv) as e:
        raise ValueError(_unknown_id_message(env_id, e)) from e
    return GymEnvWrapper(env, info_example=info_example, clip_actions=clip_actions)


def register_ale_envs(required: bool = True) -> bool:
    """Register Gymnasium's ALE ids (``ALE/Pong-v5``, ``PongNoFrameskip-v4``, ...); False
    (or, when ``required``, an ImportError) without ale-py."""
    try:
        import ale_py
    except ImportError as e:
        if not required:
            return False
        raise ImportError("ALE/ env ids need ale-py: pip install 'rlpyt[atari]'") from e
    gym.register_envs(ale_py)
    return True


def _unknown_id_message(env_id: Any, error: Exception) -> str:
    register_ale_envs(required=False)  # so that their ids are among those suggested
    ids = [str(i) for i in gym.registry.keys()]
    # The same name in another namespace first ("Pong-v5" -> "ALE/Pong-v5").
    close = [i for i in ids if "/" in i and i.split("/", 1)[1].lower() == str(env_id).lower()]
    close += [i for i in difflib.get_close_matches(str(env_id), ids, n=5, cutoff=0.6)
              if i not in close]
    if not close:  # Fall back to a case-insensitive comparison.
        lower = {i.lower(): i for i in ids}
        close += [lower[m] for m in difflib.get_close_matches(str(env_id).lower(), lower, n=5)
                  if lower[m] not in close]
    hint = f"closest registered ids: {close[:5]}" if close else "no similar registered id"
    return f"make: unknown Gymnasium env id {env_id!r} ({error}); {hint}"


def _is_bounded_float_box(space: gym.Space) -> bool:
    """A ``Box`` of floats with at least one finite bound (clipping can change an action)."""
    return (isinstance(space, gym.spaces.Box) and np.issubdtype(space.dtype, np.floating)
            and bool(np.isfinite(space.low).any() or np.isfinite(space.high).any()))


def _time_limit(env: gym.Env) -> int | None:
    """``max_episode_steps`` of the env's TimeLimit (spec or wrapper), else ``None``."""
    spec = getattr(env, "spec", None)
    if spec is not None and spec.max_episode_steps is not None:
        return int(spec.max_episode_steps)
    while env is not None:
        if isinstance(env, gym.wrappers.TimeLimit):
            return int(env._max_episode_steps)
        env = getattr(env, "env", None)
    return None
