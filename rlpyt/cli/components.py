"""The classes a ``rlpyt train`` config names, and the components built from them.

A config names its sampler by type (``sampler_type``, with ``runner_type`` picking the
asynchronous twin), its runner by kind (synchronous, asynchronous or SyncRl ranks) and
its agent by the env's action space; each becomes an import path here, imported only
when the run needs it.
"""

from __future__ import annotations

from rlpyt.cli.overrides import ConfigError
from rlpyt.cli.presets import (
    FAMILY_PRESETS,
    Preset,
    env_family,
    env_maker,
    import_path,
    preset_for,
    resolve_classes,
)

__all__ = ["ASYNC_RUNNER", "ASYNC_SAMPLERS", "RUNNER", "SAMPLERS", "SYNC_RUNNER",
           "WITHOUT_EVAL", "agent_class", "build_components", "runner_path", "sampler_path"]

SAMPLERS = {
    "serial": "rlpyt.samplers.serial.sampler:SerialSampler",
    "cpu": "rlpyt.samplers.parallel.cpu.sampler:CpuSampler",
    "gpu": "rlpyt.samplers.parallel.gpu.sampler:GpuSampler",
    "alternating": "rlpyt.samplers.parallel.gpu.alternating_sampler:AlternatingSampler",
    "alternating-no-overlap":
        "rlpyt.samplers.parallel.gpu.alternating_sampler:NoOverlapAlternatingSampler",
    "ray": "rlpyt.samplers.ray_.sampler:RaySampler",
}
RUNNER = "rlpyt.runners.minibatch_rl:MinibatchRlEval"
# --runner async: the sampler type picks the asynchronous twin.
ASYNC_SAMPLERS = {
    "serial": "rlpyt.samplers.async_.serial_sampler:AsyncSerialSampler",
    "cpu": "rlpyt.samplers.async_.cpu_sampler:AsyncCpuSampler",
    "gpu": "rlpyt.samplers.async_.gpu_sampler:AsyncGpuSampler",
    "alternating": "rlpyt.samplers.async_.alternating_sampler:AsyncAlternatingSampler",
    "ray": "rlpyt.samplers.ray_.async_sampler:AsyncRaySampler",
}
ASYNC_RUNNER = "rlpyt.runners.async_rl:AsyncRlEval"
SYNC_RUNNER = "rlpyt.runners.sync_rl:SyncRlEval"  # --nproc N > 1, or under torchrun
# --sampler.eval_n_envs 0: no evaluation; the twin logs the training trajectories' columns.
WITHOUT_EVAL = {RUNNER: "rlpyt.runners.minibatch_rl:MinibatchRl",
                ASYNC_RUNNER: "rlpyt.runners.async_rl:AsyncRl",
                SYNC_RUNNER: "rlpyt.runners.sync_rl:SyncRl"}


def sampler_path(config: dict) -> str:
    """The sampler class of ``config``'s sampler type (its asynchronous twin with
    ``--runner async``)."""
    sampler_type = config.get("sampler_type", "serial")
    return (ASYNC_SAMPLERS if config.get("runner_type") == "async" else SAMPLERS)[sampler_type]


def runner_path(config: dict, distributed: bool = False) -> str:
    """The runner class: synchronous, asynchronous or SyncRl ranks, each with evaluation
    unless the sampler has no evaluation envs (``--sampler.eval_n_envs 0``)."""
    if distributed:
        path = SYNC_RUNNER
    else:
        path = ASYNC_RUNNER if config.get("runner_type") == "async" else RUNNER
    return WITHOUT_EVAL[path] if config["sampler"].get("eval_n_envs", 0) == 0 else path


def _env_spaces(env_id: str, env_kwargs: dict) -> tuple[str, str, tuple]:
    """``("discrete" or "continuous", the action space in words, the observation shape)``
    of the env, built once as the run will build it."""
    from rlpyt.spaces.int_box import IntBox

    env = import_path(env_maker(env_id))(id=env_id, **env_kwargs)
    try:
        space = getattr(env.action_space, "space", env.action_space)
        kind = "discrete" if isinstance(space, IntBox) else "continuous"
        return kind, repr(space), tuple(getattr(env.observation_space, "shape", None) or ())
    finally:
        env.close()


def agent_class(config: dict, preset: Preset) -> str:
    """The preset's agent for the env's action space; a ``ConfigError`` naming the
    algorithm, the space and the algorithms that fit it when there is none, or when the
    env's observations are images and the preset's model is a vector MLP."""
    env = dict(config["env"])
    env_id = env.pop("id")
    kind, space, obs_shape = _env_spaces(env_id, env)
    family = env_family(env_id)
    if len(obs_shape) >= 2 and family == "classic":
        raise ConfigError(f"{env_id} has image observations (shape {obs_shape}), and the "
                          f"{config['algo_name']} preset for it builds an MLP of vectors; "
                          f"image presets exist for Atari ids (e.g. ALE/Pong-v5, "
                          f"PongNoFrameskip-v4) and MinAtar ids (MinAtar/Breakout); for "
                          f"other image envs write a launch script with a conv model "
                          f"(docs/own_script.md)")
    if kind in preset.agents:
        return preset.agents[kind]
    fits = sorted(name for name, p in FAMILY_PRESETS[family].items() if kind in p.agents)
    algo = config["algo_name"]
    raise ConfigError(f"--algo {algo} ({import_path(preset.algo).__name__}) does not fit "
                      f"{env_id}: its action space is {kind} ({space}), and {algo} takes "
                      f"only {' or '.join(sorted(preset.agents))} actions; algorithms for "
                      f"{kind} actions: {', '.join(fits) or 'none'}")


def build_components(config: dict) -> tuple:
    """``(sampler, agent, algo)`` built from a ``rlpyt train`` config."""
    env_id = config["env"]["id"]
    preset = preset_for(config["algo_name"], env_id)
    SamplerCls = import_path(sampler_path(config))
    sampler_kwargs = dict(config["sampler"])
    if env_family(env_id) == "atari":  # whole games' unclipped scores in the logs
        from rlpyt.envs.atari.atari_env import AtariTrajInfo

        sampler_kwargs.setdefault("TrajInfoCls", AtariTrajInfo)
    sampler = SamplerCls(EnvCls=import_path(env_maker(env_id)),
                         env_kwargs=dict(config["env"]), **sampler_kwargs)
    try:
        agent_kwargs = resolve_classes(config["agent"], "agent")
        algo_kwargs = resolve_classes(config["algo"], "algo")
    except ValueError as e:
        raise ConfigError(str(e)) from None
    agent = import_path(config["agent_class"])(**agent_kwargs)
    algo = import_path(preset.algo)(**algo_kwargs)
    return sampler, agent, algo
