// A record's observables at the speed of a step: the entropies and the energy from the velocity's own
// streaming pass (one extra multiply-add per pair), and clusters counted on a hash grid in O(N). Each fast
// path against its float64 reference: the double passes of attentionEntropies / interactionEnergy, and the
// O(N * clusters) leader count.
#include "engine/attention/VelocityField.h"
#include "engine/dynamics/Observables.h"
#include "engine/dynamics/Simulation.h"

#include <gtest/gtest.h>

#include <random>

namespace flowscope {
namespace {

Tokens cloud(int n, int d, std::uint64_t seed, double scale = 1.0) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> normal;
    Tokens X(n, d);
    for (int i = 0; i < n; ++i)
        for (int c = 0; c < d; ++c) X(i, c) = scale * normal(rng);
    return X;
}

AttentionSpec spec(AttentionType type, int d, int heads, double beta, bool masked, std::uint64_t seed) {
    AttentionSpec s;
    s.type = type;
    s.beta = beta;
    s.masked = masked;
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> normal;
    for (int h = 0; h < heads; ++h) {
        HeadParams p{Mat(d, d), Mat(d, d), Mat(d, d)};
        for (Mat* m : {&p.Q, &p.K, &p.V})
            for (int i = 0; i < d * d; ++i)
                (*m)(i % d, i / d) = (i % (d + 1) == 0 ? 1.0 : 0.0) + 0.3 * normal(rng);
        s.heads.push_back(p);
    }
    return s;
}

// Float32: the blocked sums (256 keys a block, 8 lanes) keep den_i and e_i within a few ulps times the
// number of blocks, so H_i = log den_i - e_i / den_i is within ~1e-6 (1 + H_i) and the energy, from the rows'
// log-sum-exps, within ~1e-6 relative. The bounds below leave a factor of ~10. Float64 runs the reference
// kernel: the same sums as the double passes, to rounding.
TEST(RecordObservables, OnePassEntropiesAndEnergyMatchTheDoublePasses) {
    struct Case {
        AttentionType type;
        int d, heads, n;
        double beta;
        bool masked;
    };
    const Case cases[] = {
        {AttentionType::Softmax, 2, 1, 4096, 1.0, false}, {AttentionType::Softmax, 3, 1, 8192, 4.0, false},
        {AttentionType::Softmax, 5, 2, 3000, 0.5, false}, {AttentionType::Softmax, 2, 1, 2000, 1.0, true},
        {AttentionType::L2, 3, 1, 3000, 1.0, false},      {AttentionType::Softmax, 70, 1, 500, 0.1, false}};
    for (const Case& c : cases)
        for (const Precision precision : {Precision::Float32, Precision::Float64}) {
            SCOPED_TRACE(std::string(toString(c.type)) + " d " + std::to_string(c.d) + " n " +
                         std::to_string(c.n) + (precision == Precision::Float32 ? " float32" : " float64"));
            const AttentionSpec s = spec(c.type, c.d, c.heads, c.beta, c.masked, 7);
            const Tokens X = cloud(c.n, c.d, 11);
            auto fast = makeCpuField(s, c.d, precision);
            auto reference = makeCpuField(s, c.d, Precision::Float64);
            Tokens V, Vref;
            Vec H;
            double E = 0;
            fast->velocityAndStats(0.0, X, V, &H, &E);
            fast->velocity(0.0, X, Vref);
            // The plain pass's velocity: in float64 to the bit; in float32 the extra accumulator may change
            // how the compiler contracts the multiply-adds, within float32 rounding.
            EXPECT_LE((V - Vref).cwiseAbs().maxCoeff(),
                      precision == Precision::Float32 ? 1e-6 * Vref.cwiseAbs().maxCoeff() : 0.0);
            const Vec Href = reference->attentionEntropies(0.0, X);
            const double Eref = reference->interactionEnergy(0.0, X);
            ASSERT_EQ(H.size(), Href.size());
            const double tolH = precision == Precision::Float32 ? 2e-5 : 1e-11;
            EXPECT_LE(((H - Href).array().abs() / (1.0 + Href.array())).maxCoeff(), tolH);
            if (std::isnan(Eref)) {
                EXPECT_TRUE(std::isnan(E));
            } else {
                EXPECT_NEAR(E / Eref, 1.0, precision == Precision::Float32 ? 2e-5 : 1e-12);
            }
        }
}

TEST(RecordObservables, ARecordedFrameCarriesTheOnePassValues) {
    Scene scene;
    scene.n = 600;
    scene.d = 2;
    scene.precision = Precision::Float32;
    scene.initial.mean = Vec::Zero(2);
    scene.initial.cov = Mat::Identity(2, 2);
    scene.attention = spec(AttentionType::Softmax, 2, 1, 1.0, false, 3);
    scene.integrator.steps = 4;
    Simulation sim(scene);
    sim.run();
    auto reference = makeCpuField(scene.attention, 2, Precision::Float64);
    for (const Frame& f : sim.history()) {
        const Vec Href = reference->attentionEntropies(f.t, f.tokens);
        EXPECT_LE((f.obs.tokenEntropy - Href).cwiseAbs().maxCoeff(), 2e-5 * (1.0 + Href.maxCoeff()));
        EXPECT_NEAR(f.obs.energy / reference->interactionEnergy(f.t, f.tokens), 1.0, 2e-5);
    }
}

TEST(RecordObservables, GridClusterCountEqualsTheBruteForceCount) {
    std::mt19937_64 rng(5);
    std::normal_distribution<double> normal;
    for (const int d : {1, 2, 3, 5})
        for (const double tol : {1e-3, 0.05, 0.4}) {
            SCOPED_TRACE("d " + std::to_string(d) + " tol " + std::to_string(tol));
            // Clusters of every tightness: some well inside tol, some straddling it, some spread.
            Tokens X(3000, d);
            for (int i = 0; i < X.rows(); ++i) {
                const int centre = i % 40;
                const double spread = (centre % 4) * tol * 0.7;
                for (int c = 0; c < d; ++c) X(i, c) = std::sin(centre * 1.7 + c) * 3.0 + spread * normal(rng);
            }
            for (const int cap : {4096, 50})
                EXPECT_EQ(countClusters(X, tol, cap), countClustersBruteForce(X, tol, cap)) << cap;
        }
    // Points exactly tol apart along an axis join; just beyond, they do not.
    Tokens line(4, 2);
    line << 0, 0, 0.5, 0, 1.0000001, 0, 3, 3;
    EXPECT_EQ(countClusters(line, 0.5), countClustersBruteForce(line, 0.5));
    EXPECT_EQ(countClusters(line, 0.5), 3);
    // Coordinates too large for 64-bit cells, and non-finite ones, take the brute-force path.
    Tokens far = cloud(50, 2, 3, 1e300);
    EXPECT_EQ(countClusters(far, 1e-3), countClustersBruteForce(far, 1e-3));
    far(3, 1) = std::nan("");
    EXPECT_EQ(countClusters(far, 1e-3), countClustersBruteForce(far, 1e-3));
}

} // namespace
} // namespace flowscope
