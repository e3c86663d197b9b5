"""Thin shim for tooling that still calls setup.py; metadata lives in pyproject.toml."""
from setuptools import setup

setup()
