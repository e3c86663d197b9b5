"""Publishing model parameters from one process to others: a versioned board in shared memory.

Asynchronous runs train in one process (the optimizer) and act in others (the
samplers).  The optimizer *publishes* its model's state into a ``ParameterBoard``
(tensors in shared memory); each sampler *reads* the board into its own model
between batches, when the version has moved on.

The board is a sequence lock: the writer makes the sequence number odd, copies, and
makes it even again; a reader copies and then checks that the number was even and
unchanged across its copy, retrying otherwise.  Readers therefore never see a mix of
old and new weights, and a reader that dies mid-copy can never block the writer (a
lock held by a killed process would).
"""

from __future__ import annotations

import time

import torch

from rlpyt.models.utils import strip_ddp_state_dict

__all__ = ["ParameterBoard"]

READ_TIMEOUT_S = 30.0  # A consistent read this late means the writer is stuck mid-copy.


class ParameterBoard:
    """A shared-memory copy of a module's ``state_dict`` with a version number.

    Args:
        module: the model whose state (parameters and buffers, e.g. observation
            normalisation statistics) is published.  The board copies its current state
            as version 0.

    Create it before forking the reader processes (or pass it to them as a
    ``Process`` argument); every copy then addresses the same memory.
    """

    def __init__(self, module: torch.nn.Module):
        state = strip_ddp_state_dict(module.state_dict())
        self.tensors = {k: v.detach().to("cpu", copy=True).share_memory_()
                        for k, v in state.items()}
        self._seq = torch.zeros(1, dtype=torch.int64).share_memory_()

    @property
    def version(self) -> int:
        """Number of completed ``publish`` calls."""
        return int(self._seq[0]) // 2

    def restart_at(self, version: int) -> None:
        """Number the current contents ``version`` (a resumed run's versions go on);
        call it before any reader starts."""
        if int(version) != version or version < 0:
            raise ValueError(f"version={version!r} must be an integer >= 0")
        self._seq[0] = 2 * int(version)

    def publish(self, module: torch.nn.Module) -> int:
        """Copy ``module``'s state onto the board (single writer); returns the new version."""
        state = strip_ddp_state_dict(module.state_dict())
        missing = set(self.tensors) - set(state)
        if missing:
            raise KeyError(f"ParameterBoard.publish: the module lacks {sorted(missing)} "
                           f"(the board was made from a different model)")
        self._seq += 1  # Odd: a copy is under way.
        with torch.no_grad():
            for key, board_tensor in self.tensors.items():
                board_tensor.copy_(state[key])
        self._seq += 1
        return self.version

    def read_into(self, module: torch.nn.Module, newer_than: int = -1) -> int | None:
        """Load the board into ``module`` if its version is above ``newer_than``.

        Returns the version loaded, or None when there was nothing newer.  Raises
        ``TimeoutError`` if no consistent copy could be read within ``READ_TIMEOUT_S``.
        """
        deadline = time.monotonic() + READ_TIMEOUT_S
        while True:
            before = int(self._seq[0])
            if before // 2 <= newer_than and before % 2 == 0:
                return None
            if before % 2 == 0:
                module.load_state_dict(self.tensors)
                if int(self._seq[0]) == before:
                    return before // 2
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"ParameterBoard.read_into: no consistent copy within {READ_TIMEOUT_S}s "
                    f"(the publishing process may have stopped in the middle of a copy)")
            time.sleep(0.0005)  # The writer is mid-copy: let it finish.
