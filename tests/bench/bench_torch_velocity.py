#!/usr/bin/env python3
"""flowscope.torch.velocity forward + backward against PyTorch's autograd of the dense formula (not a test:
numbers to read).

    PYTHONPATH=build/python /usr/bin/python3 tests/bench/bench_torch_velocity.py [--n 4096 16384] [--d 3]

Softmax, one head, β = 1, random Q, K, V (d x d), L = Σ v ⊙ G for a fixed G: the time of v = velocity(...)
plus L.backward() (gradients for X, Q, K, V, β), best of --repeat, and the process's peak RSS. Each
(method, N, dtype) runs in its own process, so the peak is its own: the streamed engine (O(N d)) against
torch.softmax(β (X Qᵀ)(X Kᵀ)ᵀ) X Vᵀ with autograd (N² scores, weights and their gradients kept). Both use
every core (torch.set_num_threads = os.cpu_count()). Prints one line per run and the largest gradient
difference relative to the largest gradient entry."""

import argparse
import os
import subprocess
import sys

ONE = r"""
import os, resource, sys, time
import torch
import flowscope.torch as ft
method, n, d, dtype, repeat = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], int(sys.argv[5])
torch.set_num_threads(os.cpu_count() or 1)
dt = getattr(torch, dtype)
g = torch.Generator().manual_seed(0)
X0 = torch.randn(n, d, generator=g, dtype=torch.float64)
Q0, K0, V0 = (torch.randn(d, d, generator=g, dtype=torch.float64) / d ** 0.5 for _ in range(3))
G = torch.randn(n, d, generator=g, dtype=torch.float64).to(dt)

def dense(X, Q, K, V, beta):
    return torch.softmax(beta * (X @ Q.T) @ (X @ K.T).T, dim=-1) @ X @ V.T

best = float("inf")
for _ in range(repeat):
    args = [t.to(dt).requires_grad_() for t in (X0, Q0, K0, V0, torch.tensor(1.0, dtype=torch.float64))]
    t0 = time.perf_counter()
    v = ft.velocity(*args) if method == "flowscope" else dense(*args)
    (v * G).sum().backward()
    best = min(best, time.perf_counter() - t0)
grads = torch.cat([a.grad.reshape(-1).double() for a in args])
torch.save(grads, sys.argv[6])
print(best, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024)
"""

p = argparse.ArgumentParser()
p.add_argument("--n", type=int, nargs="+", default=[4096, 16384])
p.add_argument("--d", type=int, default=3)
p.add_argument("--dtypes", nargs="+", default=["float32", "float64"])
p.add_argument("--repeat", type=int, default=3)
a = p.parse_args()

import tempfile  # noqa: E402

import torch  # noqa: E402

print(f"softmax, d = {a.d}, forward + backward (X, Q, K, V, beta), best of {a.repeat}; "
      f"{os.cpu_count()} threads")
with tempfile.TemporaryDirectory() as tmp:
    for n in a.n:
        for dtype in a.dtypes:
            grads = {}
            for method in ("flowscope", "torch-dense"):
                path = os.path.join(tmp, f"{method}.pt")
                r = subprocess.run([sys.executable, "-c", ONE, method, str(n), str(a.d), dtype, str(a.repeat), path],
                                   capture_output=True, text=True)
                if r.returncode != 0:
                    print(f"N = {n:6d} {dtype} {method:12s} failed: {r.stderr.strip().splitlines()[-1]}")
                    continue
                seconds, peak = r.stdout.split()
                grads[method] = torch.load(path)
                print(f"N = {n:6d} {dtype} {method:12s} {float(seconds):8.3f} s   peak RSS {int(peak):6d} MB")
            if len(grads) == 2:
                a_, b_ = grads["flowscope"], grads["torch-dense"]
                print(f"    max |grad difference| / max |grad| = {float((a_ - b_).abs().max() / b_.abs().max()):.2e}")
