"""Frames per second of rlpyt's AtariEnv next to a raw ALE loop and Gymnasium's pipeline.

Contenders, all playing the same random actions with frame skip 4:

* ``raw ALE``: ``ale_py.ALEInterface.act`` four times per step and ``reset_game`` at
  game over, nothing else: the emulator's own speed, an upper bound.
* ``raw ALE + screen``: the same plus one ``getScreenGrayscale`` per step: the least
  any pixel-based agent needs.
* ``rlpyt AtariEnv``: default settings (max-pool, 104x80, 4-frame stack, episodic
  lives, up to 30 start NOOPs).
* ``gymnasium``: ``gym.make("ALE/<Game>-v5", frameskip=1)`` wrapped in
  ``AtariPreprocessing`` (84x84, max-pool, 30 NOOPs) and ``FrameStackObservation(4)``.

Each contender is built once and keeps playing its game.  The run is split into
rounds; each round plays one chunk of steps on every contender, in a rotating order,
so that load from other processes spreads evenly over them.  Reported: the median
over rounds of each contender's frames per second, and ratios of the medians.
Frames are emulator frames (agent steps x 4).  Time is this process's CPU time by
default (``--clock cpu``), which other processes sharing the cores disturb far less
than wall-clock time (``--clock wall``); everything runs in one thread, so on an idle
machine the two agree.

    python bench/speed/atari_env.py --game pong --rounds 30 --chunk 500
"""

from __future__ import annotations

import argparse
import statistics
import time

import ale_py
import gymnasium as gym
import numpy as np
from ale_py import ALEInterface, roms
from gymnasium.wrappers import AtariPreprocessing, FrameStackObservation

from rlpyt.envs.atari.atari_env import AtariEnv

FRAME_SKIP = 4


class RawAle:
    def __init__(self, game: str, grab_screen: bool):
        self.ale = ALEInterface()
        self.ale.setInt("random_seed", 0)
        self.ale.setFloat("repeat_action_probability", 0.0)
        self.ale.loadROM(str(roms.get_rom_path(game)))
        self.action_set = self.ale.getMinimalActionSet()
        self.screen = np.empty(self.ale.getScreenDims(), dtype=np.uint8)
        self.grab_screen = grab_screen

    def play(self, actions: np.ndarray) -> None:
        ale, action_set, screen = self.ale, self.action_set, self.screen
        for a in actions:
            action = action_set[a]
            for _ in range(FRAME_SKIP):
                ale.act(action)
            if self.grab_screen:
                ale.getScreenGrayscale(screen)
            if ale.game_over():
                ale.reset_game()


class Rlpyt:
    def __init__(self, game: str):
        self.env = AtariEnv(game=game, frame_skip=FRAME_SKIP, seed=0)
        self.env.reset()

    def play(self, actions: np.ndarray) -> None:
        env = self.env
        for a in actions:
            if env.step(a).done:
                env.reset()


class Gymnasium:
    def __init__(self, game: str):
        gym.register_envs(ale_py)
        env_id = "ALE/" + "".join(part.capitalize() for part in game.split("_")) + "-v5"
        env = gym.make(env_id, frameskip=1, repeat_action_probability=0.0)
        env = AtariPreprocessing(env, noop_max=30, frame_skip=FRAME_SKIP, screen_size=84)
        self.env = FrameStackObservation(env, 4)
        self.env.reset(seed=0)

    def play(self, actions: np.ndarray) -> None:
        env = self.env
        for a in actions:
            _, _, terminated, truncated, _ = env.step(int(a))
            if terminated or truncated:
                env.reset()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--game", default="pong")
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--chunk", type=int, default=500, help="agent steps per round")
    parser.add_argument("--clock", choices=("cpu", "wall"), default="cpu")
    args = parser.parse_args()
    clock = time.process_time if args.clock == "cpu" else time.perf_counter

    contenders = {
        "raw ALE": RawAle(args.game, grab_screen=False),
        "raw ALE + screen": RawAle(args.game, grab_screen=True),
        "rlpyt AtariEnv": Rlpyt(args.game),
        "gymnasium": Gymnasium(args.game),
    }
    n_actions = len(contenders["raw ALE"].action_set)
    rng = np.random.default_rng(0)
    names = list(contenders)
    rates: dict[str, list[float]] = {name: [] for name in names}
    for round_ in range(args.rounds):
        actions = rng.integers(0, n_actions, size=args.chunk)
        shift = round_ % len(names)
        for name in names[shift:] + names[:shift]:
            start = clock()
            contenders[name].play(actions)
            rates[name].append(args.chunk * FRAME_SKIP / (clock() - start))
    medians = {name: statistics.median(values) for name, values in rates.items()}

    print(
        f"game={args.game} rounds={args.rounds} chunk={args.chunk} steps "
        f"frame_skip={FRAME_SKIP} clock={args.clock}"
    )
    for name in names:
        quartiles = statistics.quantiles(rates[name], n=4)
        print(
            f"{name:18s} median {medians[name]:8.0f} frames/s   "
            f"(quartiles {quartiles[0]:6.0f} .. {quartiles[2]:6.0f})"
        )
    env = medians["rlpyt AtariEnv"]
    print(f"AtariEnv / raw ALE          = {env / medians['raw ALE']:.3f}  (target >= 0.85)")
    print(f"AtariEnv / raw ALE + screen = {env / medians['raw ALE + screen']:.3f}")
    print(f"AtariEnv / gymnasium        = {env / medians['gymnasium']:.3f}  (target >= 1.2)")


if __name__ == "__main__":
    main()
