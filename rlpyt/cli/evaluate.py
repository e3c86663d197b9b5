"""``rlpyt evaluate``: score a saved agent, optionally recording a video.

``evaluate_run(path, episodes=10)`` rebuilds the env and agent of a run made by
``rlpyt train`` from its ``params.json``, loads the weights and runs ``episodes``
episodes with the agent in evaluation mode (the mode the run's own evaluations use).
``path`` is a run directory (weights from its latest checkpoint, else its
``params.pkl`` snapshot), a checkpoint directory, or a snapshot file
(``params.pkl`` / ``itr_<N>.pkl``) inside a run directory.

A run made by a launch script (no ``rlpyt train`` config) is rebuilt from what its
snapshots and checkpoints record: the agent class and keywords and the env maker and
keywords.  Where that cannot be imported (a class defined in the script itself), or
a snapshot does not record it, ``agent``/``env`` (``--agent MODULE:CLASS``,
``--agent-kwargs JSON``, ``--env ID``) say what to build.

The evaluation env is seeded like the run's first evaluation env (same ``seed``:
the run's, unless ``--seed`` is given), and torch, numpy and python are seeded with
it, so the same command gives the same numbers.
"""

from __future__ import annotations

import math
import os

import numpy as np

from rlpyt.cli.config import load_run_config
from rlpyt.cli.overrides import ConfigError
from rlpyt.cli.presets import env_maker, import_path

__all__ = ["add_evaluate_parser", "evaluate_run", "run_evaluate"]


def add_evaluate_parser(subparsers):
    import argparse

    p = subparsers.add_parser(
        "evaluate",
        help="score a saved agent (and record a video)",
        description="Rebuild a run's env and agent from its params.json, load saved weights, "
        "and report the mean, std and lengths of evaluation episodes.",
    )
    p.add_argument("path", metavar="RUN_DIR_OR_SNAPSHOT")
    p.add_argument("--episodes", type=int, default=10, help="episodes to run (default 10)")
    p.add_argument("--seed", type=int, default=None, help="seed (default: the run's)")
    p.add_argument("--device", default=None,
                   help="torch device for the agent, e.g. cpu or cuda:0 (default cpu)")
    p.add_argument("--video", default=None, metavar="OUT.mp4",
                   help="write the episodes as a video (needs imageio with ffmpeg)")
    p.add_argument("--fps", type=int, default=30, help="video frames per second (default 30)")
    p.add_argument("--agent", default=None, metavar="MODULE:CLASS",
                   help="agent class of a run made by a script, e.g. "
                        "rlpyt.agents.pg.categorical:CategoricalPgAgent (default: the one "
                        "the run recorded)")
    p.add_argument("--agent-kwargs", default=None, metavar="JSON",
                   help="keywords of --agent as a JSON object (default: none)")
    p.add_argument("--env", default=None, metavar="ENV_ID",
                   help="Gymnasium env id of a run made by a script (default: the env the "
                        "run recorded)")
    p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                   help="show full tracebacks of errors")
    p.set_defaults(handler=run_evaluate)
    return p


def _locate(path: str) -> tuple[str, str]:
    """``(run_dir, weights_path)`` for a run dir, checkpoint dir or snapshot file."""
    from rlpyt.runners.checkpoint_files import STATE_FILE, latest_checkpoint

    path = os.path.abspath(path)
    if os.path.isfile(path):  # a snapshot file in its run dir
        return os.path.dirname(path), path
    if os.path.isfile(os.path.join(path, STATE_FILE)):  # a checkpoint dir
        return os.path.dirname(os.path.dirname(path)), path
    if not os.path.isdir(path):
        raise FileNotFoundError(f"{path!r}: no such run directory or snapshot file")
    latest = latest_checkpoint(path)
    if latest is not None:
        return path, latest
    snapshot = os.path.join(path, "params.pkl")
    if os.path.isfile(snapshot):
        return path, snapshot
    raise FileNotFoundError(f"{path!r} holds no checkpoint and no params.pkl snapshot")


def _agent_state(weights: str) -> dict:
    import torch

    from rlpyt.runners.checkpoint_files import load_checkpoint

    if os.path.isdir(weights):
        return load_checkpoint(weights)["agent"]
    snapshot = torch.load(weights, map_location="cpu", weights_only=False)
    if not isinstance(snapshot, dict) or "agent_state_dict" not in snapshot:
        raise ValueError(f"{weights!r} is not an rlpyt snapshot (no 'agent_state_dict')")
    return snapshot["agent_state_dict"]


_REBUILD_HINT = ("pass --agent MODULE:CLASS (e.g. rlpyt.agents.pg.categorical:"
                 "CategoricalPgAgent), --env ENV_ID and, if the agent took keywords, "
                 "--agent-kwargs JSON")


def _saved_rebuild(weights: str) -> dict | None:
    import torch

    from rlpyt.runners.checkpoint_files import load_checkpoint

    if os.path.isdir(weights):
        return load_checkpoint(weights).get("rebuild")
    snapshot = torch.load(weights, map_location="cpu", weights_only=False)
    return snapshot.get("rebuild") if isinstance(snapshot, dict) else None


def _import_recorded(path: str, what: str, weights: str):
    try:
        return import_path(path)
    except Exception as e:  # noqa: BLE001 - any import failure gets the same advice
        raise ConfigError(f"cannot import the {what} {path!r} that {weights} records ({e}); "
                          f"{_REBUILD_HINT}") from None


def run_spec(run_dir: str, weights: str, agent: str | None = None,
             agent_kwargs: dict | None = None, env: str | None = None) -> dict:
    """What to build: ``env_maker``, ``env_kwargs``, ``agent_class``, ``agent_kwargs``
    and the run's ``seed``: from an ``rlpyt train`` config, else from what the saved
    weights record, with ``agent``/``agent_kwargs``/``env`` replacing parts."""
    try:
        config = load_run_config(run_dir, "evaluate")
    except ConfigError:
        config = None
    if config is not None:
        spec = dict(env_maker=import_path(env_maker(config["env"]["id"])),
                    env_kwargs=dict(config["env"]),
                    agent_class=import_path(config["agent_class"]),
                    agent_kwargs=dict(config["agent"]), seed=config.get("seed", 0))
    else:
        recorded = _saved_rebuild(weights) or {}
        if not recorded and not (agent and env):
            raise ConfigError(f"{run_dir} was not made by rlpyt train (no train config in "
                              f"params.json) and {weights} does not record its agent and "
                              f"env: {_REBUILD_HINT}")
        spec = dict(seed=0, env_kwargs=dict(recorded.get("env_kwargs") or {}),
                    agent_kwargs=recorded.get("agent_kwargs"))
        if env is None:
            spec["env_maker"] = _import_recorded(recorded["env_maker"], "env maker", weights)
        if agent is None:
            spec["agent_class"] = _import_recorded(recorded["agent_class"], "agent class",
                                                   weights)
            if spec["agent_kwargs"] is None:
                raise ConfigError(f"the agent of {weights} was built with positional "
                                  f"arguments, which are not recorded: {_REBUILD_HINT}")
    if env is not None:
        spec.update(env_maker=import_path(env_maker(env)), env_kwargs=dict(id=env))
    if agent is not None:
        spec["agent_class"] = import_path(agent)
        spec["agent_kwargs"] = dict(agent_kwargs or {})
    elif agent_kwargs is not None:
        spec["agent_kwargs"] = dict(agent_kwargs)
    return spec


def evaluate_run(path: str, episodes: int = 10, seed: int | None = None,
                 device: str | None = None, video: str | None = None, fps: int = 30,
                 agent: str | None = None, agent_kwargs: dict | None = None,
                 env: str | None = None) -> dict:
    """Score the agent saved at ``path`` (see the module doc) over ``episodes`` episodes.

    Returns a dict with ``returns`` and ``lengths`` (one per episode), ``mean``,
    ``std``, ``mean_length``, ``weights`` (the file or checkpoint used), ``seed`` and
    ``video`` (the path written, or None). ``agent``, ``agent_kwargs``, ``env``: see
    ``run_spec`` (needed only for runs made by scripts that record no agent).
    """
    import torch

    from rlpyt.agents.base import AgentInputs
    from rlpyt.utils.buffer import buffer_from_example, numpify_buffer, torchify_buffer
    from rlpyt.utils.seed import env_seeds, set_seed

    if isinstance(episodes, bool) or not isinstance(episodes, int) or episodes < 1:
        raise ValueError(f"episodes={episodes!r} must be an integer >= 1")
    run_dir, weights = _locate(path)
    spec = run_spec(run_dir, weights, agent, agent_kwargs, env)
    seed = spec["seed"] if seed is None else int(seed)
    set_seed(seed)
    env_kwargs = dict(spec["env_kwargs"])
    if video is not None:
        env_kwargs.setdefault("render_mode", "rgb_array")
        # Off-screen frames need no display or sound: without these, SDL (pygame, which
        # gymnasium's classic-control envs render with) complains on headless machines
        # ("XDG_RUNTIME_DIR is invalid or not set").
        os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
        os.environ.setdefault("SDL_AUDIODRIVER", "dummy")
    env = spec["env_maker"](**env_kwargs)
    env.seed(env_seeds(seed, 1)[0])
    agent = spec["agent_class"](**spec["agent_kwargs"])
    agent.initialize(env.spaces, share_memory=False, global_B=1, env_ranks=[0])
    agent.load_state_dict(_agent_state(weights))
    if device is not None and str(device) != "cpu":
        dev = torch.device(device)
        agent.to_device(dev.index if dev.index is not None else 0)
    agent.eval_mode(0)
    frames: list = []
    returns, lengths = [], []
    null_action = env.action_space.null_value()
    try:
        for _ in range(episodes):
            observation = env.reset()
            agent.reset()
            inputs = AgentInputs(buffer_from_example(observation, 1),
                                 buffer_from_example(null_action, 1), np.zeros(1, np.float32))
            inputs.observation[0], inputs.prev_action[0] = observation, null_action
            inputs_pyt = torchify_buffer(inputs)
            total, length, done = 0.0, 0, False
            if video is not None:
                frames.append(env.render())
            while not done:
                with torch.no_grad():
                    action = numpify_buffer(agent.step(*inputs_pyt).action)
                observation, reward, step_done, env_info = env.step(action[0])
                # Atari: the unclipped game score, not the clipped training reward.
                total += float(getattr(env_info, "game_score", reward))
                length += 1
                done = bool(getattr(env_info, "traj_done", step_done))
                if step_done and not done:  # e.g. a lost life: the game goes on
                    observation = env.reset()
                inputs.observation[0], inputs.prev_action[0] = observation, action[0]
                inputs.prev_reward[0] = reward
                if video is not None:
                    frames.append(env.render())
            returns.append(total)
            lengths.append(length)
    finally:
        env.close()
    if video is not None:
        _write_video(video, frames, fps)
    return dict(returns=returns, lengths=lengths, mean=float(np.mean(returns)),
                std=float(np.std(returns)), mean_length=float(np.mean(lengths)),
                weights=weights, seed=seed, video=video)


VIDEO_BLOCK = 16  # imageio's ffmpeg writer's macro_block_size.


def _write_video(path: str, frames: list, fps: int) -> None:
    try:
        import imageio.v2 as imageio
    except ImportError as e:
        raise ImportError("--video needs imageio (pip install 'imageio[ffmpeg]')") from e
    if not frames or frames[0] is None:
        raise ValueError("the env rendered no frames (does it support render_mode='rgb_array'?)")
    os.makedirs(os.path.dirname(os.path.abspath(path)) or ".", exist_ok=True)
    with imageio.get_writer(path, fps=fps) as writer:
        for frame in frames:
            writer.append_data(pad_to_block(np.asarray(frame, dtype=np.uint8)))


def pad_to_block(frame: np.ndarray, block: int = VIDEO_BLOCK) -> np.ndarray:
    """``frame`` (H, W, C) with its last rows and columns repeated up to multiples of
    ``block``: video encoders want whole 16-pixel blocks, and imageio would otherwise
    rescale every frame (CartPole's 600x400 to 608x400) and print a warning about it."""
    h, w = frame.shape[:2]
    pad_h, pad_w = -h % block, -w % block
    if not (pad_h or pad_w):
        return frame
    return np.pad(frame, [(0, pad_h), (0, pad_w)] + [(0, 0)] * (frame.ndim - 2), mode="edge")


def run_evaluate(args, extra: list[str]) -> int:
    if extra:
        print(f"rlpyt evaluate: unrecognised arguments {extra}")
        return 2
    agent_kwargs = None
    if args.agent_kwargs is not None:
        import json

        try:
            agent_kwargs = json.loads(args.agent_kwargs)
        except ValueError as e:
            print(f"rlpyt evaluate: --agent-kwargs {args.agent_kwargs!r} is not JSON ({e})")
            return 2
        if not isinstance(agent_kwargs, dict):
            print(f"rlpyt evaluate: --agent-kwargs {args.agent_kwargs!r} must be a JSON object")
            return 2
    try:
        result = evaluate_run(args.path, args.episodes, args.seed, args.device, args.video,
                              args.fps, agent=args.agent, agent_kwargs=agent_kwargs,
                              env=args.env)
    except ConfigError as e:
        print(f"rlpyt evaluate: {e}")
        return 2
    print(f"Weights: {result['weights']}")
    print(f"Episodes: {len(result['returns'])}  seed: {result['seed']}")
    print(f"Return: mean {result['mean']:.2f}  std {result['std']:.2f}  "
          f"min {min(result['returns']):.2f}  max {max(result['returns']):.2f}")
    print(f"Episode lengths: {result['lengths']} (mean {result['mean_length']:.1f})")
    if result["video"]:
        print(f"Video written to {os.path.abspath(result['video'])}")
    if any(math.isnan(r) for r in result["returns"]):
        return 1
    return 0
