#!/usr/bin/env python3
"""The comparison of S1 §4.2: posterior flows with and without the RWPO layer, over seeds.

    scripts/inverse-comparison.py build/app/flowscope-cli [--problems lorenz63,eit,elliptic] [--seeds 0,1,2]

For every problem, seed and layer setting it runs `flowscope-cli infer` (the problem's iterations unless
--iters), reads the progress lines (every tenth of the run: time, loss, relative L1 error of the posterior mean
from 1024 samples) and the final summary (4096 samples), and prints one Markdown table per problem: final loss,
relative L1 error, mean posterior deviation, and the time to reach an error of `tolerance` x the best final
error of the plain flow's runs (the "time to a given error").
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

LINE = re.compile(r"^iter\s+(\d+)\s+([\d.]+) s\s+loss\s+(\S+)\s+misfit\s+(\S+).*rel L1 (\S+)")


def run(cli, problem, seed, rwpo, iters, workdir):
    out = os.path.join(workdir, f"{problem}-{seed}-{'rwpo' if rwpo else 'plain'}.safetensors")
    if not iters:
        here = os.path.dirname(os.path.abspath(__file__))
        with open(os.path.join(here, "..", "assets", "problems", problem + ".json")) as f:
            iters = json.load(f).get("flow", {}).get("iterations", 1500)
    args = [cli, "infer", problem, "--out", out, "--seed", str(seed), "--rwpo" if rwpo else "--no-rwpo",
            "--iters", str(iters), "--every", str(max(1, iters // 20))]
    text = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    curve = [(float(m[2]), float(m[5])) for m in map(LINE.match, text.splitlines()) if m]
    with open(out[: -len(".safetensors")] + ".json") as f:
        record = json.load(f)
    s = record["summary"]
    sd = [v for v in s["sd"] if v is not None]
    return {"loss": s["loss"], "error": s["relative_l1_error"], "sd": statistics.mean(sd) if sd else None,
            "seconds": record["training"]["seconds"], "curve": curve}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("cli")
    ap.add_argument("--problems", default="lorenz63,eit,elliptic")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--iters", type=int, default=0)
    ap.add_argument("--tolerance", type=float, default=1.5)
    a = ap.parse_args()
    seeds = [int(s) for s in a.seeds.split(",")]
    with tempfile.TemporaryDirectory() as work:
        for problem in a.problems.split(","):
            rows = {rwpo: [run(a.cli, problem, s, rwpo, a.iters, work) for s in seeds] for rwpo in (False, True)}
            target = a.tolerance * min(r["error"] for r in rows[False] if r["error"] is not None)
            print(f"\n### {problem} (seeds {a.seeds}; time to a relative L1 error <= {target:.3g})\n")
            print("| layer | loss | relative L1 error | mean deviation | time to the error (s) | training (s) |")
            print("|---|---|---|---|---|---|")
            for rwpo, runs in rows.items():
                def cell(key, fmt):  # a non-finite value is null in the record
                    return " / ".join("NaN" if r[key] is None else format(r[key], fmt) for r in runs)
                reach = []
                for r in runs:
                    t = next((t for t, e in r["curve"] if e <= target), None)
                    reach.append("never" if t is None else f"{t:.1f}")
                print(f"| {'RWPO' if rwpo else 'none'} | {cell('loss', '.6g')} | {cell('error', '.3e')} | "
                      f"{cell('sd', '.3e')} | {' / '.join(reach)} | {cell('seconds', '.1f')} |")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
