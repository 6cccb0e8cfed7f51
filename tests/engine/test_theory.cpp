// Closed forms of the newer theory as oracles (docs/math/theory.md): the equiangular reduction of softmax
// attention with Q = K = V = I against the particle simulation.
#include "../DenseAttention.h"
#include "TestUtil.h"

#include "engine/dynamics/CausalParking.h"
#include "engine/dynamics/Equiangular.h"
#include "engine/dynamics/HardmaxCells.h"
#include "engine/dynamics/PositionalInfluence.h"
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

// ---------------------------------------------------------------------------------------------------------
// The "lost in the middle" influence profile (docs/math/theory.md#influence)

namespace {

// The linearised weights of docs/math/theory.md#influence written out densely: W_ik = w_ik / (kappa +
// sum_{l != i} w_il) for the keys k != i that query i sees.
Mat denseInfluenceWeights(const InfluenceSetting& s) {
    const int N = s.n;
    const double kappa = std::exp(s.beta) / std::cyl_bessel_i(0.0, s.beta);
    Mat W = Mat::Zero(N, N);
    for (int i = 0; i < N; ++i) {
        double z = kappa;
        for (int k = 0; k < N; ++k)
            if (k != i && (!s.masked || k < i)) {
                W(i, k) = std::exp(-(s.lambda / N) * std::abs(i - k));
                z += W(i, k);
            }
        W.row(i) /= z;
    }
    return W;
}

// exp(A) by its Taylor series, for |A| <= 2.5 (W's rows sum to less than 1): 60 terms leave 2.5^61 / 61!.
Mat denseExp(const Mat& A) {
    Mat sum = Mat::Identity(A.rows(), A.cols()), term = sum;
    for (int m = 1; m <= 60; ++m) {
        term = term * A / m;
        sum += term;
    }
    return sum;
}

} // namespace

// The O(N) sweeps of modeInfluence against exp(c W) of the dense matrix, masked and not, with and without a
// decay; the sum over modes against its definition; the rates against Bessel's integral.
TEST(Theory, InfluenceSweepsMatchTheDenseMatrixExponential) {
    for (const int n : {2, 7, 40})
        for (const bool masked : {true, false})
            for (const double lambda : {0.0, 3.0, 60.0})
                for (const double beta : {1.0, 4.0})
                    for (const double c : {0.0, 0.7, 2.5}) {
                        InfluenceSetting s;
                        s.n = n, s.masked = masked, s.lambda = lambda, s.beta = beta;
                        const Mat E = denseExp(c * denseInfluenceWeights(s));
                        const std::vector<double> mode = modeInfluence(s, c);
                        ASSERT_EQ(mode.size(), std::size_t(n - 1));
                        for (int k = 0; k + 1 < n; ++k)
                            EXPECT_NEAR(mode[std::size_t(k)], n * E(n - 1, k), 1e-13 * n * std::max(1.0, c))
                                << "n " << n << " masked " << masked << " lambda " << lambda << " c " << c;
                    }
    InfluenceSetting s;
    s.n = 9, s.beta = 2.0, s.lambda = 1.5;
    const double t = 1.7;
    std::vector<double> byHand(8, 0.0);
    for (int m = 1; m <= 40; ++m) {
        const std::vector<double> mode = modeInfluence(s, influenceModeRate(m, s.beta) * t);
        for (std::size_t k = 0; k < byHand.size(); ++k) byHand[k] += retrievalWeight(m, s.width) * mode[k];
    }
    const std::vector<double> profile = influenceProfile(s, t);
    for (std::size_t k = 0; k < byHand.size(); ++k) EXPECT_NEAR(profile[k], byHand[k], 1e-13 * byHand[k]);
    // The rates: n^2 I_n(beta) / (beta I_0(beta)), I_n from its integral (1/pi) int_0^pi e^{beta cos u}
    // cos(n u) du (midpoint rule on 2000 points: exact to rounding for a periodic analytic integrand).
    for (const double beta : {0.5, 4.0, 30.0})
        for (const int m : {1, 2, 5}) {
            double in = 0.0, i0 = 0.0;
            for (int j = 0; j < 2000; ++j) {
                const double u = M_PI * (j + 0.5) / 2000;
                in += std::exp(beta * (std::cos(u) - 1.0)) * std::cos(m * u);
                i0 += std::exp(beta * (std::cos(u) - 1.0));
            }
            EXPECT_NEAR(influenceModeRate(m, beta), m * m * in / (beta * i0), 1e-13) << beta << " " << m;
        }
}

// Closed forms: psi_c(y) = sqrt(c / y) I_1(2 sqrt(c y)); at s = 1 the mean-field kernel is
// lambda c / (1 - e^-lambda); without mask and decay every source weighs alike, N e^{-c a} (e^{c a N} - 1) /
// N with a = 1 / (kappa + N - 1) (W = a (J - I)); and for small t the profile is t sum_n omega_n a_n N
// W_{last,k}, each source's direct attention weight.
TEST(Theory, InfluenceSeriesMeetTheirClosedForms) {
    for (const double c : {0.1, 1.0, 7.0})
        for (const double y : {0.01, 0.5, 3.0, 40.0}) {
            const double bessel = std::sqrt(c / y) * std::cyl_bessel_i(1.0, 2.0 * std::sqrt(c * y));
            EXPECT_NEAR(psiSeries(c, y), bessel, 1e-13 * bessel) << c << " " << y;
        }
    EXPECT_EQ(psiSeries(0.7, 0.0), 0.7);
    for (const double lambda : {0.0, 1.0, 16.0, 800.0}) {
        const double front = lambda == 0.0 ? 1.0 : lambda / -std::expm1(-lambda);
        EXPECT_NEAR(meanFieldModeInfluence(0.8, lambda, 1.0), front * 0.8, 1e-15 * front) << lambda;
        EXPECT_TRUE(std::isfinite(meanFieldModeInfluence(0.8, lambda, 1e-3))) << lambda;
    }
    // lambda -> 0 joins the Hardy operator's kernel psi_c(log(1 / s)).
    EXPECT_NEAR(meanFieldModeInfluence(0.8, 1e-9, 0.3), psiSeries(0.8, -std::log(0.3)), 1e-8);

    InfluenceSetting flat;
    flat.n = 50, flat.beta = 3.0, flat.lambda = 0.0, flat.masked = false;
    const double a = 1.0 / (std::exp(flat.beta) / std::cyl_bessel_i(0.0, flat.beta) + flat.n - 1);
    for (const double c : {0.3, 2.0}) {
        const double expected = std::exp(-c * a) * std::expm1(c * a * flat.n);
        for (const double v : modeInfluence(flat, c)) EXPECT_NEAR(v, expected, 1e-13 * expected) << c;
    }

    InfluenceSetting s;
    s.n = 64, s.beta = 2.0, s.lambda = 5.0;
    const double t = 1e-7;
    const Mat W = denseInfluenceWeights(s);
    double slope = 0.0;
    for (int m = 1; m <= 60; ++m) slope += retrievalWeight(m, s.width) * influenceModeRate(m, s.beta);
    const std::vector<double> small = influenceProfile(s, t);
    for (int k = 0; k + 1 < s.n; ++k)
        EXPECT_NEAR(small[std::size_t(k)] / t, slope * s.n * W(s.n - 1, k),
                    1e-6 * slope * s.n * W(s.n - 1, k));
}

// The scene's profile is a Riemann sum of the mean-field one: at N = 512 and 2048 (beta = 1, lambda = 1, the
// paper's figure, t = beta I_0(beta): its t = 1) it meets the closed form at s = (k + 1/2) / N, and the error
// falls like 1 / N (a factor 4 between the two).
TEST(Theory, InfluenceConvergesToTheMeanFieldProfile) {
    InfluenceSetting s;
    s.beta = 1.0, s.lambda = 1.0;
    const double t = s.beta * std::cyl_bessel_i(0.0, s.beta);
    std::vector<double> errors;
    for (const int n : {512, 2048}) {
        s.n = n;
        const std::vector<double> profile = influenceProfile(s, t);
        double worst = 0.0;
        for (const double at : {0.125, 0.5, 0.875}) {
            const int k = int(at * n);
            const double exact = meanFieldInfluence(s, t, (k + 0.5) / n);
            worst = std::max(worst, std::abs(profile[std::size_t(k)] - exact) / exact);
        }
        errors.push_back(worst);
    }
    std::cout << "[ influence] relative error against the mean field: " << errors[0] << " (N = 512), "
              << errors[1] << " (N = 2048)\n";
    EXPECT_LT(errors[1], 5e-3);
    EXPECT_GT(errors[0] / errors[1], 3.0);
    EXPECT_LT(errors[0] / errors[1], 5.0);
}

// Where the paper's U lives: the mean field's slope at s = 1 changes sign at uShapeEndTime (finite
// differences); before it the scene's profile has both ends above an interior minimum, after it the end
// falls. Without decay there is no recency (masked: the profile falls from the first position on; unmasked:
// it is flat), and uShapeEndTime is 0.
TEST(Theory, InfluenceIsUShapedOnlyBeforeItsEndTime) {
    InfluenceSetting s;
    s.n = 256, s.beta = 1.0, s.lambda = 1.0;
    const double end = uShapeEndTime(s);
    // The paper's t_crit at beta = 1, lambda = 1, M = 8, in its time t / (beta I_0(beta)): 2.457489 (its
    // formula evaluated apart, in Python with I_n from its power series).
    EXPECT_NEAR(end / (s.beta * std::cyl_bessel_i(0.0, s.beta)), 2.457489, 1e-6);
    const auto slopeAtOne = [&](double t) {
        const double h = 1e-5;
        return (meanFieldInfluence(s, t, 1.0) - meanFieldInfluence(s, t, 1.0 - h)) / h;
    };
    EXPECT_GT(slopeAtOne(0.98 * end), 0.0);
    EXPECT_LT(slopeAtOne(1.02 * end), 0.0);
    for (const double f : {0.2, 0.5, 0.8}) {
        const ProfileShape shape = profileShape(influenceProfile(s, f * end));
        EXPECT_TRUE(shape.uShaped) << f;
        EXPECT_GT(shape.argmin, 0) << f;
        EXPECT_LT(shape.argmin, s.n - 2) << f;
    }
    for (const double f : {1.2, 2.0}) {
        const std::vector<double> late = influenceProfile(s, f * end);
        EXPECT_LT(late.back(), late[late.size() - 2]) << f;
        EXPECT_FALSE(profileShape(late).uShaped) << f;
    }
    s.lambda = 0.0;
    EXPECT_EQ(uShapeEndTime(s), 0.0);
    for (const double t : {0.5, 3.0}) {
        const std::vector<double> p = influenceProfile(s, t);
        EXPECT_TRUE(std::is_sorted(p.rbegin(), p.rend())) << t;
        EXPECT_EQ(profileShape(p).argmin, s.n - 2);
    }
    s.masked = false;
    const std::vector<double> p = influenceProfile(s, 2.0);
    const auto [lo, hi] = std::minmax_element(p.begin(), p.end());
    EXPECT_LT(*hi - *lo, 1e-12 * *hi);
}

// Which scenes the profile describes, and what it refuses (one message naming the quantity).
TEST(Theory, InfluenceProfileAppliesWhereItsHypothesesHold) {
    Scene s = loadScene(std::string(FLOWSCOPE_PRESET_DIR) + "/lost-in-the-middle.json");
    EXPECT_TRUE(hasInfluenceProfile(s.attention, s.d));
    const InfluenceSetting setting = influenceSetting(s);
    EXPECT_EQ(setting.n, s.n);
    EXPECT_EQ(setting.lambda, s.attention.positionalDecay);
    EXPECT_EQ(setting.beta, s.attention.beta);
    EXPECT_FALSE(hasInfluenceProfile(s.attention, 3));
    AttentionSpec other = s.attention;
    other.heads.front().V = 2.0 * Mat::Identity(2, 2);
    EXPECT_FALSE(hasInfluenceProfile(other, 2));
    other = s.attention;
    other.sphere = false;
    EXPECT_FALSE(hasInfluenceProfile(other, 2));
    other = s.attention;
    other.type = AttentionType::Exp;
    EXPECT_FALSE(hasInfluenceProfile(other, 2));

    InfluenceSetting bad = setting;
    bad.n = 1;
    EXPECT_NE(errorOf([&] { influenceProfile(bad, 1.0); }).find("n must"), std::string::npos);
    bad = setting;
    bad.beta = 0.0;
    EXPECT_NE(errorOf([&] { influenceProfile(bad, 1.0); }).find("beta"), std::string::npos);
    EXPECT_NE(errorOf([&] { influenceProfile(setting, -1.0); }).find("time t"), std::string::npos);
    EXPECT_NE(errorOf([&] { influenceProfile(setting, 1e6); }).find("too long"), std::string::npos);
}

// The profile is a correlation over draws: E[cos(theta_last(T) - theta_k(0))] = modeInfluence(a_1 T)[k] / N
// to first order in 1/N. Monte Carlo with the engine's own simulation (N = 24 tokens drawn uniformly on the
// circle, beta = 2, lambda = 2, masked, RK4 to T = 2), 300 draws, sources k = 0, 12, 18. Each draw runs the
// scene and, per source, the scene with theta_k(0) turned by pi: (N / 2) (cos(theta_last - theta_k(0)) -
// cos(theta'_last - theta_k(0))) has the mean asked for (turning the source flips the sign of every mode-1
// correlation with it) and a small variance (both runs share every other token). Tolerance: 4 standard
// errors of the draws plus 10 % for the first-order theory's own O(1/N) error (1 % to 9 % at N = 24 over
// 2000 draws of a standalone simulation). The mean-field closed form, which leaves out the query's own weight
// kappa (1.3 to 2.1 times the draws' values here), is rejected by the same test.
TEST(Theory, InfluenceIsTheCorrelationOverDrawsOfTheSimulation) {
    constexpr int kN = 24, kDraws = 300;
    Scene s;
    s.name = "influence-draws";
    s.d = 2;
    s.n = kN;
    s.precision = Precision::Float64;
    s.initial.kind = InitKind::Points;
    s.initial.points = Tokens::Zero(kN, 2);
    s.attention.beta = 2.0;
    s.attention.masked = true;
    s.attention.sphere = true;
    s.attention.positionalDecay = 2.0;
    s.attention.heads = {{Mat::Identity(2, 2), Mat::Identity(2, 2), Mat::Identity(2, 2)}};
    s.integrator.method = Method::Rk4;
    s.integrator.T = 2.0;
    s.integrator.steps = 20;
    s.output.every = 20;
    s.output.entropy = false;
    ASSERT_TRUE(hasInfluenceProfile(s.attention, s.d));
    const InfluenceSetting setting = influenceSetting(s);
    const double c = influenceModeRate(1, s.attention.beta) * s.integrator.T;
    const std::vector<double> predicted = modeInfluence(setting, c);

    Simulation sim(s);
    std::mt19937_64 rng(48);
    std::uniform_real_distribution<double> angle(0.0, 2.0 * M_PI);
    const auto lastAngle = [&](const Tokens& X0) {
        sim.setState(X0, 0.0);
        sim.run();
        return std::atan2(sim.tokens()(kN - 1, 1), sim.tokens()(kN - 1, 0));
    };
    const int sources[] = {0, 12, 18};
    double sum[3] = {}, squares[3] = {};
    for (int draw = 0; draw < kDraws; ++draw) {
        Tokens X0(kN, 2);
        std::vector<double> theta(kN);
        for (int i = 0; i < kN; ++i) {
            theta[std::size_t(i)] = angle(rng);
            X0.row(i) << std::cos(theta[std::size_t(i)]), std::sin(theta[std::size_t(i)]);
        }
        const double last = lastAngle(X0);
        for (int j = 0; j < 3; ++j) {
            const int k = sources[j];
            Tokens turned = X0;
            turned.row(k) = -X0.row(k);
            const double v = 0.5 * kN *
                             (std::cos(last - theta[std::size_t(k)]) -
                              std::cos(lastAngle(turned) - theta[std::size_t(k)]));
            sum[j] += v, squares[j] += v * v;
        }
    }
    bool meanFieldRejected = false;
    for (int j = 0; j < 3; ++j) {
        const int k = sources[j];
        const double mean = sum[j] / kDraws;
        const double error = std::sqrt((squares[j] / kDraws - mean * mean) / (kDraws - 1));
        const double expected = predicted[std::size_t(k)];
        const double tolerance = 4.0 * error + 0.1 * expected;
        const double meanField = meanFieldModeInfluence(c, setting.lambda, (k + 0.5) / kN);
        std::cout << "[ influence] source " << k << ": draws " << mean << " +- " << error << ", predicted "
                  << expected << " (mean field " << meanField << ")\n";
        EXPECT_NEAR(mean, expected, tolerance) << "source " << k;
        meanFieldRejected |= std::abs(mean - meanField) > tolerance;
    }
    EXPECT_TRUE(meanFieldRejected);
}
