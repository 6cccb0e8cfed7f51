#!/usr/bin/env python3
"""A reference reader for Flowscope flows: load an exported model and generate samples, NumPy only.

A flow trained by ``flowscope-cli train`` (or the Flows tab) is exported as ``MODEL.safetensors`` (float32
tensors; the architecture, as a JSON string, in the metadata key ``flowscope_flow``) with ``MODEL.json``
beside it (the training record; not needed here). This module rebuilds the flow from that file alone,
exactly as the C++ engine does (engine/flows/FlowIo.cpp, Flow.cpp, Potential.cpp, RwpoLayer.cpp), and
draws samples in float64::

    import numpy as np, flowscope_model
    model = flowscope_model.load("moons.safetensors")
    Z = np.random.default_rng(0).standard_normal((10000, model.d))   # base samples, n x d
    X = model.generate(Z)                                            # samples, n x d
    X = model.generate(Z, explicit=True)                             # eq. (22) as printed

Layout: ``generate`` takes and returns one sample per ROW (n x d), as ``flowscope-cli sample`` writes them
and ``sample --base`` reads them. Internally, as in the C++ code, samples are columns (d x N).

The model (docs/math/flows.md; Algorithm 1 of Han, Osher, Li): M layers on [0, T], h = T / M. The
training map (23) takes data x^M to base samples x^0, layer k (k = M..1) being

    RWPO sub-step   x -> F(x) = x + 1/2 G(x; X),   G = S_{λh}(x) - m(x)      (keys X: the batch itself)
    drift sub-step  x -> x - h ∇φ(x, t_{k-1})                                (φ: the OT-Flow potential)

and the sampler runs it backwards, layer k = 0..M-1 at t_k = k h:

    explicit (22)   y = x + h ∇φ(x, t_k),              x' = F(y)
    default         y = x + h ∇φ(y, t_k),              x' = F^{-1}(y), i.e. z = y - 1/2 G(z; z)

The default is the exact inverse of the training map (its samples follow the density the model fitted);
each implicit sub-step is solved by the same Anderson-accelerated fixed-point iteration as the C++
``solveFixedPoint``, with the same tolerance (1e-5 on the largest change per iteration), memory and start
points, so both run the same iterates: against the C++ sampler run in double precision the samples agree to
rounding (≈1e-13). The stopping rule leaves them up to ≈1e-4 from the exact inverse where the sub-step is a
weak contraction; pass a smaller ``tolerance`` to get closer. Where the training map folds its inverse is
not unique, and a different iteration (a float32 one, or another tolerance) may land on another branch.
Without the RWPO layer (``rwpo`` false: the plain OT-Flow baseline) only the drift sub-steps remain.

With the RWPO layer a model carries reference draws of its training data (tensor ``reference``, d x R·n, R
draws of n points side by side; R in the metadata key ``flowscope_reference_draws``, 1 when absent): layer
k's keys of draw r are that draw's x^k, pushed backward through the training map, and sample j of a batch
inverts draw j mod R's frozen-key map on its own, the maps whose densities training fits (the model's
density is their mean, so this samples it exactly). A model without one (files of earlier
versions) has its samples as one another's keys (attention across the batch), so a sample depends on the
batch it is drawn in: ``generate`` splits the base samples into batches of ``batch`` rows (default 2000,
the CLI's ``sample --batch``), as the CLI does.

Command line::

    python3 python/flowscope_model.py MODEL.safetensors --base Z.npy --out samples.npy [--explicit]
                                      [--batch 2000]

Only NumPy is needed (Debian: python3-numpy). Malformed files raise ValueError naming the problem.
"""

from __future__ import annotations

import argparse
import json
import math
import struct
import sys

try:
    import numpy as np
except ImportError:
    raise ImportError("flowscope_model needs NumPy (Debian: apt install python3-numpy)") from None

__all__ = ["FlowModel", "load", "read_safetensors", "softplus", "DEFAULT_BATCH"]

# The sampler's constants (engine/flows/Flow.h, Flow.cpp).
SAMPLER_TOLERANCE = 1e-5  # kSamplerTolerance: the largest change per fixed-point iteration at exit
SAMPLER_MAX_ITERATIONS = 100  # kSamplerMaxIterations
ANDERSON_MEMORY = 5  # kAndersonMemory
DEFAULT_BATCH = 2000  # flowscope-cli sample --batch

METADATA_KEY = "flowscope_flow"
REFERENCE_DRAWS_KEY = "flowscope_reference_draws"  # R, the reference's draws (absent: 1)
MAX_HEADER_BYTES = 16 << 20  # the C++ reader's limit
KERNELS = ("corrected", "as-printed", "separable")


# ---------------------------------------------------------------------------------------------------------
# safetensors
# ---------------------------------------------------------------------------------------------------------


def _is_uint(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def read_safetensors(path: str) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """Reads a .safetensors file: returns ({name: float64 array}, metadata).

    The format (huggingface/safetensors): an 8-byte little-endian header length n, n bytes of JSON
    ``{"name": {"dtype", "shape", "data_offsets": [begin, end]}, ..., "__metadata__": {str: str}}``, then
    the tensors' bytes (little-endian, C order), offsets counted from the end of the header. F32 and F64
    are read; everything is validated before it is trusted, as the C++ reader does (engine/io/
    Safetensors.cpp), and any problem raises ValueError naming the file and the field.
    """
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise ValueError(f"{path}: cannot open the file ({e.strerror})") from None

    def fail(what: str) -> ValueError:
        return ValueError(f"{path}: {what}")

    if len(raw) < 8:
        raise fail("truncated: no 8-byte header length")
    (n,) = struct.unpack("<Q", raw[:8])
    if n > MAX_HEADER_BYTES:
        raise fail(f"header length {n} exceeds 16 MiB")
    if n > len(raw) - 8:
        raise fail(f"truncated: the header needs {n} bytes, the file has {len(raw) - 8}")
    payload = memoryview(raw)[8 + n :]
    try:
        header = json.loads(raw[8 : 8 + n].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise fail(f"header is not valid JSON ({e})") from None
    if not isinstance(header, dict):
        raise fail("header is not a JSON object")

    metadata: dict[str, str] = {}
    tensors: dict[str, np.ndarray] = {}
    spans = []
    for name, entry in header.items():
        if name == "__metadata__":
            if not isinstance(entry, dict):
                raise fail("__metadata__ is not an object")
            for key, value in entry.items():
                if not isinstance(value, str):
                    raise fail(f"__metadata__/{key} is not a string")
                metadata[key] = value
            continue
        where = f"tensor '{name}': "
        if not isinstance(entry, dict) or not {"dtype", "shape", "data_offsets"} <= entry.keys():
            raise fail(where + "needs dtype, shape and data_offsets")
        dtype = entry["dtype"]
        if not isinstance(dtype, str):
            raise fail(where + "dtype is not a string")
        if dtype not in ("F32", "F64"):
            raise fail(where + f"dtype {dtype} is not supported (F32, F64)")
        np_dtype = np.dtype("<f4") if dtype == "F32" else np.dtype("<f8")
        shape = entry["shape"]
        if not isinstance(shape, list) or len(shape) > 8 or not all(_is_uint(s) for s in shape):
            raise fail(where + "shape is not an array of at most 8 non-negative integers")
        count = math.prod(shape)
        offsets = entry["data_offsets"]
        if not isinstance(offsets, list) or len(offsets) != 2 or not all(_is_uint(o) for o in offsets):
            raise fail(where + "data_offsets is not [begin, end]")
        begin, end = offsets
        if begin > end or end > len(payload):
            raise fail(
                where + f"data_offsets [{begin}, {end}] lie outside the payload of {len(payload)} bytes"
            )
        if end - begin != count * np_dtype.itemsize:
            raise fail(
                where + f"data_offsets span {end - begin} bytes, the shape needs {count * np_dtype.itemsize}"
            )
        spans.append((begin, end, name))
        data = np.frombuffer(payload[begin:end], dtype=np_dtype, count=count)
        tensors[name] = data.astype(np.float64).reshape(shape)
    spans.sort()
    for (_, end0, name0), (begin1, _, name1) in zip(spans, spans[1:]):
        if begin1 < end0:
            raise fail(f"tensors '{name0}' and '{name1}' overlap")
    return tensors, metadata


# ---------------------------------------------------------------------------------------------------------
# The architecture (FlowIo.cpp: toJson / flowConfigFromJson)
# ---------------------------------------------------------------------------------------------------------


def _architecture(j) -> dict:
    """Validates the architecture JSON as flowConfigFromJson does and returns it with defaults filled in."""
    if not isinstance(j, dict):
        raise ValueError("architecture: expected an object")
    out = {}

    def field(name, kind, lo=None, hi=None, optional=False, default=None):
        where = f"architecture/{name}"
        if name not in j:
            if optional:
                out[name] = default
                return
            raise ValueError(where + ": missing")
        v = j[name]
        if kind is bool:
            if not isinstance(v, bool):
                raise ValueError(where + ": expected true or false")
        else:
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise ValueError(where + ": expected a number")
            if kind is int and not isinstance(v, int):
                raise ValueError(where + ": expected an integer")
            if not (lo <= v <= hi):
                raise ValueError(where + f": {v} is outside [{lo}, {hi}]")
        out[name] = v

    field("d", int, 1, 64)
    field("width", int, 1, 1024)
    field("depth", int, 2, 16)
    field("layers", int, 1, 256)
    field("T", float, 1e-9, 1e9)
    field("rwpo", bool)
    field("leave_one_out", bool)
    field("exact_log_det", bool)
    field("exact_drift_log_det", bool, optional=True, default=False)  # absent before: first order
    field("lambda0", float, 1e-300, 1e300)
    field("beta0", float, 1e-300, 1e300)
    field("train_lambda", bool)
    field("train_beta", bool)
    field("transport_weight", float, 0.0, 1e300)
    field("hjb_weight", float, 0.0, 1e300)
    if "seed" in j and not _is_uint(j["seed"]):
        raise ValueError("architecture/seed: expected an unsigned integer")
    kernel = j.get("kernel", "corrected")
    if kernel not in KERNELS:
        raise ValueError(f"architecture/kernel: '{kernel}' is not corrected, as-printed or separable")
    out["kernel"] = kernel
    if out["exact_log_det"] and kernel != "separable" and out["d"] != 2:
        raise ValueError("architecture/exact_log_det: needs d = 2 for a vector kernel")
    if out["exact_drift_log_det"] and out["d"] > 2:
        raise ValueError("architecture/exact_drift_log_det: needs d <= 2")
    return out


def softplus(u: float) -> float:
    """softplus(u) = log(1 + e^u) = max(u, 0) + log1p(e^{-|u|}): λ and β from lambda_raw and beta_raw."""
    return max(u, 0.0) + math.log1p(math.exp(-abs(u)))


# ---------------------------------------------------------------------------------------------------------
# The model
# ---------------------------------------------------------------------------------------------------------


class FlowModel:
    """A Flowscope generative flow, rebuilt from its exported tensors; computes in float64.

    Attributes: ``architecture`` (the validated JSON), ``d``, ``layers`` (M), ``T``, ``h`` = T / M,
    ``rwpo``, ``kernel``, ``leave_one_out``, ``lam`` (λ) and ``beta`` (β), and the potential's
    parameters ``K0, b0, K, bias, w, A, c, b`` (Potential.h; K and bias are lists over the residual layers).
    """

    def __init__(self, architecture: dict, tensors: dict[str, np.ndarray], metadata: dict[str, str] | None = None):
        a = _architecture(architecture)
        self.architecture = a
        self.d, self.width, self.depth = a["d"], a["width"], a["depth"]
        self.layers, self.T = a["layers"], float(a["T"])
        self.h = self.T / self.layers
        self.rwpo, self.kernel, self.leave_one_out = a["rwpo"], a["kernel"], a["leave_one_out"]

        d, m = self.d, self.width
        r = min(10, d + 1)

        def get(name, rows, cols):
            if name not in tensors:
                raise ValueError(f"tensor '{name}' is missing")
            t = tensors[name]
            if t.shape != (rows, cols):
                raise ValueError(f"tensor '{name}' has shape {list(t.shape)}, expected [{rows}, {cols}]")
            if not np.all(np.isfinite(t)):
                raise ValueError(f"tensor '{name}' holds a NaN or infinity")
            return np.array(t, dtype=np.float64)

        # Block order and names (PotentialParams::blockName):
        #     K0, b0, K1, b1, .., K{nTh-1}, b{nTh-1}, w, A, c, b.
        self.K0 = get("phi.K0", m, d + 1)
        self.b0 = get("phi.b0", m, 1)
        self.K = [get(f"phi.K{i}", m, m) for i in range(1, self.depth)]
        self.bias = [get(f"phi.b{i}", m, 1) for i in range(1, self.depth)]
        self.w = get("phi.w", m, 1)
        self.A = get("phi.A", r, d + 1)
        self.c = get("phi.c", d + 1, 1)
        self.b = get("phi.b", 1, 1)
        self.lambda_raw = float(get("lambda_raw", 1, 1)[0, 0])
        self.beta_raw = float(get("beta_raw", 1, 1)[0, 0])
        # λ = softplus(lambda_raw) (L1 prior weight), β = softplus(beta_raw) (inverse temperature).
        self.lam = softplus(self.lambda_raw)
        self.beta = softplus(self.beta_raw)
        # The RWPO model's reference batch of data (d x N_ref), the keys of its sampler (FlowModel::reference);
        # files of earlier versions have none, and their samples are one another's keys.
        self.reference = None
        if self.rwpo and "reference" in tensors:
            shape = tensors["reference"].shape
            if len(shape) != 2 or shape[0] != d or shape[1] < 2:
                raise ValueError(f"tensor 'reference' must be d x N with d = {d} and N >= 2, got {list(shape)}")
            self.reference = get("reference", d, shape[1])
            self.reference_draws = 1
            text = (metadata or {}).get(REFERENCE_DRAWS_KEY)
            if text is not None:
                draws = int(text) if text.isdigit() else 0
                if draws < 1 or shape[1] % draws != 0 or shape[1] // draws < 2:
                    raise ValueError(
                        f"metadata '{REFERENCE_DRAWS_KEY}': '{text}' does not split the {shape[1]} reference "
                        "points into draws of >= 2"
                    )
                self.reference_draws = draws

    # ---- the OT-Flow potential (Potential.h / Potential.cpp) ----

    def _forward(self, s: np.ndarray):
        """The ResNet of Φ at s ((d+1) x B, time in the last row): returns (u_M, [tanh a_0, .., tanh a_M]).

        u_0 = σ(K_0 s + b_0),  u_i = u_{i-1} + h_Φ σ(K_i u_{i-1} + b_i) (i = 1..M_Φ),  M_Φ = nTh - 1,
        h_Φ = 1/M_Φ, σ(u) = log(2 cosh u) = |u| + log1p(e^{-2|u|}), σ' = tanh.
        """
        M = len(self.K)
        hr = 1.0 / M

        def sigma(a):
            return np.abs(a) + np.log1p(np.exp(-2.0 * np.abs(a)))

        a = self.K0 @ s + self.b0
        u = sigma(a)
        tanhs = [np.tanh(a)]
        for i in range(1, M + 1):
            a = self.K[i - 1] @ u + self.bias[i - 1]
            u = u + hr * sigma(a)
            tanhs.append(np.tanh(a))
        return u, tanhs

    def potential(self, X: np.ndarray, t: float) -> np.ndarray:
        """Φ(x, t) = wᵀ u_M + ½ |A s|² + cᵀ s + b, s = [x; t], for X d x B: returns a length-B vector."""
        s = self._with_time(X, t)
        u, _ = self._forward(s)
        As = self.A @ s
        return (self.w.T @ u + 0.5 * np.sum(As * As, axis=0) + self.c.T @ s + self.b)[0]

    def potential_gradient(self, X: np.ndarray, t: float) -> np.ndarray:
        """∇_xΦ(x, t) for X d x B (d x B), by the closed recursion of docs/math/flows.md#potential:

        z_{M+1} = w,   z_i = z_{i+1} + h_Φ K_iᵀ (tanh(a_i) ⊙ z_{i+1})  (i = M..1),
        z_0 = K_0ᵀ (tanh(a_0) ⊙ z_1),   ∇_sΦ = z_0 + AᵀA s + c;
        its first d rows are ∇_xΦ (the last is ∂tΦ).
        """
        s = self._with_time(X, t)
        _, tanhs = self._forward(s)
        M = len(self.K)
        hr = 1.0 / M
        z = self.w  # z_{M+1}, broadcast over the batch
        for i in range(M, 0, -1):
            z = z + hr * (self.K[i - 1].T @ (tanhs[i] * z))
        grad = self.K0.T @ (tanhs[0] * z) + self.A.T @ (self.A @ s) + self.c
        return grad[: self.d]

    def _with_time(self, X: np.ndarray, t: float) -> np.ndarray:
        return np.vstack([X, np.full((1, X.shape[1]), float(t))])

    # ---- the RWPO sub-step (RwpoLayer.h / RwpoLayer.cpp, recordRwpo) ----

    def rwpo_step(self, X: np.ndarray, keys: np.ndarray | None = None) -> np.ndarray:
        """One RWPO sub-step F(x) = x + ½ G(x),  G(x) = S_{λh}(x) - m(x)  (docs/math/flows.md#rwpo-layer,
        eq. (22)), X d x N.

        Every token is a query and the keys y_l are the same tokens (leave_one_out: the query's own key gets
        weight 0), or ``keys`` (d x N_k, frozen; a query then has no own key to leave out). S_t(x)_i = sign(x_i) max(|x_i| - t, 0) is the soft threshold at t = λh, keeping its sign;
        m(x) = Σ_l w_l(x) y_l with w(x) = softmax_l U(x, y_l), the kernel U being

          corrected   U(x, y) = -β/(4h) |x - y|² + β/2 M(y),  M(y) = Σ_i huber(y_i), the Moreau envelope of
                      λ|.|₁: huber(s) = s²/(2h) for |s| <= λh, λ|s| - λ²h/2 beyond
          as-printed  eq. (22) literally: U = β/(2h) (x - S(x))·y + (βλ/2) |S(y)|₁ (x-only terms dropped)
          separable   one 1-D corrected softmax per coordinate: m(x)_i = Σ_l w_{il}(x) y_{il},
                      w_i(x) = softmax_l (-β/(4h) (x_i - y_{il})² + β/2 huber(y_{il}))

        As in C++, queries and keys enter centred on the keys' mean μ (the softmax is shift-invariant).
        """
        X = np.asarray(X, dtype=np.float64)
        Y = X if keys is None else np.asarray(keys, dtype=np.float64)
        exclude_self = self.leave_one_out and keys is None
        d, N = X.shape
        if exclude_self and N < 2:
            raise ValueError("RWPO layer: leave-one-out needs at least 2 tokens")
        h, lam, beta = self.h, self.lam, self.beta
        t = lam * h
        mu = Y.mean(axis=1, keepdims=True)
        Xc, Yc = X - mu, Y - mu  # queries and keys, centred on the keys' mean
        S = np.sign(X) * np.maximum(np.abs(X) - t, 0.0)
        SY = np.sign(Y) * np.maximum(np.abs(Y) - t, 0.0)
        absY = np.abs(Y)
        huber = np.where(absY <= t, Y * Y / (2.0 * h), lam * absY - lam * lam * h / 2.0)  # of the keys

        def softmax_rows(logits):
            if exclude_self:
                np.fill_diagonal(logits, -np.inf)
            logits = logits - logits.max(axis=1, keepdims=True)
            w = np.exp(logits)
            return w / w.sum(axis=1, keepdims=True)

        if self.kernel == "separable":
            mean = np.empty_like(X)
            for i in range(d):
                xi, yi = Xc[i], Yc[i]
                logits = -beta / (4.0 * h) * (xi[:, None] - yi[None, :]) ** 2 + 0.5 * beta * huber[i][None, :]
                mean[i] = softmax_rows(logits) @ yi
        else:
            if self.kernel == "corrected":
                sx, sy = np.sum(Xc * Xc, axis=0), np.sum(Yc * Yc, axis=0)
                dist2 = sx[:, None] + sy[None, :] - 2.0 * (Xc.T @ Yc)  # |x_j - y_l|², row j: query
                logits = -beta / (4.0 * h) * dist2 + 0.5 * beta * huber.sum(axis=0)[None, :]
            else:  # as-printed
                logits = (beta / (2.0 * h)) * ((X - S).T @ Yc) + (0.5 * beta * lam) * np.abs(SY).sum(axis=0)
            mean = (softmax_rows(logits) @ Yc.T).T  # centred weighted means m - μ, d x N
        return X + 0.5 * (S - (mean + mu))

    # ---- the sampler (Flow.cpp, FlowModel::generate) ----

    def generate(
        self,
        Z: np.ndarray,
        explicit: bool = False,
        batch: int = DEFAULT_BATCH,
        tolerance: float = SAMPLER_TOLERANCE,
        max_iterations: int = SAMPLER_MAX_ITERATIONS,
        info: dict | None = None,
    ) -> np.ndarray:
        """Samples from base samples Z (n x d, one sample per row; returns n x d, float64).

        Z is split into batches of ``batch`` rows, generated independently (with the RWPO layer a batch's
        samples are one another's keys), as ``flowscope-cli sample`` does. ``explicit``: eq. (22) as printed;
        default: the exact inverse of the training map (23), each implicit sub-step solved to ``tolerance``
        (the C++ default, 1e-5; smaller gets closer to the exact inverse). ``info``, when given, receives
        ``residual`` (the worst final fixed-point change; above ``tolerance`` where the training map folds
        and has no inverse) and ``iterations`` (the most any sub-step took).
        """
        Z = np.asarray(Z, dtype=np.float64)
        if Z.ndim != 2 or Z.shape[1] != self.d or Z.shape[0] < 1:
            raise ValueError(f"base samples must be n x d with d = {self.d} and n >= 1, got shape {Z.shape}")
        if not np.all(np.isfinite(Z)):
            raise ValueError("base samples hold a NaN or infinity")
        if int(batch) < 1:
            raise ValueError("batch must be >= 1")
        stats = {"residual": 0.0, "iterations": 0}
        out = np.empty_like(Z)
        batch = int(batch)
        for j in range(0, Z.shape[0], batch):
            columns = Z[j : j + batch].T
            out[j : j + batch] = self._generate_columns(columns, explicit, tolerance, max_iterations, stats).T
        if info is not None:
            info.update(stats)
        return out

    def _generate_columns(self, X, explicit, tolerance, max_iterations, stats):
        """One batch, samples as columns (d x N): layer k = 0..M-1 at t_k = k h.

        drift   (22): y = x + h ∇φ(x, t_k); exact inverse of x - h ∇φ(x, t_k): solve y = x + h ∇φ(y, t_k)
                from the explicit y.
        RWPO    (22): x' = F(y); exact inverse of F: solve z = y + z - F(z) (i.e. z = y - ½ G(z; z)) from
                its first-order solution 2y - F(y).
        """
        h = self.h

        def solve(P, g):
            P, change, iterations = _solve_fixed_point(P, g, tolerance, max_iterations)
            stats["residual"] = max(stats["residual"], change)
            stats["iterations"] = max(stats["iterations"], iterations)
            return P

        X = np.array(X, dtype=np.float64)
        if self.rwpo and self.reference is not None:
            R = self.reference_draws
            if R == 1:
                return self._generate_beside(X, self.reference_keys(self.reference), explicit, solve)
            # The mixture: column j inverts draw j mod R's map (each draw's columns solved together).
            n = self.reference.shape[1] // R
            out = np.empty_like(X)
            for r in range(min(R, X.shape[1])):
                keys = self.reference_keys(self.reference[:, r * n : (r + 1) * n])
                out[:, r::R] = self._generate_beside(X[:, r::R], keys, explicit, solve)
            return out
        return self._generate_beside(X, None, explicit, solve)

    def _generate_beside(self, X, frozen, explicit, solve):
        """Layers 0..M-1 of the sampler on columns X, beside one draw's keys by layer (None: X's own)."""
        h = self.h
        for k in range(self.layers):
            t = k * h
            Y = X + h * self.potential_gradient(X, t)
            if not explicit:
                Y = solve(Y, lambda P, X=X, t=t: X + h * self.potential_gradient(P, t))
            X = Y
            if self.rwpo:
                keys = None if frozen is None else frozen[k + 1]
                if explicit:
                    X = self.rwpo_step(X, keys)
                else:
                    Yh = X
                    X = solve(
                        2.0 * Yh - self.rwpo_step(Yh, keys), lambda P, Yh=Yh: Yh + P - self.rwpo_step(P, keys)
                    )
        return X

    def reference_keys(self, reference: np.ndarray) -> list:
        """A reference draw (d x n) pushed backward through the training map (23): entry k (k = 1..M) is its
        x^k, the keys of layer k's RWPO sub-step (entry 0 is unused)."""
        keys = [None] * (self.layers + 1)
        R = reference
        for k in range(self.layers, 0, -1):
            keys[k] = R
            R = self.rwpo_step(R)
            R = R - self.h * self.potential_gradient(R, (k - 1) * self.h)
        return keys


def _solve_fixed_point(P, g, tol, max_iterations):
    """Solves P = g(P) by Anderson acceleration, as the C++ solveFixedPoint (type II, memory 5).

    With the residuals f_i = g(P_i) - P_i of the last iterates: P <- g(P) - ΔG γ, γ = argmin |f - ΔF γ|
    (ΔF, ΔG the differences of successive residuals and images; normal equations with a 1e-12 relative
    ridge). It stops when the largest |f| is at most tol (or not finite), returning that last image g(P);
    the history restarts when a step makes the residual grow tenfold. Returns (P, change, iterations).
    """
    shape = P.shape
    dF, dG = [], []
    f_prev = g_prev = None
    best = math.inf
    change, iterations = 0.0, 0
    while iterations < max_iterations:
        image = g(P)
        gv, pv = image.ravel(), P.ravel()
        f = gv - pv
        iterations += 1
        change = float(np.max(np.abs(f))) if np.all(np.isfinite(f)) else math.inf
        if not (change > tol) or not math.isfinite(change):
            P = image
            break
        if change > 10 * best:  # diverging: forget the history
            dF.clear()
            dG.clear()
        elif f_prev is not None:
            dF.append(f - f_prev)
            dG.append(gv - g_prev)
            if len(dF) > ANDERSON_MEMORY:
                dF.pop(0)
                dG.pop(0)
        best = min(best, change)
        f_prev, g_prev = f, gv
        nxt = gv
        if dF:
            A = np.stack(dF, axis=1)
            B = np.stack(dG, axis=1)
            normal = A.T @ A
            normal[np.diag_indices_from(normal)] += 1e-12 * (normal.diagonal().max() + 1e-300)
            try:
                gamma = np.linalg.solve(normal, A.T @ f)
            except np.linalg.LinAlgError:
                gamma = None
            if gamma is not None and np.all(np.isfinite(gamma)):
                nxt = gv - B @ gamma
        P = nxt.reshape(shape)
    return P, change, iterations


def load(path: str) -> FlowModel:
    """Loads a flow exported by Flowscope (MODEL.safetensors). Raises ValueError naming the file and the
    problem: a malformed file, no ``flowscope_flow`` metadata, an invalid architecture, a missing tensor or
    one of the wrong shape or with non-finite values. F32 (what Flowscope writes) and F64 tensors are read."""
    tensors, metadata = read_safetensors(path)
    if METADATA_KEY not in metadata:
        raise ValueError(f"{path}: not a Flowscope flow (no '{METADATA_KEY}' metadata)")
    try:
        architecture = json.loads(metadata[METADATA_KEY])
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: the '{METADATA_KEY}' metadata is not valid JSON ({e})") from None
    try:
        return FlowModel(architecture, tensors, metadata)
    except ValueError as e:
        raise ValueError(f"{path}: {e}") from None


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description="Generate samples from a Flowscope flow (float64, NumPy only).",
        epilog="The base samples and the output are n x d .npy arrays (one sample per row), as "
        "flowscope-cli sample --base reads and --out writes them.",
    )
    parser.add_argument("model", help="MODEL.safetensors exported by Flowscope")
    parser.add_argument("--base", required=True, help="base samples Z.npy (n x d standard normals)")
    parser.add_argument("--out", required=True, help="where to write the samples (n x d float64 .npy)")
    parser.add_argument("--explicit", action="store_true", help="eq. (22) as printed, not the exact inverse")
    parser.add_argument("--batch", type=int, default=DEFAULT_BATCH, help="samples per batch (default 2000)")
    args = parser.parse_args(argv)
    try:
        model = load(args.model)
        try:
            Z = np.load(args.base, allow_pickle=False)
        except (OSError, ValueError) as e:
            raise ValueError(f"--base {args.base}: {e}") from None
        if Z.ndim != 2 or Z.shape[:1] == (0,) or Z.shape[1:] != (model.d,):
            raise ValueError(
                f"--base {args.base}: holds an array of shape {Z.shape}; the model needs n x {model.d}"
            )
        info: dict = {}
        X = model.generate(Z, explicit=args.explicit, batch=args.batch, info=info)
        np.save(args.out, X)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(
        f"wrote {args.out}: {X.shape[0]} x {X.shape[1]} samples (sampler: fixed-point residual "
        f"{info['residual']:.1e}, at most {info['iterations']} iterations per sub-step)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
