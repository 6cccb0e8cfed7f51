// Closed forms of the newer theory as oracles (docs/math/theory.md): the equiangular reduction of softmax
// attention with Q = K = V = I against the particle simulation.
#include "../DenseAttention.h"
#include "TestUtil.h"

#include "engine/dynamics/CausalParking.h"
#include "engine/dynamics/Equiangular.h"
#include "engine/dynamics/HardmaxCells.h"
#include "engine/dynamics/Simulation.h"
#include "engine/dynamics/Staircase.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <iostream>

using namespace flowscope;
using namespace flowscope::test;

namespace {

// n orthonormal tokens e_1 .. e_n in d = n: every pairwise cosine is 0, every radius 1.
Scene orthonormalScene(int n, double beta, double T, int steps) {
    Scene s;
    s.name = "equiangular";
    s.d = n;
    s.n = n;
    s.precision = Precision::Float64;
    s.initial.kind = InitKind::Points;
    s.initial.points = Tokens::Identity(n, n);
    s.attention.beta = beta;
    s.attention.heads = {{Mat::Identity(n, n), Mat::Identity(n, n), Mat::Identity(n, n)}};
    s.integrator.method = Method::DormandPrince;
    s.integrator.T = T;
    s.integrator.steps = steps;
    s.integrator.rtol = 1e-12;
    s.integrator.atol = 1e-14;
    s.output.entropy = false;
    return s;
}

// The largest |simulated mean cosine - rho(t)| over the recorded frames of a run.
double worstGap(const Scene& s, const Equiangular& start) {
    Simulation sim(s);
    sim.run();
    EXPECT_FALSE(sim.event().has_value());
    std::vector<double> times, measured;
    for (const Frame& f : sim.history()) {
        times.push_back(f.t);
        measured.push_back(f.obs.meanCosine);
    }
    const std::vector<double> rho =
        equiangularRho(normalizationOf(s.attention), s.n, s.attention.beta, start, times);
    double worst = 0.0;
    for (std::size_t k = 0; k < rho.size(); ++k) worst = std::max(worst, std::abs(measured[k] - rho[k]));
    std::cout << "[ equiang. ] " << toString(normalizationOf(s.attention)) << " n " << s.n << " beta "
              << s.attention.beta << ": rho " << rho.front() << " -> " << rho.back() << ", worst gap "
              << worst << "\n";
    // The run must have moved: the oracle is not met by standing still.
    EXPECT_GT(rho.back() - rho.front(), 0.2) << "beta " << s.attention.beta;
    return worst;
}

} // namespace

TEST(Theory, MeanCosineIsThePairAverage) {
    const Tokens X = randomTokens(7, 3, 5);
    double sum = 0.0;
    for (int i = 0; i < 7; ++i)
        for (int j = 0; j < 7; ++j)
            if (i != j) sum += X.row(i).dot(X.row(j)) / (X.row(i).norm() * X.row(j).norm());
    EXPECT_NEAR(meanCosine(X), sum / 42.0, 1e-14);
    EXPECT_TRUE(std::isnan(meanCosine(X.topRows(1))));
}

// The post-LN reduced ODE's right-hand side is the sphere field's own: d<x_1, x_2>/dt from one velocity
// evaluation at an equiangular configuration (docs/math/theory.md#equiangular).
TEST(Theory, EquiangularRateIsTheSphereFieldsDerivative) {
    for (double beta : {1.0, 4.0, 9.0})
        for (double rho : {-0.1, 0.0, 0.3, 0.8}) {
            const int n = 5;
            // n unit vectors with pairwise cosine rho: the Cholesky factor of the Gram matrix.
            const Mat G = (1.0 - rho) * Mat::Identity(n, n) + rho * Mat::Ones(n, n);
            const Tokens X = Mat(G.llt().matrixL());
            Scene s = orthonormalScene(n, beta, 1.0, 1);
            s.attention.sphere = true;
            Tokens V;
            makeCpuField(s.attention, n, Precision::Float64)->velocity(0.0, X, V);
            const double derivative = V.row(0).dot(X.row(1)) + X.row(0).dot(V.row(1));
            EXPECT_NEAR(equiangularRate(Normalization::Post, n, beta, {rho, 1.0}).rho, derivative, 1e-14)
                << "beta " << beta << ", rho " << rho;
        }
}

// Item 5 of the theory issue: n orthonormal tokens in d = n on the sphere stay equiangular, and their mean
// cosine follows the reduced ODE to 1e-9 (both sides adaptive float64 at tight tolerances).
TEST(Theory, PostLnEquiangularOdeMatchesTheSimulation) {
    const struct { double beta, T; } cases[] = {{1.0, 6.0}, {4.0, 12.0}, {9.0, 400.0}};
    for (int n : {3, 6})
        for (const auto& c : cases) {
            Scene s = orthonormalScene(n, c.beta, c.T, 80);
            s.attention.sphere = true;
            EXPECT_LE(worstGap(s, {0.0, 1.0}), 1e-9) << "n " << n << ", beta " << c.beta;
        }
}

// ---------------------------------------------------------------------------------------------------------
// Normalization schemes and positional decay against dense float64 references written from the formulas

namespace {

AttentionSpec twoRandomHeads(int d, std::uint64_t seed) {
    AttentionSpec a;
    a.beta = 1.3;
    for (int h = 0; h < 2; ++h)
        a.heads.push_back({randomTokens(d, d, seed + 3 * h, 0.7), randomTokens(d, d, seed + 3 * h + 1, 0.7),
                           randomTokens(d, d, seed + 3 * h + 2, 0.7)});
    return a;
}

} // namespace

// Item 1: each scheme's velocity, on tokens of random radii and two random heads, masked or not.
TEST(Theory, NormalizationSchemesMatchTheirFormulas) {
    const int n = 11, d = 3;
    Tokens X = randomTokens(n, d, 21);
    for (Eigen::Index i = 0; i < n; ++i) X.row(i) *= 0.2 + 0.3 * double(i); // radii 0.2 .. 3.2 times |g|
    for (Normalization scheme :
         {Normalization::None, Normalization::Post, Normalization::Pre, Normalization::Peri})
        for (bool masked : {false, true}) {
            SCOPED_TRACE(std::string(toString(scheme)) + (masked ? ", masked" : ""));
            AttentionSpec a = twoRandomHeads(d, 7);
            a.masked = masked;
            a.sphere = scheme == Normalization::Post;
            a.normalization = a.sphere ? Normalization::None : scheme;
            // Post-LN runs on the sphere: the simulation keeps its tokens there.
            const Tokens at = scheme == Normalization::Post ? directionsOf(X) : X;
            Tokens V;
            makeCpuField(a, d, Precision::Float64)->velocity(0.0, at, V);
            expectMat(V, denseVelocity(at, a), 1e-13);
        }
}

// A code-built spec that sets both `sphere` and another scheme is refused, naming the field.
TEST(Theory, SphereAndAnotherSchemeAreRefused) {
    AttentionSpec a = twoRandomHeads(3, 1);
    a.sphere = true;
    a.normalization = Normalization::Pre;
    try {
        makeCpuField(a, 3, Precision::Float64);
        ADD_FAILURE() << "no error";
    } catch (const SceneError& e) {
        EXPECT_EQ(e.pointer, "/attention/normalization");
    }
}

// The pre- and peri-LN equiangular reductions (radius and cosine) against the simulation, from n orthonormal
// tokens: the mean cosine to 1e-9 at every record.
TEST(Theory, PreAndPeriLnEquiangularOdesMatchTheSimulation) {
    for (Normalization scheme : {Normalization::Pre, Normalization::Peri})
        for (int n : {3, 6})
            for (double beta : {1.0, 4.0}) {
                Scene s = orthonormalScene(n, beta, beta == 1.0 ? 12.0 : 40.0, 80);
                s.attention.normalization = scheme;
                EXPECT_LE(worstGap(s, {0.0, 1.0}), 1e-9)
                    << toString(scheme) << ", n " << n << ", beta " << beta;
            }
}

// ---------------------------------------------------------------------------------------------------------
// The decay rates of the normalization presets (docs/math/theory.md#rates)

namespace {

// The consensus rate of a preset's run (consensusRate: the slope of log(1 - rho) against t, or log t, over
// the second half of the run), as the Plots panel fits it.
ConsensusRate measuredRate(const std::string& preset) {
    Simulation sim(loadScene(std::string(FLOWSCOPE_PRESET_DIR) + "/" + preset + ".json"));
    sim.run();
    EXPECT_FALSE(sim.event().has_value()) << preset;
    std::vector<double> t, rho;
    for (const Frame& f : sim.history()) t.push_back(f.t), rho.push_back(f.obs.meanCosine);
    const ConsensusRate rate = consensusRate(normalizationOf(sim.scene().attention), t, rho);
    EXPECT_GE(rate.samples, 20) << preset;
    return rate;
}

} // namespace

// Post-LN: 1 - rho ~ e^{-2t}; pre- and peri-LN: 1 - rho ~ t^{-2}. Within 10 % of the predicted exponent.
TEST(Theory, NormalizationPresetsDecayAtThePredictedRates) {
    const ConsensusRate post = measuredRate("norm-post-ln"), pre = measuredRate("norm-pre-ln"),
                        peri = measuredRate("norm-peri-ln");
    std::cout << "[ rates    ] post " << post.slope << " (per t), pre " << pre.slope << ", peri "
              << peri.slope << " (per log t)\n";
    EXPECT_FALSE(post.perLogT);
    EXPECT_TRUE(pre.perLogT && peri.perLogT);
    for (const ConsensusRate& r : {post, pre, peri}) {
        EXPECT_EQ(r.predicted, -2.0);
        EXPECT_NEAR(r.slope, r.predicted, 0.2);
    }
}

// The fit itself on exact laws: 1 - rho = c e^{-a t} gives -a per t, c t^{-p} gives -p per log t, whatever
// the first half of the samples holds; too few samples, or no scheme, say so.
TEST(Theory, ConsensusRateFitsExactLaws) {
    std::vector<double> t, exponential, power;
    for (int k = 0; k <= 100; ++k) {
        t.push_back(0.1 * k);
        exponential.push_back(t.back() < 5 ? 0.0 : 1.0 - 0.3 * std::exp(-1.7 * t.back()));
        power.push_back(t.back() < 5 ? 2.0 : 1.0 - 0.3 * std::pow(t.back(), -2.5));
    }
    const ConsensusRate post = consensusRate(Normalization::Post, t, exponential);
    EXPECT_NEAR(post.slope, -1.7, 1e-9);
    EXPECT_FALSE(post.perLogT);
    EXPECT_GE(post.samples, 50); // t = 5 .. 10
    const ConsensusRate pre = consensusRate(Normalization::Pre, t, power);
    EXPECT_NEAR(pre.slope, -2.5, 1e-9);
    EXPECT_TRUE(pre.perLogT);
    EXPECT_TRUE(std::isnan(consensusRate(Normalization::None, t, exponential).predicted));
    EXPECT_TRUE(std::isnan(consensusRate(Normalization::Post, {1.0, 2.0}, {0.5, 0.6}).slope));
    // Gaps at rounding level (a run at consensus) are left out, not fitted.
    const std::vector<double> settled(t.size(), 1.0 - 1e-16);
    EXPECT_EQ(consensusRate(Normalization::Post, t, settled).samples, 0);
}

// Which scenes the reduction and the laws describe: Q = K = V = I (d x d: a k x d Q with k < d is not I), one
// softmax head, a normalization; the laws need V = I only.
TEST(Theory, TheReductionAndTheLawsApplyWhereTheirHypothesesHold) {
    AttentionSpec a;
    a.heads = {HeadParams{Mat::Identity(3, 3), Mat::Identity(3, 3), Mat::Identity(3, 3)}};
    a.sphere = true;
    EXPECT_TRUE(hasEquiangularReduction(a, 3));
    EXPECT_TRUE(hasConsensusLaw(a, 3));
    AttentionSpec rectangular = a;
    rectangular.heads[0].Q = Mat::Identity(2, 3);
    rectangular.heads[0].K = Mat::Identity(2, 3);
    EXPECT_FALSE(hasEquiangularReduction(rectangular, 3));
    EXPECT_TRUE(hasConsensusLaw(rectangular, 3));
    AttentionSpec scaled = a;
    scaled.heads[0].V *= -0.4;
    EXPECT_FALSE(hasEquiangularReduction(scaled, 3));
    EXPECT_FALSE(hasConsensusLaw(scaled, 3));
    AttentionSpec none = a;
    none.sphere = false;
    EXPECT_FALSE(hasEquiangularReduction(none, 3));
    EXPECT_FALSE(hasConsensusLaw(none, 3));
    // equiangularState: orthonormal rows are (0, 1); a perturbed one is not equiangular.
    Tokens X = Mat::Identity(4, 4) * 2.0;
    const std::optional<Equiangular> s = equiangularState(X);
    ASSERT_TRUE(s);
    EXPECT_EQ(s->rho, 0.0);
    EXPECT_EQ(s->r, 2.0);
    X(3, 0) = 1e-3;
    EXPECT_FALSE(equiangularState(X));
}

// ---------------------------------------------------------------------------------------------------------
// Positional decay (docs/math/theory.md#positional-decay)

// Item 2: ALiBi-style decay in the streaming kernel, masked and unmasked, softmax, exp and l2, at N on and
// off the SIMD width (8 float32 lanes, 4 float64), d at 2 (two queries a sweep), 3 and 8 (the runtime-d
// loop), against the dense float64 formula. float32 within a float32 tolerance.
TEST(Theory, PositionalDecayMatchesTheDenseFormula) {
    for (AttentionType type : {AttentionType::Softmax, AttentionType::Exp, AttentionType::L2})
        for (double lambda : {7.5, 100.0}) // masked: the max sweep's bound (lambda <= 44), the exact maximum
            for (int d : {2, 3, 8})
                for (int n : {1, 5, 8, 13, 37, 300})
                    for (bool masked : {false, true}) {
                        SCOPED_TRACE(std::string(toString(type)) + " lambda " + std::to_string(lambda) +
                                     " d " + std::to_string(d) + " n " + std::to_string(n) +
                                     (masked ? " masked" : ""));
                        AttentionSpec a = singleHead(type, Mat::Identity(d, d), Mat::Identity(d, d),
                                                     randomTokens(d, d, 3, 0.5));
                        a.beta = 2.0;
                        a.masked = masked;
                        a.positionalDecay = lambda;
                        const Tokens X = randomTokens(n, d, 40 + n);
                        const Tokens ref = denseVelocity(X, a);
                        const double scale = std::max(1.0, ref.cwiseAbs().maxCoeff());
                        Tokens V64, V32;
                        makeCpuField(a, d, Precision::Float64)->velocity(0.0, X, V64);
                        makeCpuField(a, d, Precision::Float32)->velocity(0.0, X, V32);
                        expectMat(V64, ref, 1e-12 * scale);
                        expectMat(V32, ref, 2e-5 * scale);
                    }
}

// The entropies and the attention row of a field with positional decay are those of its weights.
TEST(Theory, PositionalDecayEntropiesAndRowsFollowTheWeights) {
    const int n = 23, d = 2;
    AttentionSpec a =
        singleHead(AttentionType::Softmax, Mat::Identity(d, d), Mat::Identity(d, d), Mat::Identity(d, d));
    a.positionalDecay = 12.0;
    a.masked = true;
    const Tokens X = randomTokens(n, d, 2);
    auto field = makeCpuField(a, d, Precision::Float64);
    Tokens V;
    Vec H;
    double E = 0;
    field->velocityAndStats(0.0, X, V, &H, &E);
    EXPECT_TRUE(std::isnan(E)); // the interaction energy is not that of a positional model
    ASSERT_EQ(H.size(), n);
    for (Eigen::Index i : {0, 7, 22}) {
        const Vec p = field->attentionWeights(0.0, X, i);
        // Weights by the formula: exp(<x_i, x_j> - (lambda / N)(i - j)), j <= i.
        Vec w = Vec::Zero(n);
        for (Eigen::Index j = 0; j <= i; ++j)
            w(j) = std::exp(X.row(i).dot(X.row(j)) - a.positionalDecay / n * double(i - j));
        w /= w.sum();
        expectMat(p, w, 1e-14);
        double h = 0;
        for (Eigen::Index j = 0; j <= i; ++j) h -= w(j) * std::log(w(j));
        EXPECT_NEAR(H(i), h, 1e-12);
    }
}

// ---------------------------------------------------------------------------------------------------------
// Metastability: the staircase of E_beta against log t (docs/math/theory.md#metastability)

// The plateau rule on curves whose plateaus are known: k smooth steps y = sum_m tanh(8 (log t - c_m)) at
// centres c_m three units of log t apart (k + 1 plateaus), with and without a small wiggle; a ramp has none;
// a constant has one.
TEST(Theory, PlateauRuleCountsTheStepsOfAKnownStaircase) {
    for (int k : {1, 2, 4})
        for (double wiggle : {0.0, 0.01}) {
            std::vector<double> t, y;
            for (double u = 0.0; u <= 3.0 * (k + 1); u += 0.01) {
                double v = wiggle * std::sin(7.0 * u);
                for (int m = 1; m <= k; ++m) v += std::tanh(8.0 * (u - 3.0 * m));
                t.push_back(std::exp(u));
                y.push_back(v);
            }
            EXPECT_EQ(plateaus(t, y).size(), std::size_t(k + 1)) << k << " steps, wiggle " << wiggle;
        }
    std::vector<double> t, ramp, constant;
    for (double u = 0.0; u <= 6.0; u += 0.01) {
        t.push_back(std::exp(u));
        ramp.push_back(u);
        constant.push_back(2.0);
    }
    EXPECT_EQ(plateaus(t, ramp).size(), 0u);
    EXPECT_EQ(plateaus(t, constant).size(), 1u);
}

// E_beta is the interaction energy over beta, and the metastability preset's staircase has one plateau per
// group: k = 3.
TEST(Theory, MetastablePresetClimbsAStaircaseOfKPlateaus) {
    const Scene s = loadScene(std::string(FLOWSCOPE_PRESET_DIR) + "/metastable-staircase.json");
    Simulation sim(s);
    sim.run();
    ASSERT_FALSE(sim.event().has_value());
    std::vector<double> t, y;
    for (const Frame& f : sim.history()) {
        if (f.t == 0.0) continue;
        // The formula written out: (1 / (2 beta N^2)) sum_ij exp(beta <x_i, x_j>).
        if (f.step % 2000 == 0) {
            double sum = 0;
            for (Eigen::Index i = 0; i < s.n; ++i)
                for (Eigen::Index j = 0; j < s.n; ++j)
                    sum += std::exp(s.attention.beta * f.tokens.row(i).dot(f.tokens.row(j)));
            EXPECT_NEAR(f.obs.energyBeta, sum / (2.0 * s.attention.beta * s.n * s.n),
                        1e-12 * f.obs.energyBeta);
        }
        t.push_back(f.t);
        y.push_back(std::log(f.obs.energyBeta));
    }
    const std::vector<Plateau> found = plateaus(t, y);
    for (const Plateau& p : found)
        std::cout << "[ plateau  ] t in [" << p.t0 << ", " << p.t1 << "], log E_beta " << p.level << "\n";
    EXPECT_EQ(found.size(), 3u);
    for (std::size_t k = 1; k < found.size(); ++k) EXPECT_GT(found[k].level, found[k - 1].level);
}

// ---------------------------------------------------------------------------------------------------------
// Causal attention on the circle: the Rényi-parking leaders (docs/math/theory.md#parking)

// The rule on angles worked out by hand (delta = 0.5): 0 leads; 0.1 is 0.1 from it; 0.6 is 0.6 from 0; 0.3 is
// 0.3 from both; 1.2 is 0.6 from 0.6; 6.2 is 0.083 from 0 across the cut at 2 pi; -2.0 is far from all. A
// zero row never leads; lengths do not matter (directions). The spacing is 4 / sqrt(beta), and the picture's
// setting is softmax, masked, post-LN, Q = K = V = I.
TEST(Theory, ParkingLeadersFollowTheRuleInIndexOrder) {
    const std::vector<double> angles = {0.0, 0.1, 0.6, 0.3, 1.2, 6.2, -2.0};
    Tokens X(Eigen::Index(angles.size()) + 1, 2);
    for (std::size_t k = 0; k < angles.size(); ++k)
        X.row(Eigen::Index(k)) << (1.0 + double(k)) * std::cos(angles[k]),
            (1.0 + double(k)) * std::sin(angles[k]);
    X.row(X.rows() - 1).setZero();
    EXPECT_EQ(parkingLeaders(X, 0.5), (std::vector<int>{0, 2, 4, 6}));
    EXPECT_EQ(parkingLeaders(X, 0.0).size(), angles.size());  // every direction leads at spacing 0
    EXPECT_EQ(parkingLeaders(X, 4.0), (std::vector<int>{0})); // beyond pi: one leader
    EXPECT_DOUBLE_EQ(parkingSpacing(64.0), 0.5);

    AttentionSpec a;
    a.masked = true;
    a.normalization = Normalization::Post;
    a.sphere = true;
    a.heads = {HeadParams{Mat::Identity(2, 2), Mat::Identity(2, 2), Mat::Identity(2, 2)}};
    EXPECT_TRUE(hasParkingPicture(a, 2));
    AttentionSpec unmasked = a, minusV = a, decay = a;
    unmasked.masked = false;
    minusV.heads.front().V = -Mat::Identity(2, 2);
    decay.positionalDecay = 2.0;
    EXPECT_FALSE(hasParkingPicture(unmasked, 2));
    EXPECT_FALSE(hasParkingPicture(minusV, 2));
    EXPECT_FALSE(hasParkingPicture(decay, 2));
}

// The picture the leaders stand for, on the preset (n = 200 on the circle, beta = 64, T = 20) and two other
// draws: most leaders end where they started (within 0.02 rad), while most other tokens travel to a cluster.
// Measured: 67-89 % of the leaders stay, 4-8 % of the others.
TEST(Theory, CausalClustersFormAtTheParkingLeaders) {
    Scene s = loadScene(std::string(FLOWSCOPE_PRESET_DIR) + "/causal-circle-fig2.json");
    ASSERT_TRUE(hasParkingPicture(s.attention, s.d));
    for (const std::uint64_t seed : {2024u, 7u, 99u}) {
        s.initial.seed = seed;
        Simulation sim(s);
        const Tokens X0 = sim.tokens();
        sim.run();
        ASSERT_FALSE(sim.event().has_value());
        const Tokens& XT = sim.tokens();
        const std::vector<int> leaders = parkingLeaders(X0, parkingSpacing(s.attention.beta));
        const auto stays = [&](Eigen::Index i) {
            return std::acos(std::clamp(X0.row(i).dot(XT.row(i)), -1.0, 1.0)) < 0.02;
        };
        int leadersStaying = 0, othersStaying = 0;
        for (Eigen::Index i = 0; i < s.n; ++i) {
            const bool leads = std::find(leaders.begin(), leaders.end(), int(i)) != leaders.end();
            (leads ? leadersStaying : othersStaying) += stays(i) ? 1 : 0;
        }
        const double leadersShare = double(leadersStaying) / double(leaders.size());
        const double othersShare = double(othersStaying) / double(s.n - Eigen::Index(leaders.size()));
        std::cout << "[ parking  ] seed " << seed << ": " << leaders.size() << " leaders, " << leadersShare
                  << " of them stay, " << othersShare << " of the others\n";
        EXPECT_GE(leadersShare, 0.6) << "seed " << seed;
        EXPECT_LE(othersShare, 0.15) << "seed " << seed;
    }
}

// ---------------------------------------------------------------------------------------------------------
// Hardmax, the beta -> infinity limit of softmax (docs/math/theory.md#hardmax)

// The hardmax cells in the plane (docs/math/theory.md#hardmax). Closed form: three unit keys 2 pi / 3 apart
// with M = I each own the directions within pi / 3 of theirs. And the argmax itself: for random keys and a
// random score matrix, every direction of 3600 lies in the cell of its best key and in no other (ties by
// less than 1e-9 left out).
TEST(Theory, HardmaxCellsAreTheArgmaxOfEveryDirection) {
    Tokens three(3, 2);
    for (int k = 0; k < 3; ++k) three.row(k) << std::cos(2 * M_PI * k / 3), std::sin(2 * M_PI * k / 3);
    const std::vector<HardmaxArc> arcs = hardmaxCells(three, Mat::Identity(2, 2));
    ASSERT_EQ(arcs.size(), 3u);
    for (int k = 0; k < 3; ++k) {
        EXPECT_NEAR(arcs[std::size_t(k)].length, 2 * M_PI / 3, 1e-12) << k;
        EXPECT_NEAR(std::remainder(arcs[std::size_t(k)].start + M_PI / 3 - 2 * M_PI * k / 3, 2 * M_PI), 0.0,
                    1e-12);
    }
    const Tokens X = randomTokens(7, 2, 48);
    const Mat M = randomTokens(2, 2, 49);
    const std::vector<HardmaxArc> cells = hardmaxCells(X, M);
    const auto inside = [](const HardmaxArc& a, double angle) {
        return !a.empty() && std::fmod(std::fmod(angle - a.start, 2 * M_PI) + 2 * M_PI, 2 * M_PI) <= a.length;
    };
    int checked = 0;
    for (int s = 0; s < 3600; ++s) {
        const double angle = 2 * M_PI * (s + 0.5) / 3600;
        const Vec scores = X * (M.transpose() * Eigen::Vector2d(std::cos(angle), std::sin(angle)));
        Eigen::Index best = 0;
        scores.maxCoeff(&best);
        Vec others = scores;
        others(best) = -INFINITY;
        if (scores(best) - others.maxCoeff() < 1e-9) continue;
        ++checked;
        for (Eigen::Index k = 0; k < X.rows(); ++k)
            EXPECT_EQ(inside(cells[std::size_t(k)], angle), k == best)
                << "direction " << angle << ", key " << k;
    }
    EXPECT_GT(checked, 3500);
}

// Softmax at large beta is hardmax: with a score gap g between the best key and the next, every other weight
// is at most e^{-beta g}, so at beta g > 800 softmax's float64 weights are exactly hardmax's; and the
// difference shrinks with beta on the way there. Masked and not, two heads.
TEST(Theory, HardmaxIsTheLargeBetaLimitOfSoftmax) {
    const int n = 40, d = 3;
    const Tokens X = randomTokens(n, d, 9);
    for (bool masked : {false, true}) {
        AttentionSpec a = twoRandomHeads(d, 5);
        a.masked = masked;
        a.type = AttentionType::Hardmax;
        Tokens H;
        makeCpuField(a, d, Precision::Float64)->velocity(0.0, X, H);
        // The smallest gap between the best and the second-best score over queries and heads.
        double gap = INFINITY;
        for (const HeadParams& h : a.heads)
            for (Eigen::Index i = 0; i < n; ++i) {
                const Eigen::Index end = masked ? i + 1 : n;
                Vec s = X.topRows(end) * (h.K.transpose() * h.Q * X.row(i).transpose());
                std::sort(s.data(), s.data() + s.size(), std::greater<double>());
                if (end > 1) gap = std::min(gap, s(0) - s(1));
            }
        ASSERT_GT(gap, 0.0);
        a.type = AttentionType::Softmax;
        double previous = INFINITY;
        for (double beta : {2.0 / gap, 8.0 / gap, 32.0 / gap, 1000.0 / gap}) {
            a.beta = beta;
            Tokens S;
            makeCpuField(a, d, Precision::Float64)->velocity(0.0, X, S);
            const double diff = (S - H).cwiseAbs().maxCoeff();
            EXPECT_LT(diff, previous) << "beta gap " << beta * gap;
            previous = diff;
            if (beta * gap > 800) EXPECT_LE(diff, 1e-12 * std::max(1.0, H.cwiseAbs().maxCoeff()));
        }
    }
}

// Exact ties share the weight: two tokens at one point tie as each other's best key and both move with V
// times their mean; a token whose best key is itself moves with V times itself (V = I, so its own position).
TEST(Theory, HardmaxTiesShareTheWeightAndTokensMoveTowardTheirBestKey) {
    Tokens X(3, 2);
    X << 1, 0, 1, 0, -2, 0.5;
    AttentionSpec a =
        singleHead(AttentionType::Hardmax, Mat::Identity(2, 2), Mat::Identity(2, 2), Mat::Identity(2, 2));
    Tokens V;
    makeCpuField(a, 2, Precision::Float64)->velocity(0.0, X, V);
    // Scores of token 0: <x_0, x_j> = 1, 1, -2: tokens 0 and 1 tie, mean (1, 0).
    expectMat(V.row(0), X.row(0), 0.0);
    expectMat(V.row(1), X.row(0), 0.0);
    // Token 2: <x_2, x_j> = -2, -2, 4.25: itself.
    expectMat(V.row(2), X.row(2), 0.0);
}
