// Flowscope engine: GPT-2 checkpoints with random weights, written in exactly the Hugging Face layout that
// engine/models reads (config.json and model.safetensors; Conv1D maps stored [in, out]). The tests' tiny
// models and bench model's GPT-2-small-shaped one (a random checkpoint costs the forward pass what a trained
// one of the same shape costs) come from here. Header-only: the test programs that write them link the engine
// alone.
#pragma once

#include "engine/io/Safetensors.h"

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <stdexcept>
#include <string>

namespace flowscope::models {

// A rows x cols tensor named `name` of offset + N(0, scale^2) values (a 1-D tensor of cols when rows is 1),
// rounded to float32 when `float32`.
inline SafeTensor randomTensor(std::mt19937_64& rng, const std::string& name, Eigen::Index rows,
                               Eigen::Index cols, double scale, double offset, bool float32) {
    std::normal_distribution<double> normal(0.0, scale);
    Eigen::MatrixXd m(rows, cols);
    for (Eigen::Index i = 0; i < rows; ++i)
        for (Eigen::Index k = 0; k < cols; ++k) m(i, k) = offset + normal(rng);
    SafeTensor t = matrixTensor(name, m, float32);
    if (rows == 1) t.shape = {cols}; // a 1-D tensor
    return t;
}

// The shape of a GPT-2 checkpoint and the spread of its random weights: every weight and bias is N(0,
// spread^2), every LayerNorm gain 1 + N(0, 0.1^2). The default is the tests' tiny model.
struct Gpt2Shape {
    int width = 12; // n_embd, D
    int heads = 3;  // n_head
    int layers = 2; // n_layer
    int positions = 16;
    int vocab = 40;
    double spread = 0.3;
};

// GPT-2 small (124 M parameters): D = 768, 12 heads, 12 layers, 1024 positions, 50257 tokens, with Hugging
// Face's initializer_range 0.02 as the spread (the spread of a fresh GPT2Model's weights).
inline Gpt2Shape gpt2SmallShape() {
    return {768, 12, 12, 1024, 50257, 0.02};
}

// Writes dir/config.json and dir/model.safetensors (F32 when `float32`, else F64) with the tensors drawn from
// `seed` in the order wte, wpe, each block's ln_1, attn.c_attn, attn.c_proj, ln_2, mlp.c_fc, mlp.c_proj, then
// ln_f; returns them as written. Throws std::runtime_error naming the path when a file cannot be written.
inline SafeTensors writeRandomGpt2(const std::filesystem::path& dir, const Gpt2Shape& shape, bool float32,
                                   std::uint64_t seed) {
    std::filesystem::create_directories(dir);
    {
        const std::filesystem::path config = dir / "config.json";
        std::ofstream out(config);
        out << "{\"model_type\": \"gpt2\", \"n_embd\": " << shape.width << ", \"n_head\": " << shape.heads
            << ", \"n_layer\": " << shape.layers << ", \"n_positions\": " << shape.positions
            << ", \"vocab_size\": " << shape.vocab
            << ", \"layer_norm_epsilon\": 1e-5, \"activation_function\": \"gelu_new\"}\n";
        if (!out) throw std::runtime_error(config.string() + ": cannot be written");
    }
    std::mt19937_64 rng(seed);
    SafeTensors file;
    auto add = [&](const std::string& name, Eigen::Index rows, Eigen::Index cols, double offset = 0) {
        file.tensors.push_back(
            randomTensor(rng, name, rows, cols, offset ? 0.1 : shape.spread, offset, float32));
    };
    const int D = shape.width;
    add("wte.weight", shape.vocab, D);
    add("wpe.weight", shape.positions, D);
    for (int i = 0; i < shape.layers; ++i) {
        const std::string h = "h." + std::to_string(i) + ".";
        add(h + "ln_1.weight", 1, D, 1.0);
        add(h + "ln_1.bias", 1, D);
        add(h + "attn.c_attn.weight", D, 3 * D);
        add(h + "attn.c_attn.bias", 1, 3 * D);
        add(h + "attn.c_proj.weight", D, D);
        add(h + "attn.c_proj.bias", 1, D);
        add(h + "ln_2.weight", 1, D, 1.0);
        add(h + "ln_2.bias", 1, D);
        add(h + "mlp.c_fc.weight", D, 4 * D);
        add(h + "mlp.c_fc.bias", 1, 4 * D);
        add(h + "mlp.c_proj.weight", 4 * D, D);
        add(h + "mlp.c_proj.bias", 1, D);
    }
    add("ln_f.weight", 1, D, 1.0);
    add("ln_f.bias", 1, D);
    writeSafetensors((dir / "model.safetensors").string(), file);
    return file;
}

} // namespace flowscope::models
