"""Return and advantage estimators over ``[T, B]`` batches, for numpy and torch alike.

Every function takes arrays with leading dims ``[T, B]`` (time, batch of envs; a
plain ``[T]`` also works) and is vectorised over ``B``.  Recursions loop over ``T``
backwards, which is short (a sampler batch or a replay sequence).  Arguments may be
numpy arrays or torch tensors (not mixed); the result has the same kind.

``done`` may be boolean or float.  ``done[t]`` means the episode ended *at* step
``t``: nothing from ``t + 1`` on flows into the value of step ``t``.

This module lives in ``rlpyt.utils`` (layer 1) so that replay buffers (n-step
returns) can share it with the algorithms; ``rlpyt.algos.utils`` re-exports it.
"""

from __future__ import annotations

import numpy as np
import torch

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

Array = np.ndarray | torch.Tensor


def _xp(x: Array):
    """The array namespace of ``x``: ``torch`` or ``numpy``."""
    return torch if isinstance(x, torch.Tensor) else np


def _as_dtype(x: Array, dtype) -> Array:
    return x.to(dtype) if isinstance(x, torch.Tensor) else x.astype(dtype)


def _as_float_like(x: Array, like: Array) -> Array:
    """``x`` (e.g. a boolean ``done``) in the float dtype of ``like``."""
    return _as_dtype(x, like.dtype)


def _new_or_dest(dest: Array | None, like: Array, shape=None) -> Array:
    if dest is not None:
        return dest
    xp = _xp(like)
    if shape is None:
        return xp.zeros_like(like)
    return xp.zeros(shape, dtype=like.dtype) if xp is np else like.new_zeros(shape)


_NUMPY_FLOATS = (torch.float32, torch.float64)


def _reverse_scan(base: Array, decay: Array, out: Array, init=0.0) -> Array:
    """``out[t] = base[t] + decay[t] * out[t + 1]`` backwards over ``t``, ``out[T] = init``.

    The one recursion of the estimators below, on ``[B]`` rows.  CPU tensors run it on
    numpy views of the same memory: per-row numpy ops cost a fraction of torch's
    dispatch, with the same float arithmetic (one multiply, one add, no fusing).
    """
    tensors = [x for x in (base, decay, out, init) if isinstance(x, torch.Tensor)]
    if isinstance(out, torch.Tensor) and all(
        x.device.type == "cpu" and x.dtype in _NUMPY_FLOATS and not x.requires_grad
        for x in tensors
    ):
        base, decay, out_np = (x.detach().numpy() for x in (base, decay, out))
        if isinstance(init, torch.Tensor):
            init = init.detach().cpu().numpy()
        _reverse_scan(base, decay, out_np, init)
        return out
    running = init
    for t in reversed(range(len(base))):
        running = base[t] + decay[t] * running
        out[t] = running
    return out


def _next_values(value: Array, bootstrap_value: Array) -> Array:
    """``value[t + 1]`` for every ``t``, with ``value[T] = bootstrap_value``."""
    next_value = _new_or_dest(None, value)
    next_value[:-1] = value[1:]
    next_value[-1] = bootstrap_value
    return next_value


def discount_return(
    reward: Array,
    done: Array,
    bootstrap_value: Array,
    discount: float,
    return_dest: Array | None = None,
) -> Array:
    """Discounted return from every step to the end of the batch.

    ``G[t] = reward[t] + discount * (1 - done[t]) * G[t + 1]`` with
    ``G[T] = bootstrap_value`` (the value of the observation after the batch, ``[B]``).
    Written into ``return_dest`` when given.
    """
    return_ = _new_or_dest(return_dest, reward)
    decay = discount * (1 - _as_float_like(done, reward))
    return _reverse_scan(reward, decay, return_, bootstrap_value)


def generalized_advantage_estimation(
    reward: Array,
    value: Array,
    done: Array,
    bootstrap_value: Array,
    discount: float,
    gae_lambda: float,
    advantage_dest: Array | None = None,
    return_dest: Array | None = None,
) -> tuple[Array, Array]:
    """GAE(lambda) advantages and their value targets (Schulman et al. 2016).

    ``delta[t] = reward[t] + discount * (1 - done[t]) * value[t + 1] - value[t]`` and
    ``A[t] = delta[t] + discount * gae_lambda * (1 - done[t]) * A[t + 1]``, with
    ``value[T] = bootstrap_value``.  Returns ``(advantage, return_)`` where
    ``return_ = advantage + value`` (the lambda-return).  ``gae_lambda=1`` gives the
    discounted return minus ``value``; ``gae_lambda=0`` gives the one-step TD error.
    """
    advantage = _new_or_dest(advantage_dest, reward)
    return_ = _new_or_dest(return_dest, reward)
    not_done = 1 - _as_float_like(done, reward)
    # All TD errors at once; only the advantage recursion runs step by step.
    delta = reward + discount * not_done * _next_values(value, bootstrap_value) - value
    _reverse_scan(delta, discount * gae_lambda * not_done, advantage)
    return_[:] = advantage + value
    return advantage, return_


def lambda_returns(
    reward: Array,
    value: Array,
    done: Array,
    bootstrap_value: Array,
    discount: float,
    lambda_: float,
    return_dest: Array | None = None,
) -> Array:
    """TD(lambda) returns: ``G[t] = reward[t] + discount * (1 - done[t]) * ((1 - lambda_)
    * value[t + 1] + lambda_ * G[t + 1])`` with ``value[T] = G[T] = bootstrap_value``.

    Algebraically the GAE return (``advantage + value``), so it is computed by
    ``generalized_advantage_estimation``: one formula, two names for the two ways
    algorithms ask for it (targets vs advantages).
    """
    _, return_ = generalized_advantage_estimation(
        reward, value, done, bootstrap_value, discount, lambda_, return_dest=return_dest
    )
    return return_


def n_step_returns(
    reward: Array,
    value: Array,
    done: Array,
    bootstrap_value: Array,
    discount: float,
    n_step: int,
) -> Array:
    """Bootstrapped n-step returns of every step of a ``[T, B]`` batch.

    ``G[t] = sum_{k < m} discount**k * reward[t + k] + discount**m * value[t + m]`` with
    ``m = min(n_step, T - t)`` (windows shortened by the batch end bootstrap from
    ``value[T] = bootstrap_value``); the sum stops at the first done in the window and
    then nothing is bootstrapped.  ``n_step=1`` is the one-step TD target, ``n_step >= T``
    the discounted return of ``discount_return``.
    """
    T = reward.shape[0]
    reward_sum, done_n = discount_return_n_step(
        reward, done, n_step, discount, do_truncated=True
    )
    xp = _xp(reward)
    # V(x[t + m]) for every t: value[t + n_step] inside the batch, bootstrap_value past it.
    next_value = _next_values(value, bootstrap_value)  # V(x[t + 1]), t = 0 .. T - 1
    all_values = xp.concatenate if xp is np else torch.cat
    values = all_values([value[:1], next_value])  # V(x[0]) .. V(x[T])
    steps = np.minimum(np.arange(T) + n_step, T)
    index = torch.as_tensor(steps, device=value.device) if xp is torch else steps
    window = steps - np.arange(T)  # m for every t
    scale = discount ** window.astype(np.float64)
    scale = scale.reshape((T,) + (1,) * (reward.ndim - 1))
    if xp is torch:
        scale = torch.as_tensor(scale, dtype=reward.dtype, device=reward.device)
    else:
        scale = scale.astype(reward.dtype)
    return reward_sum + scale * (1 - _as_float_like(done_n, reward)) * values[index]


def discount_return_n_step(
    reward: Array,
    done: Array,
    n_step: int,
    discount: float,
    return_dest: Array | None = None,
    done_n_dest: Array | None = None,
    do_truncated: bool = False,
) -> tuple[Array, Array]:
    """n-step discounted reward sums and their done flags, without bootstrapping.

    ``return_[t] = sum_{k < n_step} discount**k * reward[t + k]``, summing only up to
    (and including) the first done in ``t .. t + n_step - 1``; ``done_n[t]`` says
    whether such a done occurred (then the target must not bootstrap).  Replay
    buffers add ``discount**n_step * (1 - done_n) * Q(s[t + n_step])`` themselves.

    Output length is ``T - n_step + 1`` (only complete windows), or ``T`` with
    ``do_truncated=True``, where the last rows sum the rewards that remain.
    ``done_n`` has the dtype of ``done``.
    """
    if int(n_step) != n_step or n_step < 1:
        raise ValueError(f"discount_return_n_step: n_step={n_step!r} must be an integer >= 1")
    T = reward.shape[0]
    length = T if do_truncated else T - (n_step - 1)
    if length < 1:
        raise ValueError(
            f"discount_return_n_step: {T} time steps are too few for n_step={n_step} "
            f"(need at least n_step, or do_truncated=True)"
        )
    xp = _xp(reward)
    done_f = _as_float_like(done, reward)
    return_ = _new_or_dest(None, reward, (length,) + tuple(reward.shape[1:]))
    done_n = _new_or_dest(None, reward, (length,) + tuple(reward.shape[1:]))
    return_[:] = reward[:length]
    done_n[:] = done_f[:length]
    for k in range(1, n_step):
        rows = min(length, T - k)  # rows t that have a step t + k inside the batch
        if rows < 1:
            break
        return_[:rows] += (discount**k) * reward[k : k + rows] * (1 - done_n[:rows])
        done_n[:rows] = xp.maximum(done_n[:rows], done_f[k : k + rows])
    done_n = _as_dtype(done_n, done.dtype)
    if return_dest is not None:
        return_dest[:] = return_
        return_ = return_dest
    if done_n_dest is not None:
        done_n_dest[:] = done_n
        done_n = done_n_dest
    return return_, done_n


def vtrace(
    reward: Array,
    value: Array,
    done: Array,
    bootstrap_value: Array,
    discount: float,
    log_rho: Array,
    rho_bar: float | None = 1.0,
    c_bar: float | None = 1.0,
    pg_rho_bar: float | None = None,
    lambda_: float = 1.0,
    weight_pg_advantage: bool = True,
) -> tuple[Array, Array]:
    """V-trace value targets and policy-gradient advantages (Espeholt et al. 2018, IMPALA).

    Args:
        reward, value, done: ``[T, B]``; ``value`` is ``V(x[t])`` under the learner.
        bootstrap_value: ``[B]``, ``V(x[T])``.
        discount: gamma.
        log_rho: ``[T, B]`` log importance ratios ``log pi(a|x) - log mu(a|x)`` of the
            learner policy ``pi`` to the behaviour policy ``mu``.
        rho_bar: truncation of the ratio in the TD error (sets the fixed point);
            ``None`` leaves it untruncated.
        c_bar: truncation of the trace-cutting ratio (sets the contraction speed);
            ``None`` leaves it untruncated.
        pg_rho_bar: truncation of the ratio weighting the policy-gradient advantage
            (defaults to ``rho_bar``).
        lambda_: extra trace decay multiplying every ``c`` (1 in the paper).
        weight_pg_advantage: multiply the advantage by ``rho_pg`` (IMPALA's policy
            gradient); False leaves the weight to the loss (APPO's clipped surrogate
            takes the ratio itself), and ``pg_rho_bar`` is unused.

    Returns ``(vs, pg_advantage)``:
    ``vs[t] = V(x[t]) + sum_{s >= t} gamma^(s-t) (prod_{t <= i < s} c[i]) delta[s]``
    with ``delta[s] = rho[s] (r[s] + gamma V(x[s + 1]) - V(x[s]))``, and
    ``pg_advantage[t] = rho_pg[t] (r[t] + gamma vs[t + 1] - V(x[t]))`` (the factor
    ``rho_pg[t]`` only with ``weight_pg_advantage``).  Discounts are zero after a done.
    """
    xp = _xp(reward)
    ratio = xp.exp(log_rho)
    rho = ratio if rho_bar is None else ratio.clip(max=rho_bar)
    c = lambda_ * (ratio if c_bar is None else ratio.clip(max=c_bar))
    discounts = discount * (1 - _as_float_like(done, reward))
    # vs - V obeys the GAE recursion with TD errors weighted by rho and traces by c.
    delta = rho * (reward + discounts * _next_values(value, bootstrap_value) - value)
    vs_minus_v = _reverse_scan(delta, discounts * c, _new_or_dest(None, reward))
    vs = value + vs_minus_v
    pg_advantage = reward + discounts * _next_values(vs, bootstrap_value) - value
    if weight_pg_advantage:
        pg_rho_bar = rho_bar if pg_rho_bar is None else pg_rho_bar
        pg_advantage = (ratio if pg_rho_bar is None else ratio.clip(max=pg_rho_bar)) * pg_advantage
    return vs, pg_advantage


def importance_weighted_returns(
    reward: Array,
    value: Array,
    done: Array,
    bootstrap_value: Array,
    discount: float,
    log_rho: Array,
    rho_bar: float | None = None,
) -> Array:
    """Per-decision importance-weighted returns with the value as control variate
    (Precup et al. 2000), each weight truncated at ``rho_bar`` (None: untruncated).

    ``G[t] = value[t] + rho[t] * (reward[t] + discount * (1 - done[t]) * G[t + 1]
    - value[t])`` with ``G[T] = bootstrap_value`` and ``rho = min(rho_bar,
    exp(log_rho))``.  Unrolled, ``G[t] - value[t]`` sums the TD errors of later steps
    weighted by the product of all ratios up to them, which is V-trace with
    ``c_bar = rho_bar`` (Espeholt et al. 2018, Sec. 4.1): computed by ``vtrace``.
    Unbiased for the target policy when untruncated, with variance growing with the
    products of ratios; truncation trades that variance for bias.
    """
    vs, _ = vtrace(reward, value, done, bootstrap_value, discount, log_rho,
                   rho_bar=rho_bar, c_bar=rho_bar)
    return vs


def valid_from_done(done: Array) -> Array:
    """Float mask ``[T, B]``: 1 up to and including the first done of each column, then 0.

    For wait-reset collection, where an env idles after its episode ends until the
    batch is over: steps after the first done carry no real data.
    """
    xp = _xp(done)
    is_float = done.is_floating_point() if xp is torch else np.issubdtype(done.dtype, np.floating)
    done_f = _as_dtype(done, done.dtype if is_float else xp.float32)
    valid = xp.ones_like(done_f)
    ended_before = xp.cumsum(done_f[:-1], 0).clip(max=1)
    valid[1:] = 1 - ended_before
    return valid


def timeout_bootstrapped_reward(
    reward: Array, timeout: Array, timeout_value: Array, discount: float
) -> Array:
    """``reward + discount * timeout_value * timeout``.

    A time-limit truncation is not a true end: the return should continue with
    ``V(final observation)``.  Adding that bootstrap to the reward of the
    truncated step, while ``done`` still cuts the recursion there (the next step
    belongs to a new episode), gives exactly the right targets.
    """
    return reward + discount * timeout_value * _as_float_like(timeout, reward)


def value_rescale(x: Array, eps: float = 1e-3) -> Array:
    """``h(x) = sign(x) (sqrt(|x| + 1) - 1) + eps x`` (Pohlen et al. 2018; used by R2D2)."""
    xp = _xp(x)
    return xp.sign(x) * (xp.sqrt(xp.abs(x) + 1) - 1) + eps * x


def inverse_value_rescale(x: Array, eps: float = 1e-3) -> Array:
    """Closed-form inverse of ``value_rescale``.

    ``h^-1(x) = sign(x) (((sqrt(1 + 4 eps (|x| + 1 + eps)) - 1) / (2 eps))^2 - 1)``,
    evaluated in the algebraically equal form ``2 m / (sqrt(1 + 4 eps m) + 1)`` with
    ``m = |x| + 1 + eps``, which has no cancellation for small ``eps`` and is
    valid at ``eps = 0``.
    """
    xp = _xp(x)
    m = xp.abs(x) + 1 + eps
    root = 2 * m / (xp.sqrt(1 + 4 * eps * m) + 1)
    return xp.sign(x) * (root**2 - 1)
