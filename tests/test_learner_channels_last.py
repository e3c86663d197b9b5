"""An asynchronous learner's conv weights in channels-last order: the same model, in
another memory order, that trains, saves and publishes as before."""

from __future__ import annotations

import torch

from rlpyt.agents.param_board import ParameterBoard
from rlpyt.agents.pg.atari import AtariFfAgent
from rlpyt.agents.pg.categorical import CategoricalPgAgent
from rlpyt.envs.base import EnvSpaces
from rlpyt.spaces.float_box import FloatBox
from rlpyt.spaces.int_box import IntBox

FRAMES = EnvSpaces(observation=IntBox(0, 256, shape=(4, 84, 84), dtype="uint8"),
                   action=IntBox(0, 6))


def _atari_agent(share_memory: bool = False) -> AtariFfAgent:
    torch.manual_seed(0)
    agent = AtariFfAgent(model_kwargs=dict(channels=[16, 32], kernel_sizes=[8, 4],
                                           strides=[4, 2], paddings=[0, 0], fc_sizes=64,
                                           normalize_observation=True))
    agent.initialize(FRAMES, share_memory=share_memory)
    return agent


def _inputs(n: int = 5):
    gen = torch.Generator().manual_seed(1)
    frames = torch.randint(0, 256, (n, 4, 84, 84), dtype=torch.uint8, generator=gen)
    return frames, torch.zeros(n, dtype=torch.long), torch.zeros(n)


def test_conv_weights_go_channels_last_and_the_model_stays_the_same():
    agent = _atari_agent()
    agent.model.update_obs_rms(_inputs(20)[0])
    params = list(agent.model.parameters())
    before = agent.model(*_inputs())
    assert agent.learner_channels_last()
    assert [id(p) for p in agent.model.parameters()] == [id(p) for p in params]
    conv = [p for p in params if p.dim() == 4]
    assert conv and all(p.is_contiguous(memory_format=torch.channels_last)
                        and not p.is_contiguous() for p in conv)
    after = agent.model(*_inputs())  # (action probabilities, value)
    for a, b in zip(before, after):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
    after[-1].sum().backward()  # gradients in the parameters' own order
    assert all(p.grad is not None and p.grad.shape == p.shape for p in conv)


def test_a_channels_last_learner_saves_and_publishes_plain_values():
    """Checkpoints and the sampler's ``ParameterBoard`` hold values, whatever the order:
    a default-order model loads them and acts the same."""
    learner = _atari_agent()
    board = ParameterBoard(learner.model)  # made before the change, as AsyncRl does
    learner.learner_channels_last()
    with torch.no_grad():
        for p in learner.model.parameters():
            p.add_(0.01)
    board.publish(learner.model)
    sampler_side = _atari_agent()
    assert board.read_into(sampler_side.model) is not None
    restored = _atari_agent()
    restored.model.load_state_dict(learner.model.state_dict())
    for model in (sampler_side.model, restored.model):
        for mine, theirs in zip(model.parameters(), learner.model.parameters()):
            assert mine.is_contiguous()
            assert torch.equal(mine, theirs)


def test_models_without_conv_weights_and_shared_models_are_left_alone():
    mlp = CategoricalPgAgent()
    mlp.initialize(EnvSpaces(observation=FloatBox(-1, 1, (3,)), action=IntBox(0, 2)))
    assert not mlp.learner_channels_last()
    shared = _atari_agent(share_memory=True)  # the sampler's workers read this model
    assert not shared.learner_channels_last()
    assert all(p.is_contiguous() for p in shared.model.parameters())


def test_rlpyt_train_can_turn_it_off():
    """``--runner.learner_channels_last false`` is a keyword the async runner takes."""
    from rlpyt.cli.component_keywords import ASYNC_RUNNER_KEYWORDS, class_keywords
    from rlpyt.runners.async_rl import AsyncRl

    assert "learner_channels_last" in ASYNC_RUNNER_KEYWORDS
    assert ASYNC_RUNNER_KEYWORDS <= class_keywords(AsyncRl)
