// Tiny Hugging Face checkpoints with random weights, written by the tests in exactly the layouts
// engine/models reads (config.json and model.safetensors; GPT-2's Conv1D [in, out], ALBERT's nn.Linear [out,
// in]). GPT-2's writer is the engine's (engine/models/RandomCheckpoint.h, shared with bench model).
#pragma once

#include "engine/io/Safetensors.h"
#include "engine/models/RandomCheckpoint.h"

#include <Eigen/Core>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>

namespace flowscope::test {

struct TinyModel {
    std::string dir;
    SafeTensors tensors; // as written (float64 values, rounded to float32 when written as F32)
    int D = 0, H = 0, layers = 0;
};

using models::randomTensor;

// GPT-2 with D = 12, H = 3, 2 layers, 16 positions, 40 tokens (models::Gpt2Shape's default).
inline TinyModel writeTinyGpt2(const std::filesystem::path& dir, bool float32 = false,
                               std::uint64_t seed = 7) {
    return {dir.string(), models::writeRandomGpt2(dir, models::Gpt2Shape{}, float32, seed), 12, 3, 2};
}

// ALBERT with E = 6, D = 8, H = 2, 2 layers (one shared), 12 positions, 30 tokens, the "albert." prefix.
inline TinyModel writeTinyAlbert(const std::filesystem::path& dir, std::uint64_t seed = 11) {
    std::filesystem::create_directories(dir);
    std::ofstream(dir / "config.json") << R"({"model_type": "albert", "hidden_size": 8, "embedding_size": 6,
        "num_attention_heads": 2, "num_hidden_layers": 2, "intermediate_size": 20, "max_position_embeddings": 12,
        "type_vocab_size": 2, "vocab_size": 30, "layer_norm_eps": 1e-12, "hidden_act": "gelu_new"})";
    std::mt19937_64 rng(seed);
    TinyModel m{dir.string(), {}, 8, 2, 2};
    auto add = [&](const std::string& name, Eigen::Index rows, Eigen::Index cols, double offset = 0) {
        m.tensors.tensors.push_back(
            randomTensor(rng, "albert." + name, rows, cols, offset ? 0.1 : 0.3, offset, false));
    };
    const int E = 6, D = 8, F = 20;
    add("embeddings.word_embeddings.weight", 30, E);
    add("embeddings.position_embeddings.weight", 12, E);
    add("embeddings.token_type_embeddings.weight", 2, E);
    add("embeddings.LayerNorm.weight", 1, E, 1.0);
    add("embeddings.LayerNorm.bias", 1, E);
    add("encoder.embedding_hidden_mapping_in.weight", D, E);
    add("encoder.embedding_hidden_mapping_in.bias", 1, D);
    const std::string a = "encoder.albert_layer_groups.0.albert_layers.0.";
    for (const char* s : {"query", "key", "value", "dense"}) {
        add(a + "attention." + s + ".weight", D, D);
        add(a + "attention." + s + ".bias", 1, D);
    }
    add(a + "attention.LayerNorm.weight", 1, D, 1.0);
    add(a + "attention.LayerNorm.bias", 1, D);
    add(a + "ffn.weight", F, D);
    add(a + "ffn.bias", 1, F);
    add(a + "ffn_output.weight", D, F);
    add(a + "ffn_output.bias", 1, D);
    add(a + "full_layer_layer_norm.weight", 1, D, 1.0);
    add(a + "full_layer_layer_norm.bias", 1, D);
    writeSafetensors((dir / "model.safetensors").string(), m.tensors);
    return m;
}

// The tensor `name` of m as a matrix (a 1-D tensor as one row).
inline Eigen::MatrixXd tensorMatrix(const TinyModel& m, const std::string& name) {
    const SafeTensor* t = m.tensors.find(name);
    const Eigen::Index rows = t->shape.size() == 2 ? t->shape[0] : 1, cols = t->shape.back();
    Eigen::MatrixXd out(rows, cols);
    for (Eigen::Index i = 0; i < rows; ++i)
        for (Eigen::Index k = 0; k < cols; ++k) out(i, k) = t->data[std::size_t(i * cols + k)];
    return out;
}

} // namespace flowscope::test
