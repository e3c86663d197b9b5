"""The entropy temperature alpha of SAC as a module, so it trains, saves and syncs like a
network (state dicts, ``.to(device)``, DistributedDataParallel)."""

from __future__ import annotations

import math

import torch

__all__ = ["EntropyTemperature"]


class EntropyTemperature(torch.nn.Module):
    """Holds ``log_alpha``; ``forward`` gives the per-sample temperature loss.

    The loss ``-log_alpha * (log_pi + target_entropy)`` (Haarnoja et al. 2018, "Soft
    Actor-Critic Algorithms and Applications", eq. 18, in log space) raises alpha while
    the policy's entropy ``-log_pi`` is below ``target_entropy`` and lowers it above.

    Args:
        initial_alpha: starting temperature (default 1).
    """

    def __init__(self, initial_alpha: float = 1.0):
        super().__init__()
        if not initial_alpha > 0:
            raise ValueError(f"EntropyTemperature: initial_alpha={initial_alpha!r} must be > 0")
        self.log_alpha = torch.nn.Parameter(torch.tensor(math.log(initial_alpha)))

    def forward(self, log_pi: torch.Tensor, target_entropy: float) -> torch.Tensor:
        """Per-sample loss for ``log_pi`` (treated as a constant)."""
        return -self.log_alpha * (log_pi.detach() + target_entropy)

    @property
    def alpha(self) -> torch.Tensor:
        """``exp(log_alpha)``, detached (a 0-dim tensor on the module's device)."""
        return self.log_alpha.detach().exp()

    @torch.no_grad()
    def set_alpha(self, alpha: float) -> None:
        if not alpha > 0:
            raise ValueError(f"EntropyTemperature.set_alpha: alpha={alpha!r} must be > 0")
        self.log_alpha.fill_(math.log(alpha))
