#include "engine/gpu/common/KernelPass.h"

#include <cstring>
#include <stdexcept>

namespace flowscope {

StreamKernelInputs streamKernelInputs(const StreamPass& p, bool queriesOnGpu, int tile, bool stageInShared) {
    StreamKernelInputs in;
    const int n = int(p.keys.rows()), d = int(p.keys.cols());
    const bool explicitQueries = !(queriesOnGpu && p.queriesFromKeys());
    in.n = n;
    in.nq = int(p.from.rows());
    if (p.causal && in.nq != n)
        throw std::invalid_argument("streamPass: causal needs as many queries as keys");
    const bool exps = p.weighting == Weighting::Softmax || p.weighting == Weighting::Exp;
    in.variant = {d,    p.weighting,   p.causal, p.bias.size() > 0, explicitQueries,
                  tile, stageInShared, p.values, p.entropy && exps};

    in.params.assign(4 + std::size_t(d) * d, 0);
    in.params[0] = std::uint32_t(n);
    in.params[1] = std::uint32_t(in.nq);
    if (!explicitQueries)
        for (int c = 0; c < d; ++c)
            for (int k = 0; k < d; ++k) {
                const float b = float(p.B(c, k));
                std::memcpy(&in.params[4 + std::size_t(c) * d + k], &b, sizeof b);
            }
    in.keys = p.keys.cast<float>();
    if (in.variant.hasBias) in.bias = p.bias.cast<float>();
    if (explicitQueries)
        in.queries = p.B.size() ? Tokens(p.from * p.B.transpose()).cast<float>() : p.from.cast<float>();
    return in;
}

StreamKernelInputs streamKernelInputs(const Tokens& X, const HeadSetup& h, bool causal, bool queriesOnGpu,
                                      int tile, bool stageInShared) {
    return streamKernelInputs(headPass(X, h, causal), queriesOnGpu, tile, stageInShared);
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
    spec.sphere = false;
    std::unique_ptr<VelocityField> f = makeCpuField(spec, d, Precision::Float64);
    auto* k = dynamic_cast<KernelAttention*>(f.get());
    if (!k) throw SceneError("/attention/type", "internal: the CPU field is not a kernel average");
    f.release();
    return std::unique_ptr<KernelAttention>(k);
}

int streamKernelTile(int d, long sharedBytes, long maxInvocations) {
    int tile = 64;
    while (tile > 1 && (long(tile) * (d + 1) * long(sizeof(float)) > sharedBytes || tile > maxInvocations))
        tile /= 2;
    return tile;
}

void KernelPassRunner::run(const StreamPass& p, StreamSums& out) {
    const int d = int(p.keys.cols());
    const int tile = streamKernelTile(d, sharedBytes_, maxInvocations_);
    const StreamKernelInputs in = streamKernelInputs(p, queriesOnGpu_, tile, sharedStaging_);
    Eigen::MatrixXf raw(in.nq, d + (in.variant.entropy ? 3 : 2));
    if (in.nq > 0) dispatch(in, raw);
    out.num = p.values ? Mat(raw.leftCols(d).cast<double>()) : Mat(0, d);
    out.den = raw.col(d).cast<double>();
    out.max = raw.col(d + 1).cast<double>();
    out.ent = in.variant.entropy ? Vec(raw.col(d + 2).cast<double>()) : Vec();
}

} // namespace flowscope
