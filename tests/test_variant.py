"""rlpyt.utils.launching.variant: grids of settings, saved configs, config updates."""

import itertools
import json
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlpyt.utils.launching.variant import (
    VARIANT_FILE,
    ConfigKeyError,
    VariantLevel,
    load_variant,
    make_variants,
    save_variant,
    update_config,
)


def test_cross_product_sets_nested_keys_and_joins_dir_names_per_level():
    lr = VariantLevel(keys=[("algo", "learning_rate")], values=[(1e-3,), (3e-4,)],
                      dir_names=["lr_1e-3", "lr_3e-4"])
    batch = VariantLevel(keys=[("sampler", "batch_T"), ("sampler", "batch_B")],
                         values=[(64, 4), (128, 8)], dir_names=["small", "big"])
    env = VariantLevel(keys=[("env", "id")], values=[("CartPole-v1",), ("Acrobot-v1",)],
                       dir_names=["cartpole", "acrobot"])
    variants, log_dirs = make_variants(lr, batch, env)
    assert len(variants) == len(log_dirs) == 8
    assert log_dirs[0] == os.path.join("lr_1e-3", "small", "cartpole")
    assert log_dirs[-1] == os.path.join("lr_3e-4", "big", "acrobot")
    assert variants[0] == dict(
        algo=dict(learning_rate=1e-3),
        sampler=dict(batch_T=64, batch_B=4),
        env=dict(id="CartPole-v1"),
    )
    # The first level varies slowest.
    assert [v["algo"]["learning_rate"] for v in variants] == [1e-3] * 4 + [3e-4] * 4
    assert [v["env"]["id"] for v in variants[:2]] == ["CartPole-v1", "Acrobot-v1"]


@settings(max_examples=60, deadline=None)
@given(sizes=st.lists(st.integers(1, 4), min_size=1, max_size=4))
def test_make_variants_is_the_full_cross_product(sizes):
    levels = [
        VariantLevel(keys=[("level", f"k{i}")], values=[(j,) for j in range(n)],
                     dir_names=[f"l{i}v{j}" for j in range(n)])
        for i, n in enumerate(sizes)
    ]
    variants, log_dirs = make_variants(*levels)
    # Plain-loop reference: itertools.product over the choices, first level slowest.
    expected = list(itertools.product(*[range(n) for n in sizes]))
    assert len(variants) == len(expected)
    for variant, log_dir, choice in zip(variants, log_dirs, expected):
        assert variant == {"level": {f"k{i}": j for i, j in enumerate(choice)}}
        assert log_dir == os.path.join(*[f"l{i}v{j}" for i, j in enumerate(choice)])
    assert len(set(log_dirs)) == len(log_dirs)


def test_levels_do_not_share_mutable_values():
    shared = [1, 2]
    variants, _ = make_variants(VariantLevel(["x"], [(shared,)], ["a"]),
                                VariantLevel(["y"], [(0,), (1,)], ["b", "c"]))
    variants[0]["x"].append(3)
    assert variants[1]["x"] == [1, 2] and shared == [1, 2]


def test_dir_names_default_to_key_and_value():
    variants, log_dirs = make_variants(
        VariantLevel(keys=[("algo", "learning_rate"), "seed"], values=[(0.001, 1), (0.01, 2)])
    )
    assert log_dirs == ["learning_rate_0.001_seed_1", "learning_rate_0.01_seed_2"]
    assert variants[1] == dict(algo=dict(learning_rate=0.01), seed=2)


def test_no_levels_gives_one_empty_setting():
    assert make_variants() == ([{}], [""])


@pytest.mark.parametrize(
    "level, match",
    [
        (VariantLevel([("a",)], [(1,), (2,)], ["x"]), r"1 dir_names for 2 values"),
        (VariantLevel([("a",)], [(1,), (2,)], ["x", "x"]), r"dir_names \['x', 'x'\] are not unique"),
        (VariantLevel([("a",), ("b",)], [(1,)], ["x"]), r"has 1 values for 2 keys"),
        (VariantLevel([("a",)], [], []), r"values is empty"),
        (VariantLevel([], [(1,)], ["x"]), r"keys=\[\] must be a non-empty"),
        (VariantLevel([("a",)], [1], ["x"]), r"must be a tuple with one value per key"),
        (VariantLevel([("a",)], [(1,)], ["x/y"]), r"'x/y' is not a single directory name"),
        (VariantLevel([("a",), ("a",)], [(1, 2)], ["x"]), r"repeat a key path"),
    ],
)
def test_malformed_levels_are_rejected(level, match):
    with pytest.raises(ValueError, match=match):
        make_variants(level)


def test_a_level_cannot_nest_under_a_plain_value():
    flat = VariantLevel(["algo"], [("ppo",)], ["ppo"])
    nested = VariantLevel([("algo", "lr")], [(1,)], ["lr"])
    with pytest.raises(ValueError, match=r"sets algo.lr, but an earlier level set algo"):
        make_variants(flat, nested)


def test_save_and_load_variant_round_trip(tmp_path):
    variant = dict(algo=dict(learning_rate=1e-3, betas=(0.9, 0.99)), env=dict(id="CartPole-v1"))
    path = save_variant(variant, str(tmp_path / "setting"))
    assert os.path.basename(path) == VARIANT_FILE == "variant_config.json"
    loaded = load_variant(str(tmp_path / "setting"))
    assert loaded == dict(algo=dict(learning_rate=1e-3, betas=[0.9, 0.99]),
                          env=dict(id="CartPole-v1"))
    with open(path) as f:
        assert json.load(f) == loaded


def test_load_variant_without_file_says_where_it_looked(tmp_path):
    with pytest.raises(FileNotFoundError, match="no variant_config.json in log_dir="):
        load_variant(str(tmp_path))


def test_save_variant_rejects_values_json_cannot_store(tmp_path):
    with pytest.raises(TypeError, match="JSON cannot store"):
        save_variant(dict(fn=object()), str(tmp_path))


DEFAULT = dict(
    algo=dict(learning_rate=1e-3, optim_kwargs=None, clip=dict(ratio=0.1, grad=1.0)),
    sampler=dict(batch_T=64),
)


def test_update_config_is_a_deep_update_that_leaves_the_default_alone():
    variant = dict(algo=dict(clip=dict(ratio=0.2), optim_kwargs=dict(eps=1e-5)))
    config = update_config(DEFAULT, variant)
    assert config == dict(
        algo=dict(learning_rate=1e-3, optim_kwargs=dict(eps=1e-5),
                  clip=dict(ratio=0.2, grad=1.0)),
        sampler=dict(batch_T=64),
    )
    assert DEFAULT["algo"]["clip"]["ratio"] == 0.1 and DEFAULT["algo"]["optim_kwargs"] is None
    config["sampler"]["batch_T"] = 1
    assert DEFAULT["sampler"]["batch_T"] == 64


def test_update_config_names_an_unknown_key_with_its_path():
    with pytest.raises(ConfigKeyError) as info:
        update_config(DEFAULT, dict(algo=dict(lerning_rate=0.1)))
    message = str(info.value)
    assert message.startswith("variant key 'algo.lerning_rate' is not in the default config")
    assert "did you mean 'learning_rate'?" in message
    assert "['clip', 'learning_rate', 'optim_kwargs']" in message
    assert isinstance(info.value, KeyError)
    with pytest.raises(ConfigKeyError, match=r"'runner' is not in the default config"):
        update_config(DEFAULT, dict(runner=dict(n_steps=1)))


def test_update_config_refuses_to_mix_dicts_and_values():
    with pytest.raises(TypeError, match=r"'algo.clip' gives a float where .* has a dict"):
        update_config(DEFAULT, dict(algo=dict(clip=0.2)))
    with pytest.raises(TypeError, match=r"'algo.learning_rate' gives a dict where .* float"):
        update_config(DEFAULT, dict(algo=dict(learning_rate=dict(value=1))))
