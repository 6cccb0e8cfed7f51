"""flowscope.torch: attention velocities you can put inside a PyTorch loss.

    import torch, flowscope.torch as ft
    X = torch.randn(4096, 3, requires_grad=True)
    Q, K, V = (torch.eye(3, requires_grad=True) for _ in range(3))
    v = ft.velocity(X, Q, K, V, beta=1.0)          # (N, d), or (B, N, d) for a batch
    v.pow(2).sum().backward()                      # X.grad, Q.grad, K.grad, V.grad

The forward and the backward run in the C++ engine, streamed: memory is O(N d), the N x N attention weights
are never stored (the backward recomputes them from each query's log-normaliser). The derivation is in
docs/math/attention-vjp.md. Importing this module imports torch; `import flowscope` alone does not.
"""

import numpy as np
import torch as _torch
from torch.autograd.function import once_differentiable as _once_differentiable

from . import _vjp

__all__ = ["velocity"]

_CALLER = "flowscope.torch.velocity"


def _to_numpy(t, float32):
    """A CPU NumPy copy (or view) of a tensor: float32 or float64 as asked."""
    t = t.detach()
    return t.to(device="cpu", dtype=_torch.float32 if float32 else _torch.float64).numpy()


class _Velocity(_torch.autograd.Function):
    @staticmethod
    def forward(ctx, X, Q, K, V, beta, kind, sphere, float32):
        x = _to_numpy(X, float32)
        q, k, v_ = (_to_numpy(t, False) for t in (Q, K, V))
        b = float(beta)
        out, saved = _vjp.forward(x, q, k, v_, b, kind, sphere, float32)
        ctx.args = (x, q, k, v_, b, kind, sphere, float32)
        ctx.saved = saved
        ctx.inputs = (X, Q, K, V, beta)
        return _torch.from_numpy(out).to(device=X.device, dtype=X.dtype)

    @staticmethod
    @_once_differentiable
    def backward(ctx, grad):
        x, q, k, v_, b, kind, sphere, float32 = ctx.args
        g = _to_numpy(grad, float32)
        grads = _vjp.backward(x, q, k, v_, b, kind, sphere, ctx.saved, g, float32)
        out = []
        for t, gr, needed in zip(ctx.inputs, grads, ctx.needs_input_grad):
            out.append(_torch.as_tensor(np.asarray(gr)).to(device=t.device, dtype=t.dtype).reshape(t.shape)
                       if needed else None)
        return (*out, None, None, None)


def velocity(X: "_torch.Tensor", Q: "_torch.Tensor", K: "_torch.Tensor", V: "_torch.Tensor",
             beta: "float | _torch.Tensor" = 1.0, kind: str = "softmax", sphere: bool = False) -> "_torch.Tensor":
    """velocity(X, Q, K, V, beta=1.0, kind="softmax", sphere=False) -> Tensor

    One attention head's velocity on tokens X, differentiable in X, Q, K, V and beta:

        v_i = V a_i,   a_i = Σ_j c_ij x_j   (every j, i itself included)
        softmax   c_ij = exp(s_ij) / Σ_l exp(s_il),   s_ij = beta (Q x_i) · (K x_j)
        l2        the same with s_ij = -beta |Q x_i - K x_j|²
        exp       c_ij = exp(s_ij) / N
        relu      c_ij = max(s_ij, 0) / N
        sigmoid   c_ij = 1 / (1 + exp(-s_ij)) / N
        sphere    v_i = (I - x_i x_iᵀ / |x_i|²) V a_i   (the tangent part; a token at the origin keeps V a_i)

    X        (N, d) or (B, N, d) (a batch sharing Q, K, V and beta)
    Q, K     (k, d);  V (d, d);  beta a number or a 0-d tensor (its gradient then flows too)
    kind     "softmax", "l2", "exp", "relu" or "sigmoid"

    float32 X computes in float32 (the SIMD kernel forward), float64 in float64; float16 and bfloat16 are
    computed in float32 with a warning. The output has X's dtype and device (CUDA tensors are computed on
    the CPU). Memory O(N d): the N x N weights are never stored, in the forward or the backward.
    """
    _vjp.check_kind(kind)
    for name, t in (("X", X), ("Q", Q), ("K", K), ("V", V)):
        if not isinstance(t, _torch.Tensor):
            raise TypeError(f"{_CALLER}: {name} must be a torch.Tensor, got {type(t).__name__} "
                            "(flowscope.velocity_vjp takes NumPy arrays)")
        if t.is_complex() or not t.is_floating_point():
            raise TypeError(f"{_CALLER}: {name} must hold real floating-point numbers, got {t.dtype}")
    float32 = _vjp.check_float_dtype("X", X.dtype, _CALLER)
    _vjp.check_shapes(X, Q, K, V)
    if isinstance(beta, _torch.Tensor):
        if beta.numel() != 1 or beta.is_complex() or not beta.is_floating_point():
            raise TypeError(f"{_CALLER}: beta must be a number or a one-element float tensor, got "
                            f"{beta.dtype} of shape {tuple(beta.shape)}")
    else:
        beta = _torch.tensor(float(beta), dtype=_torch.float64)
    if not bool(_torch.isfinite(beta)):
        raise ValueError(f"{_CALLER}: beta must be finite, got {float(beta)}")
    return _Velocity.apply(X, Q, K, V, beta, kind, bool(sphere), float32)
