"""The algorithm interface: turn sample batches (or a replay buffer) into parameter updates.

An algorithm never knows how samples were gathered.  The runner calls, in order:

1. ``initialize(agent, n_itr, batch_spec, mid_batch_reset, examples, world_size, rank)``
   (or ``async_initialize`` for asynchronous sampling, then ``optim_initialize``),
2. ``optimize_agent(itr, samples)`` once per iteration, logging the returned
   ``OptInfo`` (a namedtuple of lists, one entry per gradient step),
3. ``optim_state_dict()`` when saving a snapshot, ``load_optim_state_dict`` on resume.
"""

from __future__ import annotations

from typing import Any

from rlpyt.algos.optim import clip_grad_norm, make_optimizer
from rlpyt.utils.quick_args import KeywordCheckedInit

__all__ = ["RlAlgorithm", "clip_grad_norm", "make_optimizer"]

# Re-exported: the optimizer helpers live in rlpyt.algos.optim.

class RlAlgorithm(KeywordCheckedInit):
    """Base class of every algorithm.

    Class attributes:
        opt_info_fields: names of the diagnostics ``optimize_agent`` returns.
        bootstrap_value: when True the sampler also records ``bootstrap_value`` and
            ``timeout_value`` (``AgentSamplesBsv``), needed by on-policy return estimates.
        update_counter: gradient steps taken so far (instances count their own).
    """

    opt_info_fields: tuple[str, ...] = ()
    bootstrap_value = False
    update_counter = 0

    def initialize(
        self,
        agent,
        n_itr: int,
        batch_spec,
        mid_batch_reset: bool = False,
        examples=None,
        world_size: int = 1,
        rank: int = 0,
    ) -> None:
        """Attach the agent and build the optimizer (synchronous runners).

        Args:
            agent: the initialized agent whose ``parameters()`` are trained.
            n_itr: number of ``optimize_agent`` calls the runner will make.
            batch_spec: the sampler's ``BatchSpec(T, B)`` (per rank).
            mid_batch_reset: True if envs reset as soon as an episode ends
                (reset collectors); False for wait-reset collection, where data after
                an env's first done in a batch is invalid.
            examples: dict-like of single-step example samples (replay allocation).
            world_size: number of data-parallel replicas (``SyncRl``).
            rank: index of this replica.
        """
        raise NotImplementedError(f"{type(self).__name__} does not implement initialize")

    def async_initialize(
        self,
        agent,
        sampler_n_itr: int,
        batch_spec,
        mid_batch_reset: bool,
        examples,
        world_size: int = 1,
    ):
        """Set up before the sampler processes start (asynchronous runners).

        Returns the replay buffer the sampler writes into.
        """
        raise NotImplementedError(
            f"{type(self).__name__} does not support asynchronous sampling "
            f"(async_initialize); use a synchronous runner such as MinibatchRl"
        )

    def optim_initialize(self, rank: int = 0) -> None:
        """Build the optimizer (in the optimizer process, for async runners)."""
        raise NotImplementedError(f"{type(self).__name__} does not implement optim_initialize")

    def optimize_agent(self, itr: int, samples=None, sampler_itr: int | None = None):
        """Train on ``samples`` (or the replay buffer); return an ``OptInfo`` of lists."""
        raise NotImplementedError(f"{type(self).__name__} does not implement optimize_agent")

    def optim_state_dict(self) -> dict:
        """Optimizer state (and any schedule state) for snapshots."""
        return self.optimizer.state_dict()

    def load_optim_state_dict(self, state_dict: dict) -> None:
        self.optimizer.load_state_dict(state_dict)

    def state_dict(self) -> dict[str, Any]:
        """Everything the algorithm needs to resume exactly: optimizer and update count."""
        return {"optim": self.optim_state_dict(), "update_counter": self.update_counter}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        missing = {"optim", "update_counter"} - set(state_dict)
        if missing:
            raise KeyError(
                f"{type(self).__name__}.load_state_dict: state_dict lacks {sorted(missing)} "
                f"(has {sorted(state_dict)}); pass what state_dict() returned"
            )
        self.load_optim_state_dict(state_dict["optim"])
        self.update_counter = state_dict["update_counter"]

    @property
    def batch_size(self) -> int:
        """Samples per gradient step."""
        return self._batch_size
