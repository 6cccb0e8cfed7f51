#!/usr/bin/env python3
"""ctest's entry to the flowscope module's pytest files: run_pytest.py TEST_FILE [pytest args...].

Exits 77 (ctest's skip code) with the reason when pytest or NumPy is missing (Debian: python3-pytest,
python3-numpy) or when pytest collected nothing; otherwise pytest's exit code. PYTHONPATH (the build tree's
python/ folder) and FLOWSCOPE_CLI come from tests/CMakeLists.txt."""

import sys

sys.dont_write_bytecode = True
for module, package in (("pytest", "python3-pytest"), ("numpy", "python3-numpy")):
    try:
        __import__(module)
    except ImportError:
        print(f"SKIP: {module} is not installed (Debian: {package})")
        sys.exit(77)

import pytest  # noqa: E402

code = pytest.main([*sys.argv[1:], "-q", "-rs", "-p", "no:cacheprovider"])
sys.exit(77 if code == pytest.ExitCode.NO_TESTS_COLLECTED else int(code))
