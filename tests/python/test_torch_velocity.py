"""flowscope.torch.velocity and flowscope.velocity_vjp: the engine's hand-written, streamed VJP of one attention
head against torch.autograd.gradcheck (central finite differences in float64) and against PyTorch's own
autograd of the dense N x N formula written here from docs/math/attention-vjp.md."""

import math
import warnings

import pytest

np = pytest.importorskip("numpy")
torch = pytest.importorskip("torch")
import flowscope  # noqa: E402
import flowscope.torch as ft  # noqa: E402

KINDS = ["softmax", "l2", "exp", "relu", "sigmoid"]


def dense(X, Q, K, V, beta, kind, sphere):
    """The velocity with the N x N weights formed, in PyTorch (autograd differentiates it)."""
    n = X.shape[-2]
    if kind == "l2":
        diff = (X @ Q.T).unsqueeze(-2) - (X @ K.T).unsqueeze(-3)  # (..., N, N, k): Q x_i - K x_j
        s = -beta * diff.pow(2).sum(-1)
    else:
        s = beta * (X @ Q.T) @ (X @ K.T).transpose(-1, -2)
    if kind in ("softmax", "l2"):
        c = torch.softmax(s, dim=-1)
    elif kind == "exp":
        c = torch.exp(s) / n
    elif kind == "relu":
        c = torch.relu(s) / n
    else:
        c = torch.sigmoid(s) / n
    y = (c @ X) @ V.T
    if sphere:
        y = y - (y * X).sum(-1, keepdim=True) / (X * X).sum(-1, keepdim=True) * X
    return y


def inputs(n, d=3, k=2, dtype=torch.float64, batch=None, seed=0):
    g = torch.Generator().manual_seed(seed)
    shape = (n, d) if batch is None else (batch, n, d)
    X = torch.randn(*shape, generator=g, dtype=dtype)
    Q = 0.7 * torch.randn(k, d, generator=g, dtype=dtype)
    K = 0.7 * torch.randn(k, d, generator=g, dtype=dtype)
    V = torch.randn(d, d, generator=g, dtype=dtype)
    beta = torch.tensor(0.8, dtype=dtype)
    return [t.requires_grad_() for t in (X, Q, K, V, beta)]


@pytest.mark.parametrize("sphere", [False, True])
@pytest.mark.parametrize("kind", KINDS)
def test_gradcheck_float64(kind, sphere):
    args = inputs(7, seed=KINDS.index(kind))
    assert torch.autograd.gradcheck(lambda *a: ft.velocity(*a, kind=kind, sphere=sphere), args, eps=1e-6,
                                    atol=1e-8, rtol=1e-6)


def relative(a, b):
    return float((a - b).abs().max() / b.abs().max())


def value_and_grads(f, args, G):
    v = f(*args)
    return [v.detach()] + list(torch.autograd.grad((v * G).sum(), args))


@pytest.mark.parametrize("sphere", [False, True])
@pytest.mark.parametrize("kind", KINDS)
def test_agrees_with_dense_autograd(kind, sphere):
    """The velocity and the five gradients against PyTorch's autograd of the dense formula. float64: both are
    sums of N = 300 terms rounded at 1.1e-16, 1e-10 of the largest entry is ample. float32: both sides are
    measured against the float64 dense values, and ours may be off by 10 times what torch's own float32
    rounding gives (or 2e-5 of the largest entry, float32's 6e-8 over sums of hundreds of terms)."""
    f = lambda *a: ft.velocity(*a, kind=kind, sphere=sphere)  # noqa: E731
    g = lambda *a: dense(*a, kind=kind, sphere=sphere)  # noqa: E731
    G = torch.randn(300, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(9))
    args64 = inputs(300, seed=3)
    ours64, ref64 = value_and_grads(f, args64, G), value_and_grads(g, args64, G)
    args32 = [a.detach().float().requires_grad_() for a in args64]
    ours32, ref32 = value_and_grads(f, args32, G.float()), value_and_grads(g, args32, G.float())
    for name, a64, b64, a32, b32 in zip(["v", "X", "Q", "K", "V", "beta"], ours64, ref64, ours32, ref32):
        assert a64.dtype == torch.float64 and a32.dtype == torch.float32 and a64.shape == b64.shape, name
        assert relative(a64, b64) < 1e-10, (name, relative(a64, b64))
        ours_err, torch_err = relative(a32.double(), b64), relative(b32.double(), b64)
        assert ours_err < max(10 * torch_err, 2e-5), (name, ours_err, torch_err)


def test_batch_equals_a_loop_over_batches():
    X, Q, K, V, beta = inputs(50, batch=3, seed=4)
    G = torch.randn(3, 50, 3, dtype=torch.float64)
    v = ft.velocity(X, Q, K, V, beta, kind="l2", sphere=True)
    grads = torch.autograd.grad((v * G).sum(), (X, Q, K, V, beta))
    loop_v, loop = [], [0, 0, 0, 0]
    for b in range(3):
        Xb = X[b].detach().clone().requires_grad_()
        vb = ft.velocity(Xb, Q, K, V, beta, kind="l2", sphere=True)
        gb = torch.autograd.grad((vb * G[b]).sum(), (Xb, Q, K, V, beta))
        loop_v.append(vb.detach())
        assert torch.allclose(grads[0][b], gb[0], rtol=0, atol=0)  # the same computation
        loop = [s + g for s, g in zip(loop, gb[1:])]
    assert torch.equal(v.detach(), torch.stack(loop_v))
    for a, b in zip(grads[1:], loop):
        assert torch.allclose(a, b, rtol=1e-14, atol=0)


def test_velocity_vjp_for_numpy_is_the_same_product():
    X, Q, K, V, beta = inputs(40, seed=5)
    G = torch.randn(40, 3, dtype=torch.float64)
    v = ft.velocity(X, Q, K, V, beta, kind="sigmoid")
    expected = torch.autograd.grad((v * G).sum(), (X, Q, K, V, beta))
    got = flowscope.velocity_vjp(*(t.detach().numpy() for t in (X, Q, K, V)), float(beta), G.numpy(),
                                 kind="sigmoid")
    for a, b in zip(got[:4], expected[:4]):
        assert isinstance(a, np.ndarray) and a.flags.c_contiguous and a.dtype == np.float64
        np.testing.assert_array_equal(a, b.numpy())
    assert got[4] == float(expected[4])
    # float32 in, float32 out.
    got32 = flowscope.velocity_vjp(*(t.detach().numpy().astype(np.float32) for t in (X, Q, K, V)), 0.8,
                                   G.numpy().astype(np.float32))
    assert all(a.dtype == np.float32 for a in got32[:4])


def test_float16_is_computed_in_float32_with_a_warning():
    X, Q, K, V, beta = inputs(30, seed=6)
    with pytest.warns(UserWarning, match="X is float16; computed in float32"):
        v16 = ft.velocity(X.detach().half().requires_grad_(), Q, K, V, beta)
    assert v16.dtype == torch.float16
    v = ft.velocity(X.detach().half().float(), Q, K, V, beta)
    assert torch.equal(v16.float(), v.half().float())


def test_refusals_name_the_argument_and_the_shapes():
    X, Q, K, V, beta = inputs(10)
    with pytest.raises(ValueError, match=r"X: expected tokens of shape \(N, d\) or \(B, N, d\), got shape \(10,\)"):
        ft.velocity(X[:, 0], Q, K, V, beta)
    with pytest.raises(ValueError, match=r"V: expected shape \(3, 3\) for X of shape \(10, 3\), got \(2, 2\)"):
        ft.velocity(X, Q, K, V[:2, :2], beta)
    with pytest.raises(ValueError, match=r"Q: expected shape \(k, 3\)"):
        ft.velocity(X, Q[:, :2], K, V, beta)
    with pytest.raises(ValueError, match="kind: expected one of"):
        ft.velocity(X, Q, K, V, beta, kind="sinkhorn")
    with pytest.raises(TypeError, match="X must hold real floating-point numbers, got torch.int64"):
        ft.velocity(torch.ones(10, 3, dtype=torch.int64), Q, K, V, beta)
    with pytest.raises(TypeError, match="velocity_vjp: X must hold real floating-point numbers .* got complex128"):
        flowscope.velocity_vjp(np.ones((10, 3), complex), Q.detach().numpy(), K.detach().numpy(),
                               V.detach().numpy(), 1.0, np.ones((10, 3)))
    with pytest.raises(TypeError, match=r"X\.detach\(\)"):
        flowscope.velocity_vjp(X, Q, K, V, 1.0, np.ones((10, 3)))
