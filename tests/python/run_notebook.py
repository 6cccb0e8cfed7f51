#!/usr/bin/env python3
"""Runs one notebook of examples/ top to bottom, as ctest's python_notebook_* tests: run_notebook.py NOTEBOOK.

Each notebook checks its own outputs with asserts in its cells; a failing cell fails the test with the cell's
traceback. Runs in a temporary directory (files the notebook writes go there), with the kernel of this
interpreter (ipykernel) and matplotlib's non-interactive backend. Exits 77 (skip) when nbformat, nbclient,
ipykernel, matplotlib or NumPy is missing (Debian: python3-nbclient, python3-ipykernel, python3-matplotlib,
python3-numpy), or a module the notebook's metadata lists under "flowscope": {"requires": [...]} (torch)."""

import os
import sys
import tempfile
import time

sys.dont_write_bytecode = True
for module, package in (("nbformat", "python3-nbformat"), ("nbclient", "python3-nbclient"),
                        ("ipykernel", "python3-ipykernel"), ("matplotlib", "python3-matplotlib"),
                        ("numpy", "python3-numpy")):
    try:
        __import__(module)
    except ImportError:
        print(f"SKIP: {module} is not installed (Debian: {package})")
        sys.exit(77)

import nbformat  # noqa: E402
from nbclient import NotebookClient  # noqa: E402
from nbclient.exceptions import CellExecutionError  # noqa: E402

path = sys.argv[1]
notebook = nbformat.read(path, as_version=4)
# A notebook may need more (metadata "flowscope": {"requires": [...]}, e.g. torch): skipped where it is missing.
for module in notebook.metadata.get("flowscope", {}).get("requires", []):
    try:
        __import__(module)
    except ImportError:
        print(f"SKIP: {os.path.basename(path)} needs {module}, which is not installed")
        sys.exit(77)
os.environ["MPLBACKEND"] = "Agg"
os.environ["PYDEVD_DISABLE_FILE_VALIDATION"] = "1"  # ipykernel's debugger warns about frozen modules otherwise
start = time.monotonic()
with tempfile.TemporaryDirectory() as work:
    client = NotebookClient(notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": work}})
    try:
        client.execute()
    except CellExecutionError as e:
        print(f"FAIL: {os.path.basename(path)}\n{e}")
        sys.exit(1)
cells = sum(1 for c in notebook.cells if c.cell_type == "code")
print(f"ok: {os.path.basename(path)}: {cells} code cells in {time.monotonic() - start:.1f} s")
