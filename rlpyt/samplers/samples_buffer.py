"""Allocate the ``[T, B]`` sample buffer from one example step, in the main process."""

from __future__ import annotations

import numpy as np
import torch

from rlpyt.agents.base import AgentInputs
from rlpyt.samplers.samples import (
    AgentSamples,
    AgentSamplesBsv,
    EnvSamples,
    Samples,
)
from rlpyt.utils.buffer import buffer_from_example, buffer_func, numpify_buffer, torchify_buffer

__all__ = ["build_samples_buffer", "get_example_outputs"]


def get_example_outputs(agent, env) -> dict:
    """One env step and one agent step, to learn every field's shape and dtype.

    Runs in the calling process (never a subprocess), then resets the agent.
    """
    observation = env.reset()
    action = env.action_space.sample()
    step = env.step(action)
    reward = np.asarray(step.reward, dtype=np.float32)
    agent.reset()
    inputs = AgentInputs(
        observation=buffer_func(step.observation, lambda x: np.asarray(x)[None]),
        prev_action=np.asarray(action)[None],
        prev_reward=reward[None],
    )
    with torch.no_grad():
        agent_step = agent.step(*torchify_buffer(inputs))
    agent.reset()
    # Drop the batch dim of 1 from the agent's outputs.
    agent_action = buffer_func(numpify_buffer(agent_step.action), lambda a: a[0])
    agent_info = buffer_func(numpify_buffer(agent_step.agent_info), lambda a: a[0])
    return dict(
        observation=observation,
        reward=reward,
        done=np.asarray(step.done, dtype=bool),
        env_info=step.env_info,
        action=agent_action,
        agent_info=agent_info,
    )


def build_samples_buffer(
    agent,
    env,
    batch_spec,
    bootstrap_value: bool = False,
    agent_shared: bool = True,
    env_shared: bool = True,
    examples: dict | None = None,
):
    """Preallocate ``Samples`` of ``[T, B]`` arrays.

    Returns ``(samples_pyt, samples_np, examples)``: the same memory seen as torch and
    numpy.  ``agent_shared``/``env_shared`` put the agent/env halves in shared memory
    for worker processes.
    """
    if examples is None:
        examples = get_example_outputs(agent, env)
    T, B = batch_spec
    action = buffer_from_example(examples["action"], (T, B), agent_shared)
    prev_action = buffer_from_example(examples["action"], (T, B), agent_shared)
    agent_info = buffer_from_example(examples["agent_info"], (T, B), agent_shared)
    if bootstrap_value:
        bootstrap = buffer_from_example(np.float32(0), (B,), agent_shared)
        timeout_value = buffer_from_example(np.float32(0), (T, B), agent_shared)
        agent_buffer = AgentSamplesBsv(action, prev_action, agent_info, bootstrap, timeout_value)
    else:
        agent_buffer = AgentSamples(action, prev_action, agent_info)
    env_buffer = EnvSamples(
        observation=buffer_from_example(examples["observation"], (T, B), env_shared),
        reward=buffer_from_example(examples["reward"], (T, B), env_shared),
        prev_reward=buffer_from_example(examples["reward"], (T, B), env_shared),
        done=buffer_from_example(examples["done"], (T, B), env_shared),
        env_info=buffer_from_example(examples["env_info"], (T, B), env_shared),
    )
    samples_np = Samples(agent=agent_buffer, env=env_buffer)
    samples_pyt = torchify_buffer(samples_np)
    return samples_pyt, samples_np, examples
