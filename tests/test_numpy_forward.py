"""numpy forward passes of small MLPs (rlpyt.models.numpy_forward) against torch."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from rlpyt.agents.pg.categorical import CategoricalPgAgent
from rlpyt.agents.pg.gaussian import GaussianPgAgent
from rlpyt.envs.gym import make
from rlpyt.models.mlp import MlpModel
from rlpyt.models.numpy_forward import MAX_IN_OUT, MAX_ROWS_IN_OUT, mlp_numpy
from rlpyt.models.pg.mlp import CategoricalPgMlpModel, GaussianPgMlpModel

ATOL = 1e-6


def _x(rows: int = 8, size: int = 5, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((rows, size)).astype(np.float32)


def _torch(mlp, x: np.ndarray) -> np.ndarray:
    with torch.no_grad():
        return mlp(torch.from_numpy(x)).numpy()


@pytest.mark.parametrize("nonlinearity", [torch.nn.Tanh, torch.nn.ReLU])
@pytest.mark.parametrize("hidden, output", [((16, 16), 3), ((16,), None), (None, 4)])
def test_mlp_numpy_matches_the_torch_forward(nonlinearity, hidden, output):
    torch.manual_seed(0)
    mlp = MlpModel(5, hidden, output, nonlinearity)
    x = _x()
    np.testing.assert_allclose(mlp_numpy(mlp, x), _torch(mlp, x), atol=ATOL)


def test_mlp_numpy_follows_parameter_updates_moves_and_replacements():
    torch.manual_seed(0)
    mlp = MlpModel(5, (16,), 3, torch.nn.Tanh)
    x = _x()
    mlp_numpy(mlp, x)  # builds the cached views
    optimizer = torch.optim.SGD(mlp.parameters(), lr=0.5)
    mlp(torch.from_numpy(x)).sum().backward()
    optimizer.step()  # in place: the cached views see it
    np.testing.assert_allclose(mlp_numpy(mlp, x), _torch(mlp, x), atol=ATOL)
    mlp.share_memory()  # new storage (as the parallel samplers do)
    with torch.no_grad():
        for p in mlp.parameters():
            p.mul_(0.5)
    np.testing.assert_allclose(mlp_numpy(mlp, x), _torch(mlp, x), atol=ATOL)
    mlp.model[0].weight = torch.nn.Parameter(torch.randn(16, 5))  # replaced
    np.testing.assert_allclose(mlp_numpy(mlp, x), _torch(mlp, x), atol=ATOL)
    mlp.load_state_dict(MlpModel(5, (16,), 3, torch.nn.Tanh).state_dict())
    np.testing.assert_allclose(mlp_numpy(mlp, x), _torch(mlp, x), atol=ATOL)


def test_mlp_numpy_declines_what_it_cannot_compute_the_same():
    torch.manual_seed(0)
    x = _x()
    assert mlp_numpy(MlpModel(5, (16,), 3, torch.nn.ELU), x) is None  # activation
    assert mlp_numpy(MlpModel(5, (16,), 3).double(), x) is None  # float64 parameters
    assert mlp_numpy(MlpModel(5, (16,), 3), x.astype(np.float64)) is None  # input dtype
    assert mlp_numpy(torch.nn.Sequential(torch.nn.Linear(5, 3)), x) is None  # module type
    hooked = MlpModel(5, (16,), 3)
    hooked.model[0].register_forward_hook(lambda *args: None)
    assert mlp_numpy(hooked, x) is None
    wide = MlpModel(5, (MAX_IN_OUT // 16 + 1, 16), 3)  # a weight above MAX_IN_OUT
    assert mlp_numpy(wide, x) is None
    rows = MAX_ROWS_IN_OUT // (16 * 16) + 1
    assert mlp_numpy(MlpModel(5, (16, 16), 3), _x(rows=rows)) is None
    assert mlp_numpy(MlpModel(5, (16, 16), 3), _x(rows=rows - 1)) is not None


@pytest.mark.parametrize("ModelCls", [CategoricalPgMlpModel, GaussianPgMlpModel])
def test_pg_models_numpy_forward_matches_forward(ModelCls):
    torch.manual_seed(0)
    model = ModelCls((5,), 3)
    for observation in (_x(), _x()[0]):  # [B, obs] and a single observation
        ours = model.forward_numpy(observation)
        with torch.no_grad():
            theirs = model(torch.from_numpy(observation), None, None)
        assert len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            assert a.shape == tuple(b.shape)
            np.testing.assert_allclose(a, b.detach().numpy(), atol=ATOL)
    assert ModelCls((5,), 3, normalize_observation=True).forward_numpy(_x()) is None

    class Subclass(ModelCls):  # may change forward: the numpy path must not guess
        pass

    assert Subclass((5,), 3).forward_numpy(_x()) is None


@pytest.mark.parametrize("AgentCls, env_id", [(CategoricalPgAgent, "CartPole-v1"),
                                               (GaussianPgAgent, "Pendulum-v1")])
def test_pg_agent_step_with_numpy_forward_matches_the_torch_forward(AgentCls, env_id):
    env = make(id=env_id)
    agent = AgentCls()
    agent.initialize(env.spaces)
    agent.sample_mode(0)
    reference = copy.deepcopy(agent)
    reference._forward_numpy = lambda observation: None  # the torch forward only
    observation = torch.from_numpy(_x(rows=4, size=env.spaces.observation.shape[0]))
    torch.manual_seed(1)
    ours = agent.step(observation, None, None)
    value = agent.value(observation, None, None)
    torch.manual_seed(1)
    theirs = reference.step(observation, None, None)
    assert torch.equal(ours.action, theirs.action)
    for a, b in zip(ours.agent_info.dist_info, theirs.agent_info.dist_info):
        torch.testing.assert_close(a, b, atol=ATOL, rtol=0)
    torch.testing.assert_close(ours.agent_info.value, theirs.agent_info.value, atol=ATOL, rtol=0)
    torch.testing.assert_close(value, reference.value(observation, None, None), atol=ATOL,
                               rtol=0)
