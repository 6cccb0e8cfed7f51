"""One attention head's velocity and its VJP for NumPy (velocity_vjp) and PyTorch (flowscope.torch).

The C++ engine computes both (engine/attention/AttentionVjp.h, docs/math/attention-vjp.md); this file checks
the arguments, picks the precision from X's dtype and loops over a leading batch axis.
"""

import warnings
from typing import Tuple

import numpy as np
from numpy.typing import ArrayLike

from . import _flowscope

KINDS = ("softmax", "l2", "exp", "relu", "sigmoid")


def check_kind(kind):
    if kind not in KINDS:
        raise ValueError(f"kind: expected one of {', '.join(map(repr, KINDS))}, got {kind!r}")


def check_float_dtype(name, dtype, caller):
    """float32 or float64: as they are (True for float32); float16 and bfloat16: float32, with a warning;
    anything else a TypeError naming the argument."""
    text = str(dtype).replace("torch.", "")
    if text in ("float64", "double"):
        return False
    if text in ("float32", "float"):
        return True
    if text in ("float16", "half", "bfloat16"):
        warnings.warn(f"{caller}: {name} is {text}; computed in float32 (the engine has no {text} kernel)",
                      stacklevel=3)
        return True
    raise TypeError(f"{caller}: {name} must hold real floating-point numbers (float32 or float64), got {text}")


def as_float_array(name, a, caller):
    """A NumPy array of a float dtype from an array or a list (lists become float64)."""
    if isinstance(a, (list, tuple)):
        a = np.asarray(a, dtype=np.float64)
    if not isinstance(a, np.ndarray):
        if hasattr(a, "detach") and getattr(a, "requires_grad", False):
            raise TypeError(f"{caller}: {name} is a tensor that requires grad; pass {name}.detach(), or use "
                            "flowscope.torch.velocity to get gradients")
        a = np.asarray(a)
    check_float_dtype(name, a.dtype, caller)
    return a


def check_shapes(X, Q, K, V, G=None):
    """(N, d) or (B, N, d) tokens, Q and K (k, d), V (d, d), G as X: ValueError naming the argument."""
    if X.ndim not in (2, 3) or X.shape[-1] < 1 or X.shape[-2] < 1:
        raise ValueError(f"X: expected tokens of shape (N, d) or (B, N, d), got shape {tuple(X.shape)}")
    d = X.shape[-1]
    if Q.ndim != 2 or Q.shape[1] != d:
        raise ValueError(f"Q: expected shape (k, {d}) for X of shape {tuple(X.shape)}, got {tuple(Q.shape)}")
    if tuple(K.shape) != tuple(Q.shape):
        raise ValueError(f"K: expected Q's shape {tuple(Q.shape)}, got {tuple(K.shape)}")
    if tuple(V.shape) != (d, d):
        raise ValueError(f"V: expected shape ({d}, {d}) for X of shape {tuple(X.shape)}, got {tuple(V.shape)}")
    if G is not None and tuple(G.shape) != tuple(X.shape):
        raise ValueError(f"G: expected X's shape {tuple(X.shape)}, got {tuple(G.shape)}")


def forward(X, Q, K, V, beta, kind, sphere, float32):
    """(v, saved): the velocity of float64/float32 NumPy tokens, (N, d) or (B, N, d), and per batch what
    backward needs."""
    batches = X[None] if X.ndim == 2 else X
    outs, saved = [], []
    for Xb in batches:
        v, avg, shift = _flowscope._attention_forward(Xb, Q, K, V, float(beta), kind, bool(sphere), float32)
        outs.append(v)
        saved.append((avg, shift))
    v = outs[0] if X.ndim == 2 else np.stack(outs)
    return v, saved


def backward(X, Q, K, V, beta, kind, sphere, saved, G, float32):
    """(dX, dQ, dK, dV, dbeta) from forward's saved state; the parameters' gradients summed over batches."""
    batches, grads = (X[None], G[None]) if X.ndim == 2 else (X, G)
    dX, dQ, dK, dV, dbeta = [], 0, 0, 0, 0.0
    for Xb, Gb, (avg, shift) in zip(batches, grads, saved):
        gx, gq, gk, gv, gb = _flowscope._attention_backward(Xb, Q, K, V, float(beta), kind, bool(sphere), avg,
                                                             shift, Gb, float32)
        dX.append(gx)
        dQ, dK, dV, dbeta = dQ + gq, dK + gk, dV + gv, dbeta + gb
    return (dX[0] if X.ndim == 2 else np.stack(dX)), dQ, dK, dV, dbeta


def velocity_vjp(X: ArrayLike, Q: ArrayLike, K: ArrayLike, V: ArrayLike, beta: float, G: ArrayLike,
                 kind: str = "softmax", sphere: bool = False
                 ) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, float]:
    """velocity_vjp(X, Q, K, V, beta, G, kind="softmax", sphere=False) -> (dX, dQ, dK, dV, dbeta)

    The vector-Jacobian product of one attention head's velocity v(X, Q, K, V, beta) (flowscope.torch.velocity
    gives the formulas) with a cotangent G of v's shape: the gradients of sum(G * v) with respect to X, Q, K, V
    and beta, from the engine's streamed backward (no N x N matrix; docs/math/attention-vjp.md).

    X      tokens (N, d), or a batch (B, N, d) sharing Q, K, V and beta (their gradients are summed)
    Q, K   (k, d);  V (d, d);  beta a number
    G      the cotangent, X's shape
    kind   "softmax", "l2", "exp", "relu" or "sigmoid";  sphere: project onto the sphere's tangent space

    float32 X computes and answers in float32, float64 in float64; float16 is computed in float32 (with a
    warning). Outputs are C-ordered arrays of X's precision; dbeta is a float.
    """
    caller = "velocity_vjp"
    check_kind(kind)
    X = as_float_array("X", X, caller)
    float32 = X.dtype != np.float64
    Q, K, V, G = (as_float_array(n, a, caller) for n, a in (("Q", Q), ("K", K), ("V", V), ("G", G)))
    check_shapes(X, Q, K, V, G)
    if X.dtype == np.float16:
        X = X.astype(np.float32)
    _, saved = forward(X, Q, K, V, beta, kind, sphere, float32)
    return backward(X, Q, K, V, beta, kind, sphere, saved, G, float32)
