#include "engine/gpu/common/KernelPass.h"

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace flowscope {

StreamKernelInputs streamKernelInputs(const StreamPass& p, bool queriesOnGpu,
                                      const StreamKernelLayout& layout, bool quadraticBiasOnGpu) {
    StreamKernelInputs in;
    const int n = int(p.keys.rows()), d = int(p.keys.cols());
    const bool explicitQueries = !(queriesOnGpu && p.queriesFromKeys());
    const bool quadraticBias = quadraticBiasOnGpu && p.quadraticBias && p.quadraticBias->size();
    in.n = n;
    in.nq = int(p.from.rows());
    if (p.causal && in.nq != n)
        throw std::invalid_argument("streamPass: causal needs as many queries as keys");
    const bool exps = p.weighting == Weighting::Softmax || p.weighting == Weighting::Exp;
    if (p.positionSlope != 0.0 && (in.nq != n || !(p.positionSlope > 0.0) || !exps))
        throw std::invalid_argument(
            "streamPass: a positional decay needs as many queries as keys, a positive "
            "slope and softmax or exp weights");
    const bool hasBias = p.bias.size() > 0 && !quadraticBias; // uploaded biases
    in.variant = {d,           p.weighting,          p.causal, hasBias,           explicitQueries,
                  layout.tile, layout.stageInShared, p.values, p.entropy && exps, layout.qpt};
    in.variant.unroll = layout.unroll;
    in.variant.quadraticBias = quadraticBias;
    in.variant.positionalDecay = p.positionSlope != 0.0;
    // A softmax average num / den needs no exact max, so its scores may be formed in log2 units (not with key
    // biases: l2's scores are differences of large terms, whose extra rounding was not measured on a GPU);
    // the tile bound leaves a reference in place of the max, which m + log den and e^m num also take.
    const bool softmax = p.weighting == Weighting::Softmax;
    in.variant.log2Scores =
        layout.log2Scores && softmax && p.values && !p.entropy && !p.readsMax && !hasBias && !quadraticBias;
    in.variant.tileBound = layout.tileBound && softmax && layout.stageInShared && !hasBias && !quadraticBias;

    const std::size_t d2 = std::size_t(d) * d;
    in.params.assign(4 + (quadraticBias ? 2 : 1) * d2, 0);
    in.params[0] = std::uint32_t(n);
    in.params[1] = std::uint32_t(in.nq);
    in.params[2] = std::bit_cast<std::uint32_t>(float(p.positionSlope));
    // Row-major d x d float bits from word `at`: B, then M (QUAD_BIAS).
    const auto put = [&](const Mat& A, std::size_t at) {
        for (int r = 0; r < d; ++r)
            for (int c = 0; c < d; ++c) {
                const float v = float(A(r, c));
                std::memcpy(&in.params[at + std::size_t(r) * d + c], &v, sizeof v);
            }
    };
    if (!explicitQueries) put(p.B, 4);
    if (quadraticBias) put(*p.quadraticBias, 4 + d2);
    in.keys = p.keys.cast<float>();
    if (in.variant.hasBias) in.bias = p.bias.cast<float>();
    if (explicitQueries)
        in.queries = p.B.size() ? Tokens(p.from * p.B.transpose()).cast<float>() : p.from.cast<float>();
    return in;
}

StreamKernelInputs streamKernelInputs(const Tokens& X, const HeadSetup& h, bool causal, bool queriesOnGpu,
                                      const StreamKernelLayout& layout, bool quadraticBiasOnGpu) {
    return streamKernelInputs(headPass(X, h, causal), queriesOnGpu, layout, quadraticBiasOnGpu);
}

std::vector<KernelConstant> kernelConstants(const StreamKernelVariant& v) {
    return {{"DIM", std::uint32_t(v.dim)},
            {"WEIGHTING", std::uint32_t(v.weighting)},
            {"CAUSAL", v.causal},
            {"HAS_BIAS", v.hasBias},
            {"EXPLICIT_QUERIES", v.explicitQueries},
            {"TILE", std::uint32_t(v.tile)},
            {"STAGE_IN_SHARED", v.stageInShared},
            {"VALUES", v.values},
            {"ENTROPY", v.entropy},
            {"QPT", std::uint32_t(v.qpt)},
            {"UNROLL", std::uint32_t(v.unroll)},
            {"QUAD_BIAS", v.quadraticBias},
            {"POS_DECAY", v.positionalDecay},
            {"LOG2_SCORES", v.log2Scores},
            {"TILE_BOUND", v.tileBound}};
}

long streamKernelGroups(const StreamKernelVariant& v, long nq) {
    const long perGroup = long(v.tile) * v.qpt;
    return (nq + perGroup - 1) / perGroup;
}

std::string dispatchRefusal(const StreamKernelVariant& v, long nq, long maxGroups) {
    if (streamKernelGroups(v, nq) <= maxGroups) return {};
    return "too many tokens for one dispatch (" + std::to_string(nq) + " queries, at most " +
           std::to_string(maxGroups * v.tile * v.qpt) + ")";
}

std::optional<SceneError> kernelAverageRefusal(AttentionType type, const char* backend) {
    switch (type) {
    case AttentionType::Softmax:
    case AttentionType::L2:
    case AttentionType::Exp:
    case AttentionType::Relu:
    case AttentionType::Sigmoid:
        return std::nullopt;
    default:
        return SceneError("/attention/type", std::string("the ") + backend + " backend does not implement " +
                                                 toString(type) +
                                                 " attention yet (softmax, l2, exp, relu, sigmoid only)");
    }
}

std::unique_ptr<KernelAttention> kernelAverageReference(AttentionSpec spec, int d, const char* backend) {
    if (std::optional<SceneError> refused = kernelAverageRefusal(spec.type, backend)) throw *refused;
    spec.sphere = false; // the plain field: no scheme's wrapper
    spec.normalization = Normalization::None;
    std::unique_ptr<VelocityField> f = makeCpuField(spec, d, Precision::Float64);
    auto* k = dynamic_cast<KernelAttention*>(f.get());
    if (!k) throw SceneError("/attention/type", "internal: the CPU field is not a kernel average");
    f.release();
    return std::unique_ptr<KernelAttention>(k);
}

namespace {

// A positive integer from the environment, or 0.
int environmentKnob(const char* name) {
    const char* v = std::getenv(name);
    return v ? std::max(0, std::atoi(v)) : 0;
}

// A switch from the environment ("0" off, "1" on), or `otherwise` when it is unset or neither.
bool environmentSwitch(const char* name, bool otherwise) {
    const char* v = std::getenv(name);
    if (v && std::strcmp(v, "0") == 0) return false;
    if (v && std::strcmp(v, "1") == 0) return true;
    return otherwise;
}

// The tuning overrides (docs/gpu.md#tuning), read once per process: every pass asks for a layout.
struct LayoutOverrides {
    int tile = environmentKnob("FLOWSCOPE_STREAM_TILE");
    int qpt = environmentKnob("FLOWSCOPE_STREAM_QPT");
    int unroll = environmentKnob("FLOWSCOPE_STREAM_UNROLL");
    bool log2Scores = environmentSwitch("FLOWSCOPE_STREAM_LOG2", true);
    bool tileBound = environmentSwitch("FLOWSCOPE_STREAM_BOUND", true);
};

const LayoutOverrides& layoutOverrides() {
    static const LayoutOverrides overrides;
    return overrides;
}

} // namespace

StreamKernelLayout streamKernelLayout(int d, long nq, long sharedBytes, long maxInvocations,
                                      bool stageInShared, int qpt) {
    StreamKernelLayout l;
    l.stageInShared = stageInShared;
    const long chunkBytes = 16L * ((d + 4) / 4);
    const LayoutOverrides& overrides = layoutOverrides();
    // TILE 64: 128 was 3-5% faster on an H200, but its tile sums of 128 weights doubled the rounding of the
    // blocked sums, and l2 at d = 1 then missed the float32 criterion there (docs/gpu.md#tuning).
    const int tileOverride = overrides.tile;
    l.tile = tileOverride > 0 && std::has_single_bit(unsigned(tileOverride)) ? tileOverride : 64;
    // The staged tile and the tile bound's two words (stream_kernel.comp's tileNorm, 16 bytes with padding).
    while (l.tile > 1 && (l.tile * chunkBytes > sharedBytes - 16 || l.tile > maxInvocations)) l.tile /= 2;
    const int qptOverride = overrides.qpt;
    if (qptOverride) qpt = qptOverride;
    if (qpt == 1 || qpt == 2 || qpt == 4)
        l.qpt = qpt;
    else if (!stageInShared || nq < (1L << 18))
        l.qpt = 1;
    else
        l.qpt = nq < (1L << 20) ? 2 : 4;
    const int unroll = overrides.unroll;
    if (unroll == 1 || unroll == 2 || unroll == 4 || unroll == 8)
        l.unroll = unroll;
    else
        l.unroll = stageInShared ? 8 : 4;
    l.log2Scores = overrides.log2Scores;
    l.tileBound = overrides.tileBound;
    return l;
}

std::optional<SceneError> cpuDeviceRefusal(long n, const std::string& device) {
    if (n <= kCpuDeviceMaxKeys) return std::nullopt;
    return SceneError("/n",
                      std::to_string(n) + " tokens: " + device +
                          " (a CPU driver) stops every shader loop after 65535 iterations, so its passes "
                          "take at most " +
                          std::to_string(kCpuDeviceMaxKeys) + " tokens; use the CPU backend");
}

void KernelPassRunner::run(const StreamPass& p, StreamSums& out) {
    if (cpuDevice_)
        if (auto refused = cpuDeviceRefusal(long(p.keys.rows()), "this device")) throw *refused;
    const int d = int(p.keys.cols());
    const StreamKernelInputs in =
        streamKernelInputs(p, queriesOnGpu_, layout(d, p.from.rows()), quadraticBiasOnGpu_);
    Eigen::MatrixXf raw(in.nq, d + (in.variant.entropy ? 3 : 2));
    if (in.nq > 0) dispatch(in, raw);
    out.num = p.values ? Mat(raw.leftCols(d).cast<double>()) : Mat(0, d);
    out.den = raw.col(d).cast<double>();
    out.max = raw.col(d + 1).cast<double>();
    out.ent = in.variant.entropy ? Vec(raw.col(d + 2).cast<double>()) : Vec();
}

} // namespace flowscope
