// The moment solver's heap-free path (MomentFieldOf<d>, d <= 4) against its dynamic path
// (MomentField::affine on Vec/Mat): the same arithmetic, so the same fields and the same trajectories to
// 1e-12 relative (docs/math/gaussian.md#solver). tests/engine/alloc/ checks that the heap-free path
// allocates nothing in a step.
#include "TestUtil.h"

#include "engine/gaussian/MomentSolver.h"
#include "engine/gaussian/MomentStepper.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

using namespace flowscope;
using namespace flowscope::test;

namespace {

// A MomentField of one's own that forwards to a made one: it has no fixed-size form, so solveMoments takes
// the dynamic path with it.
class Forwarding : public MomentField {
  public:
    explicit Forwarding(const MomentField& inner) : inner_(inner) {}
    AffineField affine(double t, const Vec& mean, const Mat& cov) const override {
        return inner_.affine(t, mean, cov);
    }
    std::string name() const override { return inner_.name(); }

  private:
    const MomentField& inner_;
};

Mat randomMat(int rows, int cols, std::mt19937_64& rng, double scale) {
    std::normal_distribution<double> normal(0.0, scale);
    Mat M(rows, cols);
    for (Eigen::Index i = 0; i < M.size(); ++i) M.data()[i] = normal(rng);
    return M;
}

// A random covariance of rank `rank` (d x d) with trace about 1.
Mat randomCov(int d, int rank, std::mt19937_64& rng) {
    const Mat R = randomMat(d, rank, rng, 1.0 / std::sqrt(double(d)));
    return R * R.transpose();
}

// Two heads with k = d + 1 rows, random Q, K and V near -I/2 (contracting) or +I/2.
std::vector<HeadParams> randomHeads(int d, std::mt19937_64& rng, double sign) {
    std::vector<HeadParams> heads;
    for (int h = 0; h < 2; ++h)
        heads.push_back({randomMat(d + 1, d, rng, 0.4), randomMat(d + 1, d, rng, 0.4),
                         sign * 0.5 * Mat::Identity(d, d) + randomMat(d, d, rng, 0.1)});
    return heads;
}

struct Variant {
    const char* name;
    AttentionType type;
    bool linearEps;
};
const Variant kVariants[] = {
    {"softmax", AttentionType::Softmax, false},   {"linear", AttentionType::Linear, false},
    {"linear eps", AttentionType::Linear, true},  {"l2", AttentionType::L2, false},
    {"sinkhorn", AttentionType::Sinkhorn, false}, {"drifting", AttentionType::Drifting, false}};

// Calls check(v, d) for every variant in every dimension that has a fixed-size form (1 to 4), each traced.
template <class F> void forEachVariantAndSize(F check) {
    for (const Variant& v : kVariants)
        for (int d = 1; d <= 4; ++d) {
            SCOPED_TRACE(std::string(v.name) + ", d = " + std::to_string(d));
            check(v, d);
        }
}

Scene randomScene(const Variant& v, int d, std::uint64_t seed, double sign = -1.0) {
    std::mt19937_64 rng(seed);
    Scene s;
    s.d = d;
    s.attention.type = v.type;
    s.attention.heads = randomHeads(d, rng, sign);
    s.attention.beta = 0.8;
    s.attention.scaleByRootK = true;
    if (v.linearEps) s.attention.linearEps = 0.5;
    s.attention.sinkhornEps = 0.7;
    if (v.type == AttentionType::Drifting) {
        s.attention.targetMean = randomMat(d, 1, rng, 1.0);
        s.attention.targetCov = randomCov(d, d, rng) + 0.1 * Mat::Identity(d, d);
    }
    return s;
}

// The index in FixedMomentFields of the heap-free form of dimension d: FixedMomentField<2> for the plane,
// SmallMomentField for 1, 3, 4, none (monostate) above.
int heapFreeForm(int d) {
    return d == 2 ? 1 : d <= 4 ? 2 : 0;
}

double relDiff(const Mat& a, const Mat& b) {
    const double scale = std::max(a.norm(), b.norm());
    return scale > 0.0 ? (a - b).norm() / scale : 0.0;
}

template <int D> void expectSameAffine(const MomentField& field, double t, const Vec& mean, const Mat& cov) {
    using Field = MomentFieldOf<D>;
    const auto& fixed = std::get<Field>(field.fixedSize());
    typename Field::Vector b;
    typename Field::Matrix L;
    fixed.affine(t, typename Field::Vector(mean), typename Field::Matrix(cov), b, L);
    const AffineField a = field.affine(t, mean, cov);
    EXPECT_LE(relDiff(Vec(b), a.b), 1e-12);
    EXPECT_LE(relDiff(Mat(L), a.L), 1e-12);
}

void expectSameAffine(const MomentField& field, int d, double t, const Vec& mean, const Mat& cov) {
    switch (d) {
    case 1:
        return expectSameAffine<1>(field, t, mean, cov);
    case 2:
        return expectSameAffine<2>(field, t, mean, cov);
    case 3:
        return expectSameAffine<3>(field, t, mean, cov);
    case 4:
        return expectSameAffine<4>(field, t, mean, cov);
    }
    FAIL() << "d = " << d;
}

// The two paths' trajectories: the same record times, events and counts, the states to 1e-12 relative.
void expectSameTrajectories(const Scene& s, const GaussianState& initial, const MomentSolveOptions& o) {
    const auto field = makeMomentField(s);
    ASSERT_EQ(int(field->fixedSize().index()), heapFreeForm(s.d)) << "the made field has no heap-free form";
    const MomentTrajectory fixed = solveMoments(*field, initial, s, o);
    const MomentTrajectory dynamic = solveMoments(Forwarding(*field), initial, s, o);
    EXPECT_EQ(fixed.event, dynamic.event);
    EXPECT_EQ(fixed.iterations, dynamic.iterations);
    EXPECT_EQ(fixed.evaluations, dynamic.evaluations);
    EXPECT_EQ(fixed.tMax.has_value(), dynamic.tMax.has_value());
    if (fixed.tMax && dynamic.tMax) EXPECT_NEAR(*fixed.tMax, *dynamic.tMax, 1e-12 * *dynamic.tMax);
    ASSERT_EQ(fixed.times.size(), dynamic.times.size());
    EXPECT_GT(fixed.times.size(), 2u);
    double worst = 0.0;
    for (std::size_t i = 0; i < fixed.times.size(); ++i) {
        EXPECT_NEAR(fixed.times[i], dynamic.times[i], 1e-12 * std::abs(dynamic.times[i]));
        worst = std::max({worst, relDiff(fixed.states[i].cov, dynamic.states[i].cov),
                          relDiff(fixed.states[i].mean, dynamic.states[i].mean)});
    }
    EXPECT_LE(worst, 1e-12);
}

} // namespace

TEST(MomentFixedSize, MadeFieldsHaveAFixedSizeFormUpToFour) {
    for (int d = 1; d <= 5; ++d) {
        const auto field = makeMomentField(randomScene(kVariants[0], d, 1));
        EXPECT_EQ(int(field->fixedSize().index()), heapFreeForm(d)) << "d = " << d;
    }
    // Linearly interpolated keyframes have none; piecewise-constant ones have.
    Scene s = randomScene(kVariants[0], 2, 2);
    std::mt19937_64 rng(3);
    s.attention.keyframes = {{0.0, randomHeads(2, rng, -1.0)}, {1.0, randomHeads(2, rng, -1.0)}};
    s.attention.interpolation = Interpolation::Linear;
    EXPECT_EQ(makeMomentField(s)->fixedSize().index(), 0u);
    s.attention.interpolation = Interpolation::Piecewise;
    EXPECT_EQ(int(makeMomentField(s)->fixedSize().index()), heapFreeForm(2));
    // Heads of another size than d (a scene whose d was changed by hand, as a picture test does) keep the
    // dynamic path: copied into 3 x 3 matrices, 2 x 2 heads were read past their end (a crash).
    Scene other = randomScene(kVariants[0], 2, 1);
    other.d = 3;
    EXPECT_EQ(makeMomentField(other)->fixedSize().index(), 0u);
}

TEST(MomentFixedSize, FieldsMatchTheDynamicPath) {
    forEachVariantAndSize([](const Variant& v, int d) {
        const Scene s = randomScene(v, d, 10 + std::uint64_t(d));
        const auto field = makeMomentField(s);
        std::mt19937_64 rng(100 + std::uint64_t(d));
        for (int rank = 0; rank <= d; ++rank) // down to rank 0: the formulas are inverse-free
            expectSameAffine(*field, d, 0.0, randomMat(d, 1, rng, 1.0), randomCov(d, rank, rng));
    });
}

TEST(MomentFixedSize, PiecewiseKeyframesMatchTheDynamicPath) {
    for (int d : {2, 3}) {
        Scene s = randomScene(kVariants[0], d, 20);
        std::mt19937_64 rng(21);
        s.attention.keyframes = {{0.0, randomHeads(d, rng, -1.0)},
                                 {0.5, randomHeads(d, rng, 1.0)},
                                 {1.5, randomHeads(d, rng, -1.0)}};
        const auto field = makeMomentField(s);
        for (double t : {-1.0, 0.0, 0.25, 0.5, 1.0, 1.5, 7.0})
            expectSameAffine(*field, d, t, randomMat(d, 1, rng, 1.0), randomCov(d, d, rng));
        // And along a solve across the switches.
        s.moments.method = MomentMethod::PaperEuler;
        s.moments.step = 0.01;
        s.moments.maxIter = 300;
        s.moments.tolLow = 0.0;
        MomentSolveOptions o;
        o.recordEveryIter = 10;
        expectSameTrajectories(s, {randomMat(d, 1, rng, 1.0), randomCov(d, d, rng)}, o);
    }
}

TEST(MomentFixedSize, PaperEulerTrajectoriesMatchTheDynamicPath) {
    forEachVariantAndSize([](const Variant& v, int d) {
        Scene s = randomScene(v, d, 30 + std::uint64_t(d));
        s.moments.method = MomentMethod::PaperEuler;
        s.moments.step = 0.01;
        s.moments.maxIter = 500;
        s.moments.tolLow = 1e-6;
        // Stopped well before a blow-up: near a finite-time singularity the ODE amplifies the paths'
        // last-bit differences like 1 / (t_max - t), beyond 1e-12 at tr Sigma ~ 1e4.
        s.moments.tolHigh = 20.0;
        MomentSolveOptions o;
        o.recordEveryIter = 7;
        std::mt19937_64 rng(40 + std::uint64_t(d));
        // Rank-deficient starts exercise the projection's clipping.
        expectSameTrajectories(s, {randomMat(d, 1, rng, 1.0), randomCov(d, std::max(1, d - 1), rng)}, o);
    });
}

TEST(MomentFixedSize, AdaptiveTrajectoriesMatchTheDynamicPath) {
    forEachVariantAndSize([](const Variant& v, int d) {
        Scene s = randomScene(v, d, 50 + std::uint64_t(d));
        s.moments.method = MomentMethod::Adaptive;
        s.moments.tolLow = 0.0;
        s.integrator.rtol = 1e-9;
        s.integrator.atol = 1e-12;
        MomentSolveOptions o;
        o.T = 3.0;
        o.recordEvery = 0.25;
        std::mt19937_64 rng(60 + std::uint64_t(d));
        expectSameTrajectories(s, {randomMat(d, 1, rng, 1.0), randomCov(d, d, rng)}, o);
    });
}

TEST(MomentFixedSize, BlowUpMatchesTheDynamicPath) {
    // The Fig 3(a) head (P-BLOWUP, bench moments): finite-time blow-up, the t_max continuation included.
    Scene s;
    s.d = 2;
    const Mat Q = (Mat(2, 2) << -0.09678415831, 0.4222016605, -0.2254615634, -0.6379430932).finished();
    const Mat K = (Mat(2, 2) << -0.0162863037, 1.044216778, -1.084880329, -2.205924827).finished();
    s.attention.heads = {{Q / std::sqrt(2.0), K, Mat::Identity(2, 2)}};
    s.moments.tolLow = 1e-4;
    s.moments.tolHigh = 1e3;
    s.moments.step = 0.01;
    s.moments.maxIter = 100000;
    s.integrator.rtol = 1e-8;
    const GaussianState initial{Vec::Zero(2), (Mat(2, 2) << 0.7, 0.2, 0.2, 0.3).finished()};
    MomentSolveOptions o;
    o.T = 1000.0;
    o.recordEvery = 0.05;
    o.recordEveryIter = 5;
    for (MomentMethod method : {MomentMethod::Adaptive, MomentMethod::PaperEuler}) {
        s.moments.method = method;
        SCOPED_TRACE(toString(method));
        expectSameTrajectories(s, initial, o);
        const auto field = makeMomentField(s);
        const MomentTrajectory tr = solveMoments(*field, initial, s, o);
        EXPECT_EQ(tr.event, MomentEvent::BlowUp);
    }
}
