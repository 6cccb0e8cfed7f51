"""Scenes, simulate() and moments() against flowscope-cli on the same scenes; bad input; interruption."""

import json
import os
import signal
import threading

import pytest

np = pytest.importorskip("numpy")
import flowscope  # noqa: E402
from conftest import PRESETS  # noqa: E402

SMALL = {
    "name": "small", "d": 2, "n": 64,
    "initial": {"kind": "gaussian", "seed": 3},
    "attention": {"type": "softmax", "beta": 2.0, "heads": [{"Q": [[1, 0.2], [0, 1]], "K": 1, "V": [[1, 0], [0.3, 1]]}]},
    "integrator": {"method": "rk4", "T": 2.0, "steps": 40},
    "output": {"every": 4},
}


def test_scene_sources_agree(tmp_path):
    scene = flowscope.Scene(SMALL)
    assert (scene.d, scene.n, scene.name, scene.attention_type) == (2, 64, "small", "softmax")
    path = tmp_path / "small.json"
    scene.save(path)
    for source in (scene, scene.to_dict(), str(path), path, scene.share(), scene.to_json() and str(path)):
        assert flowscope.Scene(source).to_json() == scene.to_json()
    assert "default" in flowscope.presets()
    assert flowscope.Scene("default").to_json() == flowscope.Scene(os.path.join(PRESETS, "default.json")).to_json()


def test_share_string_is_the_clis(cli, tmp_path):
    path = os.path.join(PRESETS, "default.json")
    assert cli("share", path).stdout.strip() == flowscope.Scene(path).share()


@pytest.mark.parametrize("f32", [False, True])
def test_simulate_equals_cli_bit_for_bit(cli, tmp_path, f32):
    source = dict(SMALL, precision="float32" if f32 else "float64")
    scene = flowscope.Scene(source)
    scene.save(tmp_path / "s.json")
    cli("simulate", tmp_path / "s.json", "--out", tmp_path / "t.npy", *(["--float32"] if f32 else []))
    want = np.load(tmp_path / "t.npy")
    assert want.dtype == (np.float32 if f32 else np.float64)
    record = json.loads((tmp_path / "t.json").read_text())
    run = flowscope.simulate(scene)
    assert run.tokens.shape == want.shape == (11, 64, 2)
    assert run.tokens.dtype == want.dtype and run.tokens.flags.c_contiguous  # a float32 scene: float32 tokens
    assert np.array_equal(run.tokens, want)
    assert run.times.tolist() == record["times"]
    obs = record["observables"]
    assert run.mean.tolist() == obs["mean"] and run.cov.tolist() == obs["cov"]
    assert run.kinetic_energy.tolist() == obs["kinetic_energy"]
    assert run.attention_entropy.tolist() == obs["attention_entropy"]
    assert run.clusters.tolist() == obs["clusters"] and run.rank.tolist() == obs["rank"]
    assert run.max_norm.tolist() == obs["max_norm"]
    assert run.event is None and record["event"] is None


@pytest.mark.parametrize("backend", ["gl", "vulkan"])
def test_simulate_on_a_gpu_backend_is_the_clis(cli, tmp_path, backend):
    # Dormand-Prince in float32: both take whole steps on the device (Mesa's llvmpipe/lavapipe in CI) and
    # give the same arrays and the same count of sub-steps.
    source = dict(SMALL, precision="float32", integrator={"method": "dopri5", "T": 2.0, "steps": 10, "rtol": 1e-5})
    scene = flowscope.Scene(source)
    scene.save(tmp_path / "s.json")
    try:
        run = flowscope.simulate(scene, backend=backend)
    except ValueError as e:
        if "unavailable" in str(e) or "not built" in str(e):
            pytest.skip(str(e))
        raise
    cli("simulate", tmp_path / "s.json", "--out", tmp_path / "t.npy", "--backend", backend, "--float32")
    record = json.loads((tmp_path / "t.json").read_text())
    want = np.load(tmp_path / "t.npy")
    assert run.tokens.dtype == want.dtype == np.float32  # a float32 scene: float32 tokens, as --float32 writes
    assert np.array_equal(run.tokens, want)
    assert run.device_steps is True and record["backend"]["device_steps"] is True
    assert run.integrator == record["integrator"]
    work = run.integrator
    assert work["method"] == "dopri5" and work["steps"] == 10
    assert work["field_evaluations"] == work["steps"] + 6 * (work["sub_steps"] + work["rejected_sub_steps"])


def test_simulate_event_and_every(cli, tmp_path):
    blowup = dict(SMALL, attention={"type": "softmax", "heads": [{"V": 2}]}, integrator={"T": 20, "steps": 200,
                  "divergence_norm": 1e3})
    flowscope.Scene(blowup).save(tmp_path / "scene.json")
    cli("simulate", tmp_path / "scene.json", "--every", 7, "--out", tmp_path / "b.npy")
    record = json.loads((tmp_path / "b.json").read_text())
    run = flowscope.simulate(tmp_path / "scene.json", every=7)
    assert np.array_equal(run.tokens, np.load(tmp_path / "b.npy"))
    assert run.event == record["event"] and run.event["kind"] == "diverged"


@pytest.mark.parametrize("preset,method", [("cone-fig2d-two-lines", None), ("p1d-softmax", "paper"), ("cone-fig1b-blowup", None)])
def test_moments_equal_cli_json(cli, tmp_path, preset, method):
    path = os.path.join(PRESETS, preset + ".json")
    if not os.path.exists(path):
        pytest.skip(f"no preset {preset}")
    args = ["--method", method] if method else []
    cli("moments", path, *args, "--out", tmp_path / "m.json")
    want = json.loads((tmp_path / "m.json").read_text())
    got = flowscope.moments(preset, method=method)
    R = len(want["trajectories"])
    assert got.covs.shape[0] == R == len(got.events)
    for r, tr in enumerate(want["trajectories"]):
        k = len(tr["times"])
        assert got.times[r, :k].tolist() == tr["times"] and np.isnan(got.times[r, k:]).all()
        assert got.means[r, :k].tolist() == tr["means"]
        assert got.covs[r, :k].tolist() == tr["covs"]
        assert got.events[r]["kind"] == tr["event"]["kind"] and got.events[r]["t"] == tr["event"]["t"]
        assert got.events[r]["t_max"] == tr["event"].get("t_max")
    cli("moments", path, *args, "--out", tmp_path / "m.npy")  # and the .npy bytes' arrays
    assert np.array_equal(np.load(tmp_path / "m.npy"), got.covs, equal_nan=True)


BAD = [
    (dict(SMALL, attention={"type": "sofmax"}), r'^/attention/type: unknown attention type "sofmax".*did you mean "softmax"'),
    (dict(SMALL, attention={"type": "softmax", "heads": [{"V": [[1, 0, 0], [0, 1, 0]]}]}),
     r"^/attention/heads/0/V: expected 2x2 matrix, got 2x3$"),
    (dict(SMALL, n=-5), r"^/n: expected integer >= 1, got -5$"),
    (dict(SMALL, attention={"type": "softmax", "beta": float("nan")}), r"^/attention/beta: expected a finite number, got nan$"),
    (dict(SMALL, integrator={"stpes": 3}), r'^/integrator/stpes: unknown field "stpes"'),
    ("fs1.eNp$$$", r"^share string: invalid character '\$' at position"),
    ("no-such-preset", r"^scene: \"no-such-preset\" is not a scene file, a share string or a preset"),
    (42, r"^scene: expected a Scene, a dict"),
]


@pytest.mark.parametrize("source,message", BAD)
def test_bad_scenes_raise_value_error_naming_the_field(source, message):
    with pytest.raises(ValueError, match=message):
        flowscope.simulate(source)


def test_bad_arguments_raise_value_error():
    X = np.zeros((5, 2))
    cases = [
        (lambda: flowscope.velocity({"type": "softmax"}, np.zeros(5)), r"^X: expected an \(n, d\) array, got shape \(5,\)$"),
        (lambda: flowscope.velocity(SMALL, np.zeros((5, 3))), r"^X: expected points of dimension 2 \(the scene's d\), got shape \(5, 3\)$"),
        (lambda: flowscope.velocity({"type": "softmax"}, np.array([[0, 1], [np.nan, 2]])), r"^X: row 1, column 0 is nan"),
        (lambda: flowscope.velocity({"type": "softmax"}, [["a", "b"]]), r"^X: expected an \(n, d\) array of numbers"),
        (lambda: flowscope.velocity({"type": "bogus"}, X), r'^/attention/type: unknown attention type "bogus"'),
        (lambda: flowscope.velocity({"type": "sinkhorn", "masked": True}, X), r"^/attention/masked: "),
        (lambda: flowscope.attention_weights({"type": "softmax"}, X, 5), r"^i: expected a token index in \[0, 5\)"),
        (lambda: flowscope.simulate(SMALL, backend="nope"), r"^backend: "),
        (lambda: flowscope.simulate(SMALL, every=0), r"^every: "),
        (lambda: flowscope.moments(SMALL, method="rk9"), r'^method: expected "adaptive" or "paper"'),
        (lambda: flowscope.moments(dict(SMALL, attention={"type": "exp"})), r"^/attention/type: "),
    ]
    for call, message in cases:
        with pytest.raises(ValueError, match=message):
            call()


def test_interrupt_through_progress_leaves_module_usable():
    seen = []

    def progress(fraction):
        seen.append(fraction)
        if len(seen) == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        flowscope.simulate(SMALL, progress=progress)
    assert len(seen) == 3
    run = flowscope.simulate(SMALL)  # still usable, and the same run as before
    assert run.tokens.shape == (11, 64, 2) and seen[-1] < 1


def test_sigint_stops_a_long_simulate():
    long_run = dict(SMALL, n=2048, integrator={"T": 100, "steps": 100000}, output={"every": 1000, "entropy": False})
    timer = threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            flowscope.simulate(long_run)
    finally:
        timer.cancel()
    assert flowscope.simulate(SMALL).event is None


def test_progress_reaches_one():
    seen = []
    flowscope.simulate(SMALL, progress=seen.append)
    assert len(seen) == 40 and seen[-1] == 1.0


def test_stubs_and_all_cover_the_module():
    """_flowscope.pyi names every public function and class of the module with the module's parameter names,
    and __all__ exports them."""
    import ast
    import re

    stub = ast.parse(open(os.path.join(os.path.dirname(flowscope.__file__), "_flowscope.pyi")).read())
    public = {n for n in dir(flowscope._flowscope) if not n.startswith("_")}
    assert set(flowscope.__all__) == public | {"velocity_vjp"}  # velocity_vjp: Python (_vjp.py), typed there

    def parameters(function):
        # pybind11's signature line: name(a: type = default, *, b: type = ...) -> result
        line = function.__doc__.splitlines()[0]
        inside = line[line.index("(") + 1:line.rindex(") ->")]
        return [name for name in re.findall(r"(?:^|, )(\w+):", inside) if name != "self"]

    seen = set()
    for node in stub.body:
        if isinstance(node, ast.AnnAssign):
            seen.add(node.target.id)
        if not isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            continue
        seen.add(node.name)
        owner = getattr(flowscope._flowscope, node.name)
        defs = [node] if isinstance(node, ast.FunctionDef) else [
            d for d in node.body if isinstance(d, ast.FunctionDef) and not d.decorator_list or
            isinstance(d, ast.FunctionDef) and any(getattr(x, "id", "") in ("staticmethod", "overload")
                                                   for x in d.decorator_list)]
        for d in defs:
            function = owner if d is node else getattr(owner, d.name)
            args = [a.arg for a in d.args.args + d.args.kwonlyargs if a.arg != "self"]
            assert args == parameters(function), f"{node.name}.{d.name}"
    assert seen == public


def test_run_edited_before_its_first_step_is_the_edited_scene_bit_for_bit():
    run = flowscope.Run(SMALL)
    run.set("/attention/beta", 3.0)
    run.set("/attention/heads/0/V", np.array([[0.5, 0.1], [0.0, 0.5]]))
    assert run.step(1000) == 40 and run.finished and run.event is None
    edited = json.loads(json.dumps(SMALL))
    edited["attention"]["beta"] = 3.0
    edited["attention"]["heads"][0]["V"] = [[0.5, 0.1], [0.0, 0.5]]
    expected = flowscope.simulate(edited).tokens[-1]
    tokens = run.tokens
    assert tokens.flags.c_contiguous and tokens.dtype == np.float64 and tokens.shape == (64, 2)
    assert np.array_equal(tokens, expected)
    assert run.t == 2.0 and run.step_index == 40


def test_run_type_edit_changes_the_motion_and_is_in_its_scene():
    plain, edited = flowscope.Run(SMALL), flowscope.Run(SMALL)
    plain.step(10), edited.step(10)
    edited.set("/attention/type", "l2")
    plain.step(10), edited.step(10)
    assert edited.scene.attention_type == "l2" and plain.scene.attention_type == "softmax"
    assert np.abs(edited.tokens - plain.tokens).max() > 1e-6


@pytest.mark.parametrize("pointer, value, field", [
    ("/n", 10, "/n"), ("/attention/beta", -1, "/attention/beta"), ("/attention/type", "lstm", "/attention/type"),
    ("/integrator/steps", 0, "/integrator/steps"), ("attention/beta", 1, "attention/beta"),
])
def test_run_refuses_what_cannot_change_naming_the_field(pointer, value, field):
    run = flowscope.Run(SMALL)
    run.step(3)
    before = run.scene.to_json()
    with pytest.raises(ValueError, match=field):
        run.set(pointer, value)
    assert run.scene.to_json() == before and run.step_index == 3


@pytest.mark.parametrize("make, field", [
    (lambda: {"view": {"a": []}}, None),  # shallow: taken
    (lambda: {"view": {"a": nest_list(100000)}}, "/view/a"),
    (lambda: {"view": nest_dict(100000)}, "/view"),
    (lambda: self_referencing_dict(), "/view"),
    (lambda: {"attention": {"beta": 10 ** 400}}, "/attention/beta"),
])
def test_deep_self_referencing_and_huge_values_are_refused_naming_the_field(make, field):
    scene = dict(SMALL, **make())
    if field is None:
        flowscope.Scene(scene)
        return
    with pytest.raises(ValueError, match=field):
        flowscope.Scene(scene)


def nest_list(depth):
    v = []
    for _ in range(depth):
        v = [v]
    return v


def nest_dict(depth):
    v = {}
    for _ in range(depth):
        v = {"a": v}
    return v


def self_referencing_dict():
    view = {}
    view["self"] = view
    return {"view": view}


def test_scene_equality_and_replace_by_pointer(tmp_path):
    scene = flowscope.Scene(SMALL)
    assert scene == flowscope.Scene(scene.to_dict()) and scene == flowscope.Scene(scene.share())
    edited = scene.replace("/attention/beta", 3.0).replace("/attention/type", "l2")
    assert edited != scene and edited.attention_type == "l2" and scene.attention_type == "softmax"
    expected = json.loads(scene.to_json())
    expected["attention"]["beta"], expected["attention"]["type"] = 3.0, "l2"
    assert edited == flowscope.Scene(expected)
    with pytest.raises(ValueError, match="/attention/beta: expected number > 0"):
        scene.replace("/attention/beta", -1)
