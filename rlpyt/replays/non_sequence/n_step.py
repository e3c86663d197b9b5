"""Transition replay: one-step samples ``(s_t, a_t, R_t^n, s_{t+n})`` from the n-step ring."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from rlpyt.agents.base import AgentInputs
from rlpyt.replays.n_step import BaseNStepReturnBuffer
from rlpyt.utils.collections import namedarraytuple

__all__ = ["NStepReturnBuffer", "SamplesFromReplay"]

SamplesFromReplay = namedarraytuple(
    "SamplesFromReplay",
    ["agent_inputs", "action", "return_", "done", "done_n", "target_inputs"],
)


def _same(array: np.ndarray) -> np.ndarray:
    return array


class NStepReturnBuffer(BaseNStepReturnBuffer):
    """Extracts transitions with their n-step returns and target inputs.

    A sample at ring position ``(t, b)`` is ``SamplesFromReplay`` with
    ``agent_inputs = AgentInputs(observation[t], action[t - 1], reward[t - 1])``,
    ``action[t]``, ``return_[t]``, ``done[t]``, ``done_n[t]`` and
    ``target_inputs = AgentInputs(observation[t + n], action[t + n - 1],
    reward[t + n - 1])``.  Arguments as ``BaseNStepReturnBuffer``.

    Attributes:
        prev_inputs: gather the ``prev_action`` / ``prev_reward`` inputs (default True).
            Set it to False when the model ignores them (e.g. ``DqnMlpModel``, whose
            ``uses_prev_action_reward`` is False; ``DQN`` does this): both
            ``AgentInputs`` then hold ``None`` there, and sampling skips four gathers.
    """

    BatchCls = SamplesFromReplay  # Subclasses with more fields fill them in _extra_fields.
    prev_inputs = True

    def extract_batch(self, T_idxs, B_idxs):
        """The training batch for samples starting at ring positions ``(T_idxs, B_idxs)``
        (1-D), as torch tensors over freshly gathered numpy arrays."""
        T_idxs = np.asarray(T_idxs, dtype=np.int64)
        B_idxs = np.asarray(B_idxs, dtype=np.int64)
        return self._gather(T_idxs, B_idxs, torch.from_numpy)

    def _extract_batch(self, T_idxs: np.ndarray, B_idxs: np.ndarray):
        return self._gather(T_idxs, B_idxs, _same)

    def _gather(self, T_idxs: np.ndarray, B_idxs: np.ndarray, leaf: Callable):
        """The batch with every gathered array passed through ``leaf`` (numpy -> torch, or
        not), built in one pass: the gathers are flat ``take`` calls at indexes computed
        once, which matters at thousands of small batches per second."""
        s, B, size, n = self.samples, self.B, self.size, self.n_step_return
        # Flat index t * B + b; k steps later is + k * B, wrapped at the ring's size.
        flat = T_idxs * B + B_idxs
        flat_target = (flat + n * B) % size
        take = self._take
        observation = leaf(self._observation_at(flat))
        target_observation = leaf(self._observation_at(flat_target))
        if self.prev_inputs:
            flat_prev = (flat - B) % size
            flat_target_prev = flat if n == 1 else (flat + (n - 1) * B) % size
            agent_inputs = AgentInputs(observation, leaf(take(s.action, flat_prev)),
                                       leaf(take(s.reward, flat_prev)))
            target_inputs = AgentInputs(target_observation,
                                        leaf(take(s.action, flat_target_prev)),
                                        leaf(take(s.reward, flat_target_prev)))
        else:
            agent_inputs = AgentInputs(observation, None, None)
            target_inputs = AgentInputs(target_observation, None, None)
        return self.BatchCls(
            agent_inputs,
            leaf(take(s.action, flat)),
            leaf(take(self.samples_return_, flat)),
            leaf(take(s.done, flat)),
            leaf(take(self.samples_done_n, flat)),
            target_inputs,
            *self._extra_fields(flat, leaf),
        )

    def _extra_fields(self, flat: np.ndarray, leaf: Callable) -> tuple:
        """Values of the fields ``BatchCls`` adds after ``target_inputs``."""
        return ()
