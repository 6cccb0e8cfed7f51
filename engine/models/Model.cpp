#include "engine/models/Model.h"

#include "engine/core/Cpu.h"
#include "engine/core/Parallel.h"
#include "engine/io/JsonReader.h"
#include "engine/io/Npy.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <type_traits>

#if FLOWSCOPE_HAVE_AVX2_KERNEL
#include "engine/core/kernels/Gemm.h"
#endif

namespace flowscope::models {

const char* toString(Family f) {
    switch (f) {
    case Family::Gpt2:
        return "gpt2";
    case Family::Albert:
        return "albert";
    case Family::Bert:
        return "bert";
    }
    return "?";
}

// ---- config.json

std::string readModelFile(const std::string& path) {
    if (const std::string why = notARegularFile(path); !why.empty()) throw ModelError(path + ": " + why);
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    if (!in) throw ModelError(path + ": cannot read the file");
    return s.str();
}

namespace {

constexpr long long kMaxSide = 1 << 20;

} // namespace

ModelConfig readModelConfig(const std::string& path) {
    const std::string text = readModelFile(path);
    try {
        const JsonReader::Json json = parseJson(text);
        const JsonReader r(json);
        r.expectObject();
        constexpr std::string_view kFamilies[] = {"gpt2", "albert", "bert"};
        ModelConfig c;
        c.family = Family(r.require("model_type", "gpt2, albert or bert").choice("model type", kFamilies));
        auto size = [&](std::string_view key) { return int(r.require(key).integer(1, kMaxSide)); };
        auto activation = [&](std::string_view key, const char* fallback) {
            constexpr std::string_view kActivations[] = {"gelu_new", "gelu"};
            if (!r.has(key))
                return std::string_view(fallback) == "gelu" ? Activation::Gelu : Activation::GeluNew;
            return Activation(r.require(key).choice("activation", kActivations));
        };
        if (c.family == Family::Gpt2) {
            c.hidden = c.embedding = size("n_embd");
            c.heads = size("n_head");
            c.layers = size("n_layer");
            c.positions = size("n_positions");
            c.vocab = size("vocab_size");
            c.intermediate = 4 * c.hidden;
            if (auto inner = r.find("n_inner"); inner && !inner->json().is_null())
                c.intermediate = int(inner->integer(1, kMaxSide));
            c.eps = r.has("layer_norm_epsilon") ? r.require("layer_norm_epsilon").numberAbove(0) : 1e-5;
            c.activation = activation("activation_function", "gelu_new");
        } else {
            c.hidden = size("hidden_size");
            c.embedding = c.family == Family::Albert ? size("embedding_size") : c.hidden;
            c.heads = size("num_attention_heads");
            c.layers = size("num_hidden_layers");
            c.intermediate = size("intermediate_size");
            c.positions = size("max_position_embeddings");
            c.typeVocab = size("type_vocab_size");
            c.vocab = size("vocab_size");
            c.eps = r.has("layer_norm_eps") ? r.require("layer_norm_eps").numberAbove(0) : 1e-12;
            c.activation = activation("hidden_act", c.family == Family::Albert ? "gelu_new" : "gelu");
            if (c.family == Family::Albert) {
                for (std::string_view key : {"num_hidden_groups", "inner_group_num"})
                    if (r.has(key)) r.require(key).integer(1, 1); // one group of one layer, as every release
            }
        }
        const char* headsKey = c.family == Family::Gpt2 ? "n_head" : "num_attention_heads";
        if (c.hidden % c.heads != 0)
            r.failAt(headsKey, "expected a divisor of the width " + std::to_string(c.hidden) + ", got " +
                                   std::to_string(c.heads));
        return c;
    } catch (const JsonError& e) {
        throw ModelError(path + ": " + e.what());
    }
}

// ---- the tensors

namespace {

// Every tensor of the family, as visit(name, stored shape, destination, transposed, first column, columns):
// the stored tensor (transposed first when `transposed`, an nn.Linear [out, in]) fills columns
// first .. first + its columns - 1 of the destination, which has `columns` columns; a 1-D tensor is one row.
template <class T, class Visit>
void visitTensors(const ModelConfig& c, const std::string& prefix, Weights<T>& w, Visit&& visit) {
    using Shape = std::vector<std::int64_t>;
    const std::int64_t V = c.vocab, P = c.positions, E = c.embedding, D = c.hidden, F = c.intermediate;
    auto norm = [&](const std::string& name, Norm<T>& n, std::int64_t width) {
        visit(prefix + name + ".weight", Shape{width}, n.gain, false, 0, width);
        visit(prefix + name + ".bias", Shape{width}, n.shift, false, 0, width);
    };
    // An nn.Linear of in -> out ([out, in]) into columns first.. of a, whose maps have `columns` outputs.
    auto linear = [&](const std::string& name, Affine<T>& a, std::int64_t in, std::int64_t out,
                      std::int64_t first, std::int64_t columns) {
        visit(prefix + name + ".weight", Shape{out, in}, a.W, true, first, columns);
        visit(prefix + name + ".bias", Shape{out}, a.b, false, first, columns);
    };
    const int stored = c.sharedLayer() ? 1 : c.layers;
    w.layers.resize(std::size_t(stored));
    if (c.family == Family::Gpt2) {
        // Conv1D: the weight is stored [in, out] already.
        auto conv = [&](const std::string& name, Affine<T>& a, std::int64_t in, std::int64_t out) {
            visit(prefix + name + ".weight", Shape{in, out}, a.W, false, 0, out);
            visit(prefix + name + ".bias", Shape{out}, a.b, false, 0, out);
        };
        visit(prefix + "wte.weight", Shape{V, D}, w.tokens, false, 0, D);
        visit(prefix + "wpe.weight", Shape{P, D}, w.positions, false, 0, D);
        for (int i = 0; i < stored; ++i) {
            const std::string h = "h." + std::to_string(i) + ".";
            Layer<T>& l = w.layers[std::size_t(i)];
            norm(h + "ln_1", l.norm1, D);
            conv(h + "attn.c_attn", l.qkv, D, 3 * D);
            conv(h + "attn.c_proj", l.out, D, D);
            norm(h + "ln_2", l.norm2, D);
            conv(h + "mlp.c_fc", l.up, D, F);
            conv(h + "mlp.c_proj", l.down, F, D);
        }
        norm("ln_f", w.finalNorm, D);
        return;
    }
    visit(prefix + "embeddings.word_embeddings.weight", Shape{V, E}, w.tokens, false, 0, E);
    visit(prefix + "embeddings.position_embeddings.weight", Shape{P, E}, w.positions, false, 0, E);
    visit(prefix + "embeddings.token_type_embeddings.weight", Shape{c.typeVocab, E}, w.tokenTypes, false, 0,
          E);
    norm("embeddings.LayerNorm", w.embeddingNorm, E);
    // A BERT-style layer (BERT's every layer, ALBERT's one shared layer): its tensors' names after `at`.
    struct LayerNames {
        const char *query, *key, *value, *dense, *norm1, *up, *down, *norm2;
    };
    auto layer = [&](const std::string& at, const LayerNames& n, Layer<T>& l) {
        linear(at + n.query, l.qkv, D, D, 0, 3 * D);
        linear(at + n.key, l.qkv, D, D, D, 3 * D);
        linear(at + n.value, l.qkv, D, D, 2 * D, 3 * D);
        linear(at + n.dense, l.out, D, D, 0, D);
        norm(at + n.norm1, l.norm1, D);
        linear(at + n.up, l.up, D, F, 0, F);
        linear(at + n.down, l.down, F, D, 0, D);
        norm(at + n.norm2, l.norm2, D);
    };
    if (c.family == Family::Albert) {
        linear("encoder.embedding_hidden_mapping_in", w.mapIn, E, D, 0, D);
        layer("encoder.albert_layer_groups.0.albert_layers.0.",
              {"attention.query", "attention.key", "attention.value", "attention.dense",
               "attention.LayerNorm", "ffn", "ffn_output", "full_layer_layer_norm"},
              w.layers[0]);
        return;
    }
    for (int i = 0; i < stored; ++i)
        layer("encoder.layer." + std::to_string(i) + ".",
              {"attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense",
               "attention.output.LayerNorm", "intermediate.dense", "output.dense", "output.LayerNorm"},
              w.layers[std::size_t(i)]);
}

std::string shapeText(const std::vector<std::int64_t>& shape) {
    std::string s = "[";
    for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
}

} // namespace

Checkpoint::Checkpoint(const std::string& dir) : dir_(dir) {
    namespace fs = std::filesystem;
    config_ = readModelConfig((fs::path(dir) / "config.json").string());
    const std::string weights = (fs::path(dir) / "model.safetensors").string();
    if (const std::string why = notARegularFile(weights); !why.empty())
        throw ModelError(weights + ": " + why);
    try {
        file_ = MappedSafetensors(weights);
    } catch (const std::runtime_error& e) {
        throw ModelError(e.what());
    }
    const char* prefixes[] = {"transformer.", "albert.", "bert."};
    const char* probe = config_.family == Family::Gpt2 ? "wte.weight" : "embeddings.word_embeddings.weight";
    const std::string wanted = prefixes[int(config_.family)];
    prefix_ = !file_.find(probe) && file_.find(wanted + probe) ? wanted : "";
    // Every tensor present with its shape, before any is read.
    Weights<float> none;
    visitTensors(config_, prefix_, none,
                 [&](const std::string& name, const std::vector<std::int64_t>& shape, RowMat<float>&, bool,
                     std::int64_t, std::int64_t) {
                     const SafetensorsEntry* e = file_.find(name);
                     if (!e) throw ModelError(weights + ": tensor '" + name + "' is missing");
                     if (e->shape != shape)
                         throw ModelError(weights + ": tensor '" + name + "' has shape " +
                                          shapeText(e->shape) + ", expected " + shapeText(shape) +
                                          " (from config.json)");
                 });
}

template <class T> Weights<T> Checkpoint::weights() const {
    // The destinations are sized first (one thread), then the tensors converted on the thread pool.
    struct Job {
        const SafetensorsEntry* entry;
        RowMat<T>* dest;
        bool transposed;
        Eigen::Index first;
    };
    Weights<T> w;
    std::vector<Job> jobs;
    visitTensors(config_, prefix_, w,
                 [&](const std::string& name, const std::vector<std::int64_t>& shape, RowMat<T>& dest,
                     bool transposed, std::int64_t first, std::int64_t columns) {
                     const Eigen::Index rows = shape.size() == 2 ? Eigen::Index(shape[0]) : 1;
                     const Eigen::Index outRows = transposed ? Eigen::Index(shape.back()) : rows;
                     if (dest.rows() != outRows || dest.cols() != columns) dest.resize(outRows, columns);
                     jobs.push_back({file_.find(name), &dest, transposed, Eigen::Index(first)});
                 });
    std::vector<std::string> errors(jobs.size());
    parallelFor(jobs.size(), 1, [&](std::size_t b, std::size_t e) {
        std::vector<T> buffer;
        for (std::size_t j = b; j < e; ++j) {
            const Job& job = jobs[j];
            const Eigen::Index rows = job.entry->shape.size() == 2 ? Eigen::Index(job.entry->shape[0]) : 1;
            const Eigen::Index cols = Eigen::Index(job.entry->shape.back());
            buffer.resize(std::size_t(rows * cols));
            try {
                file_.read(*job.entry, buffer.data());
            } catch (const std::runtime_error& err) {
                errors[j] = err.what();
                continue;
            }
            const Eigen::Map<const RowMat<T>> stored(buffer.data(), rows, cols);
            if (job.transposed)
                job.dest->middleCols(job.first, rows) = stored.transpose();
            else
                job.dest->middleCols(job.first, cols) = stored;
        }
    });
    for (const std::string& e : errors)
        if (!e.empty()) throw ModelError(e);
    return w;
}

template Weights<float> Checkpoint::weights<float>() const;
template Weights<double> Checkpoint::weights<double>() const;

// ---- the forward pass

namespace {

// Rows of n split in one chunk per thread (at least `least` rows each).
std::size_t rowGrain(Eigen::Index n, std::size_t least = 8) {
    const std::size_t threads = std::size_t(std::max(1, threadCount()));
    return std::max(least, (std::size_t(n) + threads - 1) / threads);
}

template <class T> T gelu(T x, Activation a) {
    if (a == Activation::Gelu) return T(0.5) * x * (T(1) + std::erf(x / std::sqrt(T(2))));
    const T c = std::sqrt(T(2) / T(3.14159265358979323846));
    return T(0.5) * x * (T(1) + std::tanh(c * (x + T(0.044715) * x * x * x)));
}

// c = a b for row-major matrices or blocks of them: in float32 the AVX2+FMA kernel where the processor has
// it (engine/core/kernels/Gemm.h), else Eigen's product.
template <class A, class B, class C> void product(const A& a, const B& b, C&& c) {
#if FLOWSCOPE_HAVE_AVX2_KERNEL
    static const bool avx2 = cpuHasAvx2Fma();
    if constexpr (std::is_same_v<typename A::Scalar, float>)
        if (avx2) {
            avx2::gemm(int(a.rows()), int(b.cols()), int(a.cols()), a.data(), long(a.outerStride()), b.data(),
                       long(b.outerStride()), c.data(), long(c.outerStride()));
            return;
        }
#endif
    c.noalias() = a * b;
}

// y = x W + b (then the activation), the rows in parallel chunks.
template <class T>
void affine(const RowMat<T>& x, const Affine<T>& a, RowMat<T>& y, const Activation* activation = nullptr) {
    y.resize(x.rows(), a.W.cols());
    parallelFor(std::size_t(x.rows()), rowGrain(x.rows()), [&](std::size_t b, std::size_t e) {
        const Eigen::Index r = Eigen::Index(b), m = Eigen::Index(e - b);
        auto out = y.middleRows(r, m);
        product(x.middleRows(r, m), a.W, out);
        out.rowwise() += a.b.row(0);
        if (activation) out = out.unaryExpr([&](T v) { return gelu(v, *activation); });
    });
}

// The attention of one layer on its inputs a (n x D): the heads concatenated, then the output map.
template <class T>
void attention(const ModelConfig& c, const Layer<T>& l, const RowMat<T>& a, RowMat<T>& out) {
    RowMat<T> qkv;
    affine(a, l.qkv, qkv);
    const Eigen::Index n = a.rows(), D = c.hidden, dk = c.headWidth();
    RowMat<T> heads(n, D);
    const T scale = T(1) / std::sqrt(T(dk));
    parallelFor(std::size_t(c.heads), 1, [&](std::size_t h0, std::size_t h1) {
        RowMat<T> s(n, n), keys;
        for (std::size_t h = h0; h < h1; ++h) {
            const Eigen::Index col = Eigen::Index(h) * dk;
            keys = qkv.middleCols(D + col, dk).transpose();
            product(qkv.middleCols(col, dk), keys, s);
            for (Eigen::Index i = 0; i < n; ++i) {
                const Eigen::Index keys = c.causal() ? i + 1 : n;
                auto row = s.row(i).head(keys);
                row *= scale;
                const T top = row.maxCoeff();
                row = (row.array() - top).exp();
                row /= row.sum();
                if (keys < n) s.row(i).tail(n - keys).setZero();
            }
            product(s, qkv.middleCols(2 * D + col, dk), heads.middleCols(col, dk));
        }
    });
    affine(heads, l.out, out);
}

} // namespace

template <class T> void layerNorm(RowMat<T>& x, const Norm<T>& norm, double eps) {
    parallelFor(std::size_t(x.rows()), rowGrain(x.rows(), 64), [&](std::size_t b, std::size_t e) {
        for (Eigen::Index i = Eigen::Index(b); i < Eigen::Index(e); ++i) {
            auto row = x.row(i);
            const T mean = row.mean();
            row.array() -= mean;
            const T var = row.squaredNorm() / T(row.size());
            row *= T(1) / std::sqrt(var + T(eps));
            row = row.cwiseProduct(norm.gain) + norm.shift;
        }
    });
}

template <class T> RowMat<T> attentionInput(const ModelConfig& c, const Layer<T>& l, const RowMat<T>& x) {
    RowMat<T> a = x;
    if (c.preNorm()) layerNorm(a, l.norm1, c.eps);
    return a;
}

template <class T>
std::vector<RowMat<T>> hiddenStates(const ModelConfig& c, const Weights<T>& w, const std::vector<int>& ids,
                                    int layers, const LayerProgress& progress) {
    const Eigen::Index n = Eigen::Index(ids.size());
    if (n == 0) throw ModelError("no tokens to run");
    if (n > c.positions)
        throw ModelError(std::to_string(n) + " tokens exceed the model's " + std::to_string(c.positions) +
                         " positions");
    const int most = c.sharedLayer() ? 4096 : c.layers;
    if (layers < 1 || layers > most)
        throw ModelError("--layers: expected an integer in [1, " + std::to_string(most) + "], got " +
                         std::to_string(layers));
    for (std::size_t i = 0; i < ids.size(); ++i)
        if (ids[i] < 0 || ids[i] >= c.vocab)
            throw ModelError("token " + std::to_string(i) + ": id " + std::to_string(ids[i]) +
                             " is outside the vocabulary [0, " + std::to_string(c.vocab) + ")");
    RowMat<T> x(n, c.embedding);
    for (Eigen::Index i = 0; i < n; ++i) {
        x.row(i) = w.tokens.row(ids[std::size_t(i)]) + w.positions.row(i);
        if (c.family != Family::Gpt2) x.row(i) += w.tokenTypes.row(0);
    }
    if (c.family != Family::Gpt2) layerNorm(x, w.embeddingNorm, c.eps);
    if (c.family == Family::Albert) {
        RowMat<T> mapped;
        affine(x, w.mapIn, mapped);
        x = std::move(mapped);
    }
    std::vector<RowMat<T>> states{x};
    RowMat<T> a, up, down;
    for (int k = 0; k < layers; ++k) {
        const Layer<T>& l = w.layers[c.sharedLayer() ? 0 : std::size_t(k)];
        if (c.preNorm()) {
            attention(c, l, attentionInput(c, l, x), a);
            x += a;
            RowMat<T> m = x;
            layerNorm(m, l.norm2, c.eps);
            affine(m, l.up, up, &c.activation);
            affine(up, l.down, down);
            x += down;
        } else {
            attention(c, l, x, a);
            x += a;
            layerNorm(x, l.norm1, c.eps);
            affine(x, l.up, up, &c.activation);
            affine(up, l.down, down);
            x += down;
            layerNorm(x, l.norm2, c.eps);
        }
        states.push_back(x);
        if (progress && !progress(k + 1)) throw ModelCancelled();
    }
    if (c.family == Family::Gpt2) layerNorm(states.back(), w.finalNorm, c.eps);
    return states;
}

template std::vector<RowMat<float>> hiddenStates(const ModelConfig&, const Weights<float>&,
                                                 const std::vector<int>&, int, const LayerProgress&);
template std::vector<RowMat<double>> hiddenStates(const ModelConfig&, const Weights<double>&,
                                                  const std::vector<int>&, int, const LayerProgress&);
template RowMat<float> attentionInput(const ModelConfig&, const Layer<float>&, const RowMat<float>&);
template RowMat<double> attentionInput(const ModelConfig&, const Layer<double>&, const RowMat<double>&);
template void layerNorm(RowMat<float>&, const Norm<float>&, double);
template void layerNorm(RowMat<double>&, const Norm<double>&, double);

} // namespace flowscope::models
