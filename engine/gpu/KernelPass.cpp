#include "engine/gpu/KernelPass.h"

#include <cstring>
#include <stdexcept>

namespace flowscope {

StreamKernelInputs streamKernelInputs(const Tokens& X, const HeadSetup& h, bool causal, bool queriesOnGpu,
                                      int tile, bool stageInShared) {
    StreamKernelInputs in;
    const int n = int(X.rows()), d = int(X.cols());
    const bool explicitQueries = h.queries.size() > 0 || !queriesOnGpu;
    in.n = n;
    in.nq = h.queries.size() ? int(h.queries.rows()) : n;
    if (causal && in.nq != n) throw std::invalid_argument("streamPass: causal needs as many queries as keys");
    in.variant = {d, h.weighting, causal, h.bias.size() > 0, explicitQueries, tile, stageInShared};

    in.params.assign(4 + std::size_t(d) * d, 0);
    in.params[0] = std::uint32_t(n);
    in.params[1] = std::uint32_t(in.nq);
    if (!explicitQueries)
        for (int c = 0; c < d; ++c)
            for (int k = 0; k < d; ++k) {
                const float b = float(h.B(c, k));
                std::memcpy(&in.params[4 + std::size_t(c) * d + k], &b, sizeof b);
            }
    if (in.variant.hasBias) in.bias = h.bias.cast<float>();
    if (explicitQueries) in.queries = headQueries(X, h).cast<float>();
    return in;
}

std::unique_ptr<KernelAttention> kernelAverageReference(AttentionSpec spec, int d, const char* backend) {
    switch (spec.type) {
    case AttentionType::Softmax:
    case AttentionType::L2:
    case AttentionType::Exp:
    case AttentionType::Relu:
    case AttentionType::Sigmoid:
        break;
    default:
        throw SceneError("/attention/type", std::string("the ") + backend + " backend does not implement " +
                                                toString(spec.type) +
                                                " attention yet (softmax, l2, exp, relu, sigmoid only)");
    }
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

void assembleKernelVelocity(const AttentionSpec& spec, const KernelAttention& reference, double t,
                            const Tokens& X, Tokens& dX, const StreamPass& pass) {
    const Eigen::Index n = X.rows(), d = X.cols();
    dX.setZero(n, d);
    if (n == 0) return;
    Eigen::MatrixXf out;
    bool first = true;
    for (const HeadParams& head : spec.headsAt(t)) {
        const HeadSetup h = reference.setupHead(head, X);
        pass(h, first, out);
        first = false;
        const Vec den = out.col(d).cast<double>(), mx = out.col(d + 1).cast<double>();
        const Tokens avg = normalizeHeadAverage(out.leftCols(d).cast<double>(), den, mx, h.weighting, n);
        dX.noalias() += h.outScale * avg * h.V.transpose();
    }
}

} // namespace flowscope
