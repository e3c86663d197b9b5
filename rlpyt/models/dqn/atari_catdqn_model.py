"""Distributional (C51) Q-network for Atari frames."""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F

from rlpyt.models.dqn.atari_dqn_model import atari_dqn_conv
from rlpyt.models.dqn.mlp import check_n_atoms, distributional_q_head
from rlpyt.utils.tensor import infer_leading_dims, restore_leading_dims

__all__ = ["AtariCatDqnModel"]


class AtariCatDqnModel(torch.nn.Module):
    """Conv layers then a head giving a return distribution per action.

    ``forward(observation, prev_action, prev_reward) -> p [..., output_size, n_atoms]``,
    probabilities (softmax over atoms).  Inputs as ``AtariDqnModel``.

    Args:
        image_shape, output_size, fc_sizes, dueling, use_maxpool, channels, kernel_sizes,
            strides, paddings: as ``AtariDqnModel`` (the dueling head is
            ``DistributionalDuelingHeadModel``).
        n_atoms: atoms of the support per action (default 51).
    """

    uses_prev_action_reward = False  # DQN's replay then skips gathering them.

    def __init__(
        self,
        image_shape: Sequence[int],
        output_size: int,
        n_atoms: int = 51,
        fc_sizes: int | Sequence[int] = 512,
        dueling: bool = False,
        use_maxpool: bool = False,
        channels: Sequence[int] | None = None,
        kernel_sizes: Sequence[int] | None = None,
        strides: Sequence[int] | None = None,
        paddings: Sequence[int] | None = None,
    ):
        super().__init__()
        check_n_atoms(n_atoms)
        self.conv, conv_out_size = atari_dqn_conv(
            image_shape, use_maxpool, channels, kernel_sizes, strides, paddings
        )
        self.head = distributional_q_head(conv_out_size, fc_sizes, output_size, n_atoms, dueling)

    def forward(
        self, observation: torch.Tensor, prev_action: torch.Tensor, prev_reward: torch.Tensor
    ) -> torch.Tensor:
        lead_dim, T, B, img_shape = infer_leading_dims(observation, 3)
        img = observation.reshape(T * B, *img_shape).to(torch.float32) * (1.0 / 255)
        p = F.softmax(self.head(self.conv(img).reshape(T * B, -1)), dim=-1)
        return restore_leading_dims(p, lead_dim, T, B)
