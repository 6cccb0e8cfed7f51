#!/usr/bin/env python3
"""The authors' NumPy algorithm for Fig 3(a) beside `flowscope-cli bench moments`, in one sitting.

Castin et al. evolve each covariance of the trace-1 cone grid with projected Euler (their `evolution`):
    Sigma_{k+1} = Proj_PSD(Sigma_k + tau Sigma'(Sigma_k)),  Sigma' = V Sigma A Sigma + Sigma A^T Sigma V^T,
Proj_PSD symmetrising and replacing negative eigenvalues by 1e-14; a trajectory stops "converged" when
|Sigma'(Sigma_k)|_F < tol_low (before the step), "blow-up" when tr Sigma_{k+1} > tol_high, "max-iter" after
max_iter steps (docs/math/gaussian.md#paper-euler). This script runs exactly that, one trajectory after
another in NumPy as theirs does, on the grid and matrices of `bench moments` (40 x 40 on [-1, 1]^2: 1184
trajectories, tau = 0.01, tol_low 1e-4, tol_high 1e3, max_iter 100000), then runs the CLI's bench on the same
machine, checks that both reach the same outcomes, and prints the CLI's speed as a multiple of NumPy's.

    python3 bench/moments_peer.py --cli build/app/flowscope-cli [--threads 1,2] [--json]

Only the covariances are evolved here (the authors' figure draws nothing else); the CLI also evolves the
means, so the ratio is, if anything, in NumPy's favour.
"""
import argparse
import json
import subprocess
import sys
import time

import numpy as np

Q = np.array([[-0.09678415831, 0.4222016605], [-0.2254615634, -0.6379430932]]) / np.sqrt(2.0)
K = np.array([[-0.0162863037, 1.044216778], [-1.084880329, -2.205924827]])
V = np.eye(2)
A = K.T @ Q  # the exponent <Q x, K y> = y^T K^T Q x; with V = I only A + A^T matters
TAU, TOL_LOW, TOL_HIGH, MAX_ITER = 0.01, 1e-4, 1e3, 100000


def init_grid(n_u=40, n_c=40, limits=(-1.0, 1.0, -1.0, 1.0)):
    """The authors' init_grid(nU, nC, 1, limits): trace-1 covariances strictly inside the cone."""
    out = []
    for x in np.linspace(limits[0], limits[1], n_u):
        for y in np.linspace(limits[2], limits[3], n_c):
            if x * x + y * y < 1.0:
                out.append(np.array([[(1.0 + x) / 2.0, y / 2.0], [y / 2.0, (1.0 - x) / 2.0]]))
    return out


def evolve(sigma):
    """One trajectory to its stopping rule: (event, field evaluations)."""
    evaluations = 0
    for _ in range(MAX_ITER):
        g = V @ sigma @ A @ sigma + sigma @ A.T @ sigma @ V.T
        evaluations += 1
        if np.linalg.norm(g) < TOL_LOW:
            return "converged", evaluations
        s = sigma + TAU * g
        w, u = np.linalg.eigh(0.5 * (s + s.T))
        w = np.where(w < 0.0, 1e-14, w)
        sigma = (u * w) @ u.T
        if np.trace(sigma) > TOL_HIGH:
            return "blow-up", evaluations
    return "max-iter", evaluations


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cli", default="build/app/flowscope-cli", help="flowscope-cli to run beside NumPy")
    ap.add_argument("--threads", default="", help="the CLI's thread counts, e.g. 1,2 (default: all cores)")
    ap.add_argument("--json", action="store_true", help="one JSON line per row")
    a = ap.parse_args()

    grid = init_grid()
    start = time.perf_counter()
    events, evaluations = {}, 0
    for sigma in grid:
        event, n = evolve(sigma)
        events[event] = events.get(event, 0) + 1
        evaluations += n
    seconds = time.perf_counter() - start
    numpy_rate = len(grid) / seconds

    cmd = [a.cli, "bench", "moments", "--json"] + (["--threads", a.threads] if a.threads else [])
    rows = [json.loads(line) for line in subprocess.run(cmd, check=True, capture_output=True,
                                                        text=True).stdout.splitlines() if line.startswith("{")]
    peer = {"bench": "moments", "peer": "numpy", "trajectories": len(grid), "seconds": seconds,
            "trajectories_per_s": numpy_rate, "field_evaluations": evaluations, "events": events}
    same = True
    for r in rows:
        r["numpy_trajectories_per_s"] = numpy_rate
        r["ratio_to_numpy"] = r["trajectories_per_s"] / numpy_rate
        if r["method"] == "paper_euler":
            r["same_events_as_numpy"] = r["events"] == events
            same = same and r["same_events_as_numpy"]
    if a.json:
        for r in [peer] + rows:
            print(json.dumps(r))
    else:
        print(f"numpy (the authors' algorithm)  {numpy_rate:10.1f} traj/s  {seconds:7.2f} s  "
              f"{evaluations} evals  {events}")
        for r in rows:
            print(f"{r['method']:12s} {r['threads']:2d} threads  {r['trajectories_per_s']:10.1f} traj/s  "
                  f"{r['ratio_to_numpy']:7.1f}x numpy  {r['field_evaluations']} evals  {r['events']}")
    if not same:
        print("the CLI's paper Euler and NumPy reached different outcomes", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
