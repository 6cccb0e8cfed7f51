#include "engine/flows/RwpoLayer.h"

#include "engine/core/Parallel.h"

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace flowscope::flows {

namespace {

constexpr double kPi = 3.14159265358979323846;
using ad::Index;
template <class S> using Var = ad::Var<S>;

void check(bool ok, const std::string& what) {
    if (!ok) throw std::invalid_argument("RWPO layer: " + what);
}

void checkArguments(Index d, Index N, double lambda, double beta, const RwpoOptions& o) {
    check(d >= 1 && N >= 1, "needs at least one token of dimension >= 1");
    check(lambda >= 0 && std::isfinite(lambda), "lambda must be finite and >= 0");
    check(beta > 0 && std::isfinite(beta), "beta must be finite and > 0");
    check(o.h > 0 && std::isfinite(o.h), "h must be finite and > 0");
    check(!o.leaveOneOut || N >= 2, "leave-one-out needs at least 2 tokens");
    check(!o.exactLogDet || o.kernel == RwpoKernel::Separable || d == 2 || d == 3,
          "the exact log-det of a vector kernel is implemented for d = 2 and 3 only");
    check(o.activeSetWidth >= 0 && std::isfinite(o.activeSetWidth), "activeSetWidth must be finite and >= 0");
}

// The Huber function of the Moreau envelope M of λ|.| (as ad::huberL1), for the diagnostics.
double huber(double s, double lambda, double h) {
    const double a = std::abs(s);
    return a <= lambda * h ? s * s / (2 * h) : lambda * a - lambda * lambda * h / 2;
}

double softThreshold(double s, double t) {
    return s > t ? s - t : (s < -t ? s + t : 0.0);
}

// w = softmax(u) in place (max-subtracted); u may hold -inf entries, not all.
void softmaxInPlace(Eigen::VectorXd& u) {
    u = (u.array() - u.maxCoeff()).exp();
    u /= u.sum();
}

// foldGuardedLog's value.
double guardedLogValue(double det) {
    return det >= kFoldFloor ? std::log(det) : std::log(kFoldFloor) + (det - kFoldFloor) / kFoldFloor;
}

// One token's logDetTerm (as recordRwpo records it) for the active set `act` (d entries, 0 or 1), from its
// weighted variances `var` (d) and the covariances `cov` of `pairs` (exactLogDet, vector kernels).
double tokenLogDetTerm(const RwpoOptions& o, double kappa, const Eigen::VectorXd& act,
                       const Eigen::VectorXd& var, const std::vector<std::pair<Index, Index>>& pairs,
                       const Eigen::VectorXd& cov) {
    const Index d = act.size();
    const bool asPrinted = o.kernel == RwpoKernel::AsPrinted;
    // The as-printed kernel's ∂m/∂x = 2κ C_w (I - D): column b of κ C_w counts where b is inactive.
    const Eigen::VectorXd seen =
        asPrinted ? Eigen::VectorXd((1.0 - act.array()).matrix()) : Eigen::VectorXd::Ones(d);
    if (!o.exactLogDet) return 0.5 * act.sum() - kappa * var.dot(seen);
    const Eigen::VectorXd diagonal =
        (1.0 + 0.5 * act.array() - kappa * (var.array() * seen.array())).matrix();
    if (o.kernel == RwpoKernel::Separable) {
        double sum = 0;
        for (Index i = 0; i < d; ++i) sum += guardedLogValue(diagonal(i));
        return sum;
    }
    Eigen::MatrixXd J = Eigen::MatrixXd(diagonal.asDiagonal());
    for (std::size_t k = 0; k < pairs.size(); ++k) {
        const auto [a, b] = pairs[k];
        J(a, b) = -kappa * cov(Index(k)) * seen(b);
        J(b, a) = -kappa * cov(Index(k)) * seen(a);
    }
    return guardedLogValue(J.determinant());
}

// Δ (d x N): the jump of each token's logDetTerm when coordinate i turns active, D_ii: 0 -> 1, the rest of
// its active set as it is.
template <class S>
ad::Matrix<S> activeSetJumps(const RwpoOptions& o, double kappa, const ad::Matrix<S>& active,
                             const ad::Matrix<S>& var, const std::vector<std::pair<Index, Index>>& pairs,
                             const std::vector<ad::Var<S>>& cov) {
    const Index d = active.rows(), N = active.cols();
    ad::Matrix<S> jumps(d, N);
    Eigen::VectorXd c(Index(pairs.size()));
    for (Index j = 0; j < N; ++j) {
        for (std::size_t k = 0; k < pairs.size(); ++k) c(Index(k)) = double(cov[k].value()(0, j));
        const Eigen::VectorXd v = var.col(j).template cast<double>();
        Eigen::VectorXd act = active.col(j).template cast<double>();
        for (Index i = 0; i < d; ++i) {
            const double was = act(i);
            act(i) = 1;
            const double on = tokenLogDetTerm(o, kappa, act, v, pairs, c);
            act(i) = 0;
            jumps(i, j) = S(on - tokenLogDetTerm(o, kappa, act, v, pairs, c));
            act(i) = was;
        }
    }
    return jumps;
}

} // namespace

template <class S>
RwpoOutputs<S> recordRwpo(ad::Tape<S>& tape, Var<S> X, Var<S> lambda, Var<S> beta, const RwpoOptions& o,
                          Var<S> keys, Index queriesAt) {
    check(lambda.rows() == 1 && lambda.cols() == 1 && beta.rows() == 1 && beta.cols() == 1,
          "lambda and beta must be 1x1");
    const bool ownKeys = keys.tape == nullptr || (keys.tape == X.tape && keys.index == X.index);
    const Var<S> Y = ownKeys ? X : keys;
    const Index d = X.rows(), N = X.cols(), Nk = Y.cols();
    checkArguments(d, N, double(lambda.scalar()), double(beta.scalar()), o);
    check(Y.rows() == d && Nk >= 1, "the keys must be d x N_k with the queries' d and N_k >= 1");
    check(ownKeys || queriesAt < 0 || queriesAt + N <= Nk,
          "the queries must be keys " + std::to_string(queriesAt) + ".." + std::to_string(queriesAt + N - 1) +
              " of the " + std::to_string(Nk) + " keys");
    check(ownKeys || !o.leaveOneOut || queriesAt >= 0, "leave-one-out needs the queries among the keys");
    const Index self = ownKeys ? 0 : queriesAt; // query j's own key: key self + j (when leaveOneOut)
    const S h = S(o.h), c2h = S(1) / (2 * h), c4h = S(1) / (4 * h);
    const bool separable = o.kernel == RwpoKernel::Separable, asPrinted = o.kernel == RwpoKernel::AsPrinted;

    // Queries and keys enter the attention centred on the keys' mean μ. The softmax over keys and the
    // weighted (co)variances are shift-invariant, so this changes nothing exactly, but their terms then have
    // the size of the cloud's spread rather than of its offset: the cancellation in E_w[y²] - m² stays small
    // in float.
    const Var<S> mu = ad::scale(ad::rowSum(Y), S(1) / S(Nk));
    const Var<S> minusMu = ad::neg(mu);
    const Var<S> Xc = ad::addCol(X, minusMu);
    const Var<S> Yc = ownKeys ? Xc : ad::addCol(Y, minusMu);
    const Var<S> threshold = ad::scale(lambda, h);
    const Var<S> St = ad::softThreshold(X, threshold); // sign(x) max(|x| - λh, 0): the sign is kept
    // D = 1{|x_i| > λh}, exactly the op's own test; constant (the kinks have measure zero).
    const ad::Matrix<S> active = (X.value().array().abs() > threshold.scalar()).template cast<S>().matrix();
    const Var<S> Xc2 = ad::square(Xc);
    const Var<S> Yc2 = ownKeys ? Xc2 : ad::square(Yc);
    // Local kernels (corrected, separable), per coordinate: queries (β/(2h)) x̃ with the bias -β/(4h) x̃²,
    // keys ỹ with the bias -β/(4h) ỹ² + β/2 huber(y). The query's bias does not change the softmax, but
    // with it the logits are U itself, -β/(4h) |x - y|² + β/2 M(y), small where the weights live, rather
    // than U + β/(4h) |x̃|²; the float rounding of the logit gradient then no longer multiplies that offset
    // in d/dX and d/dβ (10x more accurate at N = 1024).
    // The query's bias has a zero gradient in exact arithmetic (a query's softmax does not depend on it), but
    // in float its recorded gradient cancels the rounding of the logit gradient that passes through x̃ (the
    // offset above): as a constant, float's d logDet / dX was 40x further from float64's at N = 1024.
    // β/(2h) and -β/(4h) are 1x1 nodes, one product each with the d x N matrices (fewer nodes,
    // docs/math/flows.md#training-speed).
    Var<S> Qx, queryBias, keyBias;
    if (!asPrinted) {
        Qx = ad::scale(Xc, ad::scale(beta, c2h));
        queryBias = ad::scale(Xc2, ad::scale(beta, -c4h));
        keyBias =
            ad::scale(ad::add(ad::scale(Yc2, -c4h), ad::scale(ad::huberL1(Y, lambda, h), S(0.5))), beta);
    }

    // Centred weighted means m - μ and variances (d x N); exactLogDet: the covariances of each pair a < b
    // (1 x N each), in the order of `pairs`.
    Var<S> mean, var;
    std::vector<std::pair<Index, Index>> pairs;
    std::vector<Var<S>> cov;
    if (o.exactLogDet && !separable)
        for (Index a = 0; a < d; ++a)
            for (Index b = a + 1; b < d; ++b) pairs.emplace_back(a, b);
    if (!separable) {
        // The logits as q_j . ỹ_k plus a bias of the query and one of the key (ad::biasedAttention).
        Var<S> Q, queryLogitBias, keyLogitBias;
        if (asPrinted) { // (β/(2h)) (x - S(x)) . ỹ + (βλ/2) |S(y)|₁ (x-only terms dropped)
            const Var<S> Sy = ownKeys ? St : ad::softThreshold(Y, threshold);
            Q = ad::scale(ad::scale(ad::sub(X, St), beta), c2h);
            keyLogitBias = ad::scale(ad::scale(ad::scale(ad::colSum(ad::abs(Sy)), lambda), beta), S(0.5));
        } else { // (β/(2h)) x̃ . ỹ - β/(4h) |x̃|² - β/(4h) |ỹ|² + β/2 M(y)
            Q = Qx;
            queryLogitBias = ad::colSum(queryBias);
            keyLogitBias = ad::colSum(keyBias);
        }
        // Every weighted moment in one attention: the values are [ỹ; ỹ²; ỹ_a ỹ_b for the pairs a < b].
        std::vector<Var<S>> features = {Yc, Yc2};
        for (const auto& [a, b] : pairs) features.push_back(ad::mul(ad::rows(Yc, a, 1), ad::rows(Yc, b, 1)));
        const Var<S> moments = ad::biasedAttention(Q, Yc, ad::vstack(features), queryLogitBias, keyLogitBias,
                                                   o.leaveOneOut, self);
        mean = ad::rows(moments, 0, d);
        var = ad::sub(ad::rows(moments, d, d), ad::square(mean));
        for (std::size_t k = 0; k < pairs.size(); ++k) {
            const auto [a, b] = pairs[k];
            cov.push_back(ad::sub(ad::rows(moments, 2 * d + Index(k), 1),
                                  ad::mul(ad::rows(mean, a, 1), ad::rows(mean, b, 1))));
        }
    } else { // per coordinate i: (β/(2h)) x̃_i ỹ_i - β/(4h) x̃_i² - β/(4h) ỹ_i² + β/2 huber(y_i)
        std::vector<Var<S>> means, vars;
        for (Index i = 0; i < d; ++i) {
            const Var<S> yi = ad::rows(Yc, i, 1), yi2 = ad::rows(Yc2, i, 1);
            const Var<S> moments =
                ad::biasedAttention(ad::rows(Qx, i, 1), yi, ad::vstack({yi, yi2}), ad::rows(queryBias, i, 1),
                                    ad::rows(keyBias, i, 1), o.leaveOneOut, self);
            means.push_back(ad::rows(moments, 0, 1));
            vars.push_back(ad::sub(ad::rows(moments, 1, 1), ad::square(means.back())));
        }
        mean = d == 1 ? means[0] : ad::vstack(means);
        var = d == 1 ? vars[0] : ad::vstack(vars);
    }

    RwpoOutputs<S> out;
    out.y = ad::add(X, ad::scale(ad::sub(St, ad::addCol(mean, mu)), S(0.5))); // x + (S(x) - m(x)) / 2

    // κ C_w entries, κ = β/(4h); the as-printed kernel's ∂m/∂x = 2κ C_w (I - D) only sees inactive columns.
    const ad::Matrix<S> inactive = ad::Matrix<S>::Ones(d, N) - active;
    Var<S> kVar = ad::scale(var, ad::scale(beta, c4h));
    if (asPrinted) kVar = ad::maskMul(kVar, inactive);
    if (!o.exactLogDet) { // 1/2 div G = n_act / 2 - κ Σ_i (C_w)_ii
        out.logDetTerm = ad::sub(tape.constant(S(0.5) * active.colwise().sum()), ad::colSum(kVar));
    } else {
        const Var<S> diagonal =
            ad::sub(tape.constant((ad::Matrix<S>::Ones(d, N) + S(0.5) * active).eval()), kVar);
        if (separable) { // J_F is diagonal
            out.logDetTerm = ad::colSum(foldGuardedLog(diagonal));
        } else {
            // J_aa = diagonal_a, J_ab = -κ C_ab (as printed: times 1 - D_b); det by cofactors, d = 2 or 3
            std::vector<Var<S>> J(std::size_t(d * d));
            auto entry = [&](Index a, Index b) -> Var<S>& { return J[std::size_t(a * d + b)]; };
            for (Index a = 0; a < d; ++a) entry(a, a) = ad::rows(diagonal, a, 1);
            const Var<S> minusKappa = ad::scale(beta, -c4h); // one 1x1 node for every pair
            for (std::size_t k = 0; k < pairs.size(); ++k) {
                const auto [a, b] = pairs[k];
                const Var<S> off = ad::scale(cov[k], minusKappa);
                entry(a, b) = asPrinted ? ad::maskMul(off, ad::Matrix<S>(inactive.row(b))) : off;
                entry(b, a) = asPrinted ? ad::maskMul(off, ad::Matrix<S>(inactive.row(a))) : off;
            }
            auto minor = [&](Index a, Index b, Index c, Index e) { // J_ac J_be - J_ae J_bc
                return ad::sub(ad::mul(entry(a, c), entry(b, e)), ad::mul(entry(a, e), entry(b, c)));
            };
            const Var<S> det = d == 2 ? minor(0, 1, 0, 1)
                                      : ad::add(ad::sub(ad::mul(entry(0, 0), minor(1, 2, 1, 2)),
                                                        ad::mul(entry(0, 1), minor(1, 2, 0, 2))),
                                                ad::mul(entry(0, 2), minor(1, 2, 0, 1)));
            out.logDetTerm = foldGuardedLog(det);
        }
    }
    if (o.activeSetGradient) { // docs/math/flows.md#active-set-gradient
        const ad::Matrix<S> jumps =
            activeSetJumps(o, double(beta.scalar()) / (4 * o.h), active, var.value(), pairs, cov);
        // Bandwidth per coordinate: activeSetWidth, or Silverman's rule on the keys, 1.06 sd N_k^(-1/5) (the
        // keys, not the queries: a batch split across tapes then gets the whole batch's), as the logistic's
        // scale ε = bandwidth √3/π (the logistic density's standard deviation is π ε/√3).
        const ad::Matrix<S> Yv = Y.value();
        ad::Matrix<S> inverseWidth(d, 1);
        for (Index i = 0; i < d; ++i) {
            double bandwidth = o.activeSetWidth;
            if (bandwidth <= 0) {
                const Eigen::ArrayXd y = Yv.row(i).transpose().template cast<double>().array();
                bandwidth = 1.06 * std::sqrt((y - y.mean()).square().mean()) * std::pow(double(Nk), -0.2);
            }
            const double width = bandwidth * std::sqrt(3.0) / kPi;
            inverseWidth(i, 0) = width > 0 ? S(1 / width) : S(0);
        }
        // 1{|x_i| > λh} = 1{x_i - λh > 0} + 1{-x_i - λh > 0}, each face smoothed on its own: a kernel on
        // |x_i| - λh would reach past |x_i| = 0, where that variable has no density, and see half the face's
        // density once the bandwidth exceeds λh (the default λh is 0.006 at h = 1/8).
        const Var<S> inverse = tape.constant(inverseWidth), minusThreshold = ad::neg(threshold);
        const Var<S> step =
            ad::add(ad::sigmoid(ad::mulCol(ad::addScalar(X, minusThreshold), inverse)),
                    ad::sigmoid(ad::mulCol(ad::addScalar(ad::neg(X), minusThreshold), inverse)));
        const Var<S> zero = ad::sub(step, tape.constant(step.value())); // value 0, gradient σ'
        out.logDetTerm = ad::add(out.logDetTerm, ad::colSum(ad::maskMul(zero, jumps)));
    }
    return out;
}

template <class S> ad::Var<S> foldGuardedLog(ad::Var<S> det) {
    const S delta = S(kFoldFloor);
    const ad::Var<S> above = ad::log(ad::addScalar(ad::relu(ad::addScalar(det, -delta)), delta));
    const ad::Var<S> below = ad::relu(ad::addScalar(ad::neg(det), delta)); // max(δ - det, 0)
    return ad::sub(above, ad::scale(below, S(1) / delta));
}
template ad::Var<float> foldGuardedLog(ad::Var<float>);
template ad::Var<double> foldGuardedLog(ad::Var<double>);

template RwpoOutputs<float> recordRwpo(ad::Tape<float>&, Var<float>, Var<float>, Var<float>,
                                       const RwpoOptions&, Var<float>, Index);
template RwpoOutputs<double> recordRwpo(ad::Tape<double>&, Var<double>, Var<double>, Var<double>,
                                        const RwpoOptions&, Var<double>, Index);

Eigen::RowVectorXd rwpoJacobianDeterminants(const Eigen::MatrixXd& X, double lambda, double beta,
                                            const RwpoOptions& o, const Eigen::MatrixXd* keys) {
    const Index d = X.rows(), N = X.cols();
    RwpoOptions any = o; // det J_F for any d: the d = 2 restriction is the tape's
    any.exactLogDet = false;
    any.leaveOneOut = o.leaveOneOut && !keys; // a query beside separate keys has no own key
    checkArguments(d, N, lambda, beta, any);
    const Eigen::MatrixXd& K = keys ? *keys : X;
    check(K.rows() == d && K.cols() >= 1, "the keys must be d x N_k with the queries' d and N_k >= 1");
    const double h = o.h, t = lambda * h, kappa = beta / (4 * h);
    const Eigen::VectorXd mu = K.rowwise().mean();
    const Eigen::MatrixXd Y = K.colwise() - mu; // centred keys, as in recordRwpo
    const Eigen::MatrixXd Xc = X.colwise() - mu;
    const Eigen::MatrixXd S = X.unaryExpr([t](double s) { return softThreshold(s, t); });
    const Eigen::MatrixXd SK = K.unaryExpr([t](double s) { return softThreshold(s, t); });
    const Eigen::MatrixXd active = (X.array().abs() > t).cast<double>();
    const Eigen::MatrixXd envelope = K.unaryExpr([&](double s) { return huber(s, lambda, h); });
    // Query features and key biases of the logits (see recordRwpo); separable: per coordinate.
    Eigen::MatrixXd Q = (beta / (2 * h)) * (o.kernel == RwpoKernel::AsPrinted ? Eigen::MatrixXd(X - S) : Xc);
    Eigen::MatrixXd bias;
    if (o.kernel == RwpoKernel::AsPrinted) {
        bias = (beta * lambda / 2) * SK.cwiseAbs().colwise().sum();
    } else {
        bias = beta * (-Y.array().square() / (4 * h) + envelope.array() / 2).matrix();
        if (o.kernel == RwpoKernel::Corrected) bias = bias.colwise().sum().eval();
    }
    const bool exclude = any.leaveOneOut;
    const Index Nk = K.cols();

    Eigen::RowVectorXd dets(N);
    parallelFor(std::size_t(N), 16, [&](std::size_t begin, std::size_t end) {
        Eigen::VectorXd w(Nk);
        Eigen::MatrixXd J(d, d);
        for (Index j = Index(begin); j < Index(end); ++j) {
            if (o.kernel == RwpoKernel::Separable) {
                double det = 1;
                for (Index i = 0; i < d; ++i) {
                    w = (Q(i, j) * Y.row(i) + bias.row(i)).transpose();
                    if (exclude) w(j) = -std::numeric_limits<double>::infinity();
                    softmaxInPlace(w);
                    const double m = Y.row(i).dot(w);
                    const double v = (Y.row(i).array() - m).square().matrix().dot(w);
                    det *= 1 + 0.5 * active(i, j) - kappa * v;
                }
                dets(j) = det;
                continue;
            }
            w = (Q.col(j).transpose() * Y + bias).transpose();
            if (exclude) w(j) = -std::numeric_limits<double>::infinity();
            softmaxInPlace(w);
            const Eigen::MatrixXd Z = Y.colwise() - Y * w;
            J = -kappa * (Z * w.asDiagonal() * Z.transpose());
            if (o.kernel == RwpoKernel::AsPrinted)
                J = J * (1.0 - active.col(j).array()).matrix().asDiagonal();
            J.diagonal().array() += 1 + 0.5 * active.col(j).array();
            dets(j) = J.determinant();
        }
    });
    return dets;
}

Eigen::RowVectorXd rwpoJacobianDeterminants(const Eigen::MatrixXf& X, double lambda, double beta,
                                            const RwpoOptions& options) {
    return rwpoJacobianDeterminants(Eigen::MatrixXd(X.cast<double>()), lambda, beta, options);
}

RwpoFolding rwpoFolding(const Eigen::RowVectorXd& dets) {
    check(dets.size() > 0, "folding statistics of no tokens");
    return {dets.minCoeff(), double((dets.array() <= 0).count()) / double(dets.size())};
}

RwpoFolding rwpoFolding(const Eigen::MatrixXd& X, double lambda, double beta, const RwpoOptions& options) {
    return rwpoFolding(rwpoJacobianDeterminants(X, lambda, beta, options));
}

RwpoFolding rwpoFolding(const Eigen::MatrixXf& X, double lambda, double beta, const RwpoOptions& options) {
    return rwpoFolding(rwpoJacobianDeterminants(X, lambda, beta, options));
}

} // namespace flowscope::flows
