#include "engine/models/ModelAnalysis.h"

#include "engine/dynamics/Observables.h"
#include "engine/dynamics/Simulation.h"

#include <Eigen/Eigenvalues>

#include <algorithm>
#include <cmath>
#include <filesystem>

namespace flowscope::models {

RowMat<double> normalizedRows(const RowMat<double>& x) {
    RowMat<double> z = x;
    for (Eigen::Index i = 0; i < z.rows(); ++i)
        if (const double norm = z.row(i).norm(); norm > 0) z.row(i) /= norm;
    return z;
}

GramHistograms gramHistograms(const std::vector<RowMat<double>>& states, const std::vector<int>& layers,
                              int bins, double clusterTol) {
    if (states.empty() || states.front().rows() < 2)
        throw ModelError("the Gram histograms need at least two tokens");
    if (bins < 1) throw ModelError("--bins: expected at least one bin");
    GramHistograms g;
    g.layers = layers;
    g.clusterTol = clusterTol;
    const Eigen::Index n = states.front().rows();
    g.pairs = long(n * (n - 1) / 2);
    for (int b = 0; b <= bins; ++b) g.edges.push_back(-1.0 + 2.0 * b / bins);
    auto gram = [&](const RowMat<double>& x) {
        const RowMat<double> z = normalizedRows(x);
        return RowMat<double>(z * z.transpose());
    };
    for (const RowMat<double>& x : states) {
        const RowMat<double> G = gram(x);
        g.meanCosine.push_back((G.sum() - G.trace()) / double(n * (n - 1)));
        g.clusters.push_back(countClusters(Tokens(normalizedRows(x)), clusterTol));
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

double DensityAxis::fraction(double density) const {
    if (!(density > 0.0)) return 0.0;
    const double f = log ? (std::log10(density) - std::log10(bottom)) / (std::log10(top) - std::log10(bottom))
                         : density / top;
    return std::clamp(f, 0.0, 1.0);
}

DensityAxis DensityAxis::linear(double top) {
    return {false, 0.0, top > 0.0 ? top : 1.0};
}

DensityAxis DensityAxis::logarithmic(double smallestPositive, double largest) {
    if (!(smallestPositive > 0.0) || !(largest > 0.0)) return {true, 0.1, 1.0};
    // The decade below: 10^(ceil(log10 s) - 1) < s whether or not s is a power of ten.
    return {true, std::pow(10.0, std::ceil(std::log10(smallestPositive)) - 1.0),
            std::pow(10.0, std::ceil(std::log10(largest)))};
}

std::pair<double, double> densityRange(const std::vector<const GramHistograms*>& histograms) {
    double smallest = 0.0, largest = 0.0;
    for (const GramHistograms* g : histograms)
        for (const std::vector<double>& panel : g->density)
            for (const double d : panel) {
                if (d > 0.0 && (smallest == 0.0 || d < smallest)) smallest = d;
                largest = std::max(largest, d);
            }
    return {smallest, largest};
}

PrincipalAxes principalAxes(const std::vector<RowMat<double>>& clouds, int dims) {
    if (clouds.empty() || clouds.front().rows() == 0) throw ModelError("no tokens to project");
    const Eigen::Index D = clouds.front().cols();
    if (dims < 1 || dims > D)
        throw ModelError("the projection's dimension " + std::to_string(dims) + " is outside [1, " +
                         std::to_string(D) + "]");
    PrincipalAxes p;
    p.mean = Eigen::RowVectorXd::Zero(D);
    Eigen::Index rows = 0;
    for (const RowMat<double>& x : clouds) {
        p.mean += x.colwise().sum();
        rows += x.rows();
    }
    p.mean /= double(rows);
    Eigen::MatrixXd cov = Eigen::MatrixXd::Zero(D, D);
    for (const RowMat<double>& x : clouds) {
        const Eigen::MatrixXd c = x.rowwise() - p.mean;
        cov.noalias() += c.transpose() * c;
    }
    const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(Eigen::MatrixXd(cov / double(rows)));
    p.basis.resize(D, dims);
    for (int k = 0; k < dims; ++k) {
        Eigen::VectorXd v = eig.eigenvectors().col(D - 1 - k); // ascending eigenvalues: the largest last
        Eigen::Index at = 0;
        v.cwiseAbs().maxCoeff(&at);
        p.basis.col(k) = v(at) < 0 ? Eigen::VectorXd(-v) : v;
    }
    return p;
}

RowMat<double> PrincipalAxes::project(const RowMat<double>& x) const {
    return RowMat<double>((x.rowwise() - mean) * basis);
}

RowMat<double> sceneTokens(const ModelConfig& c, const Weights<double>& w, int layer,
                           const RowMat<double>& x) {
    RowMat<double> tokens = attentionInput(c, w.layers[c.sharedLayer() ? 0 : std::size_t(layer)], x);
    return c.preNorm() ? tokens : normalizedRows(tokens);
}

Scene modelScene(const Checkpoint& checkpoint, const Weights<double>& w,
                 const std::vector<RowMat<double>>& states, int layer, int head, int from) {
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
    if (from < 0) from = layer;
    if (from >= int(states.size()))
        throw ModelError("the scene's start: state " + std::to_string(from) + " is outside the run's 0.." +
                         std::to_string(states.size() - 1));
    RowMat<double> tokens = attentionInput(c, l, states[std::size_t(from)]);
    const std::string start =
        from == layer ? std::string() : " started from the states of layer " + std::to_string(from);
    if (c.preNorm()) {
        s.description = "The attention ODE of " + std::string(toString(c.family)) + " head " +
                        std::to_string(head) + " of layer " + std::to_string(layer) +
                        " (biases left out), causal, from the head's own inputs ln_1(x)" + start +
                        " (docs/math/models.md).";
    } else {
        // beta from the tokens entering layer `layer` (the scale its scores see), wherever the scene starts.
        const RowMat<double>& entering = states[std::size_t(layer)];
        double meanSquare = 0;
        for (Eigen::Index i = 0; i < entering.rows(); ++i)
            meanSquare += entering.row(i).squaredNorm() / double(entering.rows());
        tokens = normalizedRows(tokens);
        s.attention.sphere = true;
        s.attention.beta = meanSquare;
        s.description =
            "The attention ODE of " + std::string(toString(c.family)) + " head " + std::to_string(head) +
            " of layer " + std::to_string(layer) +
            " (biases left out) on the sphere, from the layer's tokens normalised" + start +
            "; beta = the mean squared norm of the tokens entering the layer (docs/math/models.md).";
    }
    s.n = int(tokens.rows());
    s.initial.kind = InitKind::Points;
    s.initial.points = tokens;
    s.integrator.T = 1.0;
    s.integrator.steps = 100;
    s.output.every = 10;
    return s;
}

int defaultStepsPerLayer(const ModelConfig& config) {
    return config.hidden <= 128 ? 20 : 2;
}

ModelDynamics modelDynamics(const Checkpoint& checkpoint, const Weights<double>& w,
                            const std::vector<RowMat<double>>& states, int layer, int head, int stepsPerLayer,
                            const std::function<bool(double)>& progress) {
    if (stepsPerLayer < 1) throw ModelError("the steps per layer must be at least 1");
    const int L = int(states.size()) - 1;
    ModelDynamics m;
    m.scene = modelScene(checkpoint, w, states, layer, head, 0);
    m.scene.integrator.method = Method::Rk4;
    m.scene.integrator.T = L;
    m.scene.integrator.steps = L * stepsPerLayer;
    m.scene.output.every = stepsPerLayer;
    for (const RowMat<double>& x : states) m.real.push_back(sceneTokens(checkpoint.config(), w, layer, x));
    // The records need the tokens only: no entropy and energy passes (O(n^2 D) each) for a frame here; the
    // scene handed on keeps them.
    Scene quiet = m.scene;
    quiet.output.entropy = false;
    Simulation sim(quiet);
    bool cancelled = false;
    sim.run([&](double f) { return !(cancelled = progress && !progress(f)); });
    if (cancelled) throw ModelCancelled();
    for (const Frame& f : sim.history())
        if (f.step % stepsPerLayer == 0) m.ode.push_back(RowMat<double>(f.tokens));
    const double n = double(states.front().rows());
    for (int k = 0; k <= L; ++k)
        m.distance.push_back(
            k < int(m.ode.size())
                ? std::sqrt((m.ode[std::size_t(k)] - m.real[std::size_t(k)]).squaredNorm() / n)
                : std::nan(""));
    return m;
}

} // namespace flowscope::models
