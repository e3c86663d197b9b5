"""Recurrent-state schema and LSTM plumbing shared by the recurrent models."""

from __future__ import annotations

import torch

from rlpyt.utils.collections import namedarraytuple
from rlpyt.utils.tensor import to_onehot

# Hidden and cell state of an LSTM, each [N, B, H] (N = layers, B = batch, H = hidden size).
RnnState = namedarraytuple("RnnState", ["h", "c"], module=__name__)


def run_lstm(
    lstm: torch.nn.LSTM, lstm_input: torch.Tensor, init_rnn_state: RnnState | None
) -> tuple[torch.Tensor, RnnState]:
    """Run ``lstm`` (built with the default ``batch_first=False``) over ``lstm_input`` of shape
    ``[T, B, F]`` from ``init_rnn_state`` (``None`` means zeros); return outputs ``[T, B, H]``
    and the state after the last step as ``RnnState(h, c)`` of ``[N, B, H]``."""
    if init_rnn_state is None:
        output, (h, c) = lstm(lstm_input)
    else:
        expected = (lstm.num_layers, lstm_input.shape[1], lstm.hidden_size)
        if tuple(init_rnn_state.h.shape) != expected or tuple(init_rnn_state.c.shape) != expected:
            raise ValueError(
                f"init_rnn_state must hold h and c of shape [N, B, H] = {list(expected)}, got "
                f"h {list(init_rnn_state.h.shape)} and c {list(init_rnn_state.c.shape)}"
            )
        output, (h, c) = lstm(lstm_input, (init_rnn_state.h, init_rnn_state.c))
    return output, RnnState(h=h, c=c)


def prev_action_features(
    prev_action: torch.Tensor,
    T: int,
    B: int,
    action_size: int,
    discrete: bool,
    dtype: torch.dtype = torch.float32,
) -> torch.Tensor:
    """Previous actions as ``dtype`` features ``[T, B, action_size]`` for a recurrent input.

    Discrete actions arrive as integer indexes and are one-hot encoded; a floating-point
    ``prev_action`` with a last dim of ``action_size`` is taken as already one-hot.  Continuous
    actions are used as they are.
    """
    if discrete and not prev_action.is_floating_point():
        return to_onehot(prev_action.reshape(T, B), action_size, dtype=dtype)
    if prev_action.numel() != T * B * action_size:
        raise ValueError(
            f"prev_action of shape {list(prev_action.shape)} does not fit leading dims "
            f"[T={T}, B={B}] with action_size={action_size}"
        )
    return prev_action.reshape(T, B, action_size).to(dtype)


def recurrent_q_values(
    lstm: torch.nn.LSTM,
    head: torch.nn.Module,
    features: torch.Tensor,
    prev_action: torch.Tensor,
    prev_reward: torch.Tensor,
    n_actions: int,
    init_rnn_state: RnnState | None,
) -> tuple[torch.Tensor, RnnState]:
    """The recurrent part of an R2D1 Q-network: ``features`` ``[T, B, F]`` with the one-hot
    previous action and the previous reward through ``lstm``, then ``head``.

    Returns ``(q [T * B, n_actions], next_rnn_state)``.
    """
    T, B = features.shape[:2]
    lstm_input = torch.cat(
        [
            features,
            prev_action_features(prev_action, T, B, n_actions, discrete=True,
                                 dtype=features.dtype),
            prev_reward.reshape(T, B, 1).to(features.dtype),
        ],
        dim=2,
    )
    lstm_out, next_rnn_state = run_lstm(lstm, lstm_input, init_rnn_state)
    return head(lstm_out.reshape(T * B, -1)), next_rnn_state
