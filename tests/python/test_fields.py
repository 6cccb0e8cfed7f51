"""flowscope.velocity / attention_weights / entropies against dense float64 NumPy formulas written here from
docs/math/attention.md (every variant, float32 and float64 inputs), and softmax against PyTorch."""

import math

import pytest

np = pytest.importorskip("numpy")
import flowscope  # noqa: E402

RNG = np.random.default_rng(7)
N, D = 40, 3


def mat(shape, scale=0.6):
    return (scale * RNG.standard_normal(shape)).tolist()


# Each case: the scene's "attention" object, with explicit matrices (k x d Q and K, d x d V).
HEAD = {"Q": mat((D, D)), "K": mat((D, D)), "V": mat((D, D))}
HEAD2 = {"Q": mat((2, D)), "K": mat((2, D)), "V": mat((D, D))}
CASES = {
    "softmax": {"type": "softmax", "beta": 1.3, "heads": [HEAD]},
    "softmax-2heads-sqrtk": {"type": "softmax", "scale_by_sqrt_k": True, "heads": [HEAD, HEAD2]},
    "masked": {"type": "masked", "heads": [HEAD]},
    "l2": {"type": "l2", "beta": 0.8, "heads": [HEAD2]},
    "l2-masked": {"type": "l2", "masked": True, "heads": [HEAD]},
    "exp": {"type": "exp", "heads": [HEAD]},
    "relu": {"type": "relu", "heads": [HEAD, HEAD2]},
    "sigmoid": {"type": "sigmoid", "masked": True, "heads": [HEAD]},
    "linear": {"type": "linear", "heads": [HEAD]},
    "linear-eps": {"type": "linear", "linear_eps": 0.5, "heads": [HEAD2]},
    "sinkhorn": {"type": "sinkhorn", "heads": [HEAD], "sinkhorn": {"eps": 0.7, "iterations": 5000, "tol": 1e-13}},
    "drifting": {"type": "drifting", "target": {"mean": [0.5, -0.2, 0.1], "cov": [[1.5, 0.2, 0], [0.2, 0.7, 0], [0, 0, 1]]}},
    "rwpo": {"type": "rwpo", "beta": 1.5, "rwpo": {"lambda": 2, "h": 0.05}},
    "rwpo-as-printed": {"type": "rwpo", "rwpo": {"lambda": 1, "h": 0.1, "kernel": "as_printed"}},
    "rwpo-per-coordinate": {"type": "rwpo", "rwpo": {"lambda": 2, "h": 0.05, "kernel": "per_coordinate"}},
    "softmax-sphere": {"type": "softmax", "sphere": True, "beta": 2, "heads": [HEAD]},
}


def softmax_rows(S, mask=None):
    if mask is not None:
        S = np.where(mask, S, -np.inf)
    S = S - S.max(axis=1, keepdims=True)
    W = np.exp(S)
    return W / W.sum(axis=1, keepdims=True)


def heads(att):
    return [tuple(np.array(h[k], dtype=np.float64) for k in ("Q", "K", "V")) for h in att["heads"]]


def soft_threshold(X, th):
    return np.sign(X) * np.maximum(np.abs(X) - th, 0)


def huber_sum(Y, lam, h):
    a = np.abs(Y)
    return np.where(a <= lam * h, Y * Y / (2 * h), lam * a - lam * lam * h / 2).sum(axis=1)


def rwpo_mean(X, beta, lam, h, kernel):
    """m(x_i) = Σ_l softmax_l(U(x_i, x_l)) x_l, own key included (docs/math/attention.md#rwpo)."""
    if kernel == "per_coordinate":
        return np.column_stack([rwpo_mean(X[:, [c]], beta, lam, h, "corrected")[:, 0] for c in range(X.shape[1])])
    if kernel == "as_printed":
        S = soft_threshold(X, lam * h)
        U = (beta / (2 * h)) * (X - S) @ X.T + (beta * lam / 2) * np.abs(S).sum(axis=1)[None, :]
    else:
        sq = ((X[:, None, :] - X[None, :, :]) ** 2).sum(axis=2)
        U = -(beta / (4 * h)) * sq + (beta / 2) * huber_sum(X, lam, h)[None, :]
    return softmax_rows(U) @ X


def sinkhorn_plan(S):
    """P_ij = (1/N) exp(f_i + g_j + S_ij) with unit row and column sums, solved to convergence."""
    n = S.shape[0]
    f, g = np.zeros(n), np.zeros(n)
    lse = lambda M, axis: M.max(axis=axis) + np.log(np.exp(M - M.max(axis=axis, keepdims=True)).sum(axis=axis))
    for _ in range(100000):
        f = -(lse(g[None, :] + S, 1) - math.log(n))
        g_new = -(lse(f[:, None] + S, 0) - math.log(n))
        done = np.abs(g_new - g).max() < 1e-15
        g = g_new
        if done:
            break
    return np.exp(f[:, None] + g[None, :] + S) / n


def dense_velocity(att, X):
    """Γ(x_i) of docs/math/attention.md, summed over heads, as dense N x N float64 matrices."""
    n, d = X.shape
    typ, beta = att["type"], att.get("beta", 1.0)
    masked = att.get("masked", False) or typ == "masked"
    mask = np.tril(np.ones((n, n), dtype=bool)) if masked else None
    if typ == "rwpo":
        p = att["rwpo"]
        lam, h = p["lambda"], p["h"]
        out = (soft_threshold(X, lam * h) - rwpo_mean(X, beta, lam, h, p.get("kernel", "corrected"))) / (2 * h)
    elif typ == "drifting":
        m, C = np.array(att["target"]["mean"]), np.array(att["target"]["cov"])
        target = m + (X - m) @ (C @ np.linalg.inv(C + np.eye(d))).T
        sq = ((X[:, None, :] - X[None, :, :]) ** 2).sum(axis=2)
        out = target - softmax_rows(-sq / 2) @ X
    else:
        out = np.zeros_like(X)
        for Q, K, V in heads(att):
            g = beta / (math.sqrt(Q.shape[0]) if att.get("scale_by_sqrt_k") else 1.0)
            A = g * K.T @ Q
            S = (X @ A.T) @ X.T  # S[i, j] = x_jᵀ A x_i
            if typ in ("softmax", "masked"):
                out += softmax_rows(S, mask) @ X @ V.T
            elif typ == "l2":
                out += softmax_rows(2 * S - g * ((X @ K.T) ** 2).sum(axis=1)[None, :], mask) @ X @ V.T
            elif typ in ("exp", "relu", "sigmoid"):
                w = {"exp": np.exp, "relu": lambda s: np.maximum(s, 0), "sigmoid": lambda s: 1 / (1 + np.exp(-s))}[typ](S)
                if mask is not None:
                    w = w * mask
                out += (w @ X @ V.T) / n
            elif typ == "linear":
                M2, mean = X.T @ X / n, X.mean(axis=0)
                eps = att.get("linear_eps")
                if eps is None:
                    out += X @ (V @ M2 @ A).T
                else:
                    out += (V @ mean) / eps + X @ (V @ (M2 - np.outer(mean, mean)) @ A).T
            elif typ == "sinkhorn":
                eps = att["sinkhorn"]["eps"]
                out += sinkhorn_plan(S / eps) @ X @ V.T / eps
    if att.get("sphere"):
        out = out - (np.sum(out * X, axis=1) / np.sum(X * X, axis=1))[:, None] * X
    return out


def tokens(dtype):
    X = 0.8 * RNG.standard_normal((N, D))
    return X.astype(dtype)


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_velocity_matches_dense_formula(name, dtype):
    att = CASES[name]
    X = tokens(dtype)
    got = flowscope.velocity(att, X)
    assert got.dtype == np.dtype(dtype) and got.shape == X.shape and got.flags.c_contiguous
    want = dense_velocity(att, X.astype(np.float64))
    scale = np.abs(want).max()
    # float64: the reference path, to rounding; float32: the SIMD kernel (and Sinkhorn's 2e-6 marginal floor).
    tol = 1e-10 if dtype == "float64" else (2e-4 if name == "sinkhorn" else 2e-5)
    err = np.abs(got.astype(np.float64) - want).max() / scale
    assert err < tol, f"{name} {dtype}: relative error {err:.2e}"


def test_scene_and_attention_dict_agree():
    scene = flowscope.Scene({"d": D, "n": 10, "attention": CASES["softmax"]})
    X = tokens("float64")
    assert np.array_equal(flowscope.velocity(scene, X), flowscope.velocity(CASES["softmax"], X))
    assert np.array_equal(flowscope.velocity(scene.to_dict(), X), flowscope.velocity(scene, X))


@pytest.mark.parametrize("name", ["softmax", "masked", "l2", "sinkhorn", "drifting", "rwpo"])
def test_attention_weights_and_entropies(name):
    att = CASES[name]
    X = tokens("float64")
    i = 7
    P = flowscope.attention_weights(att, X, i)
    assert P.shape == (N,) and abs(P.sum() - 1) < 1e-12
    H = flowscope.entropies(att, X)
    assert H.shape == (N,)
    if name in ("softmax", "masked", "l2"):  # the first head's row, from the dense scores
        Q, K, V = heads(att)[0]
        A = att.get("beta", 1.0) * K.T @ Q
        S = (X @ A.T) @ X.T
        if name == "l2":
            S = 2 * S - att.get("beta", 1.0) * ((X @ K.T) ** 2).sum(axis=1)[None, :]
        Pd = softmax_rows(S, np.tril(np.ones((N, N), dtype=bool)) if name == "masked" else None)
        assert np.abs(P - Pd[i]).max() < 1e-12
        with np.errstate(divide="ignore", invalid="ignore"):
            Hd = -np.nansum(Pd * np.log(Pd), axis=1)
        assert np.abs(H - Hd).max() < 1e-10
    if name == "sinkhorn":  # row i of the doubly stochastic plan
        Q, K, V = heads(att)[0]
        Pd = sinkhorn_plan((X @ (K.T @ Q).T) @ X.T / att["sinkhorn"]["eps"])
        assert np.abs(P - Pd[i] / Pd[i].sum()).max() < 1e-9
    assert abs(H[i] + np.sum(P[P > 0] * np.log(P[P > 0]))) < 1e-9


def test_unnormalised_variants_have_no_distribution():
    with pytest.raises(ValueError, match="exp attention has no attention distribution"):
        flowscope.attention_weights(CASES["exp"], tokens("float64"), 0)
    with pytest.raises(ValueError, match="linear attention has no attention entropy"):
        flowscope.entropies(CASES["linear"], tokens("float64"))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_softmax_against_pytorch(dtype):
    torch = pytest.importorskip("torch")
    beta, d, n = 1.7, 4, 300
    Q, K, V = (0.5 * RNG.standard_normal((d, d)) for _ in range(3))
    X = RNG.standard_normal((n, d)).astype(dtype)
    att = {"type": "softmax", "beta": beta, "heads": [{"Q": Q.tolist(), "K": K.tolist(), "V": V.tolist()}]}
    got = flowscope.velocity(att, X)
    t = lambda a: torch.from_numpy(np.ascontiguousarray(a, dtype=dtype))
    Xt = t(X)
    # softmax(β Q X (K X)ᵀ) X Vᵀ: row i of the scores is β (Q x_i)·(K x_j) over j.
    want = torch.softmax(beta * (Xt @ t(Q).T) @ (Xt @ t(K).T).T, dim=1) @ Xt @ t(V).T
    want = want.numpy()
    scale = np.abs(want).max()
    eps = np.finfo(dtype).eps
    assert np.abs(got - want).max() <= 200 * eps * scale


@pytest.mark.parametrize("order", ["C", "F"])
def test_saved_outputs_read_back_as_initial_tokens(tmp_path, order):
    """What np.save writes, in either order, is what a scene's initial.kind = "file" reads."""
    X = flowscope.velocity(CASES["softmax"], tokens("float64"))
    path = tmp_path / "v.npy"
    np.save(path, np.asfortranarray(X) if order == "F" else X)
    run = flowscope.Run({"d": D, "n": N, "initial": {"kind": "file", "path": str(path)},
                         "attention": CASES["softmax"], "integrator": {"T": 0.1, "steps": 1}})
    assert np.array_equal(run.tokens, X)


@pytest.mark.parametrize("bad, match", [
    (lambda X: X.astype(np.complex128), r"X: expected real floating-point numbers \(float32 or float64\), got "
                                        r"complex128 \(pass X.real"),
    (lambda X: X > 0, r"X: expected real floating-point numbers \(float32 or float64\), got bool"),
    (lambda X: X.astype(np.int64), r"X: expected real floating-point numbers \(float32 or float64\), got int64 "
                                   r"\(pass X.astype\(float\)"),
])
def test_complex_bool_and_integer_tokens_are_a_type_error_not_cast(bad, match):
    with pytest.raises(TypeError, match=match):
        flowscope.velocity(CASES["softmax"], bad(tokens("float64")))


@pytest.mark.parametrize("t", [float("nan"), float("inf")])
def test_a_time_that_is_not_finite_is_refused(t):
    with pytest.raises(ValueError, match="t: expected a finite time"):
        flowscope.velocity(CASES["softmax"], tokens("float64"), t=t)
