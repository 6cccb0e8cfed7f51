"""Flowscope's engine from Python: the dynamics of Transformers, tokens as particles.

    import flowscope, numpy as np
    scene = flowscope.Scene("default")                 # a preset, a scene dict, a .json file or a share string
    run = flowscope.simulate(scene)                    # run.tokens: (T, N, d), run.times, observables, run.event
    run = flowscope.simulate(X0, attention={"type": "l2"}, T=2, steps=40)   # from your (N, d) tokens, any N
    live = flowscope.Run(scene); live.step(50)         # a run you step and edit as it goes:
    live.set("/attention/type", "l2"); live.step(50)   # live.tokens (N, d), live.t
    V = flowscope.velocity({"type": "softmax", "beta": 1}, np.random.randn(1000, 3))
    v = flowscope.torch.velocity(X, Q, K, V, beta)     # differentiable (torch tensors); velocity_vjp for NumPy
    m = flowscope.moments("cone-fig2d-two-lines")      # Σ(t), α(t) of the Gaussian mode
    flow = flowscope.train("moons", iters=300)         # a generative flow; flow.sample(1000), flow.save(...)
    net = flowscope.train_transformer("A", iters=500)  # a continuous-time Transformer; net.predict(sets)
    flowscope.render("default", "default.gif", frames=60)   # where the build has the headless renderer

Everything runs in the C++ engine (the CLI's and the app's code): NumPy arrays in and out, float32 and
float64, the GIL released while it computes, Ctrl+C stops long calls cleanly, progress=True or "auto" shows
a tqdm bar where tqdm is installed. Bad input raises ValueError naming the field (a scene's fields by JSON
pointer, as flowscope-cli prints them). See docs/python.md.
"""

import os as _os
from typing import Any

from ._flowscope import (  # noqa: F401
    HAVE_RENDER,
    FlowModel,
    Model,
    MomentsResult,
    Scene,
    SimulationResult,
    dataset,
    datasets,
    get_num_threads,
    load_model,
    moments,
    parameters,
    presets,
    render,
    Run,
    set_num_threads,
    simulate,
    train,
    train_transformer,
    TransformerModel,
)
from . import _flowscope
from ._vjp import velocity_vjp  # noqa: F401


def _like_tokens(X, out):
    """`out` (a NumPy array) as a torch tensor on X's device when the tokens X came as one; else `out`.

    torch is imported only when a tensor came in (`import flowscope` alone never imports it)."""
    if type(X).__module__.split(".", 1)[0] != "torch":
        return out
    import torch
    return torch.from_numpy(out).to(device=X.device)


def velocity(attention: Any, X: Any, t: float = 0.0) -> Any:
    return _like_tokens(X, _flowscope.velocity(attention, X, t))


def attention_weights(attention: Any, X: Any, i: int, t: float = 0.0) -> Any:
    return _like_tokens(X, _flowscope.attention_weights(attention, X, i, t))


def entropies(attention: Any, X: Any, t: float = 0.0) -> Any:
    return _like_tokens(X, _flowscope.entropies(attention, X, t))


_TENSORS = """

Tokens given as a torch tensor give a torch tensor back, on the tokens' device (computed on the CPU); a NumPy
array gives a C-ordered NumPy array."""
for _f in (velocity, attention_weights, entropies):
    _f.__doc__ = getattr(_flowscope, _f.__name__).__doc__ + _TENSORS

__version__ = "0.1.0"
__all__ = [
    "HAVE_RENDER", "FlowModel", "Model", "MomentsResult", "Run", "Scene", "SimulationResult", "TransformerModel",
    "attention_weights",
    "dataset", "datasets", "entropies", "get_num_threads", "load_model", "moments", "parameters", "presets", "render", "simulate", "train",
    "set_num_threads", "train_transformer",
    "velocity", "velocity_vjp",
]


def __getattr__(name):
    # flowscope.torch imports torch: only when asked for (import flowscope.torch, or flowscope.torch here).
    if name == "torch":
        import importlib
        return importlib.import_module(".torch", __name__)
    raise AttributeError(f"module 'flowscope' has no attribute {name!r}")

# The presets installed with the package (the build tree and `pip install .` copy them here); without them,
# the source tree's assets/presets that the module was built from.
_presets = _os.path.join(_os.path.dirname(__file__), "presets")
if _os.path.isdir(_presets):
    _flowscope._set_preset_dir(_presets)
