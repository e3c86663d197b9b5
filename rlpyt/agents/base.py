"""Agent base classes: models plus distributions, device placement, parameter sync.

An agent turns ``(observation, prev_action, prev_reward)`` into actions.  It owns a
torch model and an action distribution, knows nothing about the sampler, and
exposes everything an algorithm trains (``parameters``, ``__call__``) or a runner
saves (``state_dict``).
"""

from __future__ import annotations

import torch

from rlpyt.models.utils import set_train_mode, strip_ddp_state_dict, unwrap_parallel
from rlpyt.utils.buffer import buffer_to
from rlpyt.utils.collections import namedarraytuple
from rlpyt.utils.quick_args import KeywordCheckedInit

__all__ = [
    "AgentInputs",
    "AgentInputsRnn",
    "AgentStep",
    "AlternatingRecurrentAgentMixin",
    "BaseAgent",
    "RecurrentAgentMixin",
]

AgentInputs = namedarraytuple("AgentInputs", ["observation", "prev_action", "prev_reward"])
AgentInputsRnn = namedarraytuple(
    "AgentInputsRnn", ["observation", "prev_action", "prev_reward", "init_rnn_state"]
)
AgentStep = namedarraytuple("AgentStep", ["action", "agent_info"])

_MODES = ("train", "sample", "eval")


class BaseAgent(KeywordCheckedInit):
    """Holds a model and a distribution; subclasses define ``__call__`` and ``step``.

    Args:
        ModelCls: torch ``nn.Module`` class; ``None`` uses the agent's default model.
        model_kwargs: keyword arguments for ``ModelCls`` on top of those derived
            from the env spaces (``make_env_to_model_kwargs``).  Default ``None``.
        initial_model_state_dict: loaded into the model at ``initialize``.  Default ``None``.
    """

    recurrent = False
    alternating = False

    def __init__(self, ModelCls=None, model_kwargs=None, initial_model_state_dict=None):
        self.ModelCls = ModelCls if ModelCls is not None else self.default_model_cls()
        self.model_kwargs = dict(model_kwargs or {})
        self.initial_model_state_dict = initial_model_state_dict
        self.model = None
        self.shared_model = None
        self.distribution = None
        self.device = torch.device("cpu")
        self.env_spaces = None
        self.env_model_kwargs = {}
        self.share_memory = False
        self._mode = None
        self.param_board = None  # Async runs: where the optimizer publishes parameters.
        self._recv_version = -1

    # ---- construction ------------------------------------------------------------
    def default_model_cls(self):
        """Model class used when ``ModelCls`` is None; subclasses with a default override."""
        raise ValueError(f"{type(self).__name__} needs a ModelCls (it has no default model)")

    def make_env_to_model_kwargs(self, env_spaces) -> dict:
        """Model keyword arguments derived from the env spaces (e.g. input/output sizes)."""
        return {}

    def check_env_spaces(self, env_spaces) -> None:
        """Raise a clear error if the agent cannot act in these spaces."""

    def initialize(self, env_spaces, share_memory=False, global_B=1, env_ranks=None):
        """Build the model for ``env_spaces``.

        Args:
            env_spaces: ``EnvSpaces(observation, action)`` of the env.
            share_memory: put parameters in shared memory (parallel CPU sampling).
            global_B: total number of sampling envs across all workers/ranks.
            env_ranks: global indices of the envs this agent instance steps.
        """
        self.check_env_spaces(env_spaces)
        self.env_spaces = env_spaces
        self.env_model_kwargs = self.make_env_to_model_kwargs(env_spaces)
        self.model = self.ModelCls(**self.env_model_kwargs, **self.model_kwargs)
        if self.initial_model_state_dict is not None:
            self.model.load_state_dict(self.initial_model_state_dict)
        self.share_memory = share_memory
        if share_memory:
            self.model.share_memory()
            self.shared_model = self.model
        self.global_B = global_B
        self.env_ranks = list(range(global_B)) if env_ranks is None else list(env_ranks)

    # ---- stepping (subclasses) ---------------------------------------------------
    def __call__(self, observation, prev_action, prev_reward):
        """Training-time forward pass on ``[T, B]`` (or ``[B]``) inputs."""
        raise NotImplementedError

    def step(self, observation, prev_action, prev_reward) -> AgentStep:
        """Sampling-time action selection; inputs and outputs are CPU torch tensors."""
        raise NotImplementedError

    def reset(self):
        """Called when all envs reset (start of sampling or evaluation)."""

    def reset_one(self, idx):
        """Called when env ``idx`` resets; recurrent agents clear its state."""

    def act_on_envs(self, envs: slice | None) -> None:
        """The next ``step`` calls act on envs ``envs`` of the agent's ``[B]`` batch only
        (the alternating samplers step each half of their envs in turn); None: on all
        of them.  Agents with per-env settings (per-env epsilons) take that slice of
        them; others have nothing to do."""

    # ---- devices and parallelism ---------------------------------------------------
    def to_device(self, cuda_idx=None):
        """Move the model to GPU ``cuda_idx`` (None: stay on CPU).

        A model in shared memory stays there as ``shared_model`` for the sampler
        workers; ``sync_shared_memory`` copies trained parameters back into it.
        """
        if cuda_idx is None:
            return
        if self.shared_model is not None:
            self.model = self.ModelCls(**self.env_model_kwargs, **self.model_kwargs)
            self.model.load_state_dict(self.shared_model.state_dict())
        self.device = torch.device("cuda", index=cuda_idx)
        self.model.to(self.device)

    def learner_channels_last(self) -> bool:
        """Keep the model's convolution weights in channels-last memory order, for a
        learner on the CPU whose model no sampler shares (the asynchronous runner's).

        oneDNN's convolutions, the backward pass above all, run faster with channels-last
        weights on x86 CPUs; it is the same arithmetic in another order.  Acting on a few
        frames runs slower that way, so the samplers' copies keep the default order
        (``ParameterBoard`` copies values, whatever the order).  The parameters stay the
        same ``Parameter`` objects, so an optimizer made before or after sees them.
        Returns whether the model has 4-d weights, now in channels-last order.
        """
        if self.device.type != "cpu" or self.model is self.shared_model:
            return False
        model = unwrap_parallel(self.model)
        if not any(p.dim() == 4 for p in model.parameters()):
            return False
        model.to(memory_format=torch.channels_last)
        return True

    def data_parallel(self):
        """Wrap the model in ``DistributedDataParallel`` (torch.distributed must be initialised).

        Returns the device ids used (``None`` on CPU).
        """
        from torch.nn.parallel import DistributedDataParallel as DDP

        if self.device.type == "cpu":
            self.model = DDP(self.model)
            return None
        self.model = DDP(self.model, device_ids=[self.device.index], output_device=self.device.index)
        return [self.device.index]

    def sync_shared_memory(self):
        """Copy the training model's parameters into the shared sampling model, if separate."""
        if self.shared_model is not None and self.shared_model is not self.model:
            self.shared_model.load_state_dict(strip_ddp_state_dict(self.model.state_dict()))

    def async_cpu(self, share_memory=True):
        """Asynchronous runs: make the ``ParameterBoard`` the samplers read from.

        Called by ``AsyncRl`` in the optimizer process before the sampler processes
        start, while the model is still on the CPU.  ``share_memory=False`` keeps the
        board private (single-process tests of the publishing path).
        """
        from rlpyt.agents.param_board import ParameterBoard

        self.param_board = ParameterBoard(self.model)
        if not share_memory:  # A private board: plain tensors, same protocol.
            board = self.param_board
            board.tensors = {k: v.clone() for k, v in board.tensors.items()}
            board._seq = board._seq.clone()
        self._recv_version = -1

    def send_shared_memory(self):
        """Optimizer side of async sampling: publish the model's parameters (and buffers)."""
        board = getattr(self, "param_board", None)
        if board is not None:
            board.publish(self.model)

    def recv_shared_memory(self) -> bool:
        """Sampler side of async sampling: load parameters published since the last call.

        Returns whether new parameters were loaded.  The copy is all-or-nothing: a
        model never acts with a mix of two versions.
        """
        board = getattr(self, "param_board", None)
        if board is None:
            return False
        loaded = board.read_into(self.model, newer_than=self._recv_version)
        if loaded is None:
            return False
        self._recv_version = loaded
        return True

    @property
    def param_version(self) -> int:
        """Version of the parameters this agent acts with (async runs; -1 otherwise)."""
        return getattr(self, "_recv_version", -1)

    # ---- modes -------------------------------------------------------------------
    def train_mode(self, itr):
        """Before an optimization step: gradients and dropout on."""
        set_train_mode(self.model, True)
        self._mode = "train"

    def sample_mode(self, itr):
        """Before collecting training samples (exploration on)."""
        set_train_mode(self.model, False)
        self._mode = "sample"

    def eval_mode(self, itr):
        """Before evaluation episodes (exploration off or at its evaluation setting)."""
        set_train_mode(self.model, False)
        self._mode = "eval"

    # ---- parameters and state ----------------------------------------------------------
    def parameters(self):
        return self.model.parameters()

    def state_dict(self) -> dict:
        """Everything the agent owns that training changes (subclasses extend)."""
        return self.model.state_dict()

    def load_state_dict(self, state_dict, strict: bool = True):
        # Keys carry no "module." prefix; a DDP-wrapped model (SyncRl) loads into its module.
        unwrap_parallel(self.model).load_state_dict(strip_ddp_state_dict(state_dict),
                                                    strict=strict)

    def to_model_device(self, *tensors):
        return tuple(None if t is None else t.to(self.device) for t in tensors)

    def model_inputs(self, *inputs) -> tuple:
        """``inputs`` (tensors, buffers of them or None) on the model's device.

        A CPU agent returns them as they are: moving to the same device would only
        cost time on every sampler step.
        """
        if self.device.type == "cpu":
            return inputs
        return buffer_to(inputs, self.device)


class RecurrentAgentMixin:
    """Keeps the model's recurrent state between ``step`` calls.

    The state is a namedarraytuple of ``[N, B, H]`` tensors (N layers, B envs).
    ``reset_one(b)`` zeroes env ``b``'s state when its episode ends.  Sampling and
    evaluation keep separate states, so evaluating mid-training never disturbs the
    sampling envs' memory.  Each step records ``prev_rnn_state`` (as ``[B, N, H]``)
    in ``agent_info`` for training-time replay of the sequence.
    """

    recurrent = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._prev_rnn_state = None
        self._sample_rnn_state = None

    def reset(self):
        self._prev_rnn_state = None

    def reset_one(self, idx):
        if self._prev_rnn_state is not None:
            self._prev_rnn_state[:, idx] = 0  # namedarraytuple writes every field

    def advance_rnn_state(self, new_rnn_state):
        self._prev_rnn_state = new_rnn_state

    @property
    def prev_rnn_state(self):
        return self._prev_rnn_state

    def train_mode(self, itr):
        if self._mode == "sample":
            self._sample_rnn_state = self._prev_rnn_state
        super().train_mode(itr)

    def sample_mode(self, itr):
        if self._mode != "sample":
            self._prev_rnn_state = self._sample_rnn_state
        super().sample_mode(itr)

    def eval_mode(self, itr):
        if self._mode == "sample":
            self._sample_rnn_state = self._prev_rnn_state
        if self._mode != "eval":
            self._prev_rnn_state = None
        super().eval_mode(itr)


class AlternatingRecurrentAgentMixin(RecurrentAgentMixin):
    """Recurrent state for the two env groups of the alternating samplers.

    ``AlternatingSampler`` calls ``set_alternating_groups((B0, B1))``: while sampling,
    the agent is then stepped on group 0 (envs ``0 .. B0-1``) and group 1 (the rest)
    in turn, each call on that group's envs only.  The agent keeps one recurrent state
    per group: the current group's in ``prev_rnn_state``, the other one parked, and
    swaps them after every ``step`` (``toggle_alt`` swaps without stepping, for a
    sampler that computes ``value`` for both groups).  ``reset_one(idx)`` takes the
    env's index in the full batch and clears it in its group's state.

    Without groups (any other sampler), and always in eval mode, the agent behaves
    exactly like a plain recurrent agent on the whole batch.
    """

    alternating = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._group_sizes = None
        self._alt = 0
        self._parked_rnn_state = None  # The other group's state while sampling.
        self._sample_parked_rnn_state = None

    def set_alternating_groups(self, group_sizes) -> None:
        """``(B0, B1)``: alternate between two env groups while sampling; None: do not."""
        if group_sizes is not None:
            group_sizes = tuple(int(b) for b in group_sizes)
            if len(group_sizes) != 2 or min(group_sizes) < 1:
                raise ValueError(f"group_sizes={group_sizes!r} must be two positive env counts")
        self._group_sizes = group_sizes
        self._prev_rnn_state = self._parked_rnn_state = None
        self._sample_rnn_state = self._sample_parked_rnn_state = None
        self._alt = 0

    @property
    def _alternates(self) -> bool:
        return self._group_sizes is not None and self._mode != "eval"

    def toggle_alt(self) -> None:
        """Make the other group current (swap the current and parked states)."""
        if self._alternates:
            self._prev_rnn_state, self._parked_rnn_state = (
                self._parked_rnn_state, self._prev_rnn_state)
            self._alt ^= 1

    def advance_rnn_state(self, new_rnn_state):
        self._prev_rnn_state = new_rnn_state
        self.toggle_alt()

    def reset(self):
        super().reset()
        if self._alternates:
            self._parked_rnn_state = None
            self._alt = 0

    def reset_one(self, idx):
        if not self._alternates:
            super().reset_one(idx)
            return
        B0 = self._group_sizes[0]
        group, local = (0, int(idx)) if idx < B0 else (1, int(idx) - B0)
        state = self._prev_rnn_state if group == self._alt else self._parked_rnn_state
        if state is not None:
            state[:, local] = 0

    def train_mode(self, itr):
        if self._mode == "sample":
            self._sample_parked_rnn_state = self._parked_rnn_state
        super().train_mode(itr)

    def sample_mode(self, itr):
        if self._mode != "sample":
            self._parked_rnn_state = self._sample_parked_rnn_state
        super().sample_mode(itr)

    def eval_mode(self, itr):
        if self._mode == "sample":
            self._sample_parked_rnn_state = self._parked_rnn_state
        super().eval_mode(itr)
