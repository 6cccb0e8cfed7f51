"""flowscope.train and FlowModel against flowscope-cli train / sample and the NumPy-only reader
(python/flowscope_model.py)."""

import os
import sys

import pytest

np = pytest.importorskip("numpy")
import flowscope  # noqa: E402
from conftest import ROOT  # noqa: E402

sys.path.insert(0, os.path.join(ROOT, "python"))
import flowscope_model  # noqa: E402

# A tiny flow: seconds, not minutes (the CLI's options for the same model).
TINY = dict(iters=30, batch=128, layers=3, width=8, reference_draws=2, reference_size=64, seed=4)
TINY_CLI = ["--iters", 30, "--batch", 128, "--layers", 3, "--width", 8, "--reference-draws", 2,
            "--reference-size", 64, "--seed", 4, "--eval-every", 0, "--quiet"]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    seen = []
    model = flowscope.train("moons", **TINY, callback=seen.append)
    assert [r["iteration"] for r in seen] == list(range(1, 31))
    assert all(np.isfinite(r["loss"]) for r in seen)
    path = tmp_path_factory.mktemp("flow") / "moons.safetensors"
    model.save(path)
    return model, path


def test_python_and_cli_training_give_the_same_model(cli, trained, tmp_path):
    model, path = trained
    cli("train", "--dataset", "moons", *TINY_CLI, "--out", tmp_path / "cli.safetensors")
    Z = np.random.default_rng(1).standard_normal((300, 2))
    np.save(tmp_path / "z.npy", Z)
    for name, p in (("python", path), ("cli", tmp_path / "cli.safetensors")):
        cli("sample", p, "--base", tmp_path / "z.npy", "--batch", 100, "--out", tmp_path / f"{name}.npy")
    assert np.array_equal(np.load(tmp_path / "python.npy"), np.load(tmp_path / "cli.npy"))


def test_saved_model_samples_as_the_cli(cli, trained, tmp_path):
    model, path = trained
    cli("sample", path, "--n", 500, "--seed", 9, "--batch", 200, "--out", tmp_path / "s.npy")
    got = model.sample(500, seed=9, batch=200)
    assert got.dtype == np.float32 and np.array_equal(got, np.load(tmp_path / "s.npy"))
    loaded = flowscope.FlowModel.load(path)
    assert np.array_equal(loaded.sample(500, seed=9, batch=200), got)
    assert loaded.config == model.config and loaded.record["training"]["dataset"] == "moons"
    Z = np.random.default_rng(2).standard_normal((200, 2))
    np.save(tmp_path / "z.npy", Z)
    cli("sample", path, "--base", tmp_path / "z.npy", "--out", tmp_path / "b.npy")
    assert np.array_equal(model.sample(base=Z), np.load(tmp_path / "b.npy"))


def test_loading_and_saving_leave_the_users_look_alike_files_alone(trained, tmp_path):
    """Recovery before a load or a save removes only Flowscope's own staged files: a user's files and
    folders named like the old staging names (<name>.tmp-<digits>, <name>.old-<digits>) survive."""
    model, path = trained
    mine = {"thesis.old-2019": b"precious", "report.pdf.old-31337": b"x", "m.safetensors.tmp-999999": b"y",
            "experiment.tmp-2019/results.csv": b"data"}
    for name, data in mine.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_bytes(data)
    copy = tmp_path / "m.safetensors"
    model.save(copy)
    loaded = flowscope.FlowModel.load(copy)
    assert loaded.sample(n=4, seed=1).shape == (4, 2)
    for name, data in mine.items():
        assert (tmp_path / name).read_bytes() == data, name


def test_module_and_numpy_reader_agree(trained):
    model, path = trained
    Z = np.random.default_rng(3).standard_normal((256, 2))
    reader = flowscope_model.load(str(path))
    assert np.abs(reader.generate(Z) - model.sample(base=Z)).max() <= 1e-5


def test_log_density_matches_the_cli_density_grid(cli, trained, tmp_path):
    model, path = trained
    cli("density", path, "--grid", 16, "--half-width", 3, "--out", tmp_path / "rho.npy")
    rho = np.load(tmp_path / "rho.npy")
    centres = -3 + (np.arange(16) + 0.5) * 6 / 16
    x, y = np.meshgrid(centres, centres)  # row = y, column = x
    got = np.exp(model.log_density(np.column_stack([x.ravel(), y.ravel()]))).reshape(16, 16)
    assert np.allclose(got, rho, rtol=1e-5, atol=1e-7)


def test_train_on_points_and_plain_flow():
    pts = np.random.default_rng(0).standard_normal((400, 3)) * [1.0, 0.5, 0.2]
    model = flowscope.train(pts.astype(np.float32), iters=5, batch=64, layers=2, width=4, rwpo=False)
    assert model.d == 3 and model.config["rwpo"] is False
    assert model.sample(10).shape == (10, 3)
    assert np.isfinite(model.log_density(pts[:20])).all()


def test_callback_false_stops_and_bad_options_raise():
    model = flowscope.train("8gaussians", iters=100, batch=32, layers=2, width=4, rwpo=False,
                            callback=lambda r: r["iteration"] < 3)
    assert model.record["training"]["iterations"] == 3
    with pytest.raises(ValueError, match=r'^dataset: "moonz" is not one of'):
        flowscope.train("moonz", iters=1)
    with pytest.raises(ValueError, match=r"^points: row 0, column 1 is nan"):
        flowscope.train(np.array([[0.0, np.nan], [1, 2]]), iters=1)
    with pytest.raises(ValueError, match=r'^kernel: expected "corrected"'):
        flowscope.train("moons", iters=1, kernel="wrong")
    with pytest.raises(ValueError, match=r"batch"):
        flowscope.train("moons", iters=1, batch=1)
    with pytest.raises(ValueError, match=r"^base: expected points of dimension 2"):
        model.sample(base=np.zeros((4, 3)))
    with pytest.raises(ValueError, match=r"^path: "):
        flowscope.FlowModel.load("/nonexistent/model.safetensors")


def test_keyboard_interrupt_during_training():
    def stop(record):
        if record["iteration"] == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        flowscope.train("moons", iters=50, batch=32, layers=2, width=4, callback=stop)
    assert flowscope.train("moons", iters=2, batch=32, layers=2, width=4).d == 2


def test_points_that_are_all_one_point_are_refused_before_training():
    with pytest.raises(ValueError, match="same point"):
        flowscope.train(np.zeros((50, 2)), iters=2)


def test_saving_where_no_file_can_be_written_is_an_oserror(tmp_path):
    model = flowscope.train("moons", iters=1, batch=16, layers=1, width=2, rwpo=False)
    (tmp_path / "dir.safetensors").mkdir()
    with pytest.raises(OSError, match="dir.safetensors"):
        model.save(tmp_path / "dir.safetensors")
    with pytest.raises(OSError):
        model.save(tmp_path / "missing" / "m.safetensors")
