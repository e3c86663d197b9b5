"""Running mean and variance of a data stream, for observation normalisation."""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.distributed as dist


def _distributed_world() -> bool:
    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


def _all_reduced(count: torch.Tensor, mean: torch.Tensor, m2: torch.Tensor
                 ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(count, mean, M2) of every replica's batch together: Chan et al.'s combination,
    each replica's M2 moved to the global mean before it is summed."""
    count_and_sum = torch.cat([count.reshape(1), (mean * count).reshape(-1)])
    dist.all_reduce(count_and_sum)
    total = count_and_sum[0]
    if total.item() == 0:
        return total, mean, m2
    global_mean = count_and_sum[1:].reshape(mean.shape) / total
    m2 = m2 + count * (mean - global_mean) ** 2
    dist.all_reduce(m2)
    return total, global_mean, m2


# Rows of bytes summed at a time in float32: 64 * 255**2 < 2**24, so a chunk's sums of
# values and of squares are whole numbers float32 holds exactly.
_EXACT_FLOAT32_ROWS = 64


def _byte_moments(batch: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(mean, M2) in float64 of ``batch`` ``[N, *shape]`` of 8-bit integers (image frames).

    The sums of the values and of their squares are exact integers (chunks of rows summed
    in float32, the chunks added in float64), so ``M2 = sum(x^2) - sum(x) * mean`` loses
    nothing to cancellation beyond float64's last bit.  Chunks of rows stay in cache: a
    learner folds in a batch of 1,024 frames (29M bytes) per update.
    """
    total = torch.zeros(batch.shape[1:], dtype=torch.float64, device=batch.device)
    total_sq = torch.zeros_like(total)
    for start in range(0, batch.shape[0], _EXACT_FLOAT32_ROWS):
        chunk = batch[start:start + _EXACT_FLOAT32_ROWS].to(torch.float32)
        total += chunk.sum(dim=0)
        total_sq += chunk.mul_(chunk).sum(dim=0)
    mean = total / batch.shape[0]
    return mean, (total_sq - total * mean).clamp_(min=0)


def _float64_moments(batch: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(mean, M2) of ``batch`` ``[N, *shape]`` in float64, in two passes: squared
    deviations from the batch mean keep a feature with a large offset and a small spread,
    which ``E[x^2] - E[x]^2`` would lose."""
    batch = batch.to(torch.float64)
    mean = batch.mean(dim=0)
    return mean, ((batch - mean) ** 2).sum(dim=0)


class RunningMeanStdModel(torch.nn.Module):
    """Tracks the mean and (population) variance of every element of ``shape``.

    ``update(x)`` folds a batch ``[..., *shape]`` into the statistics with Chan et al.'s
    parallel combination of (count, mean, M2), which is exact and stable however the data is
    split into batches.  When ``torch.distributed`` is initialised with more than one process,
    the batch statistics are all-reduced first, so every replica holds identical numbers; all
    replicas must then call ``update`` together.  ``forward(x)`` returns the normalised
    ``(x - mean) / sqrt(max(var, min_var))``, clipped to ``[-clip, clip]`` if ``clip`` is set.

    The statistics are float64 buffers (saved in ``state_dict``, moved by ``.to``).  A
    batch's own moments are taken in float64 too; for 8-bit data (image frames) they come
    from exact sums of the values and their squares.  Before the first update the mean is
    0 and the variance 1, so ``forward`` is the identity.

    Args:
        shape: shape of one data point (e.g. an observation).
        min_var: lower bound on the variance used to normalise (default 1e-6), avoiding a
            division by ~0 for constant features.
        clip: if given, bound of the normalised output (default ``None``: no clipping).
    """

    def __init__(
        self, shape: int | Sequence[int], min_var: float = 1e-6, clip: float | None = None
    ):
        super().__init__()
        self.shape = (shape,) if isinstance(shape, int) else tuple(shape)
        if min_var < 0:
            raise ValueError(f"min_var must be >= 0, got {min_var}")
        if clip is not None and clip <= 0:
            raise ValueError(f"clip must be positive or None, got {clip}")
        self.min_var = min_var
        self.clip = clip
        self.register_buffer("mean", torch.zeros(self.shape, dtype=torch.float64))
        self.register_buffer("var", torch.ones(self.shape, dtype=torch.float64))
        self.register_buffer("count", torch.zeros((), dtype=torch.float64))

    @property
    def std(self) -> torch.Tensor:
        """The standard deviation ``forward`` divides by: ``sqrt(max(var, min_var))``."""
        return self.var.clamp(min=self.min_var).sqrt()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # In the output's dtype: the statistics are cast (one value per element of
        # ``shape``), not the batch, which for Atari frames is 28k values per row.
        out_dtype = x.dtype if x.is_floating_point() else torch.get_default_dtype()
        mean = self.mean.to(out_dtype)
        std = self.std.to(out_dtype)
        # One new tensor, then in place: a learner normalizes every minibatch of frames,
        # and a new tensor per operation took three times as long.  ``x`` itself is
        # never written (``to`` returns ``x`` when it already has the dtype).
        if x.dtype == out_dtype:
            normalised = x - mean
        else:
            normalised = x.to(out_dtype).sub_(mean)
        normalised.div_(std)
        if self.clip is not None:
            normalised.clamp_(-self.clip, self.clip)
        return normalised

    @torch.no_grad()
    def update(self, x: torch.Tensor) -> None:
        """Fold the batch ``x`` of shape ``[..., *shape]`` into the running statistics."""
        if tuple(x.shape[x.dim() - len(self.shape) :]) != self.shape:
            raise ValueError(
                f"RunningMeanStdModel.update expects x of shape [..., {self.shape}], "
                f"got {tuple(x.shape)}"
            )
        batch = x.reshape(-1, *self.shape).to(device=self.mean.device)
        batch_count = torch.tensor(float(batch.shape[0]), dtype=torch.float64,
                                   device=batch.device)
        if batch.shape[0] == 0:  # A replica with no data still joins the all-reduces below.
            batch_mean = torch.zeros_like(self.mean)
            batch_m2 = torch.zeros_like(self.mean)
        elif batch.dtype in (torch.uint8, torch.int8):
            batch_mean, batch_m2 = _byte_moments(batch)
        else:
            batch_mean, batch_m2 = _float64_moments(batch)
        if _distributed_world():
            batch_count, batch_mean, batch_m2 = _all_reduced(batch_count, batch_mean, batch_m2)
        if batch_count.item() == 0:
            return
        self._combine(batch_count, batch_mean, batch_m2)

    def _combine(
        self, batch_count: torch.Tensor, batch_mean: torch.Tensor, batch_m2: torch.Tensor
    ) -> None:
        """Chan et al. (1979): merge (count, mean, M2) of the batch into the running ones."""
        total = self.count + batch_count
        delta = batch_mean - self.mean
        m2 = self.var * self.count + batch_m2 + delta**2 * (self.count * batch_count / total)
        self.mean.add_(delta * (batch_count / total))
        self.var.copy_(m2 / total)
        self.count.copy_(total)


class ObservationNormalizerMixin:
    """Optional observation normalisation for a ``torch.nn.Module`` model.

    Call ``init_observation_normalizer`` in ``__init__``; ``normalize_obs`` in ``forward``
    (identity when disabled).  The statistics change only when the agent or algorithm calls
    ``update_obs_rms(observation)`` explicitly (PG algorithms do so on each training batch),
    never as a side effect of ``forward``.
    """

    obs_rms: RunningMeanStdModel | None

    def init_observation_normalizer(
        self, observation_shape: Sequence[int], enabled: bool, clip: float, var_clip: float
    ) -> None:
        self.obs_rms = (
            RunningMeanStdModel(observation_shape, min_var=var_clip, clip=clip) if enabled else None
        )

    def normalize_obs(self, observation: torch.Tensor) -> torch.Tensor:
        return observation if self.obs_rms is None else self.obs_rms(observation)

    def update_obs_rms(self, observation: torch.Tensor) -> None:
        """Fold a batch of observations ``[..., *observation_shape]`` into the running
        statistics (no-op when normalisation is off)."""
        if self.obs_rms is not None:
            self.obs_rms.update(observation)
