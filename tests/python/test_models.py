#!/usr/bin/env python3
"""flowscope-cli model layers against an independent NumPy forward pass (issue 49).

    test_models.py FLOWSCOPE_CLI

Writes tiny GPT-2, ALBERT and BERT checkpoints with random weights in exactly Hugging Face's layouts
(config.json + model.safetensors; GPT-2's Conv1D [in, out], ALBERT's and BERT's nn.Linear [out, in]; F32, and
an F16 and a BF16 copy of GPT-2's), runs `flowscope-cli model layers` on them, and compares every layer's
hidden states with the forward pass below, written from Hugging Face's modelling code in float64:
max |C++ - NumPy| / max |NumPy| <= 1e-10 with --float64 and <= 1e-5 in float32, for every layer. Exits 77
(ctest's skip code) when NumPy is missing.
"""

import json
import math
import os
import struct
import subprocess
import sys
import tempfile

try:
    import numpy as np
except ImportError:
    print("SKIP: NumPy is not installed (Debian: python3-numpy)")
    sys.exit(77)

CLI = sys.argv[1] if __name__ == "__main__" else None
RNG = np.random.default_rng(49)
FAILURES = []


# ---- safetensors, written by hand (the format: 8-byte header length, JSON header, the bytes)


def to_bf16_bytes(a):
    bits = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)  # round to nearest even


def write_safetensors(path, tensors, dtype="F32", extra_header=None):
    header, blobs, offset = {}, [], 0
    for name, a in tensors.items():
        if dtype == "F32":
            raw = np.ascontiguousarray(a, dtype="<f4").tobytes()
        elif dtype == "F16":
            raw = np.ascontiguousarray(a, dtype="<f2").tobytes()
        else:
            raw = to_bf16_bytes(a).astype("<u2").tobytes()
        header[name] = {"dtype": dtype, "shape": list(a.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    if extra_header:
        extra_header(header)
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


def stored(a, dtype):
    """The values as the file holds them, in float64."""
    if dtype == "F32":
        return a.astype(np.float32).astype(np.float64)
    if dtype == "F16":
        return a.astype(np.float16).astype(np.float64)
    bits = to_bf16_bytes(a).astype(np.uint32) << 16
    return bits.view(np.float32).astype(np.float64)


# ---- the reference forward passes (Hugging Face's formulas, float64)


def layer_norm(x, g, b, eps):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * g + b


def gelu_new(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


def gelu(x):
    return 0.5 * x * (1.0 + np.vectorize(math.erf)(x / math.sqrt(2.0)))


def attention(q, k, v, heads, causal):
    n, D = q.shape
    dk = D // heads
    out = np.zeros_like(q)
    for h in range(heads):
        cols = slice(h * dk, (h + 1) * dk)
        s = q[:, cols] @ k[:, cols].T / math.sqrt(dk)
        if causal:
            s = np.where(np.tril(np.ones((n, n), bool)), s, -np.inf)
        p = np.exp(s - s.max(-1, keepdims=True))
        p /= p.sum(-1, keepdims=True)
        out[:, cols] = p @ v[:, cols]
    return out


def gpt2_reference(w, cfg, ids, layers):
    n, D, H, eps = len(ids), cfg["n_embd"], cfg["n_head"], cfg["layer_norm_epsilon"]
    x = w["wte.weight"][ids] + w["wpe.weight"][:n]
    states = [x]
    for i in range(layers):
        p = f"h.{i}."
        a = layer_norm(x, w[p + "ln_1.weight"], w[p + "ln_1.bias"], eps)
        qkv = a @ w[p + "attn.c_attn.weight"] + w[p + "attn.c_attn.bias"]
        o = attention(qkv[:, :D], qkv[:, D : 2 * D], qkv[:, 2 * D :], H, True)
        x = x + o @ w[p + "attn.c_proj.weight"] + w[p + "attn.c_proj.bias"]
        m = layer_norm(x, w[p + "ln_2.weight"], w[p + "ln_2.bias"], eps)
        f = gelu_new(m @ w[p + "mlp.c_fc.weight"] + w[p + "mlp.c_fc.bias"])
        x = x + f @ w[p + "mlp.c_proj.weight"] + w[p + "mlp.c_proj.bias"]
        states.append(x)
    states[-1] = layer_norm(states[-1], w["ln_f.weight"], w["ln_f.bias"], eps)
    return np.stack(states)


def linear(w, name, x):  # nn.Linear: weight [out, in]
    return x @ w[name + ".weight"].T + w[name + ".bias"]


def encoder_reference(w, cfg, ids, layers, albert):
    n, H, eps = len(ids), cfg["num_attention_heads"], cfg["layer_norm_eps"]
    act = gelu_new if cfg["hidden_act"] == "gelu_new" else gelu
    e = "embeddings."
    x = w[e + "word_embeddings.weight"][ids] + w[e + "position_embeddings.weight"][:n]
    x = x + w[e + "token_type_embeddings.weight"][0]
    x = layer_norm(x, w[e + "LayerNorm.weight"], w[e + "LayerNorm.bias"], eps)
    if albert:
        x = linear(w, "encoder.embedding_hidden_mapping_in", x)
    states = [x]
    for i in range(layers):
        if albert:
            p = "encoder.albert_layer_groups.0.albert_layers.0."
            names = ["attention.query", "attention.key", "attention.value", "attention.dense", "attention.LayerNorm",
                     "ffn", "ffn_output", "full_layer_layer_norm"]
        else:
            p = f"encoder.layer.{i}."
            names = ["attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense",
                     "attention.output.LayerNorm", "intermediate.dense", "output.dense", "output.LayerNorm"]
        q, k, v, dense, ln1, up, down, ln2 = [p + s for s in names]
        o = attention(linear(w, q, x), linear(w, k, x), linear(w, v, x), H, False)
        x = layer_norm(x + linear(w, dense, o), w[ln1 + ".weight"], w[ln1 + ".bias"], eps)
        f = linear(w, down, act(linear(w, up, x)))
        x = layer_norm(x + f, w[ln2 + ".weight"], w[ln2 + ".bias"], eps)
        states.append(x)
    return np.stack(states)


# ---- the tiny checkpoints


def rand(*shape, scale=0.3):
    return RNG.normal(0.0, scale, shape)


def norm_pair(w, name, width):
    w[name + ".weight"] = 1.0 + rand(width, scale=0.1)
    w[name + ".bias"] = rand(width, scale=0.1)


def gpt2_checkpoint():
    cfg = {"model_type": "gpt2", "n_embd": 12, "n_head": 3, "n_layer": 3, "n_positions": 16, "vocab_size": 40,
           "layer_norm_epsilon": 1e-5, "activation_function": "gelu_new", "n_inner": None}
    D, F = 12, 48
    w = {"wte.weight": rand(40, D), "wpe.weight": rand(16, D)}
    for i in range(3):
        p = f"h.{i}."
        norm_pair(w, p + "ln_1", D)
        w[p + "attn.c_attn.weight"], w[p + "attn.c_attn.bias"] = rand(D, 3 * D), rand(3 * D)
        w[p + "attn.c_proj.weight"], w[p + "attn.c_proj.bias"] = rand(D, D), rand(D)
        norm_pair(w, p + "ln_2", D)
        w[p + "mlp.c_fc.weight"], w[p + "mlp.c_fc.bias"] = rand(D, F), rand(F)
        w[p + "mlp.c_proj.weight"], w[p + "mlp.c_proj.bias"] = rand(F, D), rand(D)
    norm_pair(w, "ln_f", D)
    return cfg, w


def encoder_checkpoint(albert):
    E, D, F, V, P, T = (6 if albert else 8), 8, 20, 30, 12, 2
    cfg = {"model_type": "albert" if albert else "bert", "hidden_size": D, "num_attention_heads": 2,
           "num_hidden_layers": 2, "intermediate_size": F, "max_position_embeddings": P, "type_vocab_size": T,
           "vocab_size": V, "layer_norm_eps": 1e-12, "hidden_act": "gelu_new" if albert else "gelu"}
    if albert:
        cfg["embedding_size"] = E
    e = "embeddings."
    w = {e + "word_embeddings.weight": rand(V, E), e + "position_embeddings.weight": rand(P, E),
         e + "token_type_embeddings.weight": rand(T, E)}
    norm_pair(w, e + "LayerNorm", E)

    def lin(name, n_in, n_out):
        w[name + ".weight"], w[name + ".bias"] = rand(n_out, n_in), rand(n_out)

    if albert:
        lin("encoder.embedding_hidden_mapping_in", E, D)
        layer_prefixes = ["encoder.albert_layer_groups.0.albert_layers.0."]
    else:
        layer_prefixes = [f"encoder.layer.{i}." for i in range(2)]
    for p in layer_prefixes:
        if albert:
            for s in ["query", "key", "value", "dense"]:
                lin(p + "attention." + s, D, D)
            norm_pair(w, p + "attention.LayerNorm", D)
            lin(p + "ffn", D, F)
            lin(p + "ffn_output", F, D)
            norm_pair(w, p + "full_layer_layer_norm", D)
        else:
            for s in ["query", "key", "value"]:
                lin(p + "attention.self." + s, D, D)
            lin(p + "attention.output.dense", D, D)
            norm_pair(w, p + "attention.output.LayerNorm", D)
            lin(p + "intermediate.dense", D, F)
            lin(p + "output.dense", F, D)
            norm_pair(w, p + "output.LayerNorm", D)
    return cfg, w


def write_checkpoint(folder, cfg, w, dtype="F32", prefix="", extra=None):
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(cfg, f)
    tensors = {prefix + k: v for k, v in w.items()}
    if extra:
        tensors.update(extra)
    write_safetensors(os.path.join(folder, "model.safetensors"), tensors, dtype)
    return {k: stored(v, dtype) for k, v in w.items()}


def run_layers(folder, ids, out, float64, layers=None):
    args = [CLI, "model", "layers", folder, "--ids", ",".join(map(str, ids)), "--out", out]
    if float64:
        args.append("--float64")
    if layers:
        args += ["--layers", str(layers)]
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} exited {r.returncode}: {r.stderr}")
    return np.load(out)


def compare(label, got, want, tolerance):
    if got.shape != want.shape:
        FAILURES.append(f"{label}: shape {got.shape}, expected {want.shape}")
        return
    worst = 0.0
    for l in range(want.shape[0]):
        rel = np.abs(got[l].astype(np.float64) - want[l]).max() / np.abs(want[l]).max()
        worst = max(worst, rel)
        if not rel <= tolerance:
            FAILURES.append(f"{label}: layer {l}: relative error {rel:.3g} > {tolerance:g}")
    print(f"{label}: {want.shape[0]} layers, worst relative error {worst:.3g} (tolerance {tolerance:g})")


def main():
    with tempfile.TemporaryDirectory(prefix="flowscope-models-") as tmp:
        ids = [3, 17, 0, 39, 5, 5, 22, 11, 9]
        cfg, w = gpt2_checkpoint()
        for dtype, prefix in [("F32", ""), ("F16", "transformer."), ("BF16", "")]:
            folder = os.path.join(tmp, "gpt2-" + dtype)
            # An unknown tensor (the causal-mask buffer of older checkpoints) is ignored.
            held = write_checkpoint(folder, cfg, w, dtype, prefix, {prefix + "h.0.attn.bias": np.ones((16, 16))})
            want = gpt2_reference(held, cfg, ids, 3)
            compare(f"gpt2 {dtype} float64", run_layers(folder, ids, os.path.join(tmp, "h.npy"), True), want, 1e-10)
            compare(f"gpt2 {dtype} float32", run_layers(folder, ids, os.path.join(tmp, "h.npy"), False), want, 1e-5)
        want = gpt2_reference(held, cfg, ids, 2)
        compare("gpt2 --layers 2", run_layers(folder, ids, os.path.join(tmp, "h.npy"), True, 2), want, 1e-10)

        for albert in (True, False):
            name = "albert" if albert else "bert"
            cfg, w = encoder_checkpoint(albert)
            folder = os.path.join(tmp, name)
            held = write_checkpoint(folder, cfg, w, "F32", name + ".")
            ids = [2, 7, 29, 0, 13, 4, 4, 18]
            layers = 5 if albert else 2  # ALBERT's shared layer beyond the config's 2
            want = encoder_reference(held, cfg, ids, layers, albert)
            compare(f"{name} float64", run_layers(folder, ids, os.path.join(tmp, "h.npy"), True, layers), want, 1e-10)
            compare(f"{name} float32", run_layers(folder, ids, os.path.join(tmp, "h.npy"), False, layers), want, 1e-5)

    if FAILURES:
        print("FAILED:\n  " + "\n  ".join(FAILURES))
        return 1
    print("all layers match")
    return 0


if __name__ == "__main__":
    sys.exit(main())
