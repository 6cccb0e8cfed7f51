// The Gaussian-mode (moment) presets of Castin et al.'s figures (assets/presets/cone-*.json, p1d-*.json,
// particles-vs-moments.json; docs/math/gaussian.md#presets): every one loads and has a moment field, the
// parameters are the authors' draws with the code's scaling, and a few cheap outcome checks per regime.
#include "engine/gaussian/MomentField.h"
#include "engine/gaussian/MomentSolver.h"
#include "engine/scene/Scene.h"

#include <Eigen/Eigenvalues>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

using namespace flowscope;

namespace {

const std::string kDir = FLOWSCOPE_PRESET_DIR;

Scene preset(const std::string& name) {
    return loadScene(kDir + "/" + name + ".json");
}

Mat m2(double a, double b, double c, double d) {
    return (Mat(2, 2) << a, b, c, d).finished();
}

// The Gaussian-mode presets of this file (cone-*, p1d-*, particles-vs-moments).
std::vector<std::string> gaussianPresets() {
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(kDir)) {
        const std::string f = e.path().filename().string();
        if (e.path().extension() != ".json") continue;
        if (f.rfind("cone-", 0) == 0 || f.rfind("p1d-", 0) == 0 || f == "particles-vs-moments.json")
            names.push_back(e.path().stem().string());
    }
    std::sort(names.begin(), names.end());
    return names;
}

// The effective score matrix of head h: beta (/ sqrt(k)) K^T Q, as the engine scores.
Mat effectiveA(const Scene& s, int h) {
    const HeadParams& p = s.attention.heads.at(std::size_t(h));
    double c = s.attention.beta;
    if (s.attention.scaleByRootK) c /= std::sqrt(double(p.Q.rows()));
    return c * p.K.transpose() * p.Q;
}

// Cone coordinates (a - b, 2c, a + b) of a 2x2 covariance, divided by the trace (the trace-1 slice).
Vec coneDir(const Mat& S) {
    Vec v(3);
    v << S(0, 0) - S(1, 1), 2 * S(0, 1), S(0, 0) + S(1, 1);
    return v / v(2);
}

// The first `count` initial Gaussians of the scene's grid, solved one by one.
std::vector<MomentTrajectory> solveFirst(const Scene& s, std::size_t count) {
    const auto field = makeMomentField(s);
    auto opts = momentOptions(s);
    opts.recordEveryIter = 1 << 30; // first and last only
    const auto init = initialGaussians(s);
    std::vector<MomentTrajectory> out;
    for (std::size_t i = 0; i < std::min(count, init.size()); ++i)
        out.push_back(solveMoments(*field, init[i], s, opts));
    return out;
}

} // namespace

TEST(PresetsGaussian, EveryPresetLoadsAndHasAMomentField) {
    const auto names = gaussianPresets();
    EXPECT_GE(names.size(), 27u);
    for (const auto& name : names) {
        SCOPED_TRACE(name);
        Scene s;
        ASSERT_NO_THROW(s = preset(name));
        EXPECT_EQ(s.name, name);
        EXPECT_FALSE(s.description.empty());
        EXPECT_FALSE(s.figure.empty());
        EXPECT_NO_THROW((void)makeMomentField(s));
        std::vector<GaussianState> init;
        ASSERT_NO_THROW(init = initialGaussians(s));
        EXPECT_FALSE(init.empty());
        // Round trip through the writer keeps the moments block.
        const Scene back = sceneFromJson(sceneToJson(s));
        EXPECT_EQ(back.moments.method, s.moments.method);
        EXPECT_EQ(back.moments.grid.nu, s.moments.grid.nu);
        EXPECT_EQ(back.moments.step, s.moments.step);
    }
}

TEST(PresetsGaussian, GridSizesOfTheFigures) {
    // docs/math/gaussian.md#grid: 10x10 on [-0.5, 0.5]^2 -> 100, 20x20 -> 276, 30x30 -> 648, 40x40 -> 1184.
    EXPECT_EQ(initialGaussians(preset("cone-fig2a-zero")).size(), 100u);
    EXPECT_EQ(initialGaussians(preset("cone-fig2b-line")).size(), 100u);
    EXPECT_EQ(initialGaussians(preset("cone-fig2c-plane")).size(), 100u);
    EXPECT_EQ(initialGaussians(preset("cone-fig2d-two-lines")).size(), 276u);
    EXPECT_EQ(initialGaussians(preset("cone-fig3d-mixed")).size(), 648u);
    EXPECT_EQ(initialGaussians(preset("cone-fig3a-blowup")).size(), 1184u);
    for (const auto& g : initialGaussians(preset("cone-fig3a-blowup")))
        EXPECT_NEAR(g.cov.trace(), 1.0, 1e-15);
}

TEST(PresetsGaussian, ParametersAreTheAuthorsDrawsWithTheCodeScaling) {
    // P-ZERO: A = K^T Q / sqrt(2) (docs/math/gaussian.md#p-zero), the same in softmax, l2 and Sinkhorn
    // (unscaled) form.
    const Mat aZero = m2(-0.1862523417, -0.1452830452, -0.1452830452, -0.1216533815);
    for (const char* name :
         {"cone-fig2a-zero", "cone-fig7a-zero-softmax", "cone-fig7b-zero-l2", "cone-fig8a-zero-l2"}) {
        SCOPED_TRACE(name);
        const Scene s = preset(name);
        EXPECT_LT((effectiveA(s, 0) - aZero).cwiseAbs().maxCoeff(), 1e-10);
        // l2 quirk of the code: K^T K unscaled (K = -Q of the paper).
        EXPECT_LT((s.attention.heads[0].K + s.attention.heads[0].Q * std::sqrt(2.0)).norm(), 1e-15);
        EXPECT_LT((s.attention.heads[0].V - m2(2.66937761, -0.6915301722, -0.6915301722, 2.687446122))
                      .cwiseAbs()
                      .maxCoeff(),
                  1e-8);
    }
    EXPECT_LT(
        (effectiveA(preset("cone-fig10a-sinkhorn-zero"), 0) - std::sqrt(2.0) * aZero).cwiseAbs().maxCoeff(),
        1e-9);
    // Multi-head H = 2: head h = row h of Q and K, scale 1/sqrt(1), V^(h) = E_h V.
    const Scene mh = preset("cone-fig7c-zero-multihead");
    ASSERT_EQ(mh.attention.heads.size(), 2u);
    EXPECT_LT((effectiveA(mh, 0) + effectiveA(mh, 1) - std::sqrt(2.0) * aZero).cwiseAbs().maxCoeff(), 1e-9);
    EXPECT_EQ(mh.attention.heads[0].V(1, 0), 0.0);
    EXPECT_EQ(mh.attention.heads[1].V(0, 1), 0.0);
    // P-TWO-LINES / P-MIXED: unscaled A = K^T Q.
    const Mat aTwo = m2(-0.2280848, -1.2838650, -0.5676072, -1.0624013);
    for (const char* name : {"cone-fig2d-two-lines", "cone-fig8c-two-lines-l2", "cone-fig3d-mixed",
                             "cone-fig9a-mixed-softmax", "cone-fig9b-mixed-l2"}) {
        SCOPED_TRACE(name);
        EXPECT_LT((std::sqrt(2.0) * effectiveA(preset(name), 0) - aTwo).cwiseAbs().maxCoeff(), 1e-6);
    }
    // Fig 9(c) as the code ran it: rhs_multihead with H = 1, i.e. one head scaled by 1/sqrt(2).
    const Scene h1 = preset("cone-fig9c-mixed-multihead");
    ASSERT_EQ(h1.attention.heads.size(), 1u);
    EXPECT_LT((std::sqrt(2.0) * effectiveA(h1, 0) - aTwo).cwiseAbs().maxCoeff(), 1e-6);
    // P-BLOWUP: A = K^T Q (unscaled) has eig(A + A^T) = {4.027145, 0.161454}.
    const Mat aBlow = m2(0.246175, 0.685216, 0.396288, 1.848125);
    EXPECT_LT((std::sqrt(2.0) * effectiveA(preset("cone-fig3a-blowup"), 0) - aBlow).cwiseAbs().maxCoeff(),
              1e-6);
    EXPECT_LT((effectiveA(preset("cone-fig10b-sinkhorn-blowup"), 0) - aBlow).cwiseAbs().maxCoeff(), 1e-6);
}

TEST(PresetsGaussian, DuplicatePanelsShareTheirParameters) {
    // Fig 2(a) = Fig 7 left, Fig 7 middle = Fig 8(a), Fig 3(d) = Fig 9(a): same dynamics, steps and grid.
    const std::pair<const char*, const char*> pairs[] = {{"cone-fig2a-zero", "cone-fig7a-zero-softmax"},
                                                         {"cone-fig7b-zero-l2", "cone-fig8a-zero-l2"},
                                                         {"cone-fig3d-mixed", "cone-fig9a-mixed-softmax"}};
    for (const auto& [a, b] : pairs) {
        SCOPED_TRACE(std::string(a) + " vs " + b);
        Scene sa = preset(a), sb = preset(b);
        sb.name = sa.name, sb.description = sa.description, sb.figure = sa.figure, sb.viewJson = sa.viewJson;
        EXPECT_EQ(sceneToJson(sa), sceneToJson(sb));
    }
}

TEST(PresetsGaussian, Fig1BlowsUpAtTheClosedFormTime) {
    // T2: eps = 0.1, Sigma0 = [[2, 0.5], [0.5, 1]]: t_max = 1 / (2 eps lambda_max(Sigma0)) = 2.2654091966.
    const Scene up = preset("cone-fig1b-blowup");
    ASSERT_EQ(up.moments.method, MomentMethod::Adaptive);
    const auto tr = solveAllMoments(up, momentOptions(up));
    ASSERT_EQ(tr.size(), 1u);
    EXPECT_EQ(tr[0].event, MomentEvent::BlowUp);
    ASSERT_TRUE(tr[0].tMax.has_value());
    EXPECT_NEAR(*tr[0].tMax, 2.2654091966, 1e-6);
    // eps = -0.4: Sigma(t) = (Sigma0^-1 + 0.8 t I)^-1, at T = 10.
    const Scene down = preset("cone-fig1a-contraction");
    const auto tr2 = solveAllMoments(down, momentOptions(down));
    const Mat S0 = m2(2, 0.5, 0.5, 1);
    const Mat exact = (Mat(S0.inverse()) + 8.0 * Mat::Identity(2, 2)).inverse();
    EXPECT_EQ(tr2[0].event, MomentEvent::None);
    EXPECT_LT((tr2[0].states.back().cov - exact).norm(), 1e-7);
}

TEST(PresetsGaussian, Fig2aConvergesToZero) {
    const Scene s = preset("cone-fig2a-zero");
    ASSERT_EQ(s.moments.method, MomentMethod::PaperEuler);
    for (const auto& tr : solveFirst(s, 4)) {
        EXPECT_EQ(tr.event, MomentEvent::Converged);
        EXPECT_LT(tr.states.back().cov.norm(), 0.02); // stops at ||Sigma'|| < 1e-5 with trace 0.0175
        EXPECT_GT(tr.iterations, 4000);
    }
}

TEST(PresetsGaussian, Fig2bLimitsLieOnTheReferenceRay) {
    // P-LINE: Sigma* = Sigma0 - Sigma0 q q^T Sigma0 / (q^T Sigma0 q) (Prop 2, V = I), on the ray q_perp
    // q_perp^T.
    Scene s = preset("cone-fig2b-line");
    Vec q(2);
    q << 0.4063236466758838, 0.913729223649989;
    Vec ray(3);
    ray << 0.6698021883040232, -0.7425395804555754, 1.0;
    const auto init = initialGaussians(s);
    const auto paper = solveFirst(s, init.size());
    for (const auto& tr : paper) {
        EXPECT_EQ(tr.event, MomentEvent::Converged);
        EXPECT_LT((tr.states.back().cov * q).norm(),
                  0.01); // the figure as drawn: stopped at ||Sigma'|| < 1e-4
        EXPECT_LT((coneDir(tr.states.back().cov) - ray).norm(), 0.11);
    }
    // The exact ODE gets to the Prop 2 limit (like 1/t): within 0.3% at t = 2000.
    s.moments.method = MomentMethod::Adaptive;
    s.moments.tolLow = 0.0;
    s.integrator.steps = 10;
    const auto field = makeMomentField(s);
    for (std::size_t i : {0u, 45u, 99u}) {
        const Mat& S0 = init[i].cov;
        const Mat limit = S0 - (S0 * q) * (S0 * q).transpose() / q.dot(S0 * q);
        const auto tr = solveMoments(*field, init[i], s, momentOptions(s));
        EXPECT_LT((tr.states.back().cov - limit).norm() / limit.norm(), 3e-3) << i;
        EXPECT_LT((coneDir(tr.states.back().cov) - ray).norm(), 5e-3) << i;
    }
}

TEST(PresetsGaussian, Fig2cLimitsFillThePlane) {
    // P-PLANE: full-rank limits with q^T Sigma e_1 = 0.
    const Scene s = preset("cone-fig2c-plane");
    for (const auto& tr : solveFirst(s, 100)) {
        const Mat& S = tr.states.back().cov;
        EXPECT_EQ(tr.event, MomentEvent::Converged);
        EXPECT_LT(std::abs(0.4063236466758838 * S(0, 0) + 0.913729223649989 * S(1, 0)), 1e-3);
        EXPECT_GT(Eigen::SelfAdjointEigenSolver<Mat>(S).eigenvalues()(0), 0.08);
    }
}

TEST(PresetsGaussian, Fig2dEndsOnTheTwoIsotropicRays) {
    // P-TWO-LINES: the rank-1 limits lie on the rays u u^T with u^T (A + A^T) u = 0, at -7.5986 and -58.1440
    // deg.
    const Scene s = preset("cone-fig2d-two-lines");
    const auto field = makeMomentField(s);
    auto opts = momentOptions(s);
    opts.recordEveryIter = 1 << 30;
    const auto init = initialGaussians(s);
    const double deg = std::acos(-1.0) / 180.0;
    for (const auto& [index, angle] : {std::pair{0, -58.144009863560015}, std::pair{275, -7.598580352279466},
                                       std::pair{130, -7.598580352279466}}) {
        const auto tr = solveMoments(*field, init[std::size_t(index)], s, opts);
        EXPECT_EQ(tr.event, MomentEvent::Converged) << index;
        Vec ray(3);
        ray << std::cos(2 * angle * deg), std::sin(2 * angle * deg), 1.0;
        EXPECT_LT((coneDir(tr.states.back().cov) - ray).norm(), 1e-4) << index;
    }
}

TEST(PresetsGaussian, Fig3aBlowUpTimesMatchProp2) {
    // P-BLOWUP, softmax, V = I: t_max = 1 / lambda_max(Sigma0 (A + A^T)) (Prop 2; docs/math/gaussian.md#t3).
    Scene s = preset("cone-fig3a-blowup");
    s.moments.method = MomentMethod::Adaptive;
    const auto field = makeMomentField(s);
    const Mat A = effectiveA(s, 0);
    const auto init = initialGaussians(s);
    for (std::size_t i = 0; i < init.size(); i += 97) {
        const auto tr = solveMoments(*field, init[i], s, momentOptions(s));
        ASSERT_EQ(tr.event, MomentEvent::BlowUp) << i;
        ASSERT_TRUE(tr.tMax.has_value()) << i;
        const double lmax =
            Eigen::EigenSolver<Mat>(init[i].cov * (A + A.transpose())).eigenvalues().real().maxCoeff();
        EXPECT_NEAR(*tr.tMax * lmax, 1.0, 1e-5) << i;
    }
    // The paper's Euler run blows up too (tr Sigma > 1000), and l2 on the same parameters has no t_max.
    for (const auto& tr : solveFirst(preset("cone-fig3a-blowup"), 3))
        EXPECT_EQ(tr.event, MomentEvent::BlowUp);
    Scene l2 = preset("cone-fig3c-divergence-l2");
    l2.moments.method = MomentMethod::Adaptive;
    const auto trL2 = solveMoments(*makeMomentField(l2), initialGaussians(l2)[600], l2, momentOptions(l2));
    EXPECT_EQ(trL2.event, MomentEvent::BlowUp);
    EXPECT_FALSE(trL2.tMax.has_value());
}

TEST(PresetsGaussian, MixedBasins) {
    // P-MIXED grid point 0 blows up with softmax (t = 10.06, Euler) but converges with l2; point 27
    // converges.
    const Scene sm = preset("cone-fig3d-mixed");
    const Scene l2 = preset("cone-fig9b-mixed-l2");
    const auto init = initialGaussians(sm);
    ASSERT_EQ(init.size(), 648u);
    auto opts = momentOptions(sm);
    opts.recordEveryIter = 1 << 30;
    const auto fsm = makeMomentField(sm), fl2 = makeMomentField(l2);
    const auto a = solveMoments(*fsm, init[0], sm, opts);
    EXPECT_EQ(a.event, MomentEvent::BlowUp);
    EXPECT_NEAR(a.eventTime, 10.062, 0.01);
    EXPECT_EQ(solveMoments(*fsm, init[27], sm, opts).event, MomentEvent::Converged);
    EXPECT_EQ(solveMoments(*fl2, init[0], l2, opts).event, MomentEvent::Converged);
}

TEST(PresetsGaussian, ExtrasFollowTheirClosedForms) {
    // P-ROTATE (T4): each orbit is a circle of period pi at trace 1.
    const Scene rot = preset("cone-rotate");
    const auto init = initialGaussians(rot);
    const auto tr = solveMoments(*makeMomentField(rot), init[10], rot, momentOptions(rot));
    EXPECT_EQ(tr.event, MomentEvent::None);
    EXPECT_LT((tr.states.back().cov - init[10].cov).norm(), 1e-8);
    // P-COMMUTE-LINE (T3(a)): Sigma(t) = Sigma0 - (2t / (1 + 4t)) [[4, 1], [1, 0.25]] -> diag(0, 0.875).
    const Scene cl = preset("cone-commute-line");
    const auto trc = solveAllMoments(cl, momentOptions(cl));
    const double t = cl.integrator.T;
    const Mat exact = m2(2, 0.5, 0.5, 1) - (2 * t / (1 + 4 * t)) * m2(4, 1, 1, 0.25);
    EXPECT_LT((trc[0].states.back().cov - exact).norm(), 1e-7);
    // P-1D: softmax blows up at t = 1/(2 a v s0) = 0.5; l2 and Sinkhorn only grow exponentially.
    const Scene p1 = preset("p1d-softmax");
    const auto t1 = solveAllMoments(p1, momentOptions(p1));
    ASSERT_TRUE(t1[0].tMax.has_value());
    EXPECT_NEAR(*t1[0].tMax, 0.5, 1e-6);
    for (const char* name : {"p1d-l2", "p1d-sinkhorn"}) {
        const Scene s = preset(name);
        const auto tr1 = solveAllMoments(s, momentOptions(s));
        EXPECT_EQ(tr1[0].event, MomentEvent::BlowUp) << name;
        EXPECT_FALSE(tr1[0].tMax.has_value()) << name;
        EXPECT_GT(tr1[0].eventTime, 3.0) << name;
    }
}
