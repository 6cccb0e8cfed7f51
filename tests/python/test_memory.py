"""velocity() at N = 10⁶, d = 3 keeps the process's peak memory O(N d): under 600 MB (ru_maxrss, measured in a
fresh interpreter). Linear attention is the O(N d²) variant a million tokens can afford on two cores; the
streaming softmax is checked at N = 2¹⁴ (an N x N float64 matrix would be 2 GB)."""

import os
import subprocess
import sys

import pytest

pytest.importorskip("numpy")

SCRIPT = r"""
import resource, sys, numpy as np, flowscope
n, kind = int(sys.argv[1]), sys.argv[2]
X = np.random.default_rng(0).standard_normal((n, 3))
for dtype in (np.float64, np.float32):
    V = flowscope.velocity({"type": kind, "heads": [{"V": -1}]}, X.astype(dtype))
    assert V.shape == (n, 3) and V.dtype == dtype and np.isfinite(V).all()
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024)
"""


@pytest.mark.parametrize("n,kind", [(1_000_000, "linear"), (16384, "softmax")])
def test_velocity_peak_rss_under_600_mb(n, kind):
    r = subprocess.run([sys.executable, "-c", SCRIPT, str(n), kind], capture_output=True, text=True,
                       env=dict(os.environ), timeout=600)
    assert r.returncode == 0, r.stderr
    peak_mb = int(r.stdout.split()[-1])
    print(f"N = {n} {kind}: peak RSS {peak_mb} MB")
    assert peak_mb < 600
