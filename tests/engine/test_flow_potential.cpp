// The OT-Flow potential: the recorded ∇Φ and ΔΦ against finite differences of the recorded Φ, the quadratic
// part against its closed form, every parameter's and s's gradient of a loss built from all outputs against
// finite differences (GradCheck.h), float against double, the initialization, and a timing print.
#include "TestUtil.h"

#include "engine/autodiff/GradCheck.h"
#include "engine/flows/Potential.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>

namespace ad = flowscope::ad;
namespace flows = flowscope::flows;
using ad::Index;
using Md = ad::Matrix<double>;
using Mf = ad::Matrix<float>;
using Params = flows::PotentialParams<double>;

// --- Helpers and the composed float64 reference ---

namespace {

using flowscope::test::randn;

// OT-Flow's initialization with w, c and b randomized too, so that no term of Φ is trivially 1 or 0.
Params randomParams(int d, int m, int nTh, std::uint64_t seed) {
    Params p = Params::init(d, m, nTh, seed);
    p.w = randn(m, 1, seed + 1);
    p.c = randn(d + 1, 1, seed + 2, 0.5);
    p.b = randn(1, 1, seed + 3);
    return p;
}

struct Eval {
    Md phi, grad, lap;
};

template <class S> Eval evaluate(const flows::PotentialParams<S>& p, const ad::Matrix<S>& s) {
    ad::Tape<S> tape;
    const auto out = flows::recordPotential(tape, flows::bindConstant(tape, p), tape.constant(s));
    return {out.phi.value().template cast<double>(), out.grad.value().template cast<double>(),
            out.lap.value().template cast<double>()};
}

// max |a - b| / max |b|
double relError(const Md& a, const Md& b) {
    return (a - b).cwiseAbs().maxCoeff() / std::max(b.cwiseAbs().maxCoeff(), 1e-300);
}

// d/d s_k of f(s) for every column at once (columns are independent samples): Richardson-extrapolated central
// differences, error O(h^4).
template <class F> Md columnDerivative(F f, const Md& s, Index k, double h) {
    auto central = [&](double step) {
        Md sp = s, sm = s;
        sp.row(k).array() += step;
        sm.row(k).array() -= step;
        return Md((f(sp) - f(sm)) / (2 * step));
    };
    return (4 * central(h / 2) - central(h)) / 3;
}

// The potential as it was first recorded: one elementary tape op per term of the recursions
// (docs/math/flows.md#potential), no fused ops. Kept as the float64 reference that the recording in
// Potential.cpp, which fuses some of these steps for speed, must reproduce to rounding, values and gradients.
flows::PotentialOutputs<double> composedPotential(ad::Tape<double>& /*tape*/,
                                                  const flows::BoundPotential<double>& p, ad::Var<double> s,
                                                  bool hessian) {
    using Var = ad::Var<double>;
    const Index d = p.K0.cols() - 1, B = s.cols();
    const int M = int(p.K.size());
    const double h = 1.0 / M;
    std::vector<Var> T(std::size_t(M) + 1);
    Var a = ad::addCol(ad::matmul(p.K0, s), p.b0);
    Var u = ad::logCosh(a);
    T[0] = ad::tanh(a);
    for (int i = 1; i <= M; ++i) {
        a = ad::addCol(ad::matmul(p.K[std::size_t(i) - 1], u), p.bias[std::size_t(i) - 1]);
        u = ad::add(u, ad::scale(ad::logCosh(a), h));
        T[std::size_t(i)] = ad::tanh(a);
    }
    const Var As = ad::matmul(p.A, s);
    Var phi = ad::add(ad::matmulTN(p.w, u), ad::scale(ad::colSumSquares(As), 0.5));
    phi = ad::addScalar(ad::add(phi, ad::matmulTN(p.c, s)), p.b);
    std::vector<Var> z(std::size_t(M) + 1);
    auto timesZ = [&](Var x, int k) {
        return k == M + 1 ? ad::mulCol(x, p.w) : ad::mul(x, z[std::size_t(k)]);
    };
    for (int i = M; i >= 1; --i) {
        const Var step =
            ad::scale(ad::matmulTN(p.K[std::size_t(i) - 1], timesZ(T[std::size_t(i)], i + 1)), h);
        z[std::size_t(i)] = i == M ? ad::addCol(step, p.w) : ad::add(step, z[std::size_t(i) + 1]);
    }
    const Var z0 = ad::matmulTN(p.K0, timesZ(T[0], 1));
    const Var grad = ad::addCol(ad::add(z0, ad::matmulTN(p.A, As)), p.c);
    auto sigma2 = [](Var t) { return ad::addScalar(ad::neg(ad::square(t)), 1.0); };
    auto repeat = [d](Var x) { return d == 1 ? x : ad::hstack(std::vector<Var>(std::size_t(d), x)); };
    std::vector<Var> H(hessian ? std::size_t(d * (d + 1) / 2) : 0);
    auto accumulate = [&](Index a, Index b, Var term) {
        Var& entry = H[std::size_t(flows::hessianIndex(int(a), int(b), int(d)))];
        entry = entry.tape ? ad::add(entry, term) : term;
    };
    const Var K0x = ad::cols(p.K0, 0, d);
    const Var w0 = timesZ(sigma2(T[0]), 1);
    Var lap = ad::matmulTN(ad::rowSum(ad::square(K0x)), w0);
    for (Index a = 0; hessian && a < d; ++a)
        for (Index b = a; b < d; ++b)
            accumulate(a, b, ad::matmulTN(ad::mul(ad::cols(K0x, a, 1), ad::cols(K0x, b, 1)), w0));
    std::vector<Var> J0;
    for (Index j = 0; j < d; ++j) J0.push_back(ad::mulCol(T[0], ad::cols(K0x, j, 1)));
    Var J = d == 1 ? J0[0] : ad::hstack(J0);
    for (int i = 1; i <= M; ++i) {
        const Var P = ad::matmul(p.K[std::size_t(i) - 1], J);
        const Var wi = timesZ(sigma2(T[std::size_t(i)]), i + 1);
        const Var q = ad::colSum(ad::mul(repeat(wi), ad::square(P)));
        Var ti = ad::cols(q, 0, B);
        for (Index j = 1; j < d; ++j) ti = ad::add(ti, ad::cols(q, j * B, B));
        lap = ad::add(lap, ad::scale(ti, h));
        for (Index a = 0; hessian && a < d; ++a) {
            accumulate(a, a, ad::scale(ad::cols(q, a * B, B), h));
            for (Index b = a + 1; b < d; ++b) {
                const Var Pab = ad::mul(ad::cols(P, a * B, B), ad::cols(P, b * B, B));
                accumulate(a, b, ad::scale(ad::colSum(ad::mul(wi, Pab)), h));
            }
        }
        if (i < M) J = ad::add(J, ad::scale(ad::mul(repeat(T[std::size_t(i)]), P), h));
    }
    const Var Ax = ad::cols(p.A, 0, d);
    lap = ad::addScalar(lap, ad::sumSquares(Ax));
    for (Index a = 0; hessian && a < d; ++a)
        for (Index b = a; b < d; ++b) {
            Var& entry = H[std::size_t(flows::hessianIndex(int(a), int(b), int(d)))];
            entry = ad::addScalar(entry, ad::sum(ad::mul(ad::cols(Ax, a, 1), ad::cols(Ax, b, 1))));
        }
    return {phi, grad, lap, H};
}

struct Config {
    int d, nTh;
};
const Config kConfigs[] = {{2, 2}, {2, 3}, {3, 2}, {3, 3}, {1, 3}}; // d = 1: J is a single block
constexpr int kWidth = 8;
constexpr Index kBatch = 7;

} // namespace

// --- Derivatives against finite differences and closed forms ---

TEST(FlowPotential, GradientMatchesCentralDifferences) {
    for (const Config& cfg : kConfigs) {
        const Params p = randomParams(cfg.d, kWidth, cfg.nTh, 10 + cfg.d * 10 + cfg.nTh);
        const Md s = randn(cfg.d + 1, kBatch, 7);
        const Eval e = evaluate(p, s);
        Md fd(cfg.d + 1, kBatch);
        for (Index k = 0; k <= cfg.d; ++k)
            fd.row(k) = columnDerivative([&](const Md& x) { return evaluate(p, x).phi; }, s, k, 1e-3);
        const double err = relError(e.grad, fd);
        std::printf("  d = %d, nTh = %d: |grad - fd| / |grad| = %.2e\n", cfg.d, cfg.nTh, err);
        EXPECT_LT(err, 1e-7) << "d = " << cfg.d << ", nTh = " << cfg.nTh;
    }
}

TEST(FlowPotential, LaplacianIsTraceOfGradientJacobian) {
    for (const Config& cfg : kConfigs) {
        const Params p = randomParams(cfg.d, kWidth, cfg.nTh, 20 + cfg.d * 10 + cfg.nTh);
        const Md s = randn(cfg.d + 1, kBatch, 8);
        const Eval e = evaluate(p, s);
        Md trace = Md::Zero(1, kBatch), second = Md::Zero(1, kBatch);
        const Md phi0 = e.phi;
        for (Index j = 0; j < cfg.d; ++j) {
            // Column j of the Jacobian of the recorded ∇_xΦ, its diagonal entry j.
            trace +=
                columnDerivative([&](const Md& x) { return Md(evaluate(p, x).grad.row(j)); }, s, j, 1e-3);
            // The second difference of Φ, Richardson-extrapolated.
            auto d2 = [&](double h) {
                Md sp = s, sm = s;
                sp.row(j).array() += h;
                sm.row(j).array() -= h;
                return Md((evaluate(p, sp).phi - 2 * phi0 + evaluate(p, sm).phi) / (h * h));
            };
            second += (4 * d2(5e-3) - d2(1e-2)) / 3;
        }
        const double errTrace = relError(e.lap, trace), errSecond = relError(e.lap, second);
        std::printf(
            "  d = %d, nTh = %d: vs trace of Jacobian of grad %.2e, vs second difference of phi %.2e\n",
            cfg.d, cfg.nTh, errTrace, errSecond);
        EXPECT_LT(errTrace, 1e-6) << "d = " << cfg.d << ", nTh = " << cfg.nTh;
        EXPECT_LT(errSecond, 1e-6) << "d = " << cfg.d << ", nTh = " << cfg.nTh;
    }
}

TEST(FlowPotential, HessianIsTheJacobianOfTheGradient) {
    for (const Config& cfg : kConfigs) {
        const Params p = randomParams(cfg.d, kWidth, cfg.nTh, 60 + cfg.d * 10 + cfg.nTh);
        const Md s = randn(cfg.d + 1, kBatch, 13);
        ad::Tape<double> tape;
        const auto out = flows::recordPotential(tape, flows::bindConstant(tape, p), tape.constant(s), true);
        ASSERT_EQ(out.hessian.size(), std::size_t(cfg.d * (cfg.d + 1) / 2));
        Md trace = Md::Zero(1, kBatch);
        double worst = 0.0;
        for (int a = 0; a < cfg.d; ++a) {
            trace += out.hessian[std::size_t(flows::hessianIndex(a, a, cfg.d))].value();
            for (int b = a; b < cfg.d; ++b) {
                const Md& H = out.hessian[std::size_t(flows::hessianIndex(a, b, cfg.d))].value();
                // ∂_b (∇Φ)_a and, by symmetry, ∂_a (∇Φ)_b.
                const Md fdBA =
                    columnDerivative([&](const Md& x) { return Md(evaluate(p, x).grad.row(a)); }, s, b, 1e-3);
                const Md fdAB =
                    columnDerivative([&](const Md& x) { return Md(evaluate(p, x).grad.row(b)); }, s, a, 1e-3);
                worst = std::max({worst, relError(H, fdBA), relError(H, fdAB)});
            }
        }
        std::printf("  d = %d, nTh = %d: |H - Jacobian of grad| / |H| = %.2e\n", cfg.d, cfg.nTh, worst);
        EXPECT_LT(worst, 1e-6) << "d = " << cfg.d << ", nTh = " << cfg.nTh;
        EXPECT_LT(relError(trace, out.lap.value()), 1e-13); // its trace is the Laplacian
    }
}

TEST(FlowPotential, QuadraticPartIsExact) {
    for (const Config& cfg : kConfigs) {
        Params p = randomParams(cfg.d, kWidth, cfg.nTh, 30 + cfg.d * 10 + cfg.nTh);
        p.w.setZero();
        const Md s = randn(cfg.d + 1, kBatch, 9, 2.0);
        const Eval e = evaluate(p, s);
        const Md AtA = p.A.transpose() * p.A;
        const Md phi = (0.5 * (s.array() * (AtA * s).array()).colwise().sum()).matrix() +
                       p.c.transpose() * s + Md::Constant(1, kBatch, p.b(0, 0));
        const Md grad = (AtA * s).colwise() + p.c.col(0);
        const Md lap = Md::Constant(1, kBatch, AtA.topLeftCorner(cfg.d, cfg.d).trace());
        EXPECT_LT(relError(e.phi, phi), 1e-14);
        EXPECT_LT(relError(e.grad, grad), 1e-14);
        EXPECT_LT(relError(e.lap, lap), 1e-14);
    }
}

// L = mean(Φ) + mean(‖∇Φ‖²) + mean((ΔΦ)²) + Σ mean(H_ab²) + mean(∂tΦ · x_0): every output reaches the loss,
// and through it every parameter and s.
TEST(FlowPotential, LossGradientsMatchFiniteDifferences) {
    for (const Config& cfg : kConfigs) {
        const Params p = randomParams(cfg.d, kWidth, cfg.nTh, 40 + cfg.d * 10 + cfg.nTh);
        std::vector<Md> inputs;
        p.forEach([&](const Md& v, const std::string&) { inputs.push_back(v); });
        inputs.push_back(randn(cfg.d + 1, 5, 11));
        const int blocks = p.blockCount();
        const Index d = cfg.d;
        const auto loss = [&](ad::Tape<double>& tape, const std::vector<ad::Var<double>>& v) {
            const auto bound = flows::BoundPotential<double>::fromList(
                std::vector<ad::Var<double>>(v.begin(), v.begin() + blocks));
            const auto s = v.back();
            const auto out = flows::recordPotential(tape, bound, s, true);
            auto L = ad::add(ad::mean(out.phi), ad::mean(ad::colSumSquares(out.grad)));
            L = ad::add(L, ad::mean(ad::square(out.lap)));
            for (const auto& entry : out.hessian) L = ad::add(L, ad::mean(ad::mul(entry, entry)));
            return ad::add(L, ad::mean(ad::mul(ad::rows(out.grad, d, 1), ad::rows(s, 0, 1))));
        };
        const ad::GradCheckResult r = ad::gradCheck(loss, inputs);
        std::printf("  d = %d, nTh = %d: %d entries, max rel error %.2e (raw %.2e) at input %d (%s)\n", cfg.d,
                    cfg.nTh, r.checked, r.maxRelError, r.maxRawRelError, r.input,
                    r.input < blocks ? p.blockName(r.input).c_str() : "s");
        EXPECT_LT(r.maxRelError, 1e-6) << "d = " << cfg.d << ", nTh = " << cfg.nTh << ", input " << r.input;
    }
}

// --- The fused recording against the reference; float against double ---

// The recording against the composed reference above, in double: every output, and the gradient of a random
// linear functional of all of them (phi, grad, lap, each Hessian entry) with respect to every parameter block
// and to s. The two differ only in how the same sums are grouped, so they agree to rounding (1e-12 relative).
// Without Φ's value (value = false) the functional leaves phi out, on both sides.
TEST(FlowPotential, RecordingMatchesTheComposedReference) {
    for (const Config& cfg : kConfigs)
        for (int variant = 0; variant < 4; ++variant) {
            const bool hessian = variant % 2 == 1, value = variant < 2;
            const Params p = randomParams(cfg.d, kWidth, cfg.nTh, 80 + cfg.d * 10 + cfg.nTh);
            const Md s = randn(cfg.d + 1, 33, 15);
            struct Run {
                std::vector<Md> outputs, grads;
            };
            auto run = [&](bool reference) {
                ad::Tape<double> tape;
                std::vector<ad::Var<double>> vars;
                p.forEach([&](const Md& v, const std::string&) { vars.push_back(tape.input(v)); });
                const auto x = tape.input(s);
                const auto bound = flows::BoundPotential<double>::fromList(vars);
                const auto out = reference ? composedPotential(tape, bound, x, hessian)
                                           : flows::recordPotential(tape, bound, x, hessian, value);
                EXPECT_EQ(out.phi.tape != nullptr, reference || value);
                std::vector<ad::Var<double>> all = {out.grad, out.lap};
                if (value) all.push_back(out.phi);
                all.insert(all.end(), out.hessian.begin(), out.hessian.end());
                Run r;
                ad::Var<double> L;
                for (std::size_t k = 0; k < all.size(); ++k) {
                    r.outputs.push_back(all[k].value());
                    const Md weights = randn(all[k].rows(), all[k].cols(), 100 + k);
                    const auto term = ad::sum(ad::mul(all[k], tape.constant(weights)));
                    L = L.tape ? ad::add(L, term) : term;
                }
                tape.backward(L);
                vars.push_back(x);
                for (const auto& v : vars) r.grads.push_back(tape.grad(v));
                return r;
            };
            const Run fused = run(false), reference = run(true);
            ASSERT_EQ(fused.outputs.size(), reference.outputs.size());
            for (std::size_t k = 0; k < fused.outputs.size(); ++k)
                EXPECT_LT(relError(fused.outputs[k], reference.outputs[k]), 1e-12)
                    << "output " << k << ", d = " << cfg.d << ", nTh = " << cfg.nTh << ", variant "
                    << variant;
            for (std::size_t k = 0; k < fused.grads.size(); ++k)
                EXPECT_LT(relError(fused.grads[k], reference.grads[k]), 1e-12)
                    << (int(k) < p.blockCount() ? p.blockName(int(k)) : std::string("s")) << ", d = " << cfg.d
                    << ", nTh = " << cfg.nTh << ", variant " << variant;
        }
}

// bind() accumulates into the gradient container exactly the tape's gradients of the same blocks bound as
// inputs; bindConstant() gives the same values.
TEST(FlowPotential, BindAccumulatesParameterGradients) {
    const Params p = randomParams(2, kWidth, 3, 50);
    const Md s = randn(3, kBatch, 12);
    Params grads; // empty: bind() shapes it
    ad::Tape<double> tape;
    for (int pass = 0; pass < 2; ++pass) { // two backward passes accumulate
        tape.clear();
        const auto out = flows::recordPotential(tape, flows::bind(tape, p, grads), tape.constant(s));
        tape.backward(ad::add(ad::mean(out.phi), ad::mean(ad::square(out.lap))));
    }
    ASSERT_TRUE(grads.sameShape(p));

    ad::Tape<double> ref;
    std::vector<ad::Var<double>> vars;
    p.forEach([&](const Md& v, const std::string&) { vars.push_back(ref.input(v)); });
    const auto out =
        flows::recordPotential(ref, flows::BoundPotential<double>::fromList(vars), ref.constant(s));
    ref.backward(ad::add(ad::mean(out.phi), ad::mean(ad::square(out.lap))));
    for (int k = 0; k < p.blockCount(); ++k)
        EXPECT_LT(relError(grads.block(k), 2 * ref.grad(vars[std::size_t(k)])), 1e-15) << p.blockName(k);

    const Eval e = evaluate(p, s);
    EXPECT_EQ(e.phi, out.phi.value());
    EXPECT_EQ(e.lap, out.lap.value());
}

TEST(FlowPotential, FloatMatchesDouble) {
    const int d = 2, m = 32;
    for (int nTh : {2, 3}) {
        const Params p = randomParams(d, m, nTh, 60 + nTh);
        const Md s = randn(d + 1, 1024, 13);
        const flows::PotentialParams<float> pf = p.cast<float>();
        const Eval ed = evaluate(p, s), ef = evaluate(pf, Mf(s.cast<float>()));
        EXPECT_LT(relError(ef.phi, ed.phi), 1e-4) << "nTh = " << nTh;
        EXPECT_LT(relError(ef.grad, ed.grad), 1e-4) << "nTh = " << nTh;
        EXPECT_LT(relError(ef.lap, ed.lap), 1e-4) << "nTh = " << nTh;
        std::printf("  nTh = %d: float vs double: phi %.1e, grad %.1e, lap %.1e\n", nTh,
                    relError(ef.phi, ed.phi), relError(ef.grad, ed.grad), relError(ef.lap, ed.lap));

        // The parameter gradients of a loss of all outputs, block by block.
        auto paramGrads = [&](auto params, const auto& S) {
            using T = typename decltype(params)::Matrix::Scalar;
            decltype(params) grads;
            ad::Tape<T> tape;
            const auto out = flows::recordPotential(tape, flows::bind(tape, params, grads), tape.constant(S));
            auto L = ad::add(ad::mean(out.phi), ad::mean(ad::colSumSquares(out.grad)));
            tape.backward(ad::add(L, ad::mean(ad::square(out.lap))));
            return grads.template cast<double>();
        };
        const Params gd = paramGrads(p, s), gf = paramGrads(pf, Mf(s.cast<float>()));
        double worst = 0;
        for (int k = 0; k < p.blockCount(); ++k) worst = std::max(worst, relError(gf.block(k), gd.block(k)));
        std::printf("  nTh = %d: float vs double parameter gradients: %.1e\n", nTh, worst);
        EXPECT_LT(worst, 1e-4) << "nTh = " << nTh;
    }
}

// --- Initialization and timing ---

TEST(FlowPotential, InitFollowsOtFlow) {
    const int d = 2, m = 16, nTh = 3;
    const Params p = Params::init(d, m, nTh, 5);
    const flows::PotentialDims dims = p.dims();
    EXPECT_EQ(dims.d, d);
    EXPECT_EQ(dims.m, m);
    EXPECT_EQ(dims.nTh, nTh);
    EXPECT_EQ(dims.r, 3);
    EXPECT_EQ(Params::init(20, 4, 2, 0).dims().r, 10);
    EXPECT_EQ(p.parameterCount(), m * (d + 1) + m + 2 * (m * m + m) + m + 3 * (d + 1) + (d + 1) + 1);
    EXPECT_EQ(Params::init(2, 32, 2, 0).parameterCount(), 1229); // OT-Flow's count (docs/math/flows.md)

    std::vector<std::string> names;
    p.forEach([&](const Md&, const std::string& name) { names.push_back(name); });
    EXPECT_EQ(names, (std::vector<std::string>{"K0", "b0", "K1", "b1", "K2", "b2", "w", "A", "c", "b"}));

    auto within = [](const Md& x, double bound) { return x.cwiseAbs().maxCoeff() <= bound; };
    EXPECT_TRUE(within(p.K0, 1 / std::sqrt(d + 1.0)));
    EXPECT_TRUE(within(p.b0, 1 / std::sqrt(d + 1.0)));
    for (int i = 0; i < nTh - 1; ++i) {
        EXPECT_TRUE(within(p.K[i], 1 / std::sqrt(double(m))));
        EXPECT_TRUE(within(p.bias[i], 1 / std::sqrt(double(m))));
    }
    EXPECT_NE(p.K[0], p.K[1]); // drawn independently
    EXPECT_TRUE(within(p.A, std::sqrt(6.0 / (3 + d + 1))));
    EXPECT_EQ(p.w, Md::Ones(m, 1));
    EXPECT_EQ(p.c, Md::Zero(d + 1, 1));
    EXPECT_EQ(p.b, Md::Zero(1, 1));

    EXPECT_EQ(Params::init(d, m, nTh, 5).A, p.A); // seeded
    EXPECT_NE(Params::init(d, m, nTh, 6).A, p.A);
    EXPECT_EQ(p.cast<float>().cast<double>().K0, p.K0.cast<float>().cast<double>());
    EXPECT_THROW(Params::init(2, 8, 1, 0), std::invalid_argument);
    EXPECT_THROW(Params::init(0, 8, 2, 0), std::invalid_argument);

    ad::Tape<double> tape;
    EXPECT_THROW(flows::recordPotential(tape, flows::bindConstant(tape, p), tape.constant(Md::Zero(2, 4))),
                 std::invalid_argument);
}

// Not a check: the cost of one Φ evaluation in a training step (record + backward, float, B = 1024, d = 2,
// m = 32, nTh = 2), for the 35 ms budget of a step in which 8 layers each evaluate Φ once.
TEST(FlowPotential, TimingPrint) {
    const int d = 2;
    const flows::PotentialParams<float> p = randomParams(d, 32, 2, 70).cast<float>();
    flows::PotentialParams<float> grads = p.zerosLike();
    const Mf s = randn(d + 1, 1024, 14).cast<float>();
    ad::Tape<float> tape;
    double best = 1e30, bestRecord = 1e30;
    int nodes = 0;
    for (int run = 0; run < 30; ++run) {
        const auto t0 = std::chrono::steady_clock::now();
        tape.clear();
        const auto x = tape.input(s);
        const auto out = flows::recordPotential(tape, flows::bind(tape, p, grads), x);
        auto L = ad::add(ad::mean(out.phi), ad::mean(ad::colSumSquares(out.grad)));
        L = ad::add(L, ad::mean(ad::square(out.lap)));
        const auto t1 = std::chrono::steady_clock::now();
        tape.backward(L);
        const auto t2 = std::chrono::steady_clock::now();
        nodes = tape.size();
        best = std::min(best, std::chrono::duration<double, std::milli>(t2 - t0).count());
        bestRecord = std::min(bestRecord, std::chrono::duration<double, std::milli>(t1 - t0).count());
    }
    std::printf(
        "  float, B = 1024, d = 2, m = 32, nTh = 2: record + backward %.3f ms (record %.3f ms), %d nodes\n",
        best, bestRecord, nodes);
}
