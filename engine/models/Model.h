// Flowscope engine: pretrained Transformers read from a Hugging Face checkpoint folder (config.json and
// model.safetensors, memory-mapped), and their forward pass layer by layer on the CPU, in float32 or float64
// (docs/models.md; the formulas are docs/math/models.md).
//
// Three families: GPT-2 (pre-LayerNorm, causal), ALBERT (post-LayerNorm, one layer shared by every depth)
// and BERT (post-LayerNorm, a layer per depth). Tokens are rows: X is n x D, a linear map is y = x W + b with
// W stored in x out (GPT-2's Conv1D layout; nn.Linear's [out, in] tensors are transposed when read).
#pragma once

#include "engine/io/MappedSafetensors.h"

#include <Eigen/Core>

#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace flowscope::models {

// A checkpoint (or config, or input) that is not what the reader expects: one message naming the key, field
// or file. Front ends report it as bad input (exit code 2).
struct ModelError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// The whole of a small file of a checkpoint folder (config.json, vocab.json, merges.txt). Throws ModelError
// "<path>: file not found" (or why it is no regular file).
std::string readModelFile(const std::string& path);

enum class Family { Gpt2, Albert, Bert };
enum class Activation { GeluNew, Gelu }; // gelu_new (tanh form), gelu (erf form)

const char* toString(Family f);

struct ModelConfig {
    Family family = Family::Gpt2;
    int vocab = 0;        // V
    int positions = 0;    // P: the context length
    int typeVocab = 0;    // token types (ALBERT, BERT); only type 0 is used
    int embedding = 0;    // E: the embeddings' width (ALBERT's embedding_size; D for GPT-2 and BERT)
    int hidden = 0;       // D
    int heads = 0;        // H, dividing D
    int layers = 0;       // L
    int intermediate = 0; // F: the feed-forward width
    double eps = 1e-5;    // LayerNorm's epsilon
    Activation activation = Activation::GeluNew;

    bool preNorm() const { return family == Family::Gpt2; }
    bool causal() const { return family == Family::Gpt2; }
    bool sharedLayer() const { return family == Family::Albert; }
    int headWidth() const { return hidden / heads; } // d_k = D / H
};

// config.json through the project's JSON reader: errors name the file and the field ("config.json: /n_head:
// expected integer >= 1, got 0"). The family is `model_type` (gpt2, albert, bert).
ModelConfig readModelConfig(const std::string& path);

template <class T> using RowMat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

template <class T> struct Affine {
    RowMat<T> W; // in x out
    RowMat<T> b; // 1 x out
};
template <class T> struct Norm {
    RowMat<T> gain, shift; // 1 x width
};
template <class T> struct Layer {
    Norm<T> norm1, norm2; // GPT-2: ln_1, ln_2 (before the sub-layers); ALBERT, BERT: after them
    Affine<T> qkv;      // D x 3D: the Q, K, V column blocks; head h is columns h d_k .. (h+1) d_k - 1 of each
    Affine<T> out;      // D x D: the attention's output map
    Affine<T> up, down; // D x F and F x D: the feed-forward layer
};
template <class T> struct Weights {
    RowMat<T> tokens, positions, tokenTypes; // V x E, P x E, types x E
    Norm<T> embeddingNorm;                   // ALBERT, BERT
    Affine<T> mapIn;                         // ALBERT: E x D (embedding_hidden_mapping_in)
    std::vector<Layer<T>> layers;            // ALBERT: one, shared by every depth
    Norm<T> finalNorm;                       // GPT-2: ln_f
};

// A checkpoint folder: config.json read, model.safetensors mapped, and every tensor the family needs present
// with the shape the config implies (checked when opened, before any weight is read). Unknown tensors are
// ignored; GPT-2's may carry a "transformer." prefix, ALBERT's "albert." and BERT's "bert." (or none).
class Checkpoint {
  public:
    // Throws ModelError naming the file, field or tensor.
    explicit Checkpoint(const std::string& dir);

    const ModelConfig& config() const { return config_; }
    const std::string& dir() const { return dir_; }
    const MappedSafetensors& tensors() const { return file_; }
    // The weights converted to T (float or double).
    template <class T> Weights<T> weights() const;

  private:
    std::string dir_;
    ModelConfig config_;
    MappedSafetensors file_;
    std::string prefix_;
};

// The hidden states of the tokens `ids` through `layers` layers (ALBERT: its shared layer applied `layers`
// times, any number; GPT-2, BERT: the first `layers` of the config's), as Hugging Face's
// output_hidden_states returns them: layers + 1 matrices of n x D. GPT-2: the embeddings first, the last
// state after ln_f; ALBERT: the state after embedding_hidden_mapping_in first. Token types 0, positions
// 0..n-1. Throws ModelError for an id outside the vocabulary, more tokens than positions, or a bad `layers`.
// `progress(k)`, when given, is called after each of the k = 1 .. layers layers; once it returns false the
// pass stops and throws ModelCancelled.
struct ModelCancelled : ModelError {
    ModelCancelled() : ModelError("cancelled") {}
};
using LayerProgress = std::function<bool(int layersDone)>;
template <class T>
std::vector<RowMat<T>> hiddenStates(const ModelConfig& config, const Weights<T>& weights,
                                    const std::vector<int>& ids, int layers,
                                    const LayerProgress& progress = {});

// The attention inputs of layer `layer` (0-based) given the states entering it: GPT-2 applies the layer's
// ln_1, ALBERT and BERT take the states as they are.
template <class T>
RowMat<T> attentionInput(const ModelConfig& config, const Layer<T>& layer, const RowMat<T>& x);

// Row-wise LayerNorm of x in place: (x - mean) / sqrt(var + eps) * gain + shift, var the biased variance.
template <class T> void layerNorm(RowMat<T>& x, const Norm<T>& norm, double eps);

} // namespace flowscope::models
