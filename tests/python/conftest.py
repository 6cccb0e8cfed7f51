"""Shared setup of the flowscope module's tests (run by ctest through run_pytest.py, or by hand:
PYTHONPATH=build/python FLOWSCOPE_CLI=build/app/flowscope-cli python3 -m pytest tests/python)."""

import os
import subprocess
import sys

import pytest

sys.dont_write_bytecode = True  # no __pycache__ in the source tree

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PRESETS = os.path.join(ROOT, "assets", "presets")


@pytest.fixture(scope="session")
def cli():
    """The flowscope-cli of the same build (FLOWSCOPE_CLI), to compare the module against."""
    path = os.environ.get("FLOWSCOPE_CLI", os.path.join(ROOT, "build", "app", "flowscope-cli"))
    if not os.access(path, os.X_OK):
        pytest.skip(f"no flowscope-cli at {path} (set FLOWSCOPE_CLI)")

    def run(*args):
        r = subprocess.run([path, *map(str, args)], capture_output=True, text=True)
        assert r.returncode == 0, f"flowscope-cli {' '.join(map(str, args))}: {r.stderr}"
        return r

    return run
