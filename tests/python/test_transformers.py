"""flowscope.train_transformer and TransformerModel against flowscope-cli train-transformer / eval-transformer,
and predict() against a NumPy forward pass written here from docs/math/transformers.md."""

import json
import os
import signal
import threading

import pytest

np = pytest.importorskip("numpy")
import flowscope  # noqa: E402

# Tiny runs: a second each (the CLI's options for the same models).
TINY_A = dict(iters=40, batch=16, eval_sets=50, average_iters=10, seed=3)
TINY_A_CLI = ["--task", "A", "--iters", 40, "--batch", 16, "--eval-sets", 50, "--average-iters", 10, "--seed", 3]
# Task B with most options away from their defaults, so that each is seen to reach the engine as the CLI's.
TINY_B = dict(arch="node", blocks=2, steps=3, integrator="rk4", lambda_ot=0.5, convention="paper", width=4, mlp=6,
              layer_norm=True, iters=6, batch=4, lr=3e-3, lr_final=1e-3, eval_sets=20, average_iters=0,
              eval_every=2, drop_rates=[0, 0.25], seed=7)
TINY_B_CLI = ["--task", "B", "--arch", "node", "--blocks", 2, "--steps", 3, "--integrator", "rk4", "--lambda-ot", 0.5,
              "--convention", "paper", "--width", 4, "--mlp", 6, "--layer-norm", "--iters", 6, "--batch", 4,
              "--lr", 0.003, "--lr-final", 0.001, "--eval-sets", 20, "--average-iters", 0, "--eval-every", 2,
              "--drop-rates", "0,0.25", "--seed", 7]


def without_seconds(record):
    record = dict(record)
    record["training"] = {k: v for k, v in record["training"].items() if k != "seconds"}
    return record


@pytest.fixture(scope="module")
def task_a():
    seen = []
    model = flowscope.train_transformer("A", **TINY_A, callback=seen.append)
    return model, seen


@pytest.mark.parametrize("task", ["A", "B"])
def test_training_equals_the_cli_bit_for_bit(cli, task_a, tmp_path, task):
    if task == "A":
        model, seen = task_a
        args = TINY_A_CLI
    else:
        seen = []
        model = flowscope.train_transformer("B", **TINY_B, callback=seen.append)
        args = TINY_B_CLI
    # Not --quiet: a quiet CLI skips the periodic evaluations (it only makes them to print them).
    cli("train-transformer", *args, "--out", tmp_path / "cli.safetensors")
    model.save(tmp_path / "py.safetensors")
    # The same tensors and architecture, byte for byte; the same record but for the wall-clock seconds.
    assert (tmp_path / "py.safetensors").read_bytes() == (tmp_path / "cli.safetensors").read_bytes()
    ours, theirs = json.loads((tmp_path / "py.json").read_text()), json.loads((tmp_path / "cli.json").read_text())
    assert ours["metrics"]["loss"] == theirs["metrics"]["loss"]  # the final held-out loss
    assert without_seconds(ours) == without_seconds(theirs)
    # The record in memory is the file's less what save() adds (format, version, architecture, parameters).
    assert without_seconds(model.record) == {k: v for k, v in without_seconds(theirs).items() if k in model.record}
    assert set(theirs) - set(model.record) == {"format", "version", "architecture", "parameters"}
    # The callback saw every iteration's loss of the curve, and the evaluations where they were made.
    assert [r["iteration"] for r in seen] == list(range(1, len(theirs["curve"]["loss"]) + 1))
    assert [r["loss"] for r in seen] == theirs["curve"]["loss"]
    assert [r["evaluation"] for r in seen if "evaluation" in r] == theirs["evaluations"][:-1]
    if task == "B":
        assert ours["drop_rates"]["rates"] == [0, 0.25] and len(theirs["evaluations"]) == 3


def test_evaluate_equals_eval_transformer(cli, task_a, tmp_path):
    model, _ = task_a
    model.save(tmp_path / "m.safetensors")
    cli("eval-transformer", tmp_path / "m.safetensors", "--sets", 30, "--seed", 5, "--out", tmp_path / "e.json")
    expected = json.loads((tmp_path / "e.json").read_text())
    del expected["model"]
    assert model.evaluate(sets=30, seed=5) == expected
    loaded = flowscope.TransformerModel.load(tmp_path / "m.safetensors")
    assert loaded.evaluate(sets=30, seed=5) == expected and loaded.config == model.config
    assert loaded.record["training"]["iterations"] == 40 and loaded.task == "A"


def numpy_forward(p, c, X):
    """Task A's OtTransformer (no embedding, the mean head) on one set X (n, d), from the formulas:
    u = x + W V X softmax((K X)ᵀ Q x / √k), x' = u + W2 tanh(W1 u + b1) + b2, f = the block with its skips,
    M forward-Euler steps of dX/dt = f(X) on [0, T], ỹ = (1/n) Σ_j x_j(T)."""
    assert (c["architecture"], c["integrator"], c["blocks"], c["heads"]) == ("ot", "euler", 1, 1)
    Q, K, V, W = p["block0.Q"], p["block0.K"], p["block0.V"], p["block0.W"]
    W1, b1, W2, b2 = (p[f"block0.mlp.{name}"] for name in ("W1", "b1", "W2", "b2"))

    def f(X):
        S = (K @ X).T @ (Q @ X) / np.sqrt(c["head_dim"])  # S[j, i]: key j, query i
        P = np.exp(S - S.max(axis=0))
        P /= P.sum(axis=0)
        U = X + W @ V @ X @ P
        return U + W2 @ np.tanh(W1 @ U + b1) + b2

    Xt = X.T.copy()
    states = [Xt.T.copy()]
    dt = c["horizon"] / c["steps"]
    for _ in range(c["steps"]):
        Xt = Xt + dt * f(Xt)
        states.append(Xt.T.copy())
    return Xt.mean(axis=1), np.array(states)


def test_predict_is_the_forward_pass(task_a):
    model, _ = task_a
    sets = np.random.default_rng(0).standard_normal((5, 6, 2))
    y, states = model.predict(sets, states=True)
    assert y.shape == (5, 2) and states.shape == (11, 5, 6, 2)
    for b in range(5):
        want_y, want_states = numpy_forward(model.parameters, model.config, sets[b])
        assert np.allclose(y[b], want_y, rtol=1e-12, atol=1e-12)
        assert np.allclose(states[:, b], want_states, rtol=1e-12, atol=1e-12)
    # One set: (output_dim,), the batch's row to rounding (the batch's products are blocked otherwise).
    assert model.predict(sets[2]).shape == (2,) and np.allclose(model.predict(sets[2]), y[2], rtol=1e-13, atol=1e-15)
    assert np.array_equal(model.predict(sets.astype(np.float32)), model.predict(sets.astype(np.float32).astype(float)))


def test_callback_false_stops_and_interrupt_leaves_module_usable():
    model = flowscope.train_transformer("A", iters=50, batch=4, eval_sets=5, callback=lambda r: r["iteration"] < 3)
    assert model.record["training"]["iterations"] == 3

    def interrupt(record):
        if record["iteration"] == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        flowscope.train_transformer("A", iters=50, batch=4, eval_sets=5, callback=interrupt)
    assert flowscope.train_transformer("A", iters=2, batch=4, eval_sets=5).record["training"]["iterations"] == 2


def test_sigint_stops_a_long_training():
    timer = threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            flowscope.train_transformer("A", iters=10**7, eval_sets=5)
    finally:
        timer.cancel()
    assert flowscope.train_transformer("A", iters=1, eval_sets=5).record["training"]["iterations"] == 1


def test_bad_input_names_the_field(task_a, tmp_path):
    model, _ = task_a
    cases = [
        (dict(task="C"), r'^task: expected "A" or "B", got "C"'),
        (dict(arch="transformerz"), r'^arch: architecture: unknown value "transformerz"'),
        (dict(integrator="rk5"), r"^integrator: "),
        (dict(convention="mine"), r"^convention: "),
        (dict(blocks=0), r"^blocks: expected an integer in \[1, 64\], got 0"),
        (dict(width=1), r"^width: "),
        (dict(lr=-1.0), r"^lr: expected a finite number > 0"),
        (dict(horizon=float("nan")), r"^horizon: "),
        (dict(iters=0), r"^iters: "),
        (dict(drop_rates=[0.1]), r"^drop_rates: task B only"),
        (dict(task="B", drop_rates=[1.0]), r"^drop_rates: each rate must be in \[0, 1\)"),
        (dict(task="B", pad_copy=True), r"^pad_copy: task A only"),
        (dict(progress="sometimes"), r"^progress: expected None, False, True, \"auto\" or a callable"),
    ]
    for options, message in cases:
        with pytest.raises(ValueError, match=message):
            flowscope.train_transformer(**dict(dict(iters=1, eval_sets=2), **options))
    with pytest.raises(ValueError, match=r"^X: expected tokens of dimension 2, got 3"):
        model.predict(np.zeros((4, 6, 3)))
    with pytest.raises(ValueError, match=r"^X: set 1, token 2 is not finite"):
        bad = np.zeros((2, 6, 2))
        bad[1, 2, 0] = np.nan
        model.predict(bad)
    with pytest.raises(ValueError, match=r"^drop_rates: task B models only"):
        model.evaluate(drop_rates=[0.1])
    with pytest.raises(ValueError, match=r"^path: "):
        flowscope.TransformerModel.load(tmp_path / "missing.safetensors")
