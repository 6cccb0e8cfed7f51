"""flowscope.load_model: the hidden states of tiny GPT-2, ALBERT and BERT checkpoints against the NumPy forward
pass of test_models.py, the scene of a head against flowscope-cli model scene, and bad folders as ValueError."""

import json
import os
import sys

import pytest

np = pytest.importorskip("numpy")
import flowscope  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_models as ref  # noqa: E402  (the checkpoints written in Hugging Face's layouts, the NumPy reference)


@pytest.fixture
def gpt2(tmp_path):
    cfg, w = ref.gpt2_checkpoint()
    held = ref.write_checkpoint(str(tmp_path / "gpt2"), cfg, w)
    return tmp_path / "gpt2", cfg, held


def test_hidden_states_match_numpy(gpt2, tmp_path):
    folder, cfg, held = gpt2
    model = flowscope.load_model(folder)
    assert model.config["family"] == "gpt2" and model.config["layers"] == 3
    ids = [3, 17, 0, 39, 5]
    want = ref.gpt2_reference(held, cfg, ids, 3)
    got = model.hidden_states(ids, float64=True)
    assert got.dtype == np.float64 and got.shape == want.shape
    assert np.abs(got - want).max() <= 1e-10 * np.abs(want).max()
    got32 = model.hidden_states(ids)
    assert got32.dtype == np.float32
    assert np.abs(got32 - want).max() <= 1e-5 * np.abs(want).max()
    assert np.abs(model.hidden_states(ids, layers=2, float64=True) - ref.gpt2_reference(held, cfg, ids, 2)).max() \
        <= 1e-10 * np.abs(want).max()

    for albert in (True, False):
        cfg, w = ref.encoder_checkpoint(albert)
        folder = str(tmp_path / ("albert" if albert else "bert"))
        held = ref.write_checkpoint(folder, cfg, w)
        ids = [2, 7, 29, 0, 13]
        layers = 4 if albert else 2
        want = ref.encoder_reference(held, cfg, ids, layers, albert)
        got = flowscope.load_model(folder).hidden_states(ids, float64=True, layers=layers)
        assert np.abs(got - want).max() <= 1e-10 * np.abs(want).max()


def test_scene_is_the_cli_scene(gpt2, tmp_path, cli):
    folder, _, _ = gpt2
    scene = flowscope.load_model(folder).scene([5, 1, 9, 2], layer=1, head=2)
    out = tmp_path / "scene.json"
    cli("model", "scene", folder, "--ids", "5,1,9,2", "--layer", 1, "--head", 2, "--out", out)
    assert json.loads(scene.to_json()) == json.loads(out.read_text())


def test_bad_folders_raise_value_error_naming_the_key(gpt2, tmp_path):
    folder, cfg, _ = gpt2
    model = flowscope.load_model(folder)
    with pytest.raises(ValueError, match="id 40 is outside the vocabulary"):
        model.hidden_states([1, 40])
    _, w = ref.gpt2_checkpoint()
    del w["ln_f.bias"]
    ref.write_checkpoint(str(tmp_path / "broken"), cfg, w)
    with pytest.raises(ValueError, match="tensor 'ln_f.bias' is missing"):
        flowscope.load_model(tmp_path / "broken")
    with pytest.raises(ValueError, match="config.json: file not found"):
        flowscope.load_model(tmp_path / "nowhere")
