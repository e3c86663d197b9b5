"""Dueling Q heads (Wang et al. 2016): ``Q(s, a) = V(s) + A(s, a) - mean_a' A(s, a')``.

Subtracting the mean advantage makes the split into value and advantage identifiable
without changing which action is greedy.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from rlpyt.models.mlp import MlpModel
from rlpyt.models.utils import scale_grad

__all__ = ["DistributionalDuelingHeadModel", "DuelingHeadModel"]

# Both streams backpropagate into the shared input, so the paper rescales that gradient.
DEFAULT_GRAD_SCALE = 2 ** (-1 / 2)


class DuelingHeadModel(torch.nn.Module):
    """Q-values from features by separate value and advantage MLPs.

    ``forward(input [..., input_size]) -> q [..., output_size]`` for any leading dims.

    Args:
        input_size: number of input features (e.g. the conv output size).
        hidden_sizes: hidden widths of each stream (int, sequence, or ``None`` for a
            single linear layer per stream).
        output_size: number of actions.
        grad_scale: factor on the gradient flowing back into ``input`` (default
            ``2 ** -0.5``, as in the paper, since two streams add their gradients).
    """

    def __init__(
        self,
        input_size: int,
        hidden_sizes: int | Sequence[int] | None,
        output_size: int,
        grad_scale: float = DEFAULT_GRAD_SCALE,
    ):
        super().__init__()
        self.advantage = MlpModel(input_size, hidden_sizes, output_size)
        self.value = MlpModel(input_size, hidden_sizes, 1)
        self.grad_scale = grad_scale

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        x = scale_grad(input, self.grad_scale)
        advantage = self.advantage(x)
        return self.value(x) + advantage - advantage.mean(dim=-1, keepdim=True)


class DistributionalDuelingHeadModel(torch.nn.Module):
    """Dueling head for return distributions (C51): logits per action and atom.

    ``forward(input [..., input_size]) -> logits [..., output_size, n_atoms]``; the
    value stream gives one logit vector over atoms, the advantage stream one per
    action, combined as ``value + advantage - mean over actions``.  Apply a softmax
    over the last dim for probabilities.

    Args:
        input_size, hidden_sizes, output_size, grad_scale: as ``DuelingHeadModel``.
        n_atoms: number of atoms of the support (default 51).
    """

    def __init__(
        self,
        input_size: int,
        hidden_sizes: int | Sequence[int] | None,
        output_size: int,
        n_atoms: int = 51,
        grad_scale: float = DEFAULT_GRAD_SCALE,
    ):
        super().__init__()
        self.advantage = MlpModel(input_size, hidden_sizes, output_size * n_atoms)
        self.value = MlpModel(input_size, hidden_sizes, n_atoms)
        self.grad_scale = grad_scale
        self._output_size = output_size
        self._n_atoms = n_atoms

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        x = scale_grad(input, self.grad_scale)
        lead_shape = x.shape[:-1]
        advantage = self.advantage(x).reshape(*lead_shape, self._output_size, self._n_atoms)
        value = self.value(x).reshape(*lead_shape, 1, self._n_atoms)
        return value + advantage - advantage.mean(dim=-2, keepdim=True)
