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


# Sizes refused before any allocation (issue 42, item 8): each in a fresh interpreter, so that a crash or an
# out-of-memory kill fails the test instead of the runner. A broadcast array holds one row, whatever its
# shape, so these cases cost nothing unless the module copies or converts them first. The peak stays small.
REFUSALS = r"""
import resource, sys, numpy as np, flowscope
case = sys.argv[1]
try:
    if case == "rows-over-n":  # 3e8 points: "/n" before the 4.8 GB copy
        flowscope.velocity({"type": "softmax"}, np.broadcast_to(np.zeros(2), (300_000_000, 2)))
    elif case == "integer-broadcast":  # converting would copy 10^12 rows: the dtype is refused first
        flowscope.velocity({"type": "softmax"}, np.broadcast_to(np.zeros(2, dtype=np.int64), (10**12, 2)))
    elif case == "velocity-memory":  # 2^24 x 1024 is within /n and /d, but 384 GiB of arrays
        flowscope.velocity({"type": "linear"}, np.broadcast_to(np.zeros(1024), (2**24, 1024)))
    elif case == "sample-n":
        model = flowscope.train("moons", iters=1, batch=64)
        model.sample(2**31 - 1)
    elif case == "predict-one-huge-set":  # n^2 attention scores per head and step on the tape
        model = flowscope.train_transformer("A", iters=1)
        model.predict(np.broadcast_to(np.zeros(2), (1, 1_000_000, 2)))
    print("no error")
except (ValueError, MemoryError, TypeError) as e:
    print(type(e).__name__, e)
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024)
"""


@pytest.mark.parametrize("case, error, field", [
    ("rows-over-n", "ValueError", "X: expected at most 16777216 points"),
    ("integer-broadcast", "TypeError", "X: expected real floating-point numbers (float32 or float64), got int64"),
    ("velocity-memory", "MemoryError", "X: this would need about"),
    ("sample-n", "MemoryError", "n: this would need about"),
    ("predict-one-huge-set", "MemoryError", "X: this would need about"),
])
def test_impossible_sizes_are_refused_before_allocating(case, error, field):
    r = subprocess.run([sys.executable, "-c", REFUSALS, case], capture_output=True, text=True,
                       env=dict(os.environ), timeout=600)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.strip().splitlines()
    assert lines[0].startswith(error + " " + field), r.stdout
    assert int(lines[-1]) < 400, f"peak RSS {lines[-1]} MB"


PREDICT = r"""
import resource, sys, numpy as np, flowscope
model = flowscope.train_transformer("A", iters=1)
sets = np.random.default_rng(0).standard_normal((int(sys.argv[1]), 64, 2))
y, states = model.predict(sets, states=True)
# Chunks of whole sets: each set's answer is that of the set alone.
for b in (0, len(sets) // 2, len(sets) - 1):
    one, one_states = model.predict(sets[b], states=True)
    assert np.allclose(y[b], one, rtol=1e-12, atol=1e-14), b
    assert np.allclose(states[:, b], one_states, rtol=1e-12, atol=1e-14), b
del states
y = model.predict(sets)
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024)
"""


def test_predict_runs_in_chunks_of_sets_with_a_bounded_tape():
    # 2000 sets of 64 tokens. In one piece the forward pass's tape held every step's intermediates of all of
    # them at once: a peak of 1468 MB (6.9 GB at 200000 sets). In chunks of 4096 tokens it holds one chunk's;
    # the interpreter, NumPy and the trained model are about 145 MB, the states 21 MB.
    r = subprocess.run([sys.executable, "-c", PREDICT, "2000"], capture_output=True, text=True,
                       env=dict(os.environ), timeout=600)
    assert r.returncode == 0, r.stderr
    peak_mb = int(r.stdout.split()[-1])
    print(f"predict of 2000 sets of 64: peak RSS {peak_mb} MB")
    assert peak_mb < 400
