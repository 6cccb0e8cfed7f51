// The RWPO layer of the generative flow (engine/flows/RwpoLayer.h). Oracles are mathematics only: a direct
// double loop over (query, key) pairs with the explicit per-pair kernel, finite-difference Jacobians of the
// frozen-key map, finite-difference gradients (GradCheck.h) and the 1-D Gaussian closed form of
// docs/math/flows.md#rwpo-jacobian.
#include "TestUtil.h"

#include "engine/autodiff/GradCheck.h"
#include "engine/flows/RwpoLayer.h"

#include <gtest/gtest.h>

#include <Eigen/Dense>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <stdexcept>
#include <vector>

namespace ad = flowscope::ad;
using ad::Index;
using flowscope::flows::recordRwpo;
namespace flows =
    flowscope::flows; // qualified: the unity batch may also see flowscope::RwpoKernel (the scene's)
using flowscope::flows::RwpoOptions;
using Md = ad::Matrix<double>;
using Vd = ad::Var<double>;
using Eigen::VectorXd;
using flowscope::test::normalQuantile;
using flowscope::test::quasiNormal;
using flowscope::test::scalar;

namespace {

constexpr double kH = 1.0 / 48.0;
const flows::RwpoKernel kKernels[] = {flows::RwpoKernel::Corrected, flows::RwpoKernel::AsPrinted,
                                      flows::RwpoKernel::Separable};

const char* kernelName(flows::RwpoKernel k) {
    return k == flows::RwpoKernel::Corrected   ? "corrected"
           : k == flows::RwpoKernel::AsPrinted ? "as printed"
                                               : "separable";
}

// d x N normal tokens, every coordinate at least `margin` away from the kinks |x_i| = t of S and huber.
Md tokens(Index d, Index N, std::uint64_t seed, double sigma, double t = 0, double margin = 0) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> normal(0.0, sigma);
    Md X(d, N);
    for (Index i = 0; i < X.size(); ++i) {
        double x = normal(rng);
        while (std::abs(std::abs(x) - t) < margin) x = normal(rng);
        X.data()[i] = x;
    }
    return X;
}

// foldGuardedLog's value: log(det) at and above the floor δ, its tangent log δ + (det - δ)/δ below.
double guardedLog(double det) {
    const double delta = flowscope::flows::kFoldFloor;
    return det >= delta ? std::log(det) : std::log(delta) + (det - delta) / delta;
}

double soft(double s, double t) {
    return s > t ? s - t : (s < -t ? s + t : 0.0);
}

double huber(double s, double lambda, double h) {
    return std::abs(s) <= lambda * h ? s * s / (2 * h) : lambda * std::abs(s) - lambda * lambda * h / 2;
}

// softmax over l != skip of u_l, then sum_l w_l y_l (the rows of the weighted keys).
VectorXd softmaxMean(std::vector<double> u, const Md& keys, Index skip) {
    double top = -std::numeric_limits<double>::infinity();
    for (Index l = 0; l < Index(u.size()); ++l)
        if (l != skip) top = std::max(top, u[l]);
    double total = 0;
    VectorXd m = VectorXd::Zero(keys.rows());
    for (Index l = 0; l < Index(u.size()); ++l) {
        if (l == skip) continue;
        const double w = std::exp(u[l] - top);
        total += w;
        m += w * keys.col(l);
    }
    return m / total;
}

// G(x; keys) = S(x) - sum_l softmax_l(U(x, y_l)) y_l, eq. (22), by a direct loop over the keys with the
// kernel written out per pair exactly as in docs/math/flows.md#rwpo-layer (nothing dropped, nothing centred).
// skip: the excluded key.
VectorXd directG(const VectorXd& x, const Md& keys, double lambda, double beta, double h,
                 flows::RwpoKernel kernel, Index skip) {
    const Index d = keys.rows(), N = keys.cols();
    const double t = lambda * h;
    VectorXd S(d), m(d);
    for (Index i = 0; i < d; ++i) S(i) = soft(x(i), t);
    std::vector<double> u(std::size_t(N), 0.0);
    if (kernel == flows::RwpoKernel::Separable) {
        for (Index i = 0; i < d; ++i) {
            for (Index l = 0; l < N; ++l) {
                const double y = keys(i, l);
                u[l] = -beta / (4 * h) * (x(i) - y) * (x(i) - y) + beta / 2 * huber(y, lambda, h);
            }
            m(i) = softmaxMean(u, keys.row(i), skip)(0);
        }
        return S - m;
    }
    for (Index l = 0; l < N; ++l) {
        const VectorXd y = keys.col(l);
        if (kernel == flows::RwpoKernel::Corrected) {
            double M = 0;
            for (Index i = 0; i < d; ++i) M += huber(y(i), lambda, h);
            u[l] = -beta / (4 * h) * (x - y).squaredNorm() + beta / 2 * M;
        } else { // U_lit = -β/2 ((|x - y|² - |S(x) - y|²)/(2h) - λ |S(y)|₁)
            double l1 = 0;
            for (Index i = 0; i < d; ++i) l1 += std::abs(soft(y(i), t));
            u[l] = -beta / 2 * (((x - y).squaredNorm() - (S - y).squaredNorm()) / (2 * h) - lambda * l1);
        }
    }
    return S - softmaxMean(u, keys, skip);
}

// The Jacobian of the frozen-key map x -> G(x; keys) at token j by Richardson-extrapolated central
// differences (truncation O(eps^4): ~1e-14 here; rounding ~1e-16 |G| / eps ~ 1e-12).
Md fdJacobianG(const Md& X, Index j, double lambda, double beta, double h, flows::RwpoKernel kernel,
               bool loo) {
    const Index d = X.rows();
    const double eps = 1e-4;
    Md J(d, d);
    for (Index i = 0; i < d; ++i) {
        auto central = [&](double e) {
            VectorXd xp = X.col(j), xm = X.col(j);
            xp(i) += e;
            xm(i) -= e;
            return VectorXd((directG(xp, X, lambda, beta, h, kernel, loo ? j : -1) -
                             directG(xm, X, lambda, beta, h, kernel, loo ? j : -1)) /
                            (2 * e));
        };
        J.col(i) = (4 * central(eps / 2) - central(eps)) / 3;
    }
    return J;
}

struct Recorded {
    Md y, logDet;
};

// One sub-step of the queries X; keys: X itself, or `keys` when given.
Recorded record(const Md& X, double lambda, double beta, const RwpoOptions& o, const Md* keys = nullptr) {
    ad::Tape<double> tape;
    const auto out = recordRwpo(tape, tape.constant(X), tape.constant(scalar(lambda)),
                                tape.constant(scalar(beta)), o, keys ? tape.constant(*keys) : Vd{});
    return {out.y.value(), out.logDetTerm.value()};
}

double maxRelative(const Md& a, const Md& b) {
    return (a - b).cwiseAbs().maxCoeff() / b.cwiseAbs().maxCoeff();
}

} // namespace

// --- Against the direct double loop ---

// The spread of the test tokens in d dimensions: 0.4 in d = 2, 3; 0.12 in d = 8, where the squared distances
// (≈ 2 d σ²) would otherwise be many kernel widths 4h/β ≈ 0.083 and every weight would sit on one key.
double spreadFor(Index d) {
    return d <= 3 ? 0.4 : 0.12;
}

TEST(FlowRwpo, OutputMatchesTheDirectDoubleLoopOfEq22) {
    for (Index d : {2, 3, 8}) {
        const double lambda = 5, beta = 1; // λh ≈ 0.10: active and inactive coordinates alike
        const Md X = tokens(d, 40, 11 + d, spreadFor(d));
        for (flows::RwpoKernel kernel : kKernels) {
            for (bool loo : {false, true}) {
                const RwpoOptions o{.kernel = kernel, .leaveOneOut = loo, .h = kH};
                const Md y = record(X, lambda, beta, o).y;
                Md expected(X.rows(), X.cols());
                for (Index j = 0; j < X.cols(); ++j)
                    expected.col(j) =
                        X.col(j) + 0.5 * directG(X.col(j), X, lambda, beta, kH, kernel, loo ? j : -1);
                const double err = maxRelative(y, expected);
                std::printf("[ rwpo ] y vs double loop, d = %d, %-10s %-13s rel error %.1e\n", int(d),
                            kernelName(kernel), loo ? "leave-one-out" : "", err);
                EXPECT_LT(err, 1e-12) << kernelName(kernel) << " d = " << d << " loo = " << loo;
            }
        }
    }
}

TEST(FlowRwpo, SeparateKeysMatchTheDirectDoubleLoop) {
    // Queries against a reference batch (the density grid's frozen keys): 7 queries, 30 keys, other spreads.
    const double lambda = 5, beta = 1;
    const Md Q = tokens(2, 7, 21, 0.6), K = tokens(2, 30, 22, 0.4);
    for (flows::RwpoKernel kernel : kKernels) {
        const RwpoOptions o{.kernel = kernel, .h = kH};
        const Md y = record(Q, lambda, beta, o, &K).y;
        Md expected(Q.rows(), Q.cols());
        for (Index j = 0; j < Q.cols(); ++j)
            expected.col(j) = Q.col(j) + 0.5 * directG(Q.col(j), K, lambda, beta, kH, kernel, -1);
        EXPECT_LT(maxRelative(y, expected), 1e-12) << kernelName(kernel);
        // Each query sees only the keys: its output does not depend on the other queries.
        const Md alone = record(Q.leftCols(1), lambda, beta, o, &K).y;
        EXPECT_LT((alone - y.leftCols(1)).cwiseAbs().maxCoeff(), 1e-14) << kernelName(kernel);
        // The queries as explicit keys are the default.
        EXPECT_EQ(record(Q, lambda, beta, o, &Q).y, record(Q, lambda, beta, o).y) << kernelName(kernel);
        // det J_F beside the keys (the sampler's folding read-out) against central differences of the
        // direct loop, Richardson-extrapolated.
        const Eigen::RowVectorXd dets = flowscope::flows::rwpoJacobianDeterminants(Q, lambda, beta, o, &K);
        for (Index j = 0; j < Q.cols(); ++j) {
            Md J(2, 2);
            for (Index i = 0; i < 2; ++i) {
                auto central = [&](double e) {
                    VectorXd xp = Q.col(j), xm = Q.col(j);
                    xp(i) += e;
                    xm(i) -= e;
                    return VectorXd(((xp + 0.5 * directG(xp, K, lambda, beta, kH, kernel, -1)) -
                                     (xm + 0.5 * directG(xm, K, lambda, beta, kH, kernel, -1))) /
                                    (2 * e));
                };
                J.col(i) = (4 * central(5e-5) - central(1e-4)) / 3;
            }
            EXPECT_NEAR(dets(j), J.determinant(), 1e-7 * std::max(1.0, std::abs(J.determinant())))
                << kernelName(kernel) << " query " << j;
        }
    }
}

TEST(FlowRwpo, SoftThresholdKeepsItsSign) {
    // Tokens 10 apart: with a local kernel every query's weight is on its own key (e^-2400 elsewhere), so
    // m(x) = x and y = x + (S(x) - x) / 2. S keeps the sign: a coordinate below -λh moves UP by λh (so y by
    // λh / 2), one above +λh down, one inside halves. The ReLU(|x| - λh) misprint would send -1 to about 0.
    // (The as-printed kernel is not local, so its m(x) is not x; its S is the same code.)
    const double lambda = 2, t = lambda * kH;
    Md X(2, 3);
    X << -1.0, 10.0, -10.0, //
        0.01, -10.0, 10.0;
    for (flows::RwpoKernel kernel : {flows::RwpoKernel::Corrected, flows::RwpoKernel::Separable}) {
        const RwpoOptions o{.kernel = kernel, .h = kH};
        const Md y = record(X, lambda, 1.0, o).y;
        EXPECT_NEAR(y(0, 0), -1.0 + t / 2, 1e-14) << kernelName(kernel);
        EXPECT_NEAR(y(1, 0), 0.005, 1e-14) << kernelName(kernel);
        EXPECT_NEAR(y(0, 1), 10.0 - t / 2, 1e-14) << kernelName(kernel);
        EXPECT_NEAR(y(1, 1), -10.0 + t / 2, 1e-14) << kernelName(kernel);
    }
}

// --- Divergence and gradients ---

TEST(FlowRwpo, DivergenceIsTheTraceOfTheFrozenKeyJacobian) {
    // d = 2 and 3 (the tape's exact log-det of every kernel) and d = 8 (the first-order trace of every
    // kernel, the tape's exact log-det of the separable one, det J_F of the diagnostics for all).
    const double lambda = 5, beta = 1, t = lambda * kH;
    for (Index d : {2, 3, 8}) {
        const Md X = tokens(d, 50, 21 + d, spreadFor(d), t, 1e-3);
        for (flows::RwpoKernel kernel : kKernels) {
            for (bool loo : {false, true}) {
                RwpoOptions o{.kernel = kernel, .leaveOneOut = loo, .h = kH};
                const Md half = record(X, lambda, beta, o).logDet;
                Md trace(1, X.cols()), logDet(1, X.cols()), dets(1, X.cols());
                for (Index j = 0; j < X.cols(); ++j) {
                    const Md JG = fdJacobianG(X, j, lambda, beta, kH, kernel, loo);
                    trace(0, j) = 0.5 * JG.trace();
                    dets(0, j) = (Md::Identity(d, d) + 0.5 * JG).determinant();
                    logDet(0, j) = guardedLog(dets(0, j));
                }
                const double errTrace = maxRelative(half, trace);
                const double errDiag =
                    maxRelative(flowscope::flows::rwpoJacobianDeterminants(X, lambda, beta, o), dets);
                std::printf(
                    "[ rwpo ] d = %d %-10s %-13s 1/2 div G vs 1/2 tr J_FD: %.1e; det J_F (diagnostics) "
                    "vs FD: %.1e",
                    int(d), kernelName(kernel), loo ? "leave-one-out" : "", errTrace, errDiag);
                EXPECT_LT(errTrace, 1e-6) << kernelName(kernel) << " d = " << d << " loo = " << loo;
                EXPECT_LT(errDiag, 1e-6) << kernelName(kernel) << " d = " << d << " loo = " << loo;
                if (d <= 3 || kernel == flows::RwpoKernel::Separable) { // the tape's exact log-det
                    o.exactLogDet = true;
                    const double errExact = maxRelative(record(X, lambda, beta, o).logDet, logDet);
                    std::printf("; guarded log det J_F vs FD: %.1e", errExact);
                    EXPECT_LT(errExact, 1e-6) << kernelName(kernel) << " d = " << d << " loo = " << loo;
                }
                std::printf("\n");
            }
        }
    }
}

TEST(FlowRwpo, GradientsInTokensLambdaAndBeta) {
    const double lambda = 5, beta = 1.3, t = lambda * kH;
    for (Index d : {2, 3}) {
        const Md X = tokens(d, 16, 31, 0.3, t, 1e-2);
        const Md Wy = tokens(d, 16, 32, 1.0), Wl = tokens(1, 16, 33, 1.0);
        for (flows::RwpoKernel kernel : kKernels) {
            for (int variant = 0; variant < 4; ++variant) { // {first order, exact log-det} x {all keys, LOO}
                const RwpoOptions o{
                    .kernel = kernel, .leaveOneOut = variant >= 2, .exactLogDet = variant % 2 == 1, .h = kH};
                const auto loss = [&](ad::Tape<double>& tape, const std::vector<Vd>& in) {
                    const auto out = recordRwpo(tape, in[0], in[1], in[2], o);
                    return ad::add(ad::sum(ad::mul(out.y, tape.constant(Wy))),
                                   ad::sum(ad::mul(out.logDetTerm, tape.constant(Wl))));
                };
                // A smaller step than the default 1e-3: some as-printed tokens sit near a fold (det J_F ≈
                // -0.1), where log|det| has large higher derivatives and the O(step⁴) truncation reaches
                // 1e-5.
                ad::GradCheckOptions step;
                step.step = 1e-4;
                const ad::GradCheckResult r = ad::gradCheck(loss, {X, scalar(lambda), scalar(beta)}, step);
                std::printf(
                    "[ rwpo ] gradcheck d = %d %-10s %-13s %-13s max rel error %.1e (%.1e raw), %d entries\n",
                    int(d), kernelName(kernel), variant % 2 ? "exact log-det" : "first order",
                    variant >= 2 ? "leave-one-out" : "", r.maxRelError, r.maxRawRelError, r.checked);
                EXPECT_LT(r.maxRelError, 1e-6)
                    << kernelName(kernel) << " variant " << variant << ": input " << r.input << " (" << r.row
                    << ", " << r.col << ") analytic " << r.analytic << " numeric " << r.numeric;
            }
        }
    }
}

TEST(FlowRwpo, GradientsWithSeparateKeys) {
    const double lambda = 5, beta = 1.3, t = lambda * kH;
    const Md Q = tokens(2, 6, 41, 0.3, t, 1e-2), K = tokens(2, 12, 42, 0.3, t, 1e-2);
    const Md Wy = tokens(2, 6, 43, 1.0), Wl = tokens(1, 6, 44, 1.0);
    for (flows::RwpoKernel kernel : kKernels) {
        const RwpoOptions o{.kernel = kernel, .exactLogDet = true, .h = kH};
        const auto loss = [&](ad::Tape<double>& tape, const std::vector<Vd>& in) {
            const auto out = recordRwpo(tape, in[0], in[1], in[2], o, in[3]);
            return ad::add(ad::sum(ad::mul(out.y, tape.constant(Wy))),
                           ad::sum(ad::mul(out.logDetTerm, tape.constant(Wl))));
        };
        ad::GradCheckOptions step;
        step.step = 1e-4;
        const ad::GradCheckResult r = ad::gradCheck(loss, {Q, scalar(lambda), scalar(beta), K}, step);
        EXPECT_LT(r.maxRelError, 1e-6) << kernelName(kernel) << ": input " << r.input << " (" << r.row << ", "
                                       << r.col << ") analytic " << r.analytic << " numeric " << r.numeric;
    }
}

// --- Known flows and kernels ---

TEST(FlowRwpo, OneDimensionalGaussianIsTheHeatFlow) {
    // λ = 0, keys N(0, v): the continuum weighted mean is the Gaussian posterior mean m(x) = v/(v + s²) x,
    // s² = 2h/β, so the layer is the affine map x -> a x, a = 1 + s²/(2(v + s²)) = 1.02, and the variance
    // grows by (a² - 1) v = 0.0404 ≈ 2h/β = 0.0417 (first order in s²/v: the relative gap is ~3%).
    const int N = 4000;
    const double v = 1, beta = 1, s2 = 2 * kH / beta;
    Md X(1, N);
    for (int i = 0; i < N; ++i) X(0, i) = std::sqrt(v) * normalQuantile((i + 0.5) / N); // deterministic
    const RwpoOptions o{.h = kH};
    const Md y = record(X, 0.0, beta, o).y;
    const double mx = X.mean(), my = y.mean();
    const double vx = (X.array() - mx).square().mean(), vy = (y.array() - my).square().mean();
    const double slope = ((X.array() - mx) * (y.array() - my)).mean() / vx;
    const double a = 1 + 0.5 * s2 / (v + s2);
    std::printf("[ rwpo ] 1-D heat flow, N = %d: slope %.5f (continuum %.5f), variance increase %.5f "
                "(continuum %.5f, 2h/beta %.5f)\n",
                N, slope, a, vy - vx, (a * a - 1) * vx, 2 * kH / beta);
    // Tolerances. Continuum limit: the kernel sum over the N quantile tokens is a Riemann sum of the
    // Gaussian integral, good while many tokens share a bandwidth s ≈ 0.2 (~300 at the centre). It degrades
    // only in the tail |x| > 3 (~10 tokens, < 4 per bandwidth, 2.5% of Σ x²): a 0.04 error in their slope
    // would move the fitted slope and the variance increase by 1e-3, the tolerance. Measured: 3e-5 and
    // 6e-5. First order: 2h/β ignores O(s²/v) ≈ 4% (the continuum gives 3.1% less), hence 5%.
    EXPECT_NEAR(slope, a, 1e-3);
    EXPECT_NEAR(vy - vx, (a * a - 1) * vx, 1e-3);
    EXPECT_NEAR((vy - vx) / (2 * kH / beta), 1.0, 0.05);
    EXPECT_NEAR(my, 0.0, 1e-12);
}

// A Gaussian N(μ, Σ) in d = 2 whose coordinates all keep one sign, sign(μ) = g
// (docs/math/flows.md#gaussian-step): there S(x) = x - λh g and M(y) = λ gᵀy + const, so the continuum layer
// is the affine map
//     F(x) = x + ½ (x - λh g - m(x)),   m(x) = P⁻¹ (Σ⁻¹ μ + x / s² + (βλ/2) g),   P = Σ⁻¹ + I / s²,
// and the Fokker–Planck step it discretises (∂ρ = ∇·(ρ ∇ψ) + β⁻¹ Δρ, ∇ψ = λ g) sends N(μ, Σ) to
// N(μ - λh g, Σ + (2h/β) I) exactly. The keys are a product grid of normal quantiles mapped by μ + L z
// (L Lᵀ = Σ), n² of them: their kernel sums are a midpoint rule of the Gaussian integrals. The queries are
// few (25), so n = 200 costs little.
struct GaussianCase {
    Eigen::Vector2d mu;
    Eigen::Matrix2d Sigma;
    double lambda, beta, h;
};

Md gaussianKeys(const GaussianCase& c, int n) {
    const Eigen::Matrix2d L = c.Sigma.llt().matrixL();
    std::vector<double> z(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) z[std::size_t(i)] = normalQuantile((i + 0.5) / n);
    Md K(2, n * n);
    for (int a = 0; a < n; ++a)
        for (int b = 0; b < n; ++b)
            K.col(a * n + b) = c.mu + L * Eigen::Vector2d(z[std::size_t(a)], z[std::size_t(b)]);
    return K;
}

// The continuum layer F(x) = A x + b of the comment above.
std::pair<Eigen::Matrix2d, Eigen::Vector2d> continuumLayer(const GaussianCase& c) {
    const double s2 = 2 * c.h / c.beta;
    const Eigen::Vector2d g = c.mu.array().sign().matrix();
    const Eigen::Matrix2d I = Eigen::Matrix2d::Identity(), Si = c.Sigma.inverse();
    const Eigen::Matrix2d Pi = (Si + I / s2).inverse();
    const Eigen::Matrix2d A = 1.5 * I - 0.5 * Pi / s2;
    const Eigen::Vector2d b =
        -0.5 * c.lambda * c.h * g - 0.5 * Pi * (Si * c.mu + 0.5 * c.beta * c.lambda * g);
    return {A, b};
}

// The code's layer on queries Q beside the quantile keys, and the affine map fitted to it by least squares.
std::pair<Eigen::Matrix2d, Eigen::Vector2d> fittedLayer(const GaussianCase& c, const Md& Q, const Md& keys,
                                                        Md* out = nullptr) {
    const RwpoOptions o{.h = c.h};
    const Md y = record(Q, c.lambda, c.beta, o, &keys).y;
    if (out) *out = y;
    Md design(Q.cols(), 3);
    design << Q.transpose(), Md::Ones(Q.cols(), 1);
    const Md coef = design.colPivHouseholderQr().solve(Md(y.transpose())); // 3 x 2: [Aᵀ; bᵀ]
    return {coef.topRows(2).transpose(), coef.row(2).transpose()};
}

// Queries on a 5 x 5 grid within 1.5 standard deviations of the mean (their kernels see no grid edge).
Md centralQueries(const GaussianCase& c) {
    const Eigen::Matrix2d L = c.Sigma.llt().matrixL();
    Md Q(2, 25);
    for (int a = 0; a < 5; ++a)
        for (int b = 0; b < 5; ++b)
            Q.col(a * 5 + b) = c.mu + L * Eigen::Vector2d(0.75 * (a - 2), 0.75 * (b - 2));
    return Q;
}

TEST(FlowRwpo, GaussianThroughTheLayerIsItsContinuumAffineMap) {
    // The kernel sums over n² quantile keys are a midpoint rule of the Gaussian integrals: the code's map
    // converges to A x + b as n grows, by about 4 per doubling of n (second order in 1/n).
    Eigen::Matrix2d Sigma;
    Sigma << 0.36, 0.12, 0.12, 0.25;
    for (const double lambda : {0.0, 2.0}) { // the heat flow alone; with the L1 prior's pull
        const GaussianCase c{{2.5, -2.0}, Sigma, lambda, 1.0, kH};
        const Md Q = centralQueries(c);
        const auto [A, b] = continuumLayer(c);
        const Md expected = (A * Q).colwise() + b;
        double err[2];
        for (int k = 0; k < 2; ++k) {
            const Md keys = gaussianKeys(c, k == 0 ? 100 : 200);
            // Every key and query inside its orthant beyond λh: S and M are affine there.
            ASSERT_GT(keys.cwiseAbs().minCoeff(), 2 * lambda * kH);
            Md y;
            fittedLayer(c, Q, keys, &y);
            err[k] = (y - expected).cwiseAbs().maxCoeff();
        }
        std::printf(
            "[ rwpo ] Gaussian, lambda = %.0f: layer vs continuum affine map, max error %.1e (100² keys), "
            "%.1e (200² keys)\n",
            lambda, err[0], err[1]);
        EXPECT_GT(err[0] / err[1], 3.0) << "lambda " << lambda;
        EXPECT_LT(err[1], 5e-5) << "lambda " << lambda;
    }
}

TEST(FlowRwpo, GaussianSubStepIsTheFokkerPlanckStepToFirstOrder) {
    // The map fitted to the code's layer pushes N(μ, Σ) to N(A μ + b, A Σ Aᵀ); the exact Fokker–Planck step
    // gives N(μ - λh g, Σ + (2h/β) I). Their gap is the scheme's local error
    // (docs/math/flows.md#gaussian-step):
    //     mean        ½ λh (I - B) g = (λh²/β) Σ⁻¹ g (1 + O(s² Σ⁻¹)),      B = (I + s² Σ⁻¹)⁻¹, s² = 2h/β,
    //     covariance  -¾ s⁴ Σ⁻¹ (1 + O(s² Σ⁻¹)) = -3 (h/β)² Σ⁻¹ (...),
    // second order in h: the scheme is consistent, of order one. Each gap is checked against its leading term
    // to within 2 s² ‖Σ⁻¹‖ (the next order), at h = 1/48, 1/96, 1/192: a mistake of order h would be off by a
    // factor ~1/h.
    Eigen::Matrix2d Sigma;
    Sigma << 0.36, 0.12, 0.12, 0.25;
    const Eigen::Matrix2d Si = Sigma.inverse();
    for (const int steps : {48, 96, 192}) {
        const double h = 1.0 / steps, beta = 1.0, s2 = 2 * h / beta;
        const GaussianCase c{{2.5, -2.0}, Sigma, 2.0, beta, h};
        const Md keys = gaussianKeys(c, 200);
        const auto [A, b] = fittedLayer(c, centralQueries(c), keys);
        const Eigen::Vector2d g = c.mu.array().sign().matrix();
        const Eigen::Vector2d meanGap = A * c.mu + b - (c.mu - c.lambda * h * g);
        const Eigen::Matrix2d covGap =
            A * Sigma * A.transpose() - (Sigma + 2 * h / beta * Eigen::Matrix2d::Identity());
        const Eigen::Vector2d meanLead = c.lambda * h * h / beta * Si * g;
        const Eigen::Matrix2d covLead = -3 * (h / beta) * (h / beta) * Si;
        const double next = 2 * s2 * Si.norm();
        const double meanRel = (meanGap - meanLead).norm() / meanLead.norm();
        const double covRel = (covGap - covLead).norm() / covLead.norm();
        std::printf("[ rwpo ] Gaussian FP step, h = 1/%d: mean gap %.3e (lead %.3e, rel dev %.3f), "
                    "covariance gap %.3e (lead %.3e, rel dev %.3f), next order %.3f\n",
                    steps, meanGap.norm(), meanLead.norm(), meanRel, covGap.norm(), covLead.norm(), covRel,
                    next);
        EXPECT_LT(meanRel, next) << "h = 1/" << steps;
        EXPECT_LT(covRel, next) << "h = 1/" << steps;
    }
}

TEST(FlowRwpo, LambdaGradientWithTheActiveSetBoundaryTermMatchesFiniteDifferences) {
    // L(λ) = mean over queries of logDetTerm beside fixed keys. Each query's term jumps by Δ_i where its
    // coordinate i crosses |x_i| = λh, so dL/dλ = (pathwise part) - h Σ_i ∫_{|x_i| = λh} Δ_i ρ
    // (docs/math/flows.md#active-set-gradient). The finite difference of L over 8000 quasi-random queries
    // sees the jumps of the ≈ 2·8000·ρ·δh ≈ 130 queries per coordinate that cross; the tape sees them only
    // with activeSetGradient. The two agree within 3 % of the boundary term, which is 17–60 % of the
    // derivative here. The corrected and separable kernels, where no query folds (2000 keys, a dense cloud):
    // there Δ_i is smooth across the face. The as-printed kernel is left out: its weights spread over the
    // whole cloud, κ C_w ≈ 3, every query folds and Δ_i is the guarded log's 1/δ-steep tangent, a quantity
    // neither estimate resolves.
    const double lambda = 5, beta = 1, delta = 0.5; // λh ≈ 0.104, the threshold moves by ±δh ≈ ±0.01
    const Md Q = quasiNormal(8000, {0.1, -0.05}, 0.5), K = tokens(2, 2000, 91, 0.5);
    const auto loss = [&](double l, const RwpoOptions& o, double* grad) {
        ad::Tape<double> tape;
        Md value = scalar(l), gl = Md::Zero(1, 1);
        const auto lv = tape.parameter(value, gl);
        const auto out =
            recordRwpo(tape, tape.constant(Q), lv, tape.constant(scalar(beta)), o, tape.constant(K));
        const Vd L = ad::mean(out.logDetTerm);
        if (grad) {
            tape.backward(L);
            *grad = gl(0, 0);
        }
        return L.scalar();
    };
    for (flows::RwpoKernel kernel : {flows::RwpoKernel::Corrected, flows::RwpoKernel::Separable}) {
        for (bool exact : {false, true}) {
            RwpoOptions o{.kernel = kernel, .exactLogDet = exact, .h = kH};
            for (const double l : {lambda - delta, lambda + delta})
                ASSERT_GT(flowscope::flows::rwpoJacobianDeterminants(Q, l, beta, o, &K).minCoeff(),
                          flowscope::flows::kFoldFloor)
                    << kernelName(kernel);
            // Richardson-extrapolated central difference: the O(δ²) term of the smooth part cancels.
            const auto central = [&](double e) {
                return (loss(lambda + e, o, nullptr) - loss(lambda - e, o, nullptr)) / (2 * e);
            };
            const double fd = (4 * central(delta / 2) - central(delta)) / 3;
            double pathwise = 0, full = 0;
            loss(lambda, o, &pathwise);
            o.activeSetGradient = true;
            o.activeSetWidth = 0.01;
            loss(lambda, o, &full);
            std::printf(
                "[ rwpo ] dL/dlambda %-10s %-11s finite difference %.5f, with the boundary term %.5f, "
                "pathwise only %.5f\n",
                kernelName(kernel), exact ? "exact" : "first order", fd, full, pathwise);
            EXPECT_NEAR(full, fd, 0.03 * std::abs(fd - pathwise)) << kernelName(kernel) << " exact " << exact;
            EXPECT_GT(std::abs(fd - pathwise), 0.1 * std::abs(fd)) << kernelName(kernel); // the term matters
        }
    }
}

TEST(FlowRwpo, AsPrintedKernelHasUniformWeightsAtLambdaZero) {
    // docs/math/flows.md#kernel-typo: at λ = 0, U_lit(x, y) = -β/2 (|x-y|² - |x-y|²)/(2h) = 0, so every key
    // weighs 1/N and the layer is y = x + (x - mean(X)) / 2: no locality at all.
    const Md X = tokens(2, 64, 41, 1.0);
    const RwpoOptions o{.kernel = flows::RwpoKernel::AsPrinted, .h = kH};
    const Md y = record(X, 0.0, 1.0, o).y;
    const Md expected = X + 0.5 * (X.colwise() - X.rowwise().mean());
    const double err = maxRelative(y, expected);
    std::printf("[ rwpo ] as printed, lambda = 0: y vs uniform-weight map, rel error %.1e\n", err);
    EXPECT_LT(err, 1e-14);
}

TEST(FlowRwpo, FoldingBetweenClustersNotInsideOne) {
    // Two tight clusters at (±0.4, 0) and a query midway: its weights are bimodal, C_w ≈ 0.16 e1 e1^T along
    // the axis, κ C_11 ≈ 1.9 > 1 (κ = β/(4h) = 12), so det J_F < 0: the frozen-key map folds there.
    const double lambda = 2, beta = 1;
    Md X(2, 101);
    const Md jitter = tokens(2, 101, 51, 0.02);
    for (Index j = 0; j < 100; ++j) X.col(j) = Eigen::Vector2d(j < 50 ? -0.4 : 0.4, 0.0) + jitter.col(j);
    X.col(100) = Eigen::Vector2d(0.0, 0.0);
    RwpoOptions o{.h = kH};
    const Eigen::RowVectorXd dets = flowscope::flows::rwpoJacobianDeterminants(X, lambda, beta, o);
    const auto gap = flowscope::flows::rwpoFolding(X, lambda, beta, o);
    std::printf("[ rwpo ] folding: query between clusters det %.3f; min det %.3f, folded fraction %.3f\n",
                dets(100), gap.minDet, gap.foldedFraction);
    EXPECT_LE(dets(100), 0.0);
    EXPECT_LE(gap.minDet, 0.0);
    EXPECT_GT(gap.foldedFraction, 0.0);
    // The tape's exact log-det continues the log below the floor by its tangent: a folded token costs
    // likelihood (below log δ) instead of being credited log |det| as if the map expanded there.
    o.exactLogDet = true;
    const double folded = record(X, lambda, beta, o).logDet(0, 100);
    EXPECT_NEAR(folded, guardedLog(dets(100)), 1e-10);
    EXPECT_LT(folded, std::log(flowscope::flows::kFoldFloor));

    // One dense Gaussian cloud, variance v = 0.09 (N π s² / area ≈ 58 with area π (2σ)²): the weighted
    // covariance is about v s² / (v + s²) < s² = 2h/β in every direction, κ C_w < 1/2, so det J_F > 0.
    const Md dense = tokens(2, 500, 52, 0.3);
    const auto cloud = flowscope::flows::rwpoFolding(Eigen::MatrixXf(dense.cast<float>()), lambda, beta, o);
    std::printf(
        "[ rwpo ] folding: dense cloud min det %.3f, folded fraction %.3f, expected neighbours %.1f\n",
        cloud.minDet, cloud.foldedFraction,
        flowscope::flows::rwpoExpectedNeighbours(500, kH, beta, 3.14159265358979 * 0.6 * 0.6));
    EXPECT_GT(cloud.minDet, 0.0);
    EXPECT_EQ(cloud.foldedFraction, 0.0);
}

// --- Float, refusals, timing ---

TEST(FlowRwpo, FloatAgreesWithDouble) {
    // Two losses, each backpropagated on its own: a random linear read-out of y, and sum(logDetTerm), the
    // log-det part of the NLL. Errors are relative to the largest entry of the double result.
    //
    // Float's floor: the logits and the weighted moments are GEMMs of the raw (batch-centred) coordinates,
    // so each carries ~eps |y|² while the quantities that matter are local, of size s² = 2h/β ≈ 0.04 (and
    // κ = β/(4h) = 12 multiplies the variances). The outputs and dX stay near 1e-5; the gradients of the
    // scalar λ and β through the log-det, sums over N² such entries, reach ~1e-4, hence 1e-3 for those two.
    const Index N = 1024;
    const double lambda = 2, beta = 1;
    const Md X = tokens(2, N, 61, 1.0);
    const Md Wy = tokens(2, N, 62, 1.0);
    for (flows::RwpoKernel kernel : kKernels) {
        for (bool exact : {false, true}) {
            const RwpoOptions o{.kernel = kernel, .exactLogDet = exact, .h = kH};
            // {y, logDetTerm, then d/dX, d/dλ, d/dβ of the y read-out, then of sum(logDetTerm)}.
            auto run = [&](auto zero) {
                using S = decltype(zero);
                ad::Tape<S> tape;
                const auto x = tape.input(X.cast<S>()), l = tape.input(scalar(lambda).cast<S>()),
                           b = tape.input(scalar(beta).cast<S>());
                const auto out = recordRwpo(tape, x, l, b, o);
                std::vector<Md> r = {out.y.value().template cast<double>(),
                                     out.logDetTerm.value().template cast<double>()};
                for (const ad::Var<S> loss :
                     {ad::sum(ad::mul(out.y, tape.constant(Wy.cast<S>()))), ad::sum(out.logDetTerm)}) {
                    tape.backward(loss);
                    for (const ad::Var<S> v : {x, l, b}) r.push_back(tape.grad(v).template cast<double>());
                }
                return r;
            };
            const std::vector<Md> f = run(0.0f), dd = run(0.0);
            const char* names[] = {"y",        "logDet", "y: dX",       "y: dlambda",
                                   "y: dbeta", "ld: dX", "ld: dlambda", "ld: dbeta"};
            const double tolerance[] = {1e-4, 1e-4, 1e-4, 1e-4, 1e-4, 1e-4, 1e-3, 1e-3};
            std::printf("[ rwpo ] float vs double, N = 1024, %-10s %-11s", kernelName(kernel),
                        exact ? "exact" : "first order");
            for (int k = 0; k < 8; ++k) {
                const double err = maxRelative(f[k], dd[k]);
                std::printf(" %s %.1e", names[k], err);
                EXPECT_LT(err, tolerance[k]) << kernelName(kernel) << " " << names[k];
            }
            std::printf("\n");
        }
    }
}

TEST(FlowRwpo, RejectsWhatItCannotDo) {
    ad::Tape<double> tape;
    const auto X3 = tape.constant(tokens(3, 8, 71, 1.0)), l = tape.constant(scalar(1)),
               b = tape.constant(scalar(1));
    RwpoOptions o{.exactLogDet = true};
    EXPECT_NO_THROW(recordRwpo(tape, X3, l, b, o)); // vector kernel, d = 3: cofactors
    const auto X4 = tape.constant(tokens(4, 8, 75, 1.0));
    EXPECT_THROW(recordRwpo(tape, X4, l, b, o), std::invalid_argument); // vector kernel, d = 4
    o.kernel = flows::RwpoKernel::Separable;
    EXPECT_NO_THROW(recordRwpo(tape, X3, l, b, o)); // diagonal: any d
    o.leaveOneOut = true;
    EXPECT_THROW(recordRwpo(tape, tape.constant(tokens(3, 1, 72, 1.0)), l, b, o), std::invalid_argument);
    EXPECT_THROW(recordRwpo(tape, X3, tape.constant(scalar(-1)), b, RwpoOptions{}), std::invalid_argument);
    EXPECT_THROW(recordRwpo(tape, X3, l, tape.constant(scalar(0)), RwpoOptions{}), std::invalid_argument);
    // Separate keys: the queries' dimension, and no leave-one-out (there is no own key to leave out).
    EXPECT_THROW(recordRwpo(tape, X3, l, b, RwpoOptions{}, tape.constant(tokens(2, 8, 73, 1.0))),
                 std::invalid_argument);
    EXPECT_THROW(recordRwpo(tape, X3, l, b, o, tape.constant(tokens(3, 8, 74, 1.0))), std::invalid_argument);
}

TEST(FlowRwpo, TimeOfRecordAndBackwardFloat) {
    // Not asserted (performance is measured by benchmarks, not asserted): feeds a 35 ms per-iteration budget
    // for 8 layers.
    const Index N = 1024;
    const ad::Matrix<float> X = tokens(2, N, 81, 1.0).cast<float>();
    ad::Matrix<float> lambda = ad::Matrix<float>::Constant(1, 1, 2),
                      beta = ad::Matrix<float>::Constant(1, 1, 1);
    ad::Matrix<float> gl, gb;
    ad::Tape<float> tape;
    for (bool exact : {false, true}) {
        const RwpoOptions o{.exactLogDet = exact, .h = kH};
        double best = 1e30;
        for (int rep = 0; rep < 6; ++rep) {
            const auto start = std::chrono::steady_clock::now();
            tape.clear();
            const auto x = tape.input(X);
            const auto out = recordRwpo(tape, x, tape.parameter(lambda, gl), tape.parameter(beta, gb), o);
            tape.backward(ad::add(ad::sumSquares(out.y), ad::sum(out.logDetTerm)));
            best = std::min(
                best,
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
        }
        std::printf(
            "[ rwpo ] float record + backward, N = 1024, d = 2, corrected, %s: best %.2f ms (x 8 layers "
            "= %.1f ms)\n",
            exact ? "exact log-det" : "first order", best, 8 * best);
    }
}
