"""Feed-forward actor-critic for Atari frames (conv trunk, policy and value heads)."""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F

from rlpyt.models.conv2d import Conv2dHeadModel
from rlpyt.models.pg.mlp import HIDDEN_GAIN, POLICY_GAIN, VALUE_GAIN
from rlpyt.models.running_mean_std import ObservationNormalizerMixin
from rlpyt.models.utils import orthogonal_init_
from rlpyt.utils.tensor import infer_leading_dims, restore_leading_dims

# The A3C-era Atari conv net (Mnih et al. 2016), sized for 84x84 inputs.
DEFAULT_CHANNELS = (16, 32)
DEFAULT_KERNEL_SIZES = (8, 4)
DEFAULT_STRIDES = (4, 2)
DEFAULT_PADDINGS = (0, 1)


def atari_conv_kwargs(channels, kernel_sizes, strides, paddings) -> dict:
    """Conv settings with the defaults filled in for those given as ``None``."""
    return dict(
        channels=DEFAULT_CHANNELS if channels is None else channels,
        kernel_sizes=DEFAULT_KERNEL_SIZES if kernel_sizes is None else kernel_sizes,
        strides=DEFAULT_STRIDES if strides is None else strides,
        paddings=DEFAULT_PADDINGS if paddings is None else paddings,
    )


def orthogonal_init_heads_(conv: torch.nn.Module, pi: torch.nn.Linear,
                           value: torch.nn.Linear) -> None:
    """The PPO reference code's init of an Atari actor-critic: orthogonal weights and zero
    biases, gain sqrt(2) in the conv torso, 0.01 on the policy (a uniform first policy),
    1 on the value head."""
    for layer in conv.modules():
        if isinstance(layer, (torch.nn.Conv2d, torch.nn.Linear)):
            orthogonal_init_(layer, HIDDEN_GAIN)
    orthogonal_init_(pi, POLICY_GAIN)
    orthogonal_init_(value, VALUE_GAIN)


def model_pixels(model: ObservationNormalizerMixin, image: torch.Tensor) -> torch.Tensor:
    """A batch of 0..255 frames as the conv's float32 input: normalised by the model's
    running pixel statistics when it has them, else scaled by 1/255."""
    img = image.to(torch.float32)
    return img * (1.0 / 255) if model.obs_rms is None else model.normalize_obs(img)


class AtariFfModel(ObservationNormalizerMixin, torch.nn.Module):
    """Conv layers and a fully connected layer shared by a softmax policy and a value head.

    ``forward(image, prev_action, prev_reward) -> (pi, v)``: ``image`` is ``[..., C, H, W]``
    with pixel values in 0..255 (any dtype, usually uint8; the model scales by 1/255);
    ``pi`` is ``[..., output_size]`` action probabilities and ``v`` is ``[...]``.  Leading
    dims ``[]``, ``[B]`` or ``[T, B]`` are kept.  ``prev_action`` and ``prev_reward`` are
    accepted for the common agent interface and unused.

    Args:
        image_shape: ``(C, H, W)`` of one observation (C = stacked frames).
        output_size: number of discrete actions.
        fc_sizes: width(s) of the fully connected layer(s) after the convs (default 512).
        use_maxpool: downsample with max-pooling instead of strided convs (default False).
        channels, kernel_sizes, strides, paddings: conv settings; ``None`` (default) uses
            ``(16, 32)``, ``(8, 4)``, ``(4, 2)``, ``(0, 1)``.
        orthogonal_init: orthogonal weights and zero biases, gain sqrt(2) in the torso,
            0.01 on the policy (a uniform first policy) and 1 on the value head, as the
            PPO reference code (OpenAI baselines, CleanRL) initializes it (default True).
            False keeps torch's defaults, under which the torso's features on Pong
            frames are much smaller and PPO's preset learns Pong far more slowly
            (docs/notes/pong.md, "The init", has the runs).
        normalize_observation: normalise every pixel of the stack by its running mean and
            variance (updated by ``update_obs_rms``, which PG algorithms call on each
            training batch) instead of scaling by 1/255, as Sample Factory's Atari
            defaults do (``normalize_input``): the static background becomes 0 and what
            moves (ball, paddles) stands out (default False).
        norm_obs_clip: bound of the normalised pixels (default 5, Sample Factory's).
        norm_obs_var_clip: lower bound on a pixel's variance (in 0..255 units) used to
            normalise (default 1e-6).
    """

    def __init__(
        self,
        image_shape: Sequence[int],
        output_size: int,
        fc_sizes: int | Sequence[int] = 512,
        use_maxpool: bool = False,
        channels: Sequence[int] | None = None,
        kernel_sizes: Sequence[int] | None = None,
        strides: Sequence[int] | None = None,
        paddings: Sequence[int] | None = None,
        orthogonal_init: bool = True,
        normalize_observation: bool = False,
        norm_obs_clip: float = 5.0,
        norm_obs_var_clip: float = 1e-6,
    ):
        super().__init__()
        self.init_observation_normalizer(
            image_shape, normalize_observation, norm_obs_clip, norm_obs_var_clip
        )
        self.conv = Conv2dHeadModel(
            image_shape=image_shape,
            hidden_sizes=fc_sizes,
            use_maxpool=use_maxpool,
            **atari_conv_kwargs(channels, kernel_sizes, strides, paddings),
        )
        self.pi = torch.nn.Linear(self.conv.output_size, output_size)
        self.value = torch.nn.Linear(self.conv.output_size, 1)
        if orthogonal_init:
            orthogonal_init_heads_(self.conv, self.pi, self.value)

    def forward(
        self, image: torch.Tensor, prev_action: torch.Tensor, prev_reward: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        lead_dim, T, B, img_shape = infer_leading_dims(image, 3)
        features = self.conv(model_pixels(self, image.reshape(T * B, *img_shape)))
        pi = F.softmax(self.pi(features), dim=-1)
        v = self.value(features).squeeze(-1)
        return restore_leading_dims((pi, v), lead_dim, T, B)
