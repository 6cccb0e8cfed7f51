#include "engine/ottransformer/Transformer.h"

#include "engine/flows/Datasets.h"

#include <cmath>
#include <limits>
#include <stdexcept>

namespace flowscope::ot {

// --- Helpers ---

namespace {

template <class E> struct Names {
    E value;
    const char* name;
};
constexpr Names<Architecture> kArchitectures[] = {{Architecture::OtTransformer, "ot"},
                                                  {Architecture::NodeTransformer, "node"},
                                                  {Architecture::Discrete, "discrete"}};
constexpr Names<Integrator> kIntegrators[] = {{Integrator::Euler, "euler"}, {Integrator::Rk4, "rk4"}};
constexpr Names<KineticConvention> kConventions[] = {{KineticConvention::ElementMean, "element-mean"},
                                                     {KineticConvention::Paper, "paper"}};
constexpr Names<Head> kHeads[] = {{Head::Mean, "mean"}, {Head::PooledLinear, "pooled-linear"}};
constexpr Names<Activation> kActivations[] = {{Activation::Tanh, "tanh"}, {Activation::Relu, "relu"}};

template <class E, std::size_t N> const char* nameOf(const Names<E> (&table)[N], E v) {
    for (const auto& e : table)
        if (e.value == v) return e.name;
    return "?";
}

template <class E, std::size_t N>
E parse(const Names<E> (&table)[N], const std::string& s, const char* what) {
    std::string valid;
    for (const auto& e : table) {
        if (s == e.name) return e.value;
        valid += (valid.empty() ? "" : ", ") + std::string(e.name);
    }
    throw std::invalid_argument(std::string(what) + ": unknown value \"" + s + "\" (valid: " + valid + ")");
}

template <class E, std::size_t N> std::vector<std::string_view> namesIn(const Names<E> (&table)[N]) {
    std::vector<std::string_view> names;
    for (const auto& e : table) names.push_back(e.name);
    return names;
}

void require(bool ok, const char* field, const std::string& what) {
    if (!ok) throw std::invalid_argument(std::string("transformer: ") + field + " " + what);
}

Matrix randomMatrix(Eigen::Index rows, Eigen::Index cols, double stddev, flows::Rng& rng) {
    Matrix m(rows, cols);
    for (Eigen::Index i = 0; i < m.size(); ++i) m(i) = stddev * rng.normal();
    return m;
}

// LayerNorm over the features of each token (a column): (x - mean) / sqrt(var + 1e-5), then gain and bias.
Var layerNorm(Var x, Var gain, Var bias) {
    const double d = double(x.rows());
    const Var mu = ad::scale(ad::colSum(x), 1.0 / d);
    const Var xc = ad::addRow(x, ad::neg(mu));
    const Var var = ad::scale(ad::colSumSquares(xc), 1.0 / d);
    const Var inv = ad::exp(ad::scale(ad::log(ad::addScalar(var, 1e-5)), -0.5));
    return ad::addCol(ad::mulCol(ad::mulRow(xc, inv), gain), bias);
}

// TransformerConfig::routingInit: uniform attention (Q = 0) whose first head reads the copy of the tokens
// (padCopy, else the tokens) and writes it into the free coordinates [r, r + in), r = in (2 in with padCopy);
// the MLP reads only those and writes (at a tenth of its random scale) only the first in coordinates.
void routeTheMean(const TransformerConfig& c, BlockParams& b) {
    const int in = c.inputDim, source = c.padCopy ? in : 0, r = (c.padCopy ? 2 : 1) * in;
    b.Q.setZero();
    b.V.setZero();
    b.V.block(0, source, in, in).setIdentity();
    b.W.setZero();
    b.W.block(r, 0, in, in).setIdentity();
    const Matrix read = b.W1.middleCols(r, in);
    b.W1.setZero();
    b.W1.middleCols(r, in) = read;
    const Matrix write = 0.1 * b.W2.topRows(in);
    b.W2.setZero();
    b.W2.topRows(in) = write;
}

} // namespace

// --- Names of the enums ---

const char* toString(Architecture a) {
    return nameOf(kArchitectures, a);
}
const char* toString(Integrator i) {
    return nameOf(kIntegrators, i);
}
const char* toString(KineticConvention c) {
    return nameOf(kConventions, c);
}
const char* toString(Head h) {
    return nameOf(kHeads, h);
}
const char* toString(Activation a) {
    return nameOf(kActivations, a);
}
Architecture architectureFromString(const std::string& s) {
    return parse(kArchitectures, s, "architecture");
}
Integrator integratorFromString(const std::string& s) {
    return parse(kIntegrators, s, "integrator");
}
KineticConvention conventionFromString(const std::string& s) {
    return parse(kConventions, s, "convention");
}
Head headFromString(const std::string& s) {
    return parse(kHeads, s, "head");
}
Activation activationFromString(const std::string& s) {
    return parse(kActivations, s, "activation");
}
template <> std::vector<std::string_view> namesOf<Architecture>() {
    return namesIn(kArchitectures);
}
template <> std::vector<std::string_view> namesOf<Integrator>() {
    return namesIn(kIntegrators);
}
template <> std::vector<std::string_view> namesOf<KineticConvention>() {
    return namesIn(kConventions);
}
template <> std::vector<std::string_view> namesOf<Head>() {
    return namesIn(kHeads);
}
template <> std::vector<std::string_view> namesOf<Activation>() {
    return namesIn(kActivations);
}

// --- Validation and parameters ---

void validate(const TransformerConfig& c) {
    auto range = [](int v, int lo, int hi) {
        return "must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " +
               std::to_string(v);
    };
    require(c.inputDim >= 1 && c.inputDim <= 1024, "inputDim", range(c.inputDim, 1, 1024));
    require(c.width >= 1 && c.width <= 1024, "width", range(c.width, 1, 1024));
    require(!(c.embed && c.padEmbed), "padEmbed", "and embed exclude each other");
    require(c.embed || c.padEmbed || c.inputDim == c.width, "embed",
            "is off, so inputDim (" + std::to_string(c.inputDim) + ") must equal width (" +
                std::to_string(c.width) + ")");
    require(!c.padEmbed || c.inputDim <= c.width, "padEmbed",
            "needs width (" + std::to_string(c.width) + ") >= inputDim (" + std::to_string(c.inputDim) + ")");
    require(!c.padCopy || (c.padEmbed && c.width >= 2 * c.inputDim), "padCopy",
            "needs padEmbed and width >= 2 inputDim");
    const int routedWidth = (c.padCopy ? 3 : 2) * c.inputDim;
    require(!c.routingInit || (c.padEmbed && c.width >= routedWidth && c.headDim >= c.inputDim &&
                               c.mlpHidden > 0 && c.architecture == Architecture::OtTransformer),
            "routingInit",
            "needs the ot architecture, padEmbed, an MLP, headDim >= inputDim and width >= " +
                std::to_string(routedWidth) + " (" + std::string(c.padCopy ? "3" : "2") + " inputDim)");
    require(c.heads >= 1 && c.heads <= 64, "heads", range(c.heads, 1, 64));
    require(c.headDim >= 1 && c.headDim <= 1024, "headDim", range(c.headDim, 1, 1024));
    require(c.mlpHidden >= 0 && c.mlpHidden <= 4096, "mlpHidden", range(c.mlpHidden, 0, 4096));
    require(c.blocks >= 1 && c.blocks <= 64, "blocks", range(c.blocks, 1, 64));
    require(c.steps >= 1 && c.steps <= 1000, "steps", range(c.steps, 1, 1000));
    require(std::isfinite(c.horizon) && c.horizon > 0, "horizon", "must be finite and > 0");
    require(c.head == Head::Mean || (c.classes >= 2 && c.classes <= 1000), "classes",
            range(c.classes, 2, 1000));
    require(std::isfinite(c.lambdaOt) && c.lambdaOt >= 0, "lambdaOt", "must be finite and >= 0");
}

TransformerParams TransformerParams::init(const TransformerConfig& c) {
    validate(c);
    flows::Rng rng(c.seed);
    const int d = c.width, hk = c.heads * c.headDim;
    TransformerParams p;
    if (c.embed) {
        p.E = randomMatrix(d, c.inputDim, 1.0 / std::sqrt(double(c.inputDim)), rng);
        p.e = Matrix::Zero(d, 1);
    }
    for (int i = 0; i < c.blocks; ++i) {
        BlockParams b;
        const double sd = 1.0 / std::sqrt(double(d));
        b.Q = randomMatrix(hk, d, sd, rng);
        b.K = randomMatrix(hk, d, sd, rng);
        b.V = randomMatrix(hk, d, sd, rng);
        b.W = randomMatrix(d, hk, 1.0 / std::sqrt(double(hk)), rng);
        if (c.mlpHidden > 0) {
            b.W1 = randomMatrix(c.mlpHidden, d, sd, rng);
            b.b1 = Matrix::Zero(c.mlpHidden, 1);
            b.W2 = randomMatrix(d, c.mlpHidden, 1.0 / std::sqrt(double(c.mlpHidden)), rng);
            b.b2 = Matrix::Zero(d, 1);
        }
        if (c.routingInit && i == 0) routeTheMean(c, b);
        if (c.layerNorm) {
            b.ln1g = b.ln2g = Matrix::Ones(d, 1);
            b.ln1b = b.ln2b = Matrix::Zero(d, 1);
        }
        p.blocks.push_back(std::move(b));
    }
    if (c.head == Head::PooledLinear) {
        p.H = randomMatrix(c.classes, d, 1.0 / std::sqrt(double(d)), rng);
        p.h = Matrix::Zero(c.classes, 1);
    }
    return p;
}

TransformerParams TransformerParams::zerosLike() const {
    TransformerParams z = *this;
    z.forEach(z, [](Matrix& v, Matrix&, const std::string&) { v.setZero(); });
    return z;
}

long TransformerParams::count() const {
    long n = 0;
    forEach([&](const Matrix& v, const std::string&) { n += long(v.size()); });
    return n;
}

TransformerModel::TransformerModel(const TransformerConfig& config)
    : config_(config), params_(TransformerParams::init(config)) {}

TransformerModel::TransformerModel(const TransformerConfig& config, TransformerParams params)
    : config_(config), params_(std::move(params)) {
    validate(config_);
    TransformerParams shape = TransformerParams::init(config_);
    if (params_.blocks.size() != shape.blocks.size())
        throw std::invalid_argument("transformer: " + std::to_string(params_.blocks.size()) +
                                    " blocks of parameters for " + std::to_string(shape.blocks.size()) +
                                    " blocks");
    shape.forEach(params_, [](Matrix& s, Matrix& v, const std::string& name) {
        if (v.rows() != s.rows() || v.cols() != s.cols())
            throw std::invalid_argument("transformer: parameter " + name + " is " + std::to_string(v.rows()) +
                                        "x" + std::to_string(v.cols()) + ", the architecture needs " +
                                        std::to_string(s.rows()) + "x" + std::to_string(s.cols()));
    });
}

// --- The model: forward pass and objective ---

Var TransformerModel::block(Tape& t, Var X, int i, int setSize, TransformerParams& grads) const {
    const BlockParams& p = params_.blocks[std::size_t(i)];
    BlockParams& g = grads.blocks[std::size_t(i)];
    const int k = config_.headDim;
    const Var q = ad::matmul(t.parameter(p.Q, g.Q), X);
    const Var kk = ad::matmul(t.parameter(p.K, g.K), X);
    const Var v = ad::matmul(t.parameter(p.V, g.V), X);
    std::vector<Var> heads;
    for (int h = 0; h < config_.heads; ++h)
        heads.push_back(ad::groupAttention(ad::rows(q, h * k, k), ad::rows(kk, h * k, k),
                                           ad::rows(v, h * k, k), setSize, 1.0 / std::sqrt(double(k))));
    const Var a = heads.size() == 1 ? heads[0] : ad::vstack(heads);
    Var u = ad::add(X, ad::matmul(t.parameter(p.W, g.W), a));
    if (config_.layerNorm) u = layerNorm(u, t.parameter(p.ln1g, g.ln1g), t.parameter(p.ln1b, g.ln1b));
    if (config_.mlpHidden == 0) return u;
    Var z = ad::addCol(ad::matmul(t.parameter(p.W1, g.W1), u), t.parameter(p.b1, g.b1));
    z = config_.activation == Activation::Tanh ? ad::tanh(z) : ad::relu(z);
    Var x = ad::add(u, ad::addCol(ad::matmul(t.parameter(p.W2, g.W2), z), t.parameter(p.b2, g.b2)));
    if (config_.layerNorm) x = layerNorm(x, t.parameter(p.ln2g, g.ln2g), t.parameter(p.ln2b, g.ln2b));
    return x;
}

Var TransformerModel::velocity(Tape& t, Var X, int blockIndex, int setSize, TransformerParams& grads) const {
    if (config_.architecture == Architecture::NodeTransformer)
        return ad::sub(block(t, X, blockIndex, setSize, grads), X);
    Var Y = X;
    for (int i = 0; i < config_.blocks; ++i) Y = block(t, Y, i, setSize, grads);
    return config_.incrementVelocity ? ad::sub(Y, X) : Y;
}

Forward TransformerModel::recordForward(Tape& t, const Matrix& tokens, int setSize,
                                        TransformerParams& grads) const {
    if (tokens.rows() != config_.inputDim || setSize <= 0 || tokens.cols() == 0 ||
        tokens.cols() % setSize != 0)
        throw std::invalid_argument("transformer: tokens are " + std::to_string(tokens.rows()) + "x" +
                                    std::to_string(tokens.cols()) + ", need " +
                                    std::to_string(config_.inputDim) + " rows and sets of " +
                                    std::to_string(setSize) + " columns");
    if (grads.blocks.size() != params_.blocks.size()) grads = params_.zerosLike();
    Forward f;
    Var X;
    if (config_.padEmbed) {
        Matrix padded = Matrix::Zero(config_.width, tokens.cols());
        padded.topRows(config_.inputDim) = tokens;
        if (config_.padCopy) padded.middleRows(config_.inputDim, config_.inputDim) = tokens;
        X = t.constant(padded);
    } else {
        X = t.constant(tokens);
    }
    if (config_.embed)
        X = ad::addCol(ad::matmul(t.parameter(params_.E, grads.E), X), t.parameter(params_.e, grads.e));
    f.states.push_back(X);

    const double dt = config_.horizon / config_.steps;
    auto addKinetic = [&](Var term) { f.kinetic = f.kinetic.tape ? ad::add(f.kinetic, term) : term; };
    auto integrate = [&](int blockIndex) {
        for (int m = 0; m < config_.steps; ++m) {
            const Var k1 = velocity(t, X, blockIndex, setSize, grads);
            if (config_.integrator == Integrator::Euler) {
                addKinetic(ad::scale(ad::sumSquares(k1), dt));
                X = ad::add(X, ad::scale(k1, dt));
                f.velocities.push_back(k1);
            } else {
                const Var k2 = velocity(t, ad::add(X, ad::scale(k1, dt / 2)), blockIndex, setSize, grads);
                const Var k3 = velocity(t, ad::add(X, ad::scale(k2, dt / 2)), blockIndex, setSize, grads);
                const Var k4 = velocity(t, ad::add(X, ad::scale(k3, dt)), blockIndex, setSize, grads);
                const Var mean =
                    ad::scale(ad::add(ad::add(k1, k4), ad::scale(ad::add(k2, k3), 2.0)), 1.0 / 6);
                const Var energy = ad::add(ad::add(ad::sumSquares(k1), ad::sumSquares(k4)),
                                           ad::scale(ad::add(ad::sumSquares(k2), ad::sumSquares(k3)), 2.0));
                addKinetic(ad::scale(energy, dt / 6));
                X = ad::add(X, ad::scale(mean, dt));
                f.velocities.push_back(mean);
            }
            f.states.push_back(X);
        }
    };
    switch (config_.architecture) {
    case Architecture::Discrete:
        for (int i = 0; i < config_.blocks; ++i) {
            X = block(t, X, i, setSize, grads);
            f.states.push_back(X);
        }
        break;
    case Architecture::OtTransformer:
        integrate(-1);
        break;
    case Architecture::NodeTransformer:
        for (int i = 0; i < config_.blocks; ++i) integrate(i);
        break;
    }

    Var pooled = ad::groupMean(X, setSize);
    if (config_.head == Head::Mean && config_.outputDim() < config_.width)
        pooled = ad::rows(pooled, 0, config_.outputDim());
    f.output = config_.head == Head::Mean ? pooled
                                          : ad::addCol(ad::matmul(t.parameter(params_.H, grads.H), pooled),
                                                       t.parameter(params_.h, grads.h));
    return f;
}

Batch Batch::slice(int first, int count) const {
    Batch b;
    b.setSize = setSize;
    b.tokens = tokens.middleCols(Eigen::Index(first) * setSize, Eigen::Index(count) * setSize);
    if (targets.size() > 0) b.targets = targets.middleCols(first, count);
    if (!labels.empty()) b.labels.assign(labels.begin() + first, labels.begin() + first + count);
    return b;
}

double TransformerModel::transportFromKinetic(double kinetic, int sets, int setSize) const {
    return config_.convention == KineticConvention::ElementMean
               ? kinetic / (double(sets) * setSize * config_.width)
               : 0.5 * kinetic / sets;
}

Var TransformerModel::recordLoss(Tape& t, const Batch& batch, TransformerParams& grads, LossTerms* terms,
                                 Forward* forward) const {
    Forward f = recordForward(t, batch.tokens, batch.setSize, grads);
    const int B = batch.sets();
    LossTerms lt;
    Var task;
    if (config_.head == Head::Mean) {
        if (batch.targets.rows() != config_.outputDim() || batch.targets.cols() != B)
            throw std::invalid_argument("transformer: targets must be " +
                                        std::to_string(config_.outputDim()) + "x" + std::to_string(B));
        task = ad::scale(ad::sumSquares(ad::sub(f.output, t.constant(batch.targets))), 0.5 / B);
    } else {
        if (int(batch.labels.size()) != B)
            throw std::invalid_argument("transformer: " + std::to_string(batch.labels.size()) +
                                        " labels for " + std::to_string(B) + " sets");
        Matrix onehot = Matrix::Zero(B, config_.classes);
        for (int b = 0; b < B; ++b) {
            const int y = batch.labels[std::size_t(b)];
            if (y < 0 || y >= config_.classes)
                throw std::invalid_argument("transformer: label " + std::to_string(y) + " outside [0, " +
                                            std::to_string(config_.classes) + ")");
            onehot(b, y) = 1.0;
        }
        const Var logits = ad::transpose(f.output); // B x C
        task = ad::scale(
            ad::sub(ad::sum(ad::logSumExpRows(logits)), ad::sum(ad::mul(logits, t.constant(onehot)))),
            1.0 / B);
        const Matrix& L = f.output.value();
        int right = 0;
        for (int b = 0; b < B; ++b) {
            Eigen::Index best = 0;
            L.col(b).maxCoeff(&best);
            right += int(best) == batch.labels[std::size_t(b)];
        }
        lt.accuracy = double(right) / B;
    }
    Var loss = task;
    lt.task = task.scalar();
    if (f.kinetic.tape) {
        const double norm = transportFromKinetic(1.0, B, batch.setSize);
        const Var transport = ad::scale(f.kinetic, norm);
        lt.transport = transport.scalar();
        loss = ad::add(task, ad::scale(transport, config_.lambdaOt));
    }
    lt.loss = loss.scalar();
    if (terms) *terms = lt;
    if (forward) *forward = f;
    return loss;
}

Matrix TransformerModel::output(const Matrix& tokens, int setSize, std::vector<Matrix>* states) const {
    Tape t;
    TransformerParams grads;
    const Forward f = recordForward(t, tokens, setSize, grads);
    if (states) {
        states->clear();
        for (const Var& s : f.states) states->push_back(s.value());
    }
    return f.output.value();
}

double TransformerModel::outputLipschitz(int setSize, bool frobenius) const {
    // ψ_o(X) = H X p with p the pooling vector (1/n) 1: as a map on vec(X) it is H ⊗ pᵀ, whose operator norm
    // is ‖H‖_2 ‖p‖ = ‖H‖_2 / √n and whose Frobenius norm is ‖H‖_F / √n. The mean head has H = I_d (padEmbed:
    // the first inputDim rows of I_d).
    const double pn = 1.0 / std::sqrt(double(setSize));
    if (config_.head == Head::Mean) return pn * (frobenius ? std::sqrt(double(config_.outputDim())) : 1.0);
    if (frobenius) return pn * params_.H.norm();
    Eigen::JacobiSVD<Matrix> svd(params_.H);
    return pn * svd.singularValues()(0);
}

double TransformerModel::paperLambda(int setSize) const {
    return config_.convention == KineticConvention::Paper
               ? config_.lambdaOt
               : 2.0 * config_.lambdaOt / (double(setSize) * config_.width);
}

double TransformerModel::stabilityThreshold(int setSize, bool frobenius) const {
    const double L = outputLipschitz(setSize, frobenius);
    const double paper = config_.horizon * L * L;
    return config_.convention == KineticConvention::Paper ? paper : paper * setSize * config_.width / 2.0;
}

double TransformerModel::lipschitzBound(int setSize, bool frobenius) const {
    const double L = outputLipschitz(setSize, frobenius);
    const double lambda = paperLambda(setSize), ratio = config_.horizon * L * L / lambda;
    if (!(lambda > 0) || ratio >= 1.0) return std::numeric_limits<double>::infinity();
    return L / (1.0 - ratio);
}

// --- Path statistics ---

PathStats pathStats(const std::vector<Matrix>& states, int setSize) {
    PathStats s;
    if (states.size() < 2 || setSize <= 0) return s;
    const Eigen::Index sets = states.front().cols() / setSize;
    const int steps = int(states.size()) - 1;
    double straight = 0, cv = 0;
    for (Eigen::Index b = 0; b < sets; ++b) {
        auto block = [&](int m) { return states[std::size_t(m)].middleCols(b * setSize, setSize); };
        double path = 0, sum = 0, sum2 = 0;
        for (int m = 0; m < steps; ++m) {
            const double len = (block(m + 1) - block(m)).norm();
            path += len;
            sum += len;
            sum2 += len * len;
        }
        const double disp = (block(steps) - block(0)).norm();
        straight += path > 0 ? disp / path : 1.0;
        const double mean = sum / steps, var = std::max(0.0, sum2 / steps - mean * mean);
        cv += mean > 0 ? std::sqrt(var) / mean : 0.0;
    }
    s.straightness = straight / double(sets);
    s.speedCv = cv / double(sets);
    return s;
}

} // namespace flowscope::ot
