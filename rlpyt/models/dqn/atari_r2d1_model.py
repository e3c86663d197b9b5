"""Recurrent Q-network for Atari frames (R2D2, Kapturowski et al. 2019)."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from rlpyt.models.conv2d import Conv2dHeadModel
from rlpyt.models.dqn.mlp import q_head
from rlpyt.models.rnn import RnnState, recurrent_q_values
from rlpyt.utils.tensor import infer_leading_dims, restore_leading_dims

__all__ = ["AtariR2d1Model", "RnnState"]

# The Nature-DQN conv stack (Mnih et al. 2015), as used by R2D2.
DEFAULT_CHANNELS = (32, 64, 64)
DEFAULT_KERNEL_SIZES = (8, 4, 3)
DEFAULT_STRIDES = (4, 2, 1)
DEFAULT_PADDINGS = (0, 1, 1)


class AtariR2d1Model(torch.nn.Module):
    """Conv layers and a fully connected layer feed an LSTM, together with the previous action
    (one-hot) and previous reward; the LSTM output feeds a Q-value head.

    ``forward(image, prev_action, prev_reward, init_rnn_state) -> (q, next_rnn_state)``:
    ``image`` is ``[T, B, C, H, W]`` (or ``[B, ...]`` / ``[...]``, taken as T=1) with pixel
    values in 0..255 (scaled by 1/255 inside); ``prev_action`` holds integer action indexes
    with the same leading dims; ``init_rnn_state`` is ``RnnState(h, c)`` of ``[1, B, lstm_size]``
    (``None``: zeros).  ``q`` is ``[..., output_size]`` with the input's leading dims;
    ``next_rnn_state`` is the ``RnnState`` after the last step.

    Args:
        image_shape: ``(C, H, W)`` of one observation (C = stacked frames).
        output_size: number of discrete actions.
        fc_size: width of the fully connected layer after the convs (default 512).
        lstm_size: LSTM hidden size (default 512).
        head_size: hidden width of the Q head (default 512).
        dueling: use a dueling head (value + advantage streams; default False).
        use_maxpool: downsample with max-pooling instead of strided convs (default False).
        channels, kernel_sizes, strides, paddings: conv settings; ``None`` (default) uses the
            Nature-DQN stack ``(32, 64, 64)``, ``(8, 4, 3)``, ``(4, 2, 1)``, ``(0, 1, 1)``.
    """

    def __init__(
        self,
        image_shape: Sequence[int],
        output_size: int,
        fc_size: int = 512,
        lstm_size: int = 512,
        head_size: int = 512,
        dueling: bool = False,
        use_maxpool: bool = False,
        channels: Sequence[int] | None = None,
        kernel_sizes: Sequence[int] | None = None,
        strides: Sequence[int] | None = None,
        paddings: Sequence[int] | None = None,
    ):
        super().__init__()
        self.output_size = int(output_size)
        self.conv = Conv2dHeadModel(
            image_shape=image_shape,
            channels=DEFAULT_CHANNELS if channels is None else channels,
            kernel_sizes=DEFAULT_KERNEL_SIZES if kernel_sizes is None else kernel_sizes,
            strides=DEFAULT_STRIDES if strides is None else strides,
            paddings=DEFAULT_PADDINGS if paddings is None else paddings,
            hidden_sizes=fc_size,
            use_maxpool=use_maxpool,
        )
        self.lstm = torch.nn.LSTM(self.conv.output_size + self.output_size + 1, lstm_size)
        self.head = q_head(lstm_size, head_size, self.output_size, dueling)

    def forward(
        self,
        image: torch.Tensor,
        prev_action: torch.Tensor,
        prev_reward: torch.Tensor,
        init_rnn_state: RnnState | None,
    ) -> tuple[torch.Tensor, RnnState]:
        lead_dim, T, B, img_shape = infer_leading_dims(image, 3)
        img = image.reshape(T * B, *img_shape).to(torch.float32) * (1.0 / 255)
        features = self.conv(img).reshape(T, B, -1)
        q, next_rnn_state = recurrent_q_values(self.lstm, self.head, features, prev_action,
                                               prev_reward, self.output_size, init_rnn_state)
        return restore_leading_dims(q, lead_dim, T, B), next_rnn_state
