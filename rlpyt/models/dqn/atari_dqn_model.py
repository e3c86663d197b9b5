"""Q-network for Atari frames: the Nature DQN conv stack and a (dueling) fully connected head."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from rlpyt.models.conv2d import Conv2dModel
from rlpyt.models.dqn.mlp import q_head
from rlpyt.utils.tensor import infer_leading_dims, restore_leading_dims

__all__ = ["AtariDqnModel", "atari_dqn_conv"]

# Mnih et al. 2015, with the paddings classic rlpyt used for 104x80 frames.
DEFAULT_CHANNELS = (32, 64, 64)
DEFAULT_KERNEL_SIZES = (8, 4, 3)
DEFAULT_STRIDES = (4, 2, 1)
DEFAULT_PADDINGS = (0, 1, 1)


def atari_dqn_conv(
    image_shape: Sequence[int],
    use_maxpool: bool = False,
    channels: Sequence[int] | None = None,
    kernel_sizes: Sequence[int] | None = None,
    strides: Sequence[int] | None = None,
    paddings: Sequence[int] | None = None,
) -> tuple[Conv2dModel, int]:
    """The conv stack (defaults filled in for ``None`` settings) and its flattened output size."""
    if len(image_shape) != 3:
        raise ValueError(f"image_shape must be (C, H, W), got {tuple(image_shape)!r}")
    c, h, w = image_shape
    conv = Conv2dModel(
        in_channels=c,
        channels=DEFAULT_CHANNELS if channels is None else channels,
        kernel_sizes=DEFAULT_KERNEL_SIZES if kernel_sizes is None else kernel_sizes,
        strides=DEFAULT_STRIDES if strides is None else strides,
        paddings=DEFAULT_PADDINGS if paddings is None else paddings,
        use_maxpool=use_maxpool,
    )
    return conv, conv.conv_out_size(h, w)


class AtariDqnModel(torch.nn.Module):
    """Conv layers then a fully connected Q head.

    ``forward(observation, prev_action, prev_reward) -> q [..., output_size]``.
    ``observation`` is ``[..., C, H, W]`` pixels in 0..255 (usually uint8; scaled by
    1/255 inside), with leading dims ``[]``, ``[B]`` or ``[T, B]``.  ``prev_action``
    and ``prev_reward`` are unused.

    Args:
        image_shape: ``(C, H, W)`` of one observation (C = stacked frames).
        output_size: number of actions.
        fc_sizes: hidden width(s) of the head (default 512).
        dueling: use a ``DuelingHeadModel`` head (default False).
        use_maxpool: downsample by max-pooling instead of strided convs (default False).
        channels, kernel_sizes, strides, paddings: conv settings; ``None`` (default)
            uses ``(32, 64, 64)``, ``(8, 4, 3)``, ``(4, 2, 1)``, ``(0, 1, 1)``.
    """

    uses_prev_action_reward = False  # DQN's replay then skips gathering them.

    def __init__(
        self,
        image_shape: Sequence[int],
        output_size: int,
        fc_sizes: int | Sequence[int] = 512,
        dueling: bool = False,
        use_maxpool: bool = False,
        channels: Sequence[int] | None = None,
        kernel_sizes: Sequence[int] | None = None,
        strides: Sequence[int] | None = None,
        paddings: Sequence[int] | None = None,
    ):
        super().__init__()
        self.conv, conv_out_size = atari_dqn_conv(
            image_shape, use_maxpool, channels, kernel_sizes, strides, paddings
        )
        self.head = q_head(conv_out_size, fc_sizes, output_size, dueling)

    def forward(
        self, observation: torch.Tensor, prev_action: torch.Tensor, prev_reward: torch.Tensor
    ) -> torch.Tensor:
        lead_dim, T, B, img_shape = infer_leading_dims(observation, 3)
        img = observation.reshape(T * B, *img_shape).to(torch.float32) * (1.0 / 255)
        q = self.head(self.conv(img).reshape(T * B, -1))
        return restore_leading_dims(q, lead_dim, T, B)
