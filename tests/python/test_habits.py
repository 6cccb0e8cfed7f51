"""NumPy and PyTorch habits (issue 46): dtypes kept (float32 stays float32, 16-bit floats computed in float32
and said so, other dtypes a TypeError naming the argument), C-ordered outputs that np.save and the CLI read
back, and no silent shape traps (n against inline points, (d, N) for (N, d), tensors that require grad,
missing files)."""

import os

import pytest

np = pytest.importorskip("numpy")
import flowscope  # noqa: E402

RNG = np.random.default_rng(46)
HEAD = {"Q": (0.5 * RNG.standard_normal((3, 3))).tolist(), "K": (0.5 * RNG.standard_normal((3, 3))).tolist(),
        "V": RNG.standard_normal((3, 3)).tolist()}
ATT = {"type": "softmax", "beta": 1.2, "heads": [HEAD]}
X = RNG.standard_normal((300, 3))


def test_float32_stays_float32_and_outputs_are_c_ordered():
    for dtype in (np.float32, np.float64):
        v = flowscope.velocity(ATT, X.astype(dtype))
        assert v.dtype == dtype and v.flags.c_contiguous
    # A Fortran-ordered input changes nothing but the copy.
    assert np.array_equal(flowscope.velocity(ATT, np.asfortranarray(X)), flowscope.velocity(ATT, X))


def test_float16_is_computed_in_float32_with_a_warning():
    with pytest.warns(UserWarning, match="X is float16; computed in float32"):
        v = flowscope.velocity(ATT, X.astype(np.float16))
    assert v.dtype == np.float32
    assert np.array_equal(v, flowscope.velocity(ATT, X.astype(np.float16).astype(np.float32)))


def test_torch_tensors_keep_their_precision_and_tensors_that_require_grad_say_detach():
    torch = pytest.importorskip("torch")
    t = torch.from_numpy(X.astype(np.float32))
    v = flowscope.velocity(ATT, t)
    assert isinstance(v, torch.Tensor) and v.dtype == torch.float32  # tensors in, tensors out; float32 kept
    assert np.array_equal(v.numpy(), flowscope.velocity(ATT, X.astype(np.float32)))  # the same float32 kernel
    with pytest.warns(UserWarning, match="X is bfloat16; computed in float32"):
        vb = flowscope.velocity(ATT, t.to(torch.bfloat16))
    assert vb.dtype == torch.float32
    assert torch.equal(vb, flowscope.velocity(ATT, t.to(torch.bfloat16).float()))
    # The other calls on tokens answer in kind; NumPy in, C-ordered NumPy out.
    t64 = torch.from_numpy(X)
    for call in (lambda x: flowscope.attention_weights(ATT, x, 5), lambda x: flowscope.entropies(ATT, x)):
        out, reference = call(t64), call(X)
        assert isinstance(out, torch.Tensor) and isinstance(reference, np.ndarray) and reference.flags.c_contiguous
        assert np.array_equal(out.numpy(), reference)
    with pytest.raises(TypeError, match=r"X: a tensor that requires grad; pass X\.detach\(\)"):
        flowscope.velocity(ATT, t.clone().requires_grad_())


def test_a_d_by_n_array_is_refused_when_the_attention_says_d():
    with pytest.raises(ValueError, match=r"X: expected \(N, 3\) tokens .* got shape \(3, 300\) .*X\.T is \(N, d\)"):
        flowscope.velocity(ATT, X.T)
    scene = flowscope.Scene({"d": 3, "n": 300, "attention": ATT})
    with pytest.raises(ValueError, match=r"X: expected points of dimension 3 \(the scene's d\), got shape \(3, 300\) "
                                         r"\(tokens are rows"):
        flowscope.velocity(scene, X.T)


def points_scene(n=None, noise=None):
    initial = {"kind": "points", "points": X[:50].tolist()}
    if noise is not None:
        initial["noise"] = noise
    s = {"d": 3, "initial": initial, "attention": ATT, "integrator": {"T": 0.01, "steps": 1}}
    if n is not None:
        s["n"] = n
    return s


def test_n_must_match_the_inline_points_or_be_left_out():
    assert flowscope.Scene(points_scene()).n == 50
    assert np.array_equal(flowscope.Run(points_scene()).tokens, X[:50])
    assert flowscope.Scene(points_scene(50)).n == 50
    with pytest.raises(ValueError, match=r"^/n: expected 50, the number of points in /initial/points \(or leave n "
                                         r"out\), got 40: the last 10 points would be dropped"):
        flowscope.Scene(points_scene(40))
    with pytest.raises(ValueError, match=r"^/n: expected 50, .* got 60: 10 points would be repeated"):
        flowscope.Scene(points_scene(60))
    # Jittered cluster centres cycle over n tokens (docs/scene.md), as the metastable-staircase preset does.
    assert flowscope.Scene(points_scene(200, noise=0.01)).n == 200


def test_a_missing_file_is_file_not_found():
    with pytest.raises(FileNotFoundError, match="scene: no such file"):
        flowscope.Scene("no/such/scene.json")
    with pytest.raises(FileNotFoundError):
        flowscope.simulate("missing.json")


def test_every_preset_equals_the_scene_of_its_dict():
    for name in flowscope.presets():
        s = flowscope.Scene(name)
        assert s == flowscope.Scene(s.to_dict()), name


@pytest.mark.parametrize("order", ["C", "F"])
def test_np_save_of_either_order_feeds_the_clis_sample_base(cli, tmp_path, order):
    model = flowscope.train("moons", iters=2, batch=64)
    model.save(tmp_path / "m.safetensors")
    base = RNG.standard_normal((20, 2)).astype(np.float32)
    np.save(tmp_path / "base.npy", np.asfortranarray(base) if order == "F" else base)
    cli("sample", tmp_path / "m.safetensors", "--base", tmp_path / "base.npy", "--out", tmp_path / "s.npy")
    got = np.load(tmp_path / "s.npy")
    assert np.array_equal(got, model.sample(base=base))
    assert model.sample(base=base).flags.c_contiguous


def test_set_num_threads_changes_the_count_not_the_numbers():
    before = flowscope.get_num_threads()
    want = flowscope.velocity(ATT, X)
    try:
        flowscope.set_num_threads(1)
        assert flowscope.get_num_threads() == 1
        assert np.array_equal(flowscope.velocity(ATT, X), want)  # each query's sums are one thread's
    finally:
        flowscope.set_num_threads(before)
    assert flowscope.get_num_threads() == before
    with pytest.raises(ValueError, match=r"n: expected a thread count in \[1, 4096\], got 0"):
        flowscope.set_num_threads(0)


INTERRUPTED_RUN = r"""
import sys, time, numpy as np, flowscope
scene = {"d": 3, "n": 20000, "precision": "float64",
         "attention": {"type": "softmax", "heads": [{"Q": 1, "K": 1, "V": 1}]},
         "integrator": {"method": "rk4", "T": 100, "steps": 1000}, "output": {"every": 1000, "entropy": False}}
print("started", flush=True)
try:
    flowscope.simulate(scene)
    print("finished", flush=True)
except KeyboardInterrupt:
    stopped = time.monotonic()
    v = flowscope.velocity({"type": "softmax"}, np.eye(3))  # the module is usable after the stop
    print("interrupted", stopped, v.shape, flush=True)
"""


def test_ctrl_c_stops_a_float64_run_at_n_20000_within_half_a_second():
    """Ctrl+C (SIGINT) inside one RK4 evaluation of N = 20000 float64 tokens (each pass ~4e8 pairs): the pass
    stops within a chunk of queries, not at the end of the step. The latency is the child's monotonic clock
    at its `except KeyboardInterrupt` minus the parent's when it sent the signal (one clock for both)."""
    import signal
    import subprocess
    import sys
    import time

    child = subprocess.Popen([sys.executable, "-c", INTERRUPTED_RUN], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "started"
        time.sleep(1.0)  # scene and tokens set up; the first RK4 step's passes are running
        sent = time.monotonic()
        child.send_signal(signal.SIGINT)
        out, _ = child.communicate(timeout=60)
    finally:
        child.kill()
    words = out.split()
    assert words[0] == "interrupted", out
    latency = float(words[1]) - sent
    print(f"Ctrl+C answered in {latency * 1000:.0f} ms")
    assert latency < 0.5
    assert child.returncode == 0
