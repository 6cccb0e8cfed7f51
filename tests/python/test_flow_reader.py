#!/usr/bin/env python3
"""python/flowscope_model.py against the C++ sampler (issue 7).

    test_flow_reader.py FLOWSCOPE_CLI

Trains two tiny flows with the CLI (plain OT-Flow and OT-Flow + RWPO; the other kernels and leave-one-out
as edits of the RWPO model's architecture), draws base normals Z with NumPy, runs `flowscope-cli sample
--base Z.npy` (the default exact-inverse sampler and --explicit) and the Python reader on the same Z, and
requires max |difference| <= 1e-5 for each. Also checks the reader's gradient recursion, that malformed
files raise ValueError (and that the CLI rejects them too), and that the CLI rejects a bad --base. Exits 77
(ctest's skip code) when NumPy is missing.
"""

import json
import math
import os
import struct
import subprocess
import sys
import tempfile
import time

try:
    import numpy as np
except ImportError:
    print("SKIP: NumPy is not installed (Debian: python3-numpy)")
    sys.exit(77)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import flowscope_model  # noqa: E402

TOLERANCE = 1e-5
N_SAMPLES = 600  # three batches of 256, 256 and 88: the last one smaller, as the CLI splits them
BATCH = 256

# Trained with the CLI: name -> extra train options.
TRAINED = {"plain": ["--no-rwpo"], "rwpo": []}
# The other RWPO options, on the trained RWPO model's tensors with its architecture edited (the arithmetic of
# each kernel is what is checked, not its fit; training each would dominate the test's time).
VARIANTS = {
    "rwpo-as-printed": {"kernel": "as-printed"},
    "rwpo-separable-loo": {"kernel": "separable", "leave_one_out": True},
    "rwpo-corrected-loo": {"kernel": "corrected", "leave_one_out": True},
}

failures = []


def check(ok, what):
    print(("ok    " if ok else "FAIL  ") + what, flush=True)
    if not ok:
        failures.append(what)


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        print(f"command failed ({r.returncode}): {' '.join(cmd)}\n{r.stdout}{r.stderr}", file=sys.stderr)
        sys.exit(1)
    return r.stdout


def compare(cli, tmp, name, model_path, z_path, Z):
    """C++ `sample --base` against FlowModel.generate on the same Z, both samplers."""
    model = flowscope_model.load(model_path)
    for explicit in (False, True):
        label = f"{name} {'explicit (22)' if explicit else 'exact inverse'}"
        out = os.path.join(tmp, f"{name}-{int(explicit)}.npy")
        cmd = [cli, "sample", model_path, "--base", z_path, "--batch", str(BATCH), "--out", out]
        log = run(cmd + (["--explicit"] if explicit else [])).strip()
        cpp_sampler = log.split("(sampler: ")[-1].rstrip(")")
        cpp = np.load(out)
        info = {}
        py = model.generate(Z, explicit=explicit, batch=BATCH, info=info)
        diff = float(np.max(np.abs(cpp.astype(np.float64) - py))) if cpp.shape == py.shape else math.inf
        cpp_residual = float(cpp_sampler.split("residual ")[1].split(",")[0]) if not explicit else 0.0
        if not explicit and cpp_residual <= TOLERANCE < info["residual"]:
            # A slow contraction: Anderson's least squares are ill-conditioned there, so the two iterations
            # part at rounding level and C++ may stop at 99 iterations where Python needs 130. The fixed point
            # is the same: let Python run to it.
            info = {}
            py = model.generate(Z, batch=BATCH, info=info, max_iterations=1000)
            diff = float(np.max(np.abs(cpp.astype(np.float64) - py))) if cpp.shape == py.shape else math.inf
        if not explicit and cpp_residual > 10 * TOLERANCE and info["residual"] > 10 * TOLERANCE:
            # The training map is not invertible here (it folds: the as-printed kernel on parameters trained
            # with the corrected one), so the fixed point has no answer to agree on. Where it lands after 100
            # iterations depends on rounding (the machine's); what both must do is say they did not converge.
            check(True, f"{label}: no inverse, and both samplers say so (fixed-point residual: Python "
                        f"{info['residual']:.1e}, C++ {cpp_residual:.1e}; max |C++ - Python| = {diff:.1e})")
            continue
        check(diff <= TOLERANCE,
              f"{label}: max |C++ - Python| = {diff:.2e} (<= {TOLERANCE:g}); Python: fixed-point residual "
              f"{info['residual']:.1e}, {info['iterations']} iterations; C++: {cpp_sampler}")


def gradient_check(model_path):
    """The reader's ∇_xΦ recursion against central differences of its Φ (the reader's own consistency)."""
    model = flowscope_model.load(model_path)
    X = np.random.default_rng(1).standard_normal((model.d, 7))
    t, eps = 0.3, 1e-6
    fd = np.stack([(model.potential(X + eps * e[:, None], t) - model.potential(X - eps * e[:, None], t))
                   / (2 * eps) for e in np.eye(model.d)])
    err = float(np.max(np.abs(fd - model.potential_gradient(X, t))))
    check(err <= 1e-6, f"grad Phi against central differences of Phi: {err:.1e} (<= 1e-6)")


def split(path):
    """(raw bytes, header length, header JSON, payload) of a .safetensors file."""
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    return raw, n, json.loads(raw[8 : 8 + n]), raw[8 + n :]


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)
    return path


def with_header(path, header, payload):
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)  # the format pads the header to 8 bytes
    return write(path, struct.pack("<Q", len(text)) + text + payload)


def variant(src, dst, changes):
    """A copy of the model at src with its architecture JSON updated by `changes`."""
    _, _, header, payload = split(src)
    architecture = json.loads(header["__metadata__"]["flowscope_flow"])
    architecture.update(changes)
    header["__metadata__"]["flowscope_flow"] = json.dumps(architecture)
    return with_header(dst, header, payload)


def malformed(cli, tmp, good_path):
    """Broken copies of a good model: the reader raises ValueError naming the problem, and the C++ CLI
    rejects the same files (exit 2)."""
    raw, n, header, payload = split(good_path)

    def edited(edit):
        h = json.loads(json.dumps(header))
        edit(h)
        return lambda path: with_header(path, h, payload)

    def arch(change):
        def edit(h):
            a = json.loads(h["__metadata__"]["flowscope_flow"])
            a.update(change)
            h["__metadata__"]["flowscope_flow"] = json.dumps(a)

        return edit

    def raw_bytes(data):
        return lambda path: write(path, data)

    cases = [  # what, how to make the file, a phrase the message must hold
        ("truncated before the header length", raw_bytes(raw[:5]), "truncated"),
        ("truncated in the header", raw_bytes(raw[: 8 + n // 2]), "truncated"),
        ("truncated in the data", raw_bytes(raw[:-12]), "outside the payload"),
        ("bad header JSON", raw_bytes(raw[:8] + b"x" + raw[9:]), "not valid JSON"),
        ("absurd header length", raw_bytes(struct.pack("<Q", 1 << 40) + raw[8:]), "exceeds 16 MiB"),
        ("offsets outside the file",
         edited(lambda h: h["phi.w"].update(data_offsets=[0, len(payload) + 4])), "outside the payload"),
        ("wrong dtype", edited(lambda h: h["phi.w"].update(dtype="I32")), "dtype I32"),
        ("missing tensor", edited(lambda h: h.pop("phi.A")), "'phi.A' is missing"),
        ("wrong shape", edited(lambda h: h["phi.c"].update(shape=[1, 3])), "'phi.c' has shape [1, 3]"),
        ("no architecture", edited(lambda h: h["__metadata__"].pop("flowscope_flow")), "no 'flowscope_flow'"),
        ("architecture not JSON",
         edited(lambda h: h["__metadata__"].update(flowscope_flow="{not json")), "not valid JSON"),
        ("unknown kernel", edited(arch({"kernel": "gaussian"})), "architecture/kernel"),
        ("layers out of range", edited(arch({"layers": 0})), "architecture/layers"),
        ("draws that do not split the reference",
         edited(lambda h: h["__metadata__"].update(flowscope_reference_draws="3")), "flowscope_reference_draws"),
        ("draws not a number",
         edited(lambda h: h["__metadata__"].update(flowscope_reference_draws="8x")), "flowscope_reference_draws"),
    ]
    for i, (what, make, needle) in enumerate(cases):
        path = make(os.path.join(tmp, f"bad{i}.safetensors"))
        try:
            flowscope_model.load(path)
            check(False, f"{what}: no ValueError")
        except ValueError as e:
            check(needle in str(e), f"{what}: ValueError '{str(e).replace(tmp, 'TMP')}'")
        r = subprocess.run([cli, "sample", path, "--out", os.path.join(tmp, "x.npy"), "--n", "4"],
                           capture_output=True, text=True)
        check(r.returncode == 2, f"{what}: flowscope-cli sample exits {r.returncode} (2)")
    try:
        flowscope_model.load(os.path.join(tmp, "absent.safetensors"))
        check(False, "no such file: no ValueError")
    except ValueError as e:
        check("cannot open" in str(e), "no such file: ValueError")


def main():
    if len(sys.argv) != 2:
        print("usage: test_flow_reader.py FLOWSCOPE_CLI", file=sys.stderr)
        return 2
    cli = sys.argv[1]
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="flowscope-pyreader-") as tmp:
        Z = np.random.default_rng(7).standard_normal((N_SAMPLES, 2)).astype(np.float32)
        z_path = os.path.join(tmp, "z.npy")
        np.save(z_path, Z)
        paths = {}
        for name, options in TRAINED.items():
            path = os.path.join(tmp, f"{name}.safetensors")
            run([cli, "train", "--dataset", "moons", "--iters", "30", "--batch", "256", "--layers", "4",
                 "--width", "8", "--eval-every", "0", "--quiet", "--seed", "3", "--out", path] + options)
            paths[name] = path
        for name, changes in VARIANTS.items():
            paths[name] = variant(paths["rwpo"], os.path.join(tmp, f"{name}.safetensors"), changes)
        # The trained model's reference holds 8 draws (a mixture); as one draw of all its points, as a file
        # of an earlier version reads.
        _, _, header, payload = split(paths["rwpo"])
        check(header["__metadata__"].get("flowscope_reference_draws") == "8", "the RWPO model has 8 draws")
        header["__metadata__"].pop("flowscope_reference_draws")
        paths["rwpo-one-draw"] = with_header(os.path.join(tmp, "rwpo-one-draw.safetensors"), header, payload)
        for name, path in paths.items():
            compare(cli, tmp, name, path, z_path, Z)
        gradient_check(paths["rwpo"])

        # The Python command line, end to end.
        out = os.path.join(tmp, "py.npy")
        script = os.path.join(ROOT, "python", "flowscope_model.py")
        r = subprocess.run([sys.executable, script, paths["rwpo"], "--base", z_path, "--out", out,
                            "--batch", str(BATCH)], capture_output=True, text=True)
        expected = flowscope_model.load(paths["rwpo"]).generate(Z, batch=BATCH)
        check(r.returncode == 0 and np.array_equal(np.load(out), expected),
              "python3 python/flowscope_model.py MODEL --base Z.npy --out X.npy writes generate()'s samples")

        # A bad --base: exit 2, one message naming --base.
        wrong_shape, not_finite = os.path.join(tmp, "z3.npy"), os.path.join(tmp, "znan.npy")
        np.save(wrong_shape, np.zeros((5, 3)))
        np.save(not_finite, np.array([[0.0, 1.0], [np.nan, 0.0]]))
        for what, extra in [("n x 3", ["--base", wrong_shape]), ("with a NaN", ["--base", not_finite]),
                            ("with --n", ["--base", z_path, "--n", "10"])]:
            r = subprocess.run([cli, "sample", paths["plain"], "--out", os.path.join(tmp, "x.npy")] + extra,
                               capture_output=True, text=True)
            message = r.stderr.strip().replace(tmp, "TMP")
            check(r.returncode == 2 and "--base" in r.stderr, f"sample --base {what}: exit {r.returncode}, "
                  f"'{message}'")

        malformed(cli, tmp, paths["rwpo"])
    print(f"{len(failures)} failure(s) in {time.monotonic() - start:.1f} s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
