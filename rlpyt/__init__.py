"""rlpyt: modular deep reinforcement learning in PyTorch.

``rlpyt.load_runs(paths)`` reads runs as one table (``rlpyt.utils.logging.run_table``);
it is imported on first use, so that ``import rlpyt.<module>`` stays light.
"""

__all__ = ["load_runs"]


def __getattr__(name: str):
    if name == "load_runs":
        from rlpyt.utils.logging.run_table import load_runs

        return load_runs
    raise AttributeError(f"module 'rlpyt' has no attribute {name!r}")
