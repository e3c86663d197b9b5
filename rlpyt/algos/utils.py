"""Shared return and advantage math for algorithms.

The implementations live in ``rlpyt.utils.returns`` (layer 1) so that replay
buffers, which sit below algorithms, can use the same n-step code; this module is
the import path algorithms and users know from classic rlpyt.  The composable
return estimators and loss terms for new methods are in ``rlpyt.algos.losses``.
"""

from rlpyt.utils.returns import (
    discount_return,
    discount_return_n_step,
    generalized_advantage_estimation,
    importance_weighted_returns,
    inverse_value_rescale,
    lambda_returns,
    n_step_returns,
    timeout_bootstrapped_reward,
    valid_from_done,
    value_rescale,
    vtrace,
)

__all__ = [
    "discount_return",
    "discount_return_n_step",
    "generalized_advantage_estimation",
    "importance_weighted_returns",
    "inverse_value_rescale",
    "lambda_returns",
    "n_step_returns",
    "timeout_bootstrapped_reward",
    "valid_from_done",
    "value_rescale",
    "vtrace",
]
