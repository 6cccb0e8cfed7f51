#include "engine/models/ModelAnalysis.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

namespace flowscope::models {

GramHistograms gramHistograms(const std::vector<RowMat<double>>& states, const std::vector<int>& layers,
                              int bins) {
    if (states.empty() || states.front().rows() < 2)
        throw ModelError("the Gram histograms need at least two tokens");
    if (bins < 1) throw ModelError("--bins: expected at least one bin");
    GramHistograms g;
    g.layers = layers;
    const Eigen::Index n = states.front().rows();
    g.pairs = long(n * (n - 1) / 2);
    for (int b = 0; b <= bins; ++b) g.edges.push_back(-1.0 + 2.0 * b / bins);
    auto gram = [&](const RowMat<double>& x) {
        RowMat<double> z = x;
        for (Eigen::Index i = 0; i < n; ++i) {
            const double norm = z.row(i).norm();
            if (norm > 0) z.row(i) /= norm;
        }
        return RowMat<double>(z * z.transpose());
    };
    for (const RowMat<double>& x : states) {
        const RowMat<double> G = gram(x);
        g.meanCosine.push_back((G.sum() - G.trace()) / double(n * (n - 1)));
    }
    for (int layer : layers) {
        if (layer < 0 || layer >= int(states.size()))
            throw ModelError("--layers: layer " + std::to_string(layer) + " is outside 0.." +
                             std::to_string(states.size() - 1) + " (the run's layers)");
        const RowMat<double> G = gram(states[std::size_t(layer)]);
        std::vector<long> counts(std::size_t(bins), 0);
        for (Eigen::Index i = 0; i < n; ++i)
            for (Eigen::Index j = i + 1; j < n; ++j) {
                const double c = std::clamp(G(i, j), -1.0, 1.0);
                ++counts[std::size_t(std::min(bins - 1, int((c + 1.0) / 2.0 * bins)))];
            }
        std::vector<double> density;
        for (long c : counts) density.push_back(double(c) / double(g.pairs) / (2.0 / bins));
        g.counts.push_back(std::move(counts));
        g.density.push_back(std::move(density));
    }
    return g;
}

Scene modelScene(const Checkpoint& checkpoint, const Weights<double>& w,
                 const std::vector<RowMat<double>>& states, int layer, int head) {
    const ModelConfig& c = checkpoint.config();
    const int D = c.hidden, dk = c.headWidth();
    if (D > 1024)
        throw ModelError("the model's width " + std::to_string(D) + " exceeds a scene's d of at most 1024");
    const int deepest = int(states.size()) - 2; // the last state leaves the last layer
    if (layer < 0 || layer > deepest)
        throw ModelError("--layer: expected an integer in [0, " + std::to_string(deepest) + "], got " +
                         std::to_string(layer));
    if (head < 0 || head >= c.heads)
        throw ModelError("--head: expected an integer in [0, " + std::to_string(c.heads - 1) + "], got " +
                         std::to_string(head));
    const Layer<double>& l = w.layers[c.sharedLayer() ? 0 : std::size_t(layer)];
    const Eigen::Index at = Eigen::Index(head) * dk;
    HeadParams h;
    h.Q = l.qkv.W.middleCols(at, dk).transpose();
    h.K = l.qkv.W.middleCols(D + at, dk).transpose();
    h.V = l.out.W.middleRows(at, dk).transpose() * l.qkv.W.middleCols(2 * D + at, dk).transpose();

    Scene s;
    const std::string model = std::filesystem::path(checkpoint.dir()).filename().string();
    s.name = model + " layer " + std::to_string(layer) + " head " + std::to_string(head);
    s.d = D;
    s.precision = Precision::Float64;
    s.attention.type = AttentionType::Softmax;
    s.attention.heads = {h};
    s.attention.scaleByRootK = true;
    s.attention.masked = c.causal();
    RowMat<double> tokens = attentionInput(c, l, states[std::size_t(layer)]);
    if (c.preNorm()) {
        s.description =
            "The attention ODE of " + std::string(toString(c.family)) + " head " + std::to_string(head) +
            " of layer " + std::to_string(layer) +
            " (biases left out), causal, from the head's own inputs ln_1(x) (docs/math/models.md).";
    } else {
        double meanSquare = 0;
        for (Eigen::Index i = 0; i < tokens.rows(); ++i) {
            meanSquare += tokens.row(i).squaredNorm() / double(tokens.rows());
            tokens.row(i).normalize();
        }
        s.attention.sphere = true;
        s.attention.beta = meanSquare;
        s.description =
            "The attention ODE of " + std::string(toString(c.family)) + " head " + std::to_string(head) +
            " of layer " + std::to_string(layer) +
            " (biases left out) on the sphere, from the layer's tokens normalised; beta = their mean "
            "squared norm (docs/math/models.md).";
    }
    s.n = int(tokens.rows());
    s.initial.kind = InitKind::Points;
    s.initial.points = tokens;
    s.integrator.T = 1.0;
    s.integrator.steps = 100;
    s.output.every = 10;
    return s;
}

} // namespace flowscope::models
