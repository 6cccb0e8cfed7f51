#!/usr/bin/env python3
"""flowscope.velocity against the PyTorch dense formula, in one process (not a test: numbers to read).

    PYTHONPATH=build/python python3 tests/bench/bench_python_velocity.py [--n 16384] [--d 3] [--repeat 5]

Softmax, one head, β = 1, random Q, K, V: flowscope.velocity (the streaming CPU kernel: float32 SIMD or the
float64 reference, no N x N matrix) against torch.softmax(β (X Qᵀ)(X Kᵀ)ᵀ, 1) X Vᵀ (dense, N² memory), in
float32 and float64, on the same threads (torch.set_num_threads = os.cpu_count()). Prints the best of
--repeat runs of each, and the largest difference relative to the largest velocity."""

import argparse
import os
import time

import numpy as np
import torch

import flowscope

p = argparse.ArgumentParser()
p.add_argument("--n", type=int, default=16384)
p.add_argument("--d", type=int, default=3)
p.add_argument("--repeat", type=int, default=5)
a = p.parse_args()

rng = np.random.default_rng(0)
Q, K, V = (rng.standard_normal((a.d, a.d)) / np.sqrt(a.d) for _ in range(3))
att = {"type": "softmax", "heads": [{"Q": Q.tolist(), "K": K.tolist(), "V": V.tolist()}]}
X64 = rng.standard_normal((a.n, a.d))
torch.set_num_threads(os.cpu_count() or 1)


def best(f):
    times = []
    for _ in range(a.repeat):
        start = time.perf_counter()
        out = f()
        times.append(time.perf_counter() - start)
    return min(times), out


print(f"softmax velocity, N = {a.n}, d = {a.d}, {os.cpu_count()} threads, best of {a.repeat}")
for dtype in (np.float32, np.float64):
    X = X64.astype(dtype)
    Xt, Qt, Kt, Vt = (torch.from_numpy(np.ascontiguousarray(m, dtype=dtype)) for m in (X, Q, K, V))
    fs_time, fs = best(lambda: flowscope.velocity(att, X))
    with torch.no_grad():
        torch_time, tv = best(lambda: torch.softmax((Xt @ Qt.T) @ (Xt @ Kt.T).T, dim=1) @ Xt @ Vt.T)
    diff = np.abs(fs - tv.numpy()).max() / np.abs(tv.numpy()).max()
    print(f"{np.dtype(dtype).name:8s} flowscope {1e3 * fs_time:8.1f} ms   torch dense {1e3 * torch_time:8.1f} ms   "
          f"ratio {torch_time / fs_time:5.2f}x   max rel. difference {diff:.1e}")
