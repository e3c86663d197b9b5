"""Recurrent actor-critic for Atari frames: conv trunk, LSTM, policy and value heads."""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F

from rlpyt.models.conv2d import Conv2dHeadModel
from rlpyt.models.pg.atari_ff_model import (
    atari_conv_kwargs,
    model_pixels,
    orthogonal_init_heads_,
)
from rlpyt.models.rnn import RnnState, prev_action_features, run_lstm
from rlpyt.models.running_mean_std import ObservationNormalizerMixin
from rlpyt.models.utils import orthogonal_init_lstm_
from rlpyt.utils.tensor import infer_leading_dims, restore_leading_dims

__all__ = ["AtariLstmModel", "RnnState"]


class AtariLstmModel(ObservationNormalizerMixin, torch.nn.Module):
    """Conv layers and a fully connected layer feed an LSTM, together with the previous action
    (one-hot) and previous reward; the LSTM output feeds a softmax policy and a value head.

    ``forward(image, prev_action, prev_reward, init_rnn_state) -> (pi, v, next_rnn_state)``:
    ``image`` is ``[T, B, C, H, W]`` (or ``[B, ...]`` / ``[...]``, taken as T=1) with pixel
    values in 0..255 (scaled by 1/255 inside, or normalised); ``prev_action`` holds
    integer action indexes with the same leading dims; ``init_rnn_state`` is
    ``RnnState(h, c)`` of ``[N, B, H]`` (``None``: zeros).  Returns ``pi``
    ``[..., output_size]`` and ``v`` ``[...]`` with the input's leading dims, and
    ``next_rnn_state`` as ``RnnState`` of ``[N, B, H]``.

    Args:
        image_shape: ``(C, H, W)`` of one observation.
        output_size: number of discrete actions.
        fc_sizes: width(s) of the fully connected layer(s) after the convs (default 512).
        lstm_size: LSTM hidden size (default 512).
        use_maxpool, channels, kernel_sizes, strides, paddings: as ``AtariFfModel``.
        orthogonal_init: ``AtariFfModel``'s orthogonal init of the torso and heads, and
            orthogonal weights (gain 1) with zero biases in the LSTM, as CleanRL's
            ``ppo_atari_lstm.py`` (after OpenAI baselines) initializes it (default True).
            False keeps torch's defaults.
        normalize_observation, norm_obs_clip, norm_obs_var_clip: per-pixel running
            normalisation in place of the 1/255 scale, as ``AtariFfModel`` (default False).
    """

    def __init__(
        self,
        image_shape: Sequence[int],
        output_size: int,
        fc_sizes: int | Sequence[int] = 512,
        lstm_size: int = 512,
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
        self.output_size = output_size
        self.conv = Conv2dHeadModel(
            image_shape=image_shape,
            hidden_sizes=fc_sizes,
            use_maxpool=use_maxpool,
            **atari_conv_kwargs(channels, kernel_sizes, strides, paddings),
        )
        self.lstm = torch.nn.LSTM(self.conv.output_size + output_size + 1, lstm_size)
        self.pi = torch.nn.Linear(lstm_size, output_size)
        self.value = torch.nn.Linear(lstm_size, 1)
        if orthogonal_init:
            orthogonal_init_heads_(self.conv, self.pi, self.value)
            orthogonal_init_lstm_(self.lstm)

    def forward(
        self,
        image: torch.Tensor,
        prev_action: torch.Tensor,
        prev_reward: torch.Tensor,
        init_rnn_state: RnnState | None,
    ) -> tuple[torch.Tensor, torch.Tensor, RnnState]:
        lead_dim, T, B, img_shape = infer_leading_dims(image, 3)
        features = self.conv(model_pixels(self, image.reshape(T * B, *img_shape)))
        features = features.reshape(T, B, -1)
        lstm_input = torch.cat(
            [
                features,
                prev_action_features(
                    prev_action, T, B, self.output_size, discrete=True, dtype=features.dtype
                ),
                prev_reward.reshape(T, B, 1).to(features.dtype),
            ],
            dim=2,
        )
        lstm_out, next_rnn_state = run_lstm(self.lstm, lstm_input, init_rnn_state)
        lstm_out = lstm_out.reshape(T * B, -1)
        pi = F.softmax(self.pi(lstm_out), dim=-1)
        v = self.value(lstm_out).squeeze(-1)
        pi, v = restore_leading_dims((pi, v), lead_dim, T, B)
        return pi, v, next_rnn_state
