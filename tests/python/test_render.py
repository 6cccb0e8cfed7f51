"""flowscope.render: where the module has the headless renderer, a render of a preset gives files of the asked
size whose frames are not blank, the same pixels as flowscope-cli render; without it, RuntimeError says why.
Skipped where no EGL device can be opened (Mesa's llvmpipe gives one on any machine with libegl-mesa0)."""

import struct

import pytest

np = pytest.importorskip("numpy")
import flowscope  # noqa: E402
from conftest import PRESETS  # noqa: E402

SIZE = (96, 64)


def render_or_skip(*args, **options):
    if not flowscope.HAVE_RENDER:
        pytest.skip("this module was built without the renderer (FLOWSCOPE_BUILD_GUI=OFF or no EGL)")
    try:
        flowscope.render(*args, **options)
    except RuntimeError as e:
        if "no OpenGL for headless drawing" in str(e):
            pytest.skip(str(e))
        raise


def test_without_the_renderer_render_says_why(tmp_path):
    if flowscope.HAVE_RENDER:
        pytest.skip("this module has the renderer")
    with pytest.raises(RuntimeError, match="built without the headless renderer"):
        flowscope.render("default", tmp_path / "a.gif")
    assert not (tmp_path / "a.gif").exists()


def test_png_frames_have_the_size_and_are_not_blank(tmp_path):
    image = pytest.importorskip("matplotlib.image")
    out = tmp_path / "frames"
    render_or_skip("default", str(out) + "/", frames=3, size=SIZE)
    files = sorted(out.iterdir())
    assert [f.name for f in files] == [f"frame_{k:05d}.png" for k in range(3)]
    for f in files:
        pixels = image.imread(f)[..., :3]
        assert pixels.shape[:2] == (SIZE[1], SIZE[0])
        differs = np.any(np.abs(pixels - pixels[0, 0]) > 1 / 255, axis=-1)  # from the corner's background
        assert differs.sum() > 20


def test_gif_has_the_size_and_matches_the_cli(cli, tmp_path):
    render_or_skip("default", tmp_path / "py.gif", frames=2, size=SIZE, progress=True)
    data = (tmp_path / "py.gif").read_bytes()
    assert data[:6] == b"GIF89a" and struct.unpack("<HH", data[6:10]) == SIZE
    # The module has the renderer where the CLI of the same build has it (the same CMake conditions).
    cli("render", f"{PRESETS}/default.json", "--frames", 2, "--size", f"{SIZE[0]}x{SIZE[1]}",
        "--out", tmp_path / "cli.gif")
    assert (tmp_path / "cli.gif").read_bytes() == data


def test_bad_options_name_the_field(tmp_path):
    if not flowscope.HAVE_RENDER:
        pytest.skip("this module was built without the renderer")
    cases = [
        (dict(view="sideways"), r'^view: expected "particles", "cone" or "disc"'),
        (dict(frames=0), r"^frames: "),
        (dict(size=(8, 8)), r"^size: "),
        (dict(hud=True, view="cone"), r"^hud: "),
    ]
    for options, message in cases:
        with pytest.raises(ValueError, match=message):
            flowscope.render("default", tmp_path / "a.gif", **options)
    with pytest.raises(ValueError, match=r"^path: "):
        flowscope.render("default", tmp_path / "a.avi")


def test_interrupt_leaves_nothing_and_the_module_usable(tmp_path):
    def progress(fraction):
        if fraction >= 0.5:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        render_or_skip("default", tmp_path / "a.gif", frames=4, size=SIZE, progress=progress)
    assert list(tmp_path.iterdir()) == []  # not even the encoder's temporary file
    render_or_skip("default", tmp_path / "a.gif", frames=1, size=SIZE)
    assert (tmp_path / "a.gif").exists()
