"""AtariEnv: preprocessing against a plain reference, lives, horizon, seeding, rewards."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

pytest.importorskip("ale_py")
cv2 = pytest.importorskip("cv2")

from ale_py import ALEInterface, roms  # noqa: E402

from rlpyt.envs.atari.atari_env import AtariEnv, AtariTrajInfo  # noqa: E402
from rlpyt.envs.base import EnvStep  # noqa: E402


def random_actions(env, n, seed=0):
    return np.random.default_rng(seed).integers(0, env.action_space.n, size=n)


class ReferencePipeline:
    """The classic preprocessing written plainly on a raw ALE: grayscale screens of the
    last two frames, element-wise max, cv2.resize(INTER_NEAREST) to ``frame_shape``
    (H x W), a stack."""

    def __init__(self, game, frame_skip, num_img_obs, frame_shape=(104, 80)):
        self.ale = ALEInterface()
        self.ale.setFloat("repeat_action_probability", 0.0)
        self.ale.loadROM(str(roms.get_rom_path(game)))
        self.actions = self.ale.getMinimalActionSet()
        self.frame_skip = frame_skip
        self.frame_shape = frame_shape
        self.stack = np.zeros((num_img_obs, *frame_shape), np.uint8)

    def frame(self):
        return self.ale.getScreenGrayscale()

    def push(self, screen):
        self.stack = np.concatenate([self.stack[1:], self.downsample(screen)[None]])
        return self.stack

    def downsample(self, screen):
        return cv2.resize(screen, self.frame_shape[::-1], interpolation=cv2.INTER_NEAREST)

    def reset(self):
        self.ale.reset_game()
        self.stack[:] = 0
        return self.push(self.frame())

    def step(self, a):
        screens, reward = [], 0
        for _ in range(self.frame_skip):
            reward += self.ale.act(self.actions[a])
            screens.append(self.frame())
            if self.ale.game_over():  # AtariEnv keeps the final screen alone then.
                return self.push(screens[-1]), reward
        pooled = screens[-1] if len(screens) == 1 else np.maximum(screens[-2], screens[-1])
        return self.push(pooled), reward


@pytest.mark.parametrize("game, frame_skip, num_img_obs, frame_shape", [
    ("pong", 4, 4, (104, 80)), ("ms_pacman", 3, 2, (104, 80)), ("breakout", 1, 3, (104, 80)),
    ("pong", 4, 4, (84, 84)),  # The Nature DQN size: no strided plan, cv2.resize.
    ("breakout", 2, 2, (105, 80)),  # Every other row: a strided plan of its own.
])
def test_frames_match_plain_reference(game, frame_skip, num_img_obs, frame_shape):
    # Without sticky actions or start no-ops the emulator is deterministic.
    env = AtariEnv(game, frame_skip=frame_skip, num_img_obs=num_img_obs, max_start_noops=0,
                   episodic_lives=False, horizon=None, seed=0, frame_shape=frame_shape)
    assert env.observation_space.shape == (num_img_obs, *frame_shape)
    ref = ReferencePipeline(env.game, frame_skip, num_img_obs, frame_shape)
    np.testing.assert_array_equal(env.reset(), ref.reset())
    for t, a in enumerate(random_actions(env, 200)):
        step = env.step(a)
        expected_obs, expected_score = ref.step(a)
        np.testing.assert_array_equal(step.observation, expected_obs, err_msg=f"step {t}")
        assert step.env_info.game_score == expected_score
        if step.done:
            break


def test_observation_shape_dtype_and_stack_order():
    env = AtariEnv("pong", seed=0)
    assert env.observation_space.shape == (4, 104, 80)
    assert env.observation_space.dtype == np.uint8
    assert env.action_space.n == 6 and env.get_action_meanings()[:2] == ["NOOP", "FIRE"]
    obs = env.reset()
    assert obs.shape == (4, 104, 80) and obs.dtype == np.uint8
    assert np.all(obs[:-1] == 0) and obs[-1].any()  # older frames are zeros after a reset
    history = [obs]
    for a in random_actions(env, 60):
        step = env.step(a)
        assert isinstance(step, EnvStep) and env.observation_space.contains(step.observation)
        history.append(step.observation)
    for prev, cur in zip(history, history[1:]):
        np.testing.assert_array_equal(cur[:-1], prev[1:])  # oldest first, index -1 newest
    assert not np.array_equal(history[-1][-1], history[-2][-1])
    history[-1][:] = 0  # a returned observation is the caller's own copy
    assert env.step(0).observation[-2].any()


def lives_run(env, actions):
    """Step until the first done; return (steps taken, last EnvStep)."""
    for t, a in enumerate(actions, start=1):
        step = env.step(a)
        if step.done:
            return t, step
    raise AssertionError("no done within the actions given")


def test_episodic_lives_soft_reset_then_full_reset_at_game_over():
    env = AtariEnv("breakout", fire_on_reset=True, seed=1)
    env.reset()
    start_lives = env.ale.lives()
    assert start_lives == 5
    actions = iter(random_actions(env, 20000))
    traj = AtariTrajInfo()
    dones = 0
    while True:
        step = env.step(next(actions))
        traj.step(None, None, step.reward, step.done, None, step.env_info)
        if step.done:
            dones += 1
            if step.env_info.traj_done:
                break
            assert not step.env_info.timeout
            assert env.ale.lives() == start_lives - dones
            frame_number = env.ale.getEpisodeFrameNumber()
            env.reset()  # soft: the same game goes on
            assert env.ale.getEpisodeFrameNumber() > frame_number
            assert env.ale.lives() == start_lives - dones
    assert dones == start_lives and env.ale.game_over()
    assert traj.Length > 0 and traj.GameScore >= traj.Return >= 0
    env.reset()  # full reset: a new game
    assert env.ale.lives() == start_lives and not env.ale.game_over()
    assert env.ale.getEpisodeFrameNumber() < 100


def test_without_episodic_lives_a_life_loss_is_not_done():
    env = AtariEnv("breakout", fire_on_reset=True, episodic_lives=False, seed=1)
    env.reset()
    steps, last = lives_run(env, random_actions(env, 20000))
    assert last.env_info.traj_done and env.ale.game_over() and env.ale.lives() == 0


def test_horizon_truncates_as_timeout_and_forces_full_reset():
    env = AtariEnv("pong", horizon=25, seed=2)  # Pong has no lives to lose on the way.
    env.reset()
    for t, a in enumerate(random_actions(env, 25), start=1):
        step = env.step(a)
        assert step.done == (t == 25)
    assert step.env_info.timeout and step.env_info.traj_done
    frames_played = env.ale.getEpisodeFrameNumber()
    env.reset()
    assert env.ale.getEpisodeFrameNumber() < 31 < frames_played  # a new game


def test_horizon_on_a_life_loss_step_is_not_a_timeout():
    actions = np.random.default_rng(3).integers(0, 4, size=5000)  # Breakout has 4 actions.
    env = AtariEnv("breakout", fire_on_reset=True, max_start_noops=0, seed=3)
    env.reset()
    life_loss_step, step = lives_run(env, actions)
    assert not step.env_info.traj_done
    env = AtariEnv("breakout", fire_on_reset=True, max_start_noops=0, horizon=life_loss_step,
                   seed=3)
    env.reset()
    steps, step = lives_run(env, actions)
    assert steps == life_loss_step
    assert step.env_info.traj_done and not step.env_info.timeout


def play(env, actions):
    """The newest frame of every observation, resets included."""
    frames = [env.reset()[-1]]
    for a in actions:
        step = env.step(a)
        frames.append(step.observation[-1])
        if step.done:
            frames.append(env.reset()[-1])
    return np.stack(frames)


def test_same_seed_same_first_1000_frames():
    # 250 steps of frame_skip 4 cover the first 1000 emulator frames; sticky actions and
    # start no-ops make the ALE seed and the no-op generator matter.
    kwargs = dict(game="pong", repeat_action_probability=0.25, max_start_noops=30)
    actions = np.random.default_rng(0).integers(0, 6, size=250)
    a, b = AtariEnv(seed=5, **kwargs), AtariEnv(seed=6, **kwargs)
    frames_a = play(a, actions)
    assert not np.array_equal(frames_a, play(b, actions))
    b.seed(5)  # reseeding reloads the ROM: the same game as a fresh env with seed 5
    np.testing.assert_array_equal(frames_a, play(b, actions))
    a.seed(5)
    np.testing.assert_array_equal(frames_a, play(a, actions))


def test_reward_clipping_keeps_game_score():
    clipped = AtariEnv("space_invaders", episodic_lives=False, seed=0)
    raw = AtariEnv("space_invaders", episodic_lives=False, clip_reward=False, seed=0)
    traj = AtariTrajInfo()
    clipped.reset()
    raw.reset()
    saw_big_score = False
    for a in random_actions(clipped, 300):
        c, r = clipped.step(a), raw.step(a)
        traj.step(None, a, c.reward, c.done, None, c.env_info)
        assert c.env_info.game_score == r.env_info.game_score == r.reward
        assert c.reward == np.sign(c.env_info.game_score)
        saw_big_score |= c.env_info.game_score > 1
        if c.done:
            break
    assert saw_big_score
    assert traj.GameScore > traj.Return > 0
    assert pickle.loads(pickle.dumps(traj)) == traj


def test_game_names_and_errors():
    assert AtariEnv("SpaceInvaders", seed=0).game == "space_invaders"
    with pytest.raises(ValueError, match=r"unknown game 'pongg'.*'pong'"):
        AtariEnv("pongg")
    with pytest.raises(ValueError, match="cannot play"):
        AtariEnv("combat")  # ALE would exit the process on this ROM
    with pytest.raises(ValueError, match="frame_skip"):
        AtariEnv(frame_skip=0)
    with pytest.raises(ValueError, match="repeat_action_probability"):
        AtariEnv(repeat_action_probability=1.5)
    for bad in [(84,), (0, 84), (84, 161), (84.0, 84), 84, "84x84"]:
        with pytest.raises(ValueError, match=r"frame_shape must be \(height, width\).*got"):
            AtariEnv(frame_shape=bad)
    env = AtariEnv(seed=0)
    env.reset()
    with pytest.raises(ValueError, match=r"action must be in \[0, 6\)"):
        env.step(6)


@pytest.mark.parametrize("height", [210, 250, 104, 160])
def test_downsample_plan_equals_cv2_nearest_resize(height):
    from rlpyt.envs.atari.downsample import nearest_copy_plan

    src = np.random.default_rng(height).integers(0, 256, size=(height, 160), dtype=np.uint8)
    dst = np.zeros((104, 80), np.uint8)
    plan = nearest_copy_plan(src, dst)
    expected = cv2.resize(src, (80, 104), interpolation=cv2.INTER_NEAREST)
    if plan is None:  # An irregular row pattern: AtariEnv falls back to cv2.resize.
        assert height != 210  # ... but never for the standard Atari screen.
        return
    for d, s in plan:
        np.copyto(d, s)
    np.testing.assert_array_equal(dst, expected)
