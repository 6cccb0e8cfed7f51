#include "engine/flows/Flow.h"

#include <cmath>
#include <numbers>
#include <stdexcept>
#include <string>

namespace flowscope::flows {

// --- Parameters ---

double softplus(double u) {
    return std::max(u, 0.0) + std::log1p(std::exp(-std::abs(u)));
}

double softplusInverse(double y) {
    if (!(y > 0.0)) throw std::invalid_argument("softplusInverse: needs y > 0, got " + std::to_string(y));
    return y > 30.0 ? y : std::log(std::expm1(y));
}

template <class S> FlowParams<S> FlowParams<S>::init(const FlowConfig& c) {
    if (c.layers < 1) throw std::invalid_argument("flow: layers must be >= 1");
    if (!(c.T > 0.0)) throw std::invalid_argument("flow: T must be > 0");
    if (!(c.lambda0 > 0.0) || !(c.beta0 > 0.0))
        throw std::invalid_argument("flow: the initial lambda and beta must be > 0");
    FlowParams p;
    p.phi = PotentialParams<S>::init(c.d, c.width, c.depth, c.seed);
    p.lambdaRaw(0, 0) = S(softplusInverse(c.lambda0));
    p.betaRaw(0, 0) = S(softplusInverse(c.beta0));
    return p;
}

template <class S> FlowParams<S> FlowParams<S>::zerosLike() const {
    FlowParams z;
    z.phi = phi.zerosLike();
    return z;
}

template <class S>
Bound<S> bindFlow(ad::Tape<S>& tape, const FlowConfig& c, const FlowParams<S>& p,
                  FlowParams<ad::Scalar<S>>* grads) {
    Bound<S> b;
    b.phi = grads ? bind(tape, p.phi, grads->phi) : bindConstant(tape, p.phi);
    auto positive = [&](const ad::Matrix<S>& raw, ad::Matrix<S>* grad, bool train) {
        if (grads && train) {
            if (grad->rows() != 1 || grad->cols() != 1) *grad = ad::Matrix<S>::Zero(1, 1);
            return ad::softplus(tape.parameter(raw, *grad));
        }
        return tape.constant(ad::Matrix<S>::Constant(1, 1, S(softplus(double(raw(0, 0))))));
    };
    b.lambda = positive(p.lambdaRaw, grads ? &grads->lambdaRaw : nullptr, c.trainLambda);
    b.beta = positive(p.betaRaw, grads ? &grads->betaRaw : nullptr, c.trainBeta);
    return b;
}

// --- The layers: time input, RWPO options, potential ---

template <class S> ad::Var<S> withTime(ad::Tape<S>& tape, ad::Var<S> X, double t) {
    return ad::vstack({X, tape.constant(ad::Matrix<S>::Constant(1, X.cols(), S(t)))});
}

RwpoOptions layerOptions(const FlowConfig& c, bool besideKeys) {
    RwpoOptions o = c.rwpoOptions;
    o.h = c.h();
    o.leaveOneOut = o.leaveOneOut && !besideKeys;
    // A trained λ needs the active set's boundary term (docs/math/flows.md#active-set-gradient).
    o.activeSetGradient = o.activeSetGradient || (c.rwpo && c.trainLambda && c.lambdaBoundaryTerm);
    return o;
}

template <class S>
void addRegularizers(ad::Tape<S>& tape, const FlowConfig& c, ad::Var<S> lambdaH, ad::Var<S> invBeta,
                     ad::Var<S> X, ad::Var<S> gradX, ad::Var<S> dphidt, ad::Var<S> lap, double n,
                     ad::Var<S>& transport, ad::Var<S>& hjb) {
    const double h = c.h();
    ad::Var<S> drift = gradX;
    ad::Var<S> residual;
    if (c.rwpo) {
        const ad::Var<S> gradPsi = ad::scale(ad::sub(X, ad::softThreshold(X, lambdaH)), S(1.0 / h));
        drift = ad::sub(gradX, gradPsi);
        const double thr = double(lambdaH.scalar());
        ad::Matrix<S> lapPsi(1, X.cols());
        for (Eigen::Index j = 0; j < X.cols(); ++j)
            lapPsi(0, j) = S((X.value().col(j).array().abs() <= S(thr)).count() / h);
        const ad::Var<S> viscous = ad::scale(ad::sub(lap, tape.constant(lapPsi)), invBeta);
        residual = ad::add(ad::add(dphidt, ad::scale(ad::colSumSquares(drift), S(0.5))), viscous);
    } else {
        residual = ad::add(dphidt, ad::scale(ad::colSumSquares(drift), S(0.5)));
    }
    transport = ad::add(transport, ad::scale(ad::sum(ad::colSumSquares(drift)), S(h / (2.0 * n))));
    hjb = ad::add(hjb, ad::scale(ad::sum(ad::square(residual)), S(h / n)));
}

template <class S> ad::Var<S> driftLogDet(const PotentialOutputs<S>& phi, int d, double h) {
    const std::vector<ad::Var<S>>& H = phi.hessian;
    if (d == 1) return foldGuardedLog(ad::addScalar(ad::scale(H[0], S(-h)), S(1)));
    if (d == 2) {
        const ad::Var<S> det = ad::sub(ad::mul(H[0], H[2]), ad::square(H[1]));
        return foldGuardedLog(
            ad::addScalar(ad::add(ad::scale(phi.lap, S(-h)), ad::scale(det, S(h * h))), S(1)));
    }
    if (d != 3) throw std::invalid_argument("flow: the exact drift log-det needs d <= 3");
    // det(I - hH) = 1 - h tr H + h² (sum of the principal 2x2 minors) - h³ det H.
    const auto at = [&](int a, int b) {
        return H[std::size_t(hessianIndex(std::min(a, b), std::max(a, b), 3))];
    };
    const auto minor = [&](int a, int b) {
        return ad::sub(ad::mul(at(a, a), at(b, b)), ad::square(at(a, b)));
    };
    const ad::Var<S> minors = ad::add(ad::add(minor(0, 1), minor(0, 2)), minor(1, 2));
    const ad::Var<S> det3 =
        ad::add(ad::sub(ad::mul(at(0, 0), minor(1, 2)),
                        ad::mul(at(0, 1), ad::sub(ad::mul(at(0, 1), at(2, 2)), ad::mul(at(1, 2), at(0, 2))))),
                ad::mul(at(0, 2), ad::sub(ad::mul(at(0, 1), at(1, 2)), ad::mul(at(1, 1), at(0, 2)))));
    const ad::Var<S> poly = ad::add(ad::add(ad::scale(phi.lap, S(-h)), ad::scale(minors, S(h * h))),
                                    ad::scale(det3, S(-h * h * h)));
    return foldGuardedLog(ad::addScalar(poly, S(1)));
}

namespace {

// Layer k of the training map (23), x^k -> x^{k-1}, with its log-density increment (24) added to logDet:
// the RWPO sub-step with its generation sign, then the drift backwards along ∇φ(·, t_{k-1}). Returns the
// drift's evaluation point x^{k-1/2} and φ's outputs there (the loss's regularizers need them). The RWPO
// sub-step's keys: X itself, separate `keys` (frozen: a reference batch), or, with `split`, the whole
// batch's x^k gathered from every part, among which X's own are.
template <class S> struct TrainingLayer { ad::Var<S> half, gradX, dphidt, lap; };

template <class S>
TrainingLayer<S> recordTrainingLayer(ad::Tape<S>& tape, const FlowConfig& c, const Bound<S>& p, int k,
                                     ad::Var<S>& X, ad::Var<S>& logDet, ad::Var<S> keys = {},
                                     BatchSplit<S>* split = nullptr, int part = 0) {
    if (c.rwpo) {
        Eigen::Index at = -1;
        if (split) keys = split->gather(part, X, at);
        const RwpoOutputs<S> r =
            recordRwpo(tape, X, p.lambda, p.beta, layerOptions(c, keys.tape != nullptr && !split), keys, at);
        X = r.y;
        logDet = ad::add(logDet, r.logDetTerm);
    }
    const double h = c.h();
    const PotentialOutputs<S> phi =
        recordPotential(tape, p.phi, withTime(tape, X, (k - 1) * h), c.exactDriftLogDet, false);
    const TrainingLayer<S> layer{X, ad::rows(phi.grad, 0, c.d), ad::rows(phi.grad, c.d, 1), phi.lap};
    X = ad::sub(X, ad::scale(layer.gradX, S(h)));
    logDet = ad::add(logDet, c.exactDriftLogDet ? driftLogDet(phi, c.d, h) : ad::scale(phi.lap, S(-h)));
    return layer;
}

// --- Log-density and the sampler's fixed point ---

// log ρ_T(x^M) = log N(x^0; 0, I) + the accumulated log-dets.
template <class S> ad::Var<S> recordLogDensity(ad::Var<S> x0, ad::Var<S> logDet, int d) {
    const ad::Var<S> logBase = ad::addScalar(ad::scale(ad::colSumSquares(x0), S(-0.5)),
                                             S(-0.5 * d * std::log(2.0 * std::numbers::pi)));
    return ad::add(logBase, logDet);
}

template <class S> void checkData(const FlowConfig& c, const ad::Matrix<S>& X, const char* what) {
    if (X.rows() != c.d || X.cols() < 1)
        throw std::invalid_argument(std::string("flow: ") + what +
                                    " must be d x N with d = " + std::to_string(c.d) + " and N >= 1, got " +
                                    std::to_string(X.rows()) + " x " + std::to_string(X.cols()));
}

struct FixedPointResult {
    double change = 0; // max |next(P) - P| at the last iterate (infinity for NaN)
    int iterations = 0;
};

// Solves P = g(P) in place by Anderson acceleration (type II, memory kAndersonMemory): with the residuals
// f_i = g(P_i) - P_i of the last iterates, P <- g(P) - ΔG γ, γ = argmin |f - ΔF γ| (ΔF, ΔG the differences
// of successive residuals and images). A plain fixed-point iteration converges at the contraction ratio of
// g, which the RWPO sub-step's inverse pushes to 0.9 and beyond; this needs a fraction of the iterations.
// The history restarts when a step makes the residual grow tenfold.
template <class S, class G>
FixedPointResult solveFixedPoint(ad::Matrix<S>& P, G&& g, double tol, int maxIterations) {
    constexpr int kAndersonMemory = 5;
    using Vector = Eigen::Matrix<double, Eigen::Dynamic, 1>;
    std::vector<Vector> dF, dG;
    Vector fPrev, gPrev;
    FixedPointResult r;
    double best = INFINITY;
    while (r.iterations < maxIterations) {
        const ad::Matrix<S> image = g(P);
        const Vector gv = Eigen::Map<const Eigen::Matrix<S, Eigen::Dynamic, 1>>(image.data(), image.size())
                              .template cast<double>();
        const Vector pv =
            Eigen::Map<const Eigen::Matrix<S, Eigen::Dynamic, 1>>(P.data(), P.size()).template cast<double>();
        const Vector f = gv - pv;
        ++r.iterations;
        r.change = f.allFinite() ? f.cwiseAbs().maxCoeff() : INFINITY;
        if (!(r.change > tol) || !std::isfinite(r.change)) {
            P = image;
            break;
        }
        if (r.change > 10 * best) { // diverging: forget the history
            dF.clear();
            dG.clear();
        } else if (fPrev.size() > 0) {
            dF.push_back(f - fPrev);
            dG.push_back(gv - gPrev);
            if (int(dF.size()) > kAndersonMemory) {
                dF.erase(dF.begin());
                dG.erase(dG.begin());
            }
        }
        best = std::min(best, r.change);
        fPrev = f;
        gPrev = gv;
        Vector next = gv;
        if (!dF.empty()) {
            const int m = int(dF.size());
            Eigen::MatrixXd A(f.size(), m), B(f.size(), m);
            for (int i = 0; i < m; ++i) {
                A.col(i) = dF[i];
                B.col(i) = dG[i];
            }
            Eigen::MatrixXd normal = A.transpose() * A;
            normal.diagonal().array() += 1e-12 * (normal.diagonal().maxCoeff() + 1e-300);
            const Vector gamma = normal.ldlt().solve(A.transpose() * f);
            if (gamma.allFinite()) next -= B * gamma;
        }
        P = Eigen::Map<const Vector>(next.data(), next.size())
                .template cast<S>()
                .reshaped(P.rows(), P.cols());
    }
    return r;
}

} // namespace

// --- FlowModel: reference and loss ---

template <class S> FlowModel<S>::FlowModel(const FlowConfig& config) : config_(config) {
    config_.hjbWeight = config_.hjb();
    params_ = FlowParams<S>::init(config_);
}

template <class S> void FlowModel<S>::setReference(Matrix reference, int draws) {
    if (reference.size() > 0) {
        checkData<S>(config_, reference, "the reference batch");
        if (draws < 1 || reference.cols() % draws != 0 || reference.cols() / draws < 2)
            throw std::invalid_argument("flow: the reference must be draws blocks of n >= 2 points, got " +
                                        std::to_string(reference.cols()) + " points in " +
                                        std::to_string(draws) + " draws");
        if (!reference.allFinite()) throw std::invalid_argument("flow: the reference batch must be finite");
    } else if (draws != 1) {
        throw std::invalid_argument("flow: an empty reference has 1 draw");
    }
    reference_ = std::move(reference);
    referenceDraws_ = draws;
}

template <class S> typename FlowModel<S>::Matrix FlowModel<S>::referenceDraw(int r) const {
    if (r < 0 || r >= referenceDraws_) throw std::out_of_range("flow: no such reference draw");
    const Eigen::Index n = reference_.cols() / referenceDraws_;
    return reference_.middleCols(r * n, n);
}

namespace {

// The columns j of A with j mod R = r, side by side, and back.
template <class S> ad::Matrix<S> everyRth(const ad::Matrix<S>& A, int R, int r) {
    ad::Matrix<S> out(A.rows(), (A.cols() - r + R - 1) / R);
    for (Eigen::Index j = r, i = 0; j < A.cols(); j += R, ++i) out.col(i) = A.col(j);
    return out;
}
template <class S> void scatterEveryRth(const ad::Matrix<S>& part, int R, int r, ad::Matrix<S>& A) {
    for (Eigen::Index j = r, i = 0; j < A.cols(); j += R, ++i) A.col(j) = part.col(i);
}

} // namespace

template <class S>
std::vector<typename FlowModel<S>::Matrix> FlowModel<S>::keysByLayer(const Matrix& reference) const {
    const FlowConfig& c = config_;
    std::vector<Matrix> keys(std::size_t(c.layers) + 1);
    Matrix R = reference;
    ad::Tape<S> tape;
    for (int k = c.layers; k >= 1; --k) {
        keys[std::size_t(k)] = R;
        tape.clear();
        const Bound<S> p = bindFlow<S>(tape, c, params_, nullptr);
        ad::Var<S> r = tape.constant(R), unused = tape.constant(Matrix::Zero(1, R.cols()));
        recordTrainingLayer(tape, c, p, k, r, unused);
        R = r.value();
    }
    return keys;
}

template <class S>
ad::Var<S> FlowModel<S>::recordLoss(ad::Tape<S>& tape, const Matrix& data, FlowParams<S>& grads,
                                    LossTerms* terms, BatchSplit<S>* split, int part) const {
    checkData<S>(config_, data, "the data batch");
    const FlowConfig& c = config_;
    const double h = c.h();
    const double n = double(split ? split->batch() : data.cols()); // the means' denominator
    const Bound<S> p = bindFlow(tape, c, params_, &grads);
    const ad::Var<S> lambdaH = ad::scale(p.lambda, S(h));
    const ad::Var<S> invBeta = ad::div(tape.constant(ad::Matrix<S>::Ones(1, 1)), p.beta);

    ad::Var<S> X = tape.constant(data); // x^M
    ad::Var<S> logDet = tape.constant(ad::Matrix<S>::Zero(1, data.cols()));
    ad::Var<S> transport = tape.constant(ad::Matrix<S>::Zero(1, 1));
    ad::Var<S> hjb = tape.constant(ad::Matrix<S>::Zero(1, 1));
    for (int k = c.layers; k >= 1; --k) {
        const TrainingLayer<S> l = recordTrainingLayer(tape, c, p, k, X, logDet, {}, split, part);
        // at x^{k-1/2} and t_{k-1}
        addRegularizers(tape, c, lambdaH, invBeta, l.half, l.gradX, l.dphidt, l.lap, n, transport, hjb);
    }
    const ad::Var<S> nll = ad::scale(ad::sum(recordLogDensity(X, logDet, c.d)), S(-1.0 / n));
    const ad::Var<S> loss =
        ad::add(ad::add(nll, ad::scale(transport, S(c.transportWeight))), ad::scale(hjb, S(c.hjb())));
    if (terms) {
        terms->loss = double(loss.scalar());
        terms->nll = double(nll.scalar());
        terms->transport = double(transport.scalar());
        terms->hjb = double(hjb.scalar());
    }
    return loss;
}

template <class S> LossTerms FlowModel<S>::lossAndGradient(const Matrix& data, FlowParams<S>& grads) const {
    grads = params_.zerosLike();
    ad::Tape<S> tape;
    LossTerms terms;
    const ad::Var<S> loss = recordLoss(tape, data, grads, &terms);
    tape.backward(loss);
    return terms;
}

// --- Generating ---

template <class S>
typename FlowModel<S>::Matrix FlowModel<S>::generate(const Matrix& Z, std::vector<Matrix>* trajectory,
                                                     SamplerDiagnostics* diagnostics,
                                                     const Matrix* keys) const {
    checkData<S>(config_, Z, "the base samples");
    return generate(Z, trajectory, diagnostics, frozenKeys(keys));
}

template <class S>
typename FlowModel<S>::Matrix FlowModel<S>::generate(const Matrix& Z, std::vector<Matrix>* trajectory,
                                                     SamplerDiagnostics* diagnostics,
                                                     const FrozenKeys& keys) const {
    checkData<S>(config_, Z, "the base samples");
    const int R = int(keys.draws.size());
    if (R <= 1)
        return generateBeside(Z, trajectory, diagnostics, R == 1 ? keys.draws[0] : std::vector<Matrix>());
    // The mixture: sample j inverts draw j mod R's map.
    Matrix X(Z.rows(), Z.cols());
    if (trajectory) trajectory->assign(std::size_t(config_.layers) + 1, X);
    if (diagnostics) *diagnostics = {};
    for (int r = 0; r < R && r < Z.cols(); ++r) {
        const Matrix Zr = everyRth(Z, R, r);
        std::vector<Matrix> path;
        SamplerDiagnostics di;
        scatterEveryRth(generateBeside(Zr, trajectory ? &path : nullptr, &di, keys.draws[std::size_t(r)]), R,
                        r, X);
        if (trajectory)
            for (std::size_t k = 0; k < path.size(); ++k) scatterEveryRth(path[k], R, r, (*trajectory)[k]);
        if (!diagnostics) continue;
        diagnostics->residual = std::max(diagnostics->residual, di.residual);
        diagnostics->iterations = std::max(diagnostics->iterations, di.iterations);
        diagnostics->folding.resize(di.folding.size(), {INFINITY, 0});
        for (std::size_t k = 0; k < di.folding.size(); ++k) { // min det; folded fraction over all samples
            diagnostics->folding[k].minDet = std::min(diagnostics->folding[k].minDet, di.folding[k].minDet);
            diagnostics->folding[k].foldedFraction +=
                di.folding[k].foldedFraction * double(Zr.cols()) / double(Z.cols());
        }
    }
    return X;
}

template <class S>
typename FlowModel<S>::Matrix FlowModel<S>::generateBeside(const Matrix& Z, std::vector<Matrix>* trajectory,
                                                           SamplerDiagnostics* diagnostics,
                                                           const std::vector<Matrix>& frozen) const {
    const FlowConfig& c = config_;
    const S h = S(c.h());
    ad::Tape<S> tape;
    // One evaluation of ∇φ(·, t) or of the RWPO sub-step F (keys: the points themselves) on a cleared tape.
    auto drift = [&](const Matrix& P, double t) -> Matrix {
        tape.clear();
        const Bound<S> q = bindFlow<S>(tape, c, params_, nullptr);
        return recordPotential(tape, q.phi, withTime(tape, tape.constant(P), t), false, false)
            .grad.value()
            .topRows(c.d);
    };
    // The RWPO sub-step F at P: the points are their own keys, or layer k's frozen reference keys.
    auto rwpo = [&](const Matrix& P, int k) -> Matrix {
        tape.clear();
        const Bound<S> q = bindFlow<S>(tape, c, params_, nullptr);
        const bool beside = !frozen.empty();
        return recordRwpo(tape, tape.constant(P), q.lambda, q.beta, layerOptions(c, beside),
                          beside ? tape.constant(frozen[std::size_t(k)]) : ad::Var<S>())
            .y.value();
    };
    // Solves P = next(P) from `start` by Anderson-accelerated fixed-point iteration, recording the worst
    // final change and the most iterations.
    auto solve = [&](Matrix P, auto&& next) {
        const FixedPointResult r = solveFixedPoint<S>(P, next, kSamplerTolerance, kSamplerMaxIterations);
        if (diagnostics) {
            diagnostics->residual = std::max(diagnostics->residual, r.change);
            diagnostics->iterations = std::max(diagnostics->iterations, r.iterations);
        }
        return P;
    };

    Matrix X = Z;
    if (trajectory) trajectory->assign(1, X);
    if (diagnostics) *diagnostics = {};
    for (int k = 0; k < c.layers; ++k) {
        const double t = k * c.h();
        // Drift: (22) takes x + h ∇φ(x, t_k); the exact inverse of the training map's x - h ∇φ(x, t_k) solves
        // y = x + h ∇φ(y, t_k).
        Matrix Y = X + h * drift(X, t);
        if (!c.explicitSampler) Y = solve(Y, [&](const Matrix& P) { return (X + h * drift(P, t)).eval(); });
        X = std::move(Y);
        if (c.rwpo) {
            if (c.explicitSampler) {
                X = rwpo(X, k + 1); // (22): y + 1/2 G(y)
            } else {
                // The training map's sub-step is F(z) = z + 1/2 G(z; Z); solve F(z) = y, z = y - 1/2 G(z; Z)
                // = y + z - F(z), from its first-order solution 2y - F(y).
                const Matrix Yh = X;
                X = solve((S(2) * Yh - rwpo(Yh, k + 1)).eval(),
                          [&](const Matrix& P) { return (Yh + P - rwpo(P, k + 1)).eval(); });
            }
            if (diagnostics) { // det J_F of the sub-step just inverted, at its input z, with its keys
                const Eigen::MatrixXd z = X.template cast<double>();
                const Eigen::MatrixXd K =
                    frozen.empty() ? Eigen::MatrixXd() : frozen[std::size_t(k) + 1].template cast<double>();
                diagnostics->folding.push_back(rwpoFolding(rwpoJacobianDeterminants(
                    z, params_.lambda(), params_.beta(), layerOptions(c), frozen.empty() ? nullptr : &K)));
            }
        }
        if (trajectory) trajectory->push_back(X);
    }
    return X;
}

// --- Frozen keys and encoding ---

template <class S> typename FlowModel<S>::FrozenKeys FlowModel<S>::frozenKeys(const Matrix* keys) const {
    FrozenKeys out;
    if (!config_.rwpo) return out;
    if (keys) {
        checkData<S>(config_, *keys, "the reference batch");
        out.draws.push_back(keysByLayer(*keys));
    } else if (reference_.size() > 0) {
        for (int r = 0; r < referenceDraws_; ++r) out.draws.push_back(keysByLayer(referenceDraw(r)));
    }
    return out;
}

template <class S>
typename FlowModel<S>::Matrix
FlowModel<S>::encode(const Matrix& data, Eigen::Matrix<S, 1, Eigen::Dynamic>* logDensity,
                     std::vector<Matrix>* trajectory, const Matrix* keys) const {
    checkData<S>(config_, data, "the data");
    return encode(data, logDensity, trajectory, frozenKeys(keys));
}

template <class S>
typename FlowModel<S>::Matrix
FlowModel<S>::encode(const Matrix& data, Eigen::Matrix<S, 1, Eigen::Dynamic>* logDensity,
                     std::vector<Matrix>* trajectory, const FrozenKeys& keys) const {
    checkData<S>(config_, data, "the data");
    const int R = int(keys.draws.size());
    if (R <= 1)
        return encodeBeside(data, logDensity, trajectory, R == 1 ? keys.draws[0] : std::vector<Matrix>());
    // The mixture: column j's x^0 and trajectory are draw j mod R's; its density is the mean over the draws.
    Matrix X(data.rows(), data.cols());
    if (trajectory) trajectory->assign(std::size_t(config_.layers) + 1, X);
    Eigen::MatrixXd logRho(R, data.cols());
    for (int r = 0; r < R && (logDensity || r < data.cols()); ++r) {
        // Without densities, each column's own draw only; with them, every column beside every draw.
        const Matrix queries = logDensity ? data : everyRth(data, R, r);
        std::vector<Matrix> path;
        Eigen::Matrix<S, 1, Eigen::Dynamic> ld;
        const Matrix Xr = encodeBeside(queries, logDensity ? &ld : nullptr, trajectory ? &path : nullptr,
                                       keys.draws[std::size_t(r)]);
        auto mine = [&](const Matrix& A) { return logDensity ? everyRth(A, R, r) : A; };
        scatterEveryRth(mine(Xr), R, r, X);
        if (trajectory)
            for (std::size_t k = 0; k < path.size(); ++k)
                scatterEveryRth(mine(path[k]), R, r, (*trajectory)[k]);
        if (logDensity) logRho.row(r) = ld.template cast<double>();
    }
    if (logDensity) {
        logDensity->resize(1, data.cols());
        for (Eigen::Index j = 0; j < data.cols(); ++j) { // log mean exp; a NaN or +inf term stays one
            const double top = logRho.col(j).maxCoeff();
            (*logDensity)(j) = std::isfinite(top)
                                   ? S(top + std::log((logRho.col(j).array() - top).exp().mean()))
                                   : S(logRho.col(j).sum());
        }
    }
    return X;
}

// Layer by layer on a cleared tape: large query sets (density grids) never hold every layer at once.
template <class S>
typename FlowModel<S>::Matrix
FlowModel<S>::encodeBeside(const Matrix& data, Eigen::Matrix<S, 1, Eigen::Dynamic>* logDensity,
                           std::vector<Matrix>* trajectory, const std::vector<Matrix>& frozen) const {
    const FlowConfig& c = config_;
    Matrix X = data;
    Matrix logDet = Matrix::Zero(1, data.cols());
    if (trajectory) trajectory->assign(1, X);
    ad::Tape<S> tape;
    for (int k = c.layers; k >= 1; --k) {
        tape.clear();
        const Bound<S> p = bindFlow<S>(tape, c, params_, nullptr);
        ad::Var<S> x = tape.constant(X), ld = tape.constant(logDet);
        const ad::Var<S> r = frozen.empty() ? ad::Var<S>() : tape.constant(frozen[std::size_t(k)]);
        recordTrainingLayer(tape, c, p, k, x, ld, r);
        X = x.value();
        logDet = ld.value();
        if (trajectory) trajectory->push_back(X);
    }
    if (logDensity) {
        tape.clear();
        *logDensity = recordLogDensity(tape.constant(X), tape.constant(logDet), c.d).value();
    }
    return X;
}

template <class S> double FlowModel<S>::roundTripError(const Matrix& Z) const {
    const Matrix back = encode(generate(Z));
    return double((back - Z).colwise().norm().mean());
}

template Bound<float> bindFlow(ad::Tape<float>&, const FlowConfig&, const FlowParams<float>&,
                               FlowParams<float>*);
template Bound<double> bindFlow(ad::Tape<double>&, const FlowConfig&, const FlowParams<double>&,
                                FlowParams<double>*);
template ad::Var<float> withTime(ad::Tape<float>&, ad::Var<float>, double);
template ad::Var<double> withTime(ad::Tape<double>&, ad::Var<double>, double);
template void addRegularizers(ad::Tape<float>&, const FlowConfig&, ad::Var<float>, ad::Var<float>,
                              ad::Var<float>, ad::Var<float>, ad::Var<float>, ad::Var<float>, double,
                              ad::Var<float>&, ad::Var<float>&);
template void addRegularizers(ad::Tape<double>&, const FlowConfig&, ad::Var<double>, ad::Var<double>,
                              ad::Var<double>, ad::Var<double>, ad::Var<double>, ad::Var<double>, double,
                              ad::Var<double>&, ad::Var<double>&);
template ad::Var<float> driftLogDet(const PotentialOutputs<float>&, int, double);
template ad::Var<double> driftLogDet(const PotentialOutputs<double>&, int, double);
template struct FlowParams<float>;
template struct FlowParams<double>;
template class FlowModel<float>;
template class FlowModel<double>;

} // namespace flowscope::flows
