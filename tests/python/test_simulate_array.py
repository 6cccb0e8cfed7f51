"""simulate(X0, attention=..., T=..., steps=..., method=...): the array form against the scene it stands for,
its dtypes, a token count above what a scene may inline, and its errors naming the argument."""

import pytest

np = pytest.importorskip("numpy")
import flowscope  # noqa: E402

ATTENTION = {"type": "softmax", "beta": 1.5, "heads": [{"Q": [[1, 0.2], [0, 1]], "K": 1, "V": [[-0.5, 0], [0.3, -0.4]]}]}


def tokens(n, d=2, seed=0, dtype=np.float64):
    return np.random.default_rng(seed).standard_normal((n, d)).astype(dtype)


def same_run(a, b):
    assert a.tokens.dtype == b.tokens.dtype and a.tokens.shape == b.tokens.shape
    assert np.array_equal(a.tokens, b.tokens)
    for name in ("times", "mean", "cov", "kinetic_energy", "attention_entropy", "energy", "clusters", "rank", "max_norm"):
        assert np.array_equal(getattr(a, name), getattr(b, name), equal_nan=True), name
    assert a.event == b.event and a.integrator == b.integrator


@pytest.mark.parametrize("dtype,method", [(np.float64, "rk4"), (np.float32, "heun"), (np.float64, "dopri5")])
def test_array_form_is_the_scene_it_stands_for(dtype, method):
    X0 = tokens(48, dtype=dtype)
    run = flowscope.simulate(X0, attention=ATTENTION, T=1.5, steps=30, method=method, every=5)
    scene = {
        "d": 2, "n": 48, "precision": "float32" if dtype == np.float32 else "float64",
        "initial": {"kind": "points", "points": X0.tolist()},  # float32 values are exact float64 numbers
        "attention": ATTENTION,
        "integrator": {"method": method, "T": 1.5, "steps": 30},
    }
    same_run(run, flowscope.simulate(scene, every=5))
    assert run.tokens.dtype == dtype and run.tokens.flags.c_contiguous  # float32 in, float32 out
    assert np.array_equal(run.tokens[0], X0)  # the first frame is X0 itself
    assert run.times[-1] == 1.5 and run.integrator["method"] == method
    assert (run.scene.n, run.scene.d) == (48, 2)


def test_attention_from_a_scene_or_preset_is_its_attention():
    X0 = tokens(32)
    scene = flowscope.Scene({"d": 2, "n": 5, "attention": ATTENTION, "integrator": {"T": 9, "steps": 7}})
    by_dict = flowscope.simulate(X0, attention=ATTENTION, steps=10)
    same_run(by_dict, flowscope.simulate(X0, attention=scene, steps=10))  # only the attention: not T, n
    same_run(by_dict, flowscope.simulate(X0, attention=scene.to_dict(), steps=10))
    default = flowscope.Scene("default")
    same_run(flowscope.simulate(X0, attention="default", steps=3),
             flowscope.simulate(X0, attention=default.to_dict()["attention"], steps=3))


def test_left_out_keywords_are_the_schema_defaults():
    X0 = tokens(16)
    run = flowscope.simulate(X0)
    schema = flowscope.Scene({"d": 2, "n": 16, "attention": {"type": "softmax"}}).to_dict()
    got = run.scene.to_dict()
    assert got["attention"] == schema["attention"] and got["integrator"] == schema["integrator"]
    assert run.integrator["method"] == "rk4" and run.times[-1] == 1.0


def test_keywords_replace_a_scenes_fields():
    scene = {"d": 2, "n": 20, "initial": {"kind": "gaussian", "seed": 4}, "attention": {"type": "l2"},
             "integrator": {"method": "rk4", "T": 3, "steps": 60}}
    edited = dict(scene, attention=ATTENTION, integrator={"method": "euler", "T": 0.5, "steps": 9})
    same_run(flowscope.simulate(scene, attention=ATTENTION, T=0.5, steps=9, method="euler"),
             flowscope.simulate(edited))


def test_more_tokens_than_a_scene_may_inline():
    """N = 70000 > 65536, the inline limit of a scene file; linear attention (O(N d^2)) keeps it cheap.
    One Euler step against the closed form: x_1 = x_0 + h V M2 A x_0, A = beta K^T Q, M2 = (1/N) sum x x^T."""
    n, h, beta = 70000, 0.25, 0.5
    Q, K, V = np.array([[1, 0.3], [0, 1]]), np.array([[1, 0], [0.2, 1]]), np.array([[-1, 0.5], [0, -0.5]])
    attention = {"type": "linear", "beta": beta, "heads": [{"Q": Q.tolist(), "K": K.tolist(), "V": V.tolist()}]}
    X0 = tokens(n, seed=7)
    with pytest.raises(ValueError, match=r"^/initial/points: expected at most 65536"):
        flowscope.Scene({"d": 2, "n": n, "initial": {"kind": "points", "points": X0.tolist()}, "attention": attention})
    run = flowscope.simulate(X0, attention=attention, T=h, steps=1, method="euler")
    assert run.tokens.shape == (2, n, 2) and run.scene.n == n
    M2 = X0.T @ X0 / n
    want = X0 + h * X0 @ (V @ M2 @ (beta * K.T @ Q)).T
    np.testing.assert_allclose(run.tokens[1], want, rtol=1e-12, atol=1e-12)
    X32 = X0.astype(np.float32)
    run32 = flowscope.simulate(X32, attention=attention, T=h, steps=1, method="euler")
    assert run32.tokens.dtype == np.float32 and np.array_equal(run32.tokens[0], X32)


def test_bad_arguments_name_the_argument():
    X0 = tokens(10)
    type_errors = [
        (lambda: flowscope.simulate(np.zeros((10, 2), dtype=np.int64)), r"^X0: expected real floating-point numbers"),
        (lambda: flowscope.simulate(X0.astype(np.complex128)), r"^X0: expected real floating-point .*X0\.real"),
        (lambda: flowscope.simulate(X0 > 0), r"^X0: expected real floating-point numbers .* got bool"),
    ]
    for call, message in type_errors:
        with pytest.raises(TypeError, match=message):
            call()
    value_errors = [
        (lambda: flowscope.simulate(np.zeros(5)), r"^X0: expected an \(n, d\) array, got shape \(5,\)$"),
        (lambda: flowscope.simulate(np.zeros((0, 2))), r"^X0: expected at least one point, got shape \(0, 2\)$"),
        (lambda: flowscope.simulate([[0.0, np.nan]]), r"^X0: row 0, column 1 is nan"),
        (lambda: flowscope.simulate(np.broadcast_to(np.zeros(2), (2**24 + 1, 2))), r"^X0: expected at most 16777216 points"),
        (lambda: flowscope.simulate(np.zeros((3, 1025))), r"^X0: shape \(3, 1025\) does not fit a scene: /d: expected integer <= 1024, got 1025$"),
        (lambda: flowscope.simulate(X0, T=-1), r"^T: expected number > 0, got -1$"),
        (lambda: flowscope.simulate(X0, T=float("nan")), r"^T: expected a finite number, got nan$"),
        (lambda: flowscope.simulate(X0, steps=0), r"^steps: "),
        (lambda: flowscope.simulate(X0, steps=2.5), r"^steps: "),
        (lambda: flowscope.simulate(X0, method="rk9"), r'^method: .*"rk9"'),
        (lambda: flowscope.simulate(X0, attention={"type": "bogus"}), r'^attention/type: unknown attention type "bogus"'),
        (lambda: flowscope.simulate(X0, attention={"type": "softmax", "heads": [{"V": np.eye(3)}]}), r"^attention/heads/0/V: "),
        (lambda: flowscope.simulate(tokens(3, d=40), attention={"type": "softmax", "heads": [{"V": np.eye(3)}]}),
         r"^X0: expected \(N, 3\) tokens .*got shape \(3, 40\).*X0\.T"),
        (lambda: flowscope.simulate(X0, attention="no-such-preset"), r'^attention: "no-such-preset" is not a scene file'),
        (lambda: flowscope.simulate(X0, attention=42), r"^attention: expected a Scene, a dict"),
        (lambda: flowscope.simulate(X0, attention={"type": "softmax", "beta": [1]}), r"^attention/beta: "),
        (lambda: flowscope.simulate(X0, T=1e-320, steps=10), r"^T: the nominal step T / steps = .* underflows"),
        (lambda: flowscope.simulate(X0, every=0), r"^every: "),
        (lambda: flowscope.simulate(X0, backend="nope"), r"^backend: "),
        (lambda: flowscope.simulate(42), r"^scene: expected a Scene, a dict"),
        (lambda: flowscope.simulate({"d": 2, "n": 4, "attention": {"type": "l2"}}, T=0), r"^T: "),
    ]
    for call, message in value_errors:
        with pytest.raises(ValueError, match=message):
            call()
    # Memory is checked before anything is allocated: X0's copy by its shape (a broadcast array costs nothing
    # here), the run's frames by the scene's budget.
    with pytest.raises(MemoryError, match=r"^X0: this would need about .* for an array of shape \(16777216, 1048576\)"):
        flowscope.simulate(np.broadcast_to(np.zeros(2**20), (2**24, 2**20)))  # 256 TiB
    with pytest.raises(ValueError, match=r"^steps: this run would need about .* for 1e\+09 recorded frames"):
        flowscope.simulate(X0, steps=10**9)
    with pytest.raises(FileNotFoundError, match=r"^attention: no such file: "):
        flowscope.simulate(X0, attention="missing/scene.json")
    run = flowscope.simulate(X0, steps=2)  # still usable
    assert run.tokens.shape == (3, 10, 2)


def test_a_torch_tensor_runs_as_its_numpy_array():
    torch = pytest.importorskip("torch")
    X0 = tokens(24, dtype=np.float32)
    run = flowscope.simulate(torch.from_numpy(X0), attention=ATTENTION, steps=8)
    same_run(run, flowscope.simulate(X0, attention=ATTENTION, steps=8))
    assert run.tokens.dtype == np.float32


def test_every_scene_parameter_is_a_keyword_setting_its_pointer():
    """simulate(..., beta=4) is Scene.replace("/attention/beta", 4): one schema, flowscope.parameters()."""
    params = {p["keyword"]: p for p in flowscope.parameters()}
    beta = params["beta"]
    assert (beta["pointer"], beta["accepts"], beta["default"], beta["live"]) == ("/attention/beta", "number > 0", 1.0, True)
    assert params["d"]["required"] and params["d"]["default"] is None and not params["d"]["live"]
    assert params["method"]["choices"] == ["euler", "heun", "rk4", "dopri5"]
    scene = {"d": 2, "n": 12, "initial": {"kind": "rings", "seed": 2, "noise": 0.05},
             "attention": {"type": "softmax", "heads": [{"Q": 1, "K": 1, "V": [[0, -1], [1, 0.2]]}]},
             "integrator": {"T": 0.3, "steps": 3}, "output": {"every": 1}}
    for keyword, value in [("beta", 2.5), ("masked", True), ("normalization", "pre"), ("positional_decay", 2.0),
                           ("seed", 9), ("noise", 0.2), ("scale_by_sqrt_k", True), ("precision", "float32")]:
        by_keyword = flowscope.simulate(scene, **{keyword: value})
        by_pointer = flowscope.simulate(flowscope.Scene(scene).replace(params[keyword]["pointer"], value))
        assert by_keyword.scene == by_pointer.scene, keyword
        same_run(by_keyword, by_pointer)
        assert not np.array_equal(by_keyword.tokens[-1], flowscope.simulate(scene).tokens[-1])


def test_parameter_keywords_are_checked_and_named():
    X0 = tokens(8)
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'betta' \(did you mean 'beta'\?\)"):
        flowscope.simulate(X0, betta=2)
    with pytest.raises(ValueError, match=r"^beta: expected number > 0, got -1$"):
        flowscope.simulate(X0, beta=-1)
    with pytest.raises(ValueError, match=r"^rank_tol: expected number in \(0, 1\), got 1$"):
        flowscope.simulate(X0, rank_tol=1)
    with pytest.raises(ValueError, match=r'^normalization: unknown normalization "mid"'):
        flowscope.simulate(X0, normalization="mid")
    # An error at a keyword's field is named by it, whichever keyword was set last.
    with pytest.raises(ValueError, match=r"^T: the nominal step T / steps"):
        flowscope.simulate(X0, T=1e-300, steps=10**9)
    # The array form's N and d are X0's; a new d is a new scene everywhere.
    for keyword, value in (("n", 5), ("init", "gaussian")):
        with pytest.raises(ValueError, match=f"^{keyword}: is X0's in the array form"):
            flowscope.simulate(X0, **{keyword: value})
    with pytest.raises(ValueError, match=r"^d: cannot be set by keyword"):
        flowscope.simulate(X0, d=3)


def test_the_array_forms_seed_and_noise_jitter_the_points():
    X0 = tokens(6)
    jittered = flowscope.simulate(X0, noise=0.1, seed=4, T=0.1, steps=1)
    assert jittered.scene.to_dict()["initial"]["noise"] == 0.1
    assert not np.array_equal(jittered.tokens[0], X0) and np.abs(jittered.tokens[0] - X0).max() < 1.0
    again = flowscope.simulate(X0, noise=0.1, seed=4, T=0.1, steps=1)
    assert np.array_equal(again.tokens, jittered.tokens)
    assert not np.array_equal(flowscope.simulate(X0, noise=0.1, seed=5, T=0.1, steps=1).tokens[0], jittered.tokens[0])
