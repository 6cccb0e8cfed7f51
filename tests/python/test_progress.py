"""progress= of the long calls: a tqdm bar where tqdm can be imported (a stand-in module, and the real one where
Debian's python3-tqdm is installed), counting the call's steps or iterations; without tqdm nothing ("auto") or
lines on stderr (True); by default (None) a bar only for a call that runs longer than the progress delay (2 s;
the tests set it to 0 or to a day, never wait for it)."""

import sys
import types

import pytest

np = pytest.importorskip("numpy")
import flowscope  # noqa: E402

SMALL = {
    "name": "small", "d": 2, "n": 32,
    "initial": {"kind": "gaussian", "seed": 3},
    "attention": {"type": "softmax", "beta": 1.0},
    "integrator": {"method": "euler", "T": 1.0, "steps": 20},
}

# The long calls, each with progress= passed through, and how many units (steps, iterations) each one counts.
TOTALS = {"simulate": 20, "train": 4, "train_transformer": 5}
CALLS = {
    "simulate": lambda progress: flowscope.simulate(SMALL, progress=progress),
    "train": lambda progress: flowscope.train("moons", iters=4, batch=32, layers=2, width=4, rwpo=False,
                                              progress=progress),
    "train_transformer": lambda progress: flowscope.train_transformer("A", iters=5, batch=4, eval_sets=5,
                                                                      progress=progress),
}


class FakeBar:
    """What the module uses of tqdm.auto.tqdm: total=, desc=, update(n), close()."""
    bars = []

    def __init__(self, total, desc, unit):
        self.total, self.desc, self.n, self.closed = total, desc, 0, False
        FakeBar.bars.append(self)

    def update(self, n):
        assert n > 0
        self.n += n

    def close(self):
        self.closed = True


@pytest.fixture
def fake_tqdm(monkeypatch):
    package, auto = types.ModuleType("tqdm"), types.ModuleType("tqdm.auto")
    auto.tqdm = FakeBar
    package.auto = auto
    monkeypatch.setitem(sys.modules, "tqdm", package)
    monkeypatch.setitem(sys.modules, "tqdm.auto", auto)
    FakeBar.bars = []
    return FakeBar


@pytest.fixture
def no_tqdm(monkeypatch):
    # None in sys.modules makes `import tqdm.auto` raise ImportError, as where it is not installed.
    monkeypatch.setitem(sys.modules, "tqdm", None)
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)


@pytest.mark.parametrize("name", sorted(CALLS))
@pytest.mark.parametrize("progress", [True, "auto"])
def test_a_bar_fills_and_closes_where_tqdm_imports(fake_tqdm, name, progress):
    CALLS[name](progress)
    assert len(fake_tqdm.bars) == 1
    bar = fake_tqdm.bars[0]
    assert bar.desc.startswith(name) and bar.total == TOTALS[name] and bar.n == TOTALS[name] and bar.closed


@pytest.mark.parametrize("name", sorted(CALLS))
def test_without_tqdm_auto_is_silent_and_true_prints_lines(no_tqdm, capsys, name):
    CALLS[name]("auto")
    assert capsys.readouterr().err == ""
    CALLS[name](True)
    lines = capsys.readouterr().err.splitlines()
    assert lines and all(line.startswith(name) for line in lines)
    percents = [int(line.rsplit(" ", 1)[1].rstrip("%")) for line in lines]
    assert percents == sorted(set(percents)) and percents[-1] == 100


@pytest.fixture
def progress_delay():
    yield flowscope._flowscope._set_progress_delay
    flowscope._flowscope._set_progress_delay(2.0)


def test_no_progress_is_silent(capsys, progress_delay):
    progress_delay(86400.0)  # the default's bar waits a day: none of these calls shows it
    for call in CALLS.values():
        call(None)
        call(False)
    captured = capsys.readouterr()
    assert captured.err == "" and captured.out == ""


@pytest.mark.parametrize("name", sorted(CALLS))
def test_the_default_shows_a_bar_once_the_call_has_run_the_delay(fake_tqdm, progress_delay, name):
    progress_delay(0.0)  # every call is past the delay at its first report
    CALLS[name](None)
    assert len(fake_tqdm.bars) == 1
    bar = fake_tqdm.bars[0]
    assert bar.total == TOTALS[name] and bar.n == TOTALS[name] and bar.closed
    progress_delay(86400.0)
    CALLS[name](None)
    assert len(fake_tqdm.bars) == 1  # a quicker call than the delay: no bar
    CALLS[name](False)
    assert len(fake_tqdm.bars) == 1


def test_real_tqdm_bar(capsys):
    pytest.importorskip("tqdm")
    flowscope.simulate(SMALL, progress=True)
    err = capsys.readouterr().err
    assert "simulate small" in err and "20/20" in err
