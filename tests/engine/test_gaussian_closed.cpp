// Closed forms, cone coordinates and energies of Gaussian mode against independently computed numbers
// (docs/math/gaussian.md: #exact-cases T1-T11, #cone, #trace-slice, #grid, #presets, #energies, #drifting).
#include "TestUtil.h"

#include "engine/attention/VelocityField.h"
#include "engine/dynamics/Integrator.h"
#include "engine/gaussian/ClosedForms.h"
#include "engine/gaussian/Cone.h"
#include "engine/gaussian/Energies.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <random>

using namespace flowscope;
using namespace flowscope::test;

namespace {

constexpr double kPi = std::numbers::pi;
constexpr double kDeg = kPi / 180.0;

// |x - ref| <= rel |ref| (+ a tiny absolute floor for ref = 0).
void expectRel(double x, double ref, double rel) {
    EXPECT_NEAR(x, ref, rel * std::abs(ref) + 1e-300) << x;
}

// Classical RK4 for an autonomous ODE y' = f(y) (y: double, Vec or Mat).
template <class S, class F> S rk4(F f, S y, double T, int n) {
    const double h = T / n;
    for (int i = 0; i < n; ++i) {
        const S k1 = f(y);
        const S k2 = f(S(y + 0.5 * h * k1));
        const S k3 = f(S(y + 0.5 * h * k2));
        const S k4 = f(S(y + h * k3));
        y = y + (h / 6.0) * (k1 + 2.0 * k2 + 2.0 * k3 + k4);
    }
    return y;
}

// The softmax covariance ODE (16).
Mat softmaxRate(const Mat& V, const Mat& A, const Mat& S) {
    const Mat P = V * S * A * S;
    return P + P.transpose();
}

Mat randomMatrix(int r, int c, std::mt19937_64& rng) {
    std::normal_distribution<double> n(0.0, 1.0);
    Mat M(r, c);
    for (Eigen::Index i = 0; i < M.size(); ++i) M.data()[i] = n(rng);
    return M;
}

// P-TWO-LINES (docs/math/gaussian.md#p-two-lines), unscaled A = K^T Q.
Mat twoLinesA() {
    const Mat Q = m2(0.6764132658, 1.521099186, -0.511876245, 1.150194635);
    const Mat K = m2(-0.5907168066, -0.7687652516, -0.3350091661, 0.09299944353);
    return K.transpose() * Q;
}

} // namespace

// ---- T1 -------------------------------------------------------------------------------------------------

TEST(GaussianClosed, T1SoftmaxVarianceAndMean1d) {
    expectRel(softmaxVariance1d(-1, 1, 2, 1), 0.4, 1e-14);
    expectRel(softmaxVariance1d(-1, 1, 2, 10), 2.0 / 41.0, 1e-14);
    expectRel(softmaxVariance1d(-1, 1, 2, 10), 0.04878048780, 1e-9);
    expectRel(softmaxMean1d(-1, 1, 2, 1, 1), std::exp(1.0) / std::sqrt(5.0), 1e-14);
    expectRel(softmaxMean1d(-1, 1, 2, 1, 1), 1.2156525901, 1e-9);
    EXPECT_TRUE(std::isinf(softmaxBlowupTime1d(-1, 1, 2)));

    expectRel(softmaxBlowupTime1d(1, 0.5, 2), 0.5, 1e-15);
    expectRel(softmaxVariance1d(1, 0.5, 2, 0.25), 4.0, 1e-14);
    expectRel(softmaxVariance1d(1, 0.5, 2, 0.45), 20.0, 1e-13);
    EXPECT_TRUE(std::isinf(softmaxVariance1d(1, 0.5, 2, 0.5)));

    // The coupled (s, alpha) system by RK4.
    const Vec y = rk4([](const Vec& y) { return v2(2 * -1 * 1 * y(0) * y(0), 1 * (1 + -1 * y(0)) * y(1)); },
                      v2(2, 1), 1.0, 2000);
    expectRel(y(0), 0.4, 1e-10);
    expectRel(y(1), 1.2156525901, 1e-9);
}

// ---- T2, T3: the commuting closed form ----------------------------------------------------------------

TEST(GaussianClosed, T2IntroSettingExplodesOrCollapses) {
    const Mat S0 = sym2(2, 0.5, 1);
    const Mat I = Mat::Identity(2, 2);
    {
        const double eps = 0.1;
        const Mat B = commutingB(eps * I, I);
        expectMat(B, 2 * eps * I, 1e-15);
        EXPECT_TRUE(commutes(eps * I, I, S0));
        expectRel(commutingBlowupTime(B, S0), 2.2654091966, 1e-9);
        expectRel(commutingBlowupTime(B, S0), 1.0 / (2 * eps * (1.5 + std::sqrt(0.5))), 1e-13);
        expectMat(*commutingCovariance(B, S0, 1), (5.0 / 47.0) * sym2(33, 10, 13), 1e-13);
        expectMat(*commutingCovariance(B, S0, 1), sym2(3.5106383, 1.0638298, 1.3829787), 1e-7);
        expectMat(*commutingCovariance(B, S0, 2), sym2(16.25, 6.25, 3.75), 1e-12);
        EXPECT_FALSE(commutingCovariance(B, S0, 2.27).has_value());
    }
    {
        const double eps = -0.4;
        const Mat B = commutingB(eps * I, I);
        EXPECT_TRUE(std::isinf(commutingBlowupTime(B, S0)));
        // Exact: (Sigma0^{-1} + 0.8 t I)^{-1}; Sigma0^{-1} = (1/7)[[4, -2], [-2, 8]].
        expectMat(*commutingCovariance(B, S0, 1), (35.0 / 3164.0) * sym2(68, 10, 48), 1e-14);
        expectMat(*commutingCovariance(B, S0, 1), sym2(0.752212, 0.110619, 0.530973), 1e-6);
        expectMat(*commutingCovariance(B, S0, 2), (35.0 / 7196.0) * sym2(96, 10, 76), 1e-14);
        expectMat(*commutingCovariance(B, S0, 2), sym2(0.466926, 0.048638, 0.369650), 1e-6);
        // Sigma -> 0.
        EXPECT_LT(commutingCovariance(B, S0, 1e6)->norm(), 1e-5);
    }
}

TEST(GaussianClosed, T3aConvergenceToALine) {
    const Mat V = Mat::Identity(2, 2), A = m2(-1, 1, -1, 0), S0 = sym2(2, 0.5, 1);
    const Mat B = commutingB(V, A);
    expectMat(B, m2(-2, 0, 0, 0), 0);
    EXPECT_TRUE(commutes(V, A, S0));
    EXPECT_TRUE(std::isinf(commutingBlowupTime(B, S0)));
    const auto sm = [&](double t) { return Mat(S0 - (2 * t / (1 + 4 * t)) * sym2(4, 1, 0.25)); };
    expectMat(*commutingCovariance(B, S0, 0.5), sym2(2.0 / 3, 1.0 / 6, 11.0 / 12), 1e-14);
    expectMat(*commutingCovariance(B, S0, 1), sym2(0.4, 0.1, 0.9), 1e-14);
    expectMat(*commutingCovariance(B, S0, 10), sym2(0.0487805, 0.0121951, 0.8780488), 1e-7);
    for (double t : {0.1, 3.0, 10.0}) expectMat(*commutingCovariance(B, S0, t), sm(t), 1e-13);
    // RK4 of (16).
    const Mat S1 = rk4([&](const Mat& S) { return softmaxRate(V, A, S); }, S0, 1.0, 2000);
    expectMat(S1, sym2(0.4, 0.1, 0.9), 1e-11);
    // The limit: rank 1, kernel e1.
    const auto lim = commutingLimit(B, S0);
    ASSERT_TRUE(lim.has_value());
    expectMat(*lim, sym2(0, 0, 0.875), 1e-14);
    EXPECT_EQ(thresholdRank(*lim, 1e-10, RankThreshold::Relative), 1);
    expectMat(*commutingCovariance(B, S0, 1e9), *lim, 1e-8);
}

TEST(GaussianClosed, T3bNonSymmetricAWithDiagonalV) {
    const Mat V = m2(2, 0, 0, 3), A = m2(-1, 3, -2, -1), S0 = m2(1, 0, 0, 2);
    const Mat B = commutingB(V, A);
    expectMat(B, m2(-4, 0, 0, -6), 1e-15);
    EXPECT_TRUE(commutes(V, A, S0));
    for (double t : {0.1, 0.5, 2.0})
        expectMat(*commutingCovariance(B, S0, t), m2(1 / (1 + 4 * t), 0, 0, 1 / (0.5 + 6 * t)), 1e-14);
    expectMat(*commutingCovariance(B, S0, 0.5), m2(1.0 / 3, 0, 0, 2.0 / 7), 1e-15);
    const Mat S = rk4([&](const Mat& S) { return softmaxRate(V, A, S); }, S0, 0.5, 2000);
    expectMat(S, m2(1.0 / 3, 0, 0, 2.0 / 7), 1e-11);
    // B < 0: the limit is 0.
    expectMat(*commutingLimit(B, S0), Mat::Zero(2, 2), 0);
}

TEST(GaussianClosed, T3cBlowUp) {
    const Mat V = Mat::Identity(2, 2), A = m2(0.5, 1, -1, -1);
    const Mat B = commutingB(V, A);
    expectMat(B, m2(1, 0, 0, -2), 0);
    {
        const Mat S0 = Mat::Identity(2, 2);
        expectRel(commutingBlowupTime(B, S0), 1.0, 1e-15);
        expectMat(*commutingCovariance(B, S0, 0.5), m2(2, 0, 0, 0.5), 1e-14);
        for (double t : {0.25, 0.9})
            expectMat(*commutingCovariance(B, S0, t), m2(1 / (1 - t), 0, 0, 1 / (1 + 2 * t)), 1e-13);
        EXPECT_FALSE(commutingCovariance(B, S0, 1.0).has_value());
        EXPECT_FALSE(commutingLimit(B, S0).has_value()); // a positive eigenvalue: no limit
    }
    {
        const Mat S0 = sym2(2, 0.5, 1);
        expectRel(commutingBlowupTime(B, S0), 1 / std::sqrt(3.5), 1e-14);
        expectRel(commutingBlowupTime(B, S0), 0.5345224838, 1e-9);
        expectMat(*commutingCovariance(B, S0, 0.5), sym2(30, 4, 1), 1e-12);
        const Mat S = rk4([&](const Mat& S) { return softmaxRate(V, A, S); }, S0, 0.5, 20000);
        expectMat(S, sym2(30, 4, 1), 1e-8);
        EXPECT_FALSE(commutingCovariance(B, S0, 0.535).has_value());
    }
}

TEST(GaussianClosed, CommutationCheckRejectsRotation) {
    // T4: J does not commute with diag(2, 1) although B = 0.
    const Mat J = rotation90(), A = -Mat::Identity(2, 2), S0 = m2(2, 0, 0, 1);
    expectMat(commutingB(J, A), Mat::Zero(2, 2), 0);
    EXPECT_FALSE(commutes(J, A, S0));
    EXPECT_TRUE(commutes(J, A, Mat::Identity(2, 2))); // isotropic Sigma0: Sigma stays constant
    EXPECT_FALSE(commutes(m2(1, 2, 0, 1), Mat::Identity(2, 2), Mat::Identity(2, 2)));
}

TEST(GaussianClosed, LimitIsTheSchurComplementOnKerB) {
    // P-LINE (docs/math/gaussian.md#p-line): A = -q^T q / sqrt(2), V = I:
    // Sigma* = Sigma0 - Sigma0 q q^T Sigma0 / (q^T Sigma0 q).
    const Vec q = v2(0.4063236467, 0.9137292236);
    const Mat A = -q * q.transpose() / std::sqrt(2.0);
    const Mat B = commutingB(Mat::Identity(2, 2), A);
    const Mat S0 = sym2(0.7, 0.2, 0.3);
    const Mat ref = S0 - S0 * q * q.transpose() * S0 / q.dot(S0 * q);
    const auto lim = commutingLimit(B, S0);
    ASSERT_TRUE(lim.has_value());
    expectMat(*lim, ref, 1e-14);
    EXPECT_LT((*lim * q).norm(), 1e-14);
    // Its cone point lies on the reference ray c (0.6698021883, -0.7425395805, 1).
    const Eigen::Vector3d p = toCone(*lim);
    EXPECT_NEAR(p.x() / p.z(), 0.6698021883, 1e-9);
    EXPECT_NEAR(p.y() / p.z(), -0.7425395805, 1e-9);

    // d = 5, Fig 4 setting (A = -Q^T Q / sqrt(d), Q 2 x 5): limit rank ceil(5/2) = 3 = the Prop 4 bound.
    std::mt19937_64 rng(7);
    const Mat Q = randomMatrix(2, 5, rng);
    const Mat A5 = -Q.transpose() * Q / std::sqrt(5.0);
    const Mat R = randomMatrix(5, 5, rng);
    const Mat S5 = R * R.transpose();
    const auto lim5 = commutingLimit(A5 + A5.transpose(), S5);
    ASSERT_TRUE(lim5.has_value());
    EXPECT_EQ(thresholdRank(*lim5, 1e-9, RankThreshold::Relative), 3);
    EXPECT_EQ(stationaryRankBound(A5), 3);
    EXPECT_LT((Q * *lim5).norm(), 1e-10 * lim5->norm()); // supported on ker Q
    // Sigma(t) - Sigma* = O(1/t).
    expectMat(*commutingCovariance(A5 + A5.transpose(), S5, 1e8), *lim5, 1e-5 * lim5->norm());
    // Stationary: Sigma* A Sigma* = 0.
    EXPECT_LT((*lim5 * A5 * *lim5).norm(), 1e-12 * lim5->squaredNorm());
}

// ---- T4, T6, T7, T8 ---------------------------------------------------------------------------------------

TEST(GaussianClosed, T4RotatingCovariance) {
    const Mat S0 = m2(2, 0, 0, 1);
    expectMat(rotatingCovariance(S0, kPi / 12), sym2(1.5, -0.5, 1.5), 1e-14);
    expectMat(rotatingCovariance(S0, 1), sym2(1.980085, 0.139708, 1.019915), 1e-6);
    const Mat J = rotation90(), A = -Mat::Identity(2, 2);
    const Mat S1 = rk4([&](const Mat& S) { return softmaxRate(J, A, S); }, S0, 1.0, 4000);
    expectMat(S1, rotatingCovariance(S0, 1), 1e-12);
    // In the cone: a horizontal circle at z = tr Sigma0, radius lambda1 - lambda2, angular speed -2 w.
    for (double t : {0.1, 0.4, 1.0}) {
        const Eigen::Vector3d p = toCone(rotatingCovariance(S0, t));
        EXPECT_NEAR(p.z(), 3.0, 1e-14);
        EXPECT_NEAR(std::hypot(p.x(), p.y()), 1.0, 1e-14);
        EXPECT_NEAR(std::remainder(std::atan2(p.y(), p.x()) + 6 * t, 2 * kPi), 0.0, 1e-13);
    }
}

TEST(GaussianClosed, T6RankOneDynamics) {
    // V = I, A = diag(-1, -3), u0 = (1, 1): Sigma(t) = 0.5/(0.5 + 4t) [[1, 1], [1, 1]].
    const Mat I = Mat::Identity(2, 2), A = m2(-1, 0, 0, -3);
    const Vec u0 = v2(1, 1);
    const Mat S0 = u0 * u0.transpose();
    const auto S1 = commutingCovariance(commutingB(I, A), S0, 1.0); // rank-deficient Sigma0 is fine
    ASSERT_TRUE(S1.has_value());
    expectMat(*S1, Mat::Constant(2, 2, 1.0 / 9), 1e-14);
    const Vec u1 = rk4([&](const Vec& u) { return rank1Rate(A, I, u); }, u0, 1.0, 2000);
    expectMat(u1 * u1.transpose(), Mat::Constant(2, 2, 1.0 / 9), 1e-11);
    const Mat S1rk = rk4([&](const Mat& S) { return softmaxRate(I, A, S); }, S0, 1.0, 2000);
    expectMat(S1rk, Mat::Constant(2, 2, 1.0 / 9), 1e-11);

    // V = J, A = -I, u0 = (1, 0): u(t) = (cos t, -sin t).
    const Vec u = rk4([&](const Vec& u) { return rank1Rate(-I, rotation90(), u); }, v2(1, 0), 1.0, 2000);
    expectMat(u, v2(std::cos(1.0), -std::sin(1.0)), 1e-12);

    // Generic V: Sigma = u u^T along (16) and (18).
    const Mat V = m2(0.3, -0.7, 0.5, 0.2), Ag = m2(-0.4, 0.2, 0.1, -0.6);
    const Vec ug = v2(0.8, -0.3);
    const Vec uT = rk4([&](const Vec& u) { return rank1Rate(Ag, V, u); }, ug, 1.5, 3000);
    const Mat ST =
        rk4([&](const Mat& S) { return softmaxRate(V, Ag, S); }, Mat(ug * ug.transpose()), 1.5, 3000);
    expectMat(ST, uT * uT.transpose(), 1e-12);
    EXPECT_LT(std::abs(ST.determinant()) / (ST.trace() * ST.trace()), 1e-12); // rank preserved (T5)
}

TEST(GaussianClosed, T7RankOneStationaryPoints) {
    // A = diag(1, -1), V = I, u = (1, 1): exactly stationary; the isotropic directions are +-45 degrees.
    const Mat I = Mat::Identity(2, 2), A = m2(1, 0, 0, -1);
    const Mat S = Mat::Constant(2, 2, 1.0);
    EXPECT_EQ(softmaxRate(I, A, S).cwiseAbs().maxCoeff(), 0.0);
    const IsotropicDirections iso = isotropicDirections(A + A.transpose());
    ASSERT_EQ(iso.angles.size(), 2u);
    EXPECT_NEAR(iso.angles[0], -kPi / 4, 1e-15);
    EXPECT_NEAR(iso.angles[1], kPi / 4, 1e-15);
    // u in ker V is stationary for every A.
    const Mat V = m2(1, 0, 0, 0), Sv = m2(0, 0, 0, 1);
    EXPECT_EQ(softmaxRate(V, m2(0.3, -1.2, 0.7, 2.1), Sv).cwiseAbs().maxCoeff(), 0.0);

    // P-TWO-LINES: the two attracting rays are the isotropic directions of A + A^T.
    const Mat At = twoLinesA();
    // An earlier hand transcription read A = [[-0.2280848, -1.2838650], [-0.5676072, -1.0624013]]; K^T Q of
    // the same Q, K is [[-0.2280854503, -1.2838645992], [-0.5676072204, -1.0624007374]] (7th-digit slips in
    // the transcription; its eigenvalues {+0.740285, -3.321257} and angles are those of the exact product).
    expectMat(At, m2(-0.2280854503, -1.2838645992, -0.5676072204, -1.0624007374), 1e-10);
    const Eigen::SelfAdjointEigenSolver<Mat> es(Mat(At + At.transpose()));
    EXPECT_NEAR(es.eigenvalues()(0), -3.321257, 5e-7);
    EXPECT_NEAR(es.eigenvalues()(1), 0.740285, 5e-7);
    const IsotropicDirections two = isotropicDirections(At + At.transpose());
    EXPECT_FALSE(two.everyDirection);
    ASSERT_EQ(two.angles.size(), 2u);
    EXPECT_NEAR(two.angles[0] / kDeg, -58.1440, 5e-5);
    EXPECT_NEAR(two.angles[1] / kDeg, -7.5986, 5e-5);
    for (const Eigen::Vector2d& u : two.directions()) {
        EXPECT_NEAR(u.norm(), 1.0, 1e-15);
        EXPECT_NEAR(u.dot((At + At.transpose()) * u), 0.0, 1e-14);
    }
    const Eigen::Vector3d r0 = coneRay(two.angles[1]), r1 = coneRay(two.angles[0]);
    EXPECT_NEAR(r0.x(), 0.96503, 5e-6);
    EXPECT_NEAR(r0.y(), -0.26214, 5e-6);
    EXPECT_NEAR(r1.x(), -0.44288, 5e-6);
    EXPECT_NEAR(r1.y(), -0.89658, 5e-6);
    // The isotropic rank-one matrices are stationary for V = I.
    for (const Eigen::Vector2d& u : two.directions())
        EXPECT_LT(softmaxRate(I, At, Mat(u * u.transpose())).norm(), 1e-14);
}

TEST(GaussianClosed, IsotropicDirectionsDegenerateCases) {
    EXPECT_TRUE(isotropicDirections(m2(2, 0.3, 0.3, 1)).angles.empty());   // positive definite
    EXPECT_TRUE(isotropicDirections(m2(-2, 0.3, 0.3, -1)).angles.empty()); // negative definite
    EXPECT_TRUE(isotropicDirections(Mat::Zero(2, 2)).everyDirection);
    const IsotropicDirections psd = isotropicDirections(m2(2, 0, 0, 0)); // kernel e2
    ASSERT_EQ(psd.angles.size(), 1u);
    EXPECT_NEAR(psd.angles[0], kPi / 2, 1e-15);
    const IsotropicDirections nsd = isotropicDirections(m2(0, 0, 0, -1)); // kernel e1
    ASSERT_EQ(nsd.angles.size(), 1u);
    EXPECT_NEAR(nsd.angles[0], 0.0, 1e-15);
    // Rotated semi-definite matrix w w^T: the kernel is w-perp.
    const Vec w = v2(std::cos(0.3), std::sin(0.3));
    const IsotropicDirections rot = isotropicDirections(w * w.transpose());
    ASSERT_EQ(rot.angles.size(), 1u);
    EXPECT_NEAR(rot.angles[0], 0.3 - kPi / 2, 1e-12);
}

TEST(GaussianClosed, T8RankBoundForStationaryPoints) {
    const Mat A2 = m2(1, 0, 0, -1);
    EXPECT_EQ(stationaryRankBound(A2), 1);
    const Mat S2 = Mat::Constant(2, 2, 1.0);
    EXPECT_EQ((S2 * A2 * S2).cwiseAbs().maxCoeff(), 0.0);
    EXPECT_EQ(thresholdRank(S2, 1e-12, RankThreshold::Relative), 1);

    Mat A3 = Mat::Zero(3, 3);
    A3(0, 0) = 1;
    A3(1, 1) = -1;
    EXPECT_EQ(stationaryRankBound(A3), 2);
    Mat S3(3, 3);
    S3 << 1, 1, 0, 1, 1, 0, 0, 0, 1;
    EXPECT_EQ((S3 * A3 * S3).cwiseAbs().maxCoeff(), 0.0);
    EXPECT_EQ(thresholdRank(S3, 1e-12, RankThreshold::Relative), 2);

    EXPECT_EQ(stationaryRankBound(-Mat::Identity(3, 3)), 0);
    EXPECT_EQ(stationaryRankBound(Mat::Zero(3, 3)), 3);
    Mat A4 = Mat::Identity(4, 4);
    A4(2, 2) = A4(3, 3) = -2;
    EXPECT_EQ(stationaryRankBound(A4), 2); // invertible: d/2
}

// ---- T9, T10, T11: l2 and Sinkhorn ------------------------------------------------------------------------

TEST(GaussianClosed, T9L2Variance1d) {
    expectRel(l2Variance1d(1, 1, 1, 1, 0.5), 2.093495237, 1e-9);
    expectRel(l2Variance1d(1, 1, 1, 1, 1), 4.957300533, 1e-9);
    expectRel(l2Variance1d(1, 1, 1, 1, 5), 13360.22682, 1e-9);
    expectRel(l2Variance1d(1, 1, -1, 1, 1), 0.3469079981, 1e-9);
    EXPECT_EQ(l2Variance1d(1, 1, 1, 1, 0), 1.0);
    // RK4 of s' = 4 a v s^2 / (1 + 2 k^2 s), a = q k, for other parameters. (Structured bindings are captured
    // by init-capture: clang 14, the sanitizer build's compiler, cannot capture them otherwise.)
    for (const auto& [q, k, v, s0] :
         {std::tuple{2.0, 0.5, 1.0, 0.3}, std::tuple{-0.7, 1.3, 0.8, 2.0}, std::tuple{0.5, 2.0, -1.5, 0.7}}) {
        const double a = q * k;
        const double s = rk4([a, v = v, k = k](double s) { return 4 * a * v * s * s / (1 + 2 * k * k * s); },
                             s0, 2.0, 20000);
        expectRel(l2Variance1d(q, k, v, s0, 2.0), s, 1e-11);
    }
    // Never blows up, unlike softmax (t_max = 0.5 for the same a, v, s0).
    EXPECT_TRUE(std::isfinite(l2Variance1d(1, 1, 1, 1, 50)));
}

TEST(GaussianClosed, T10SinkhornVariance1d) {
    expectRel(sinkhornPhi(1.0), -1.5328399754, 1e-10);
    expectRel(sinkhornVariance1d(1, 1, 1, 0.5, 0.5), 0.8100381589, 1e-9);
    expectRel(sinkhornVariance1d(1, 1, 1, 0.5, 3), 59.6956422, 1e-8);
    expectRel(sinkhornVariance1d(1, -1, 1, 0.5, 0.5), 0.3485555771, 1e-9);
    expectRel(sinkhornVariance1d(2, 0.5, 0.5, 1, 1), 6.619852379, 1e-9);
    for (const auto& [a, v, eps, s0] : {std::tuple{-1.5, 0.7, 0.3, 0.4}, std::tuple{0.6, -1.1, 2.0, 3.0},
                                        std::tuple{-0.4, -0.9, 1.0, 1.0}}) {
        const double s =
            rk4([a = a, v = v, eps = eps](
                    double s) { return v / (a * eps) * (std::sqrt(4 * a * a * s * s + eps * eps) - eps); },
                s0, 2.0, 20000);
        expectRel(sinkhornVariance1d(a, v, eps, s0, 2.0), s, 1e-11);
    }
}

TEST(GaussianClosed, T11SinkhornMean) {
    const Mat J = rotation90();
    expectMat(sinkhornMean(J, 0.5, v2(1, 0), kPi / 4), v2(0, 1), 1e-14);
    for (double t : {0.3, 1.0, 2.5})
        expectMat(sinkhornMean(J, 0.5, v2(1, 0), t), v2(std::cos(2 * t), std::sin(2 * t)), 1e-13);
    const Mat V = m2(0.3, -0.2, 0.5, -0.1);
    const Vec a = rk4([&](const Vec& a) { return Vec(V * a / 0.7); }, v2(0.4, -1.0), 1.3, 2000);
    expectMat(sinkhornMean(V, 0.7, v2(0.4, -1.0), 1.3), a, 1e-12);
    expectMat(expm(Mat::Zero(3, 3)), Mat::Identity(3, 3), 0);
}

// ---- drifting (docs/math/gaussian.md#drifting)
// -----------------------------------------------------------------------------------------

TEST(GaussianClosed, DriftingVarianceAndMean1d) {
    // An earlier hand computation gave s(1) = 0.4143565473; the implicit solution and RK4 (1e5 steps) both
    // give 0.4143582630 (its s(3) = 0.7166609646 is right).
    expectRel(driftingVariance1d(1, 0.25, 1), 0.4143582630, 1e-9);
    expectRel(driftingVariance1d(1, 0.25, 3), 0.7166609646, 1e-9);
    const Vec m0 = Vec::Zero(1), mNu = Vec::Ones(1);
    const Mat sNu = Mat::Ones(1, 1);
    expectRel(driftingMean(m0, mNu, sNu, 1)(0), 1 - std::exp(-0.5), 1e-14);
    expectRel(driftingMean(m0, mNu, sNu, 1)(0), 0.3934693403, 1e-9);
    expectRel(driftingMean(m0, mNu, sNu, 3)(0), 0.7768698399, 1e-9);
    // RK4 of s' = 2 s (1/(s + 1) - 1/(s_nu + 1)): from below, from above, and towards s_nu = 0.
    for (const auto& [snu, s0] :
         {std::pair{1.0, 0.25}, std::pair{0.5, 3.0}, std::pair{2.0, 0.01}, std::pair{0.0, 1.5}}) {
        const double s =
            rk4([snu = snu](double s) { return 2 * s * (1 / (s + 1) - 1 / (snu + 1)); }, s0, 3.0, 30000);
        expectRel(driftingVariance1d(snu, s0, 3.0), s, 1e-11);
    }
    EXPECT_EQ(driftingVariance1d(1.0, 1.0, 2.0), 1.0);
    // 2-D mean: m' = (Sigma_nu + I)^{-1} (m_nu - m).
    const Mat Snu = sym2(0.8, 0.3, 0.4);
    const Vec mn = v2(1, -2), mi = v2(-0.5, 0.5);
    const Mat Minv = (Snu + Mat::Identity(2, 2)).inverse();
    const Vec m = rk4([&](const Vec& m) { return Vec(Minv * (mn - m)); }, mi, 2.0, 2000);
    expectMat(driftingMean(mi, mn, Snu, 2.0), m, 1e-12);
}

// ---- docs/math/gaussian.md#cone, #trace-slice, #grid: cone coordinates, grid, spectra
// ---------------------------------------------------------------

TEST(Cone, CoordinatesRoundTrip) {
    expectMat(fromCone({0, 0, 2}), Mat::Identity(2, 2), 0);
    EXPECT_EQ(toCone(Mat::Identity(2, 2)), Eigen::Vector3d(0, 0, 2));
    const Mat S = sym2(1.3, -0.4, 0.6);
    EXPECT_LE((toCone(S) - Eigen::Vector3d(0.7, -0.8, 1.9)).norm(), 1e-15);
    expectMat(fromCone(toCone(S)), S, 1e-15);
    const Eigen::Vector3d p(0.3, -0.2, 1.7);
    EXPECT_LE((toCone(fromCone(p)) - p).norm(), 1e-15);
    // Eigen-structure.
    const Eigen::Vector3d q = toCone(S);
    const Eigen::Vector2d ev = coneEigenvalues(q);
    const Vec sp = spectrum(S);
    EXPECT_NEAR(ev(0), sp(0), 1e-15);
    EXPECT_NEAR(ev(1), sp(1), 1e-15);
    const double th = conePrincipalAngle(q);
    const Vec u = v2(std::cos(th), std::sin(th));
    EXPECT_LT((S * u - sp(0) * u).norm(), 1e-14);
    // A rank-one matrix r^2 u u^T lies on the boundary ray r^2 (cos 2th, sin 2th, 1).
    const double t0 = 0.7, r2 = 2.5;
    const Vec w = v2(std::cos(t0), std::sin(t0));
    const Eigen::Vector3d c = toCone(r2 * w * w.transpose());
    EXPECT_LE((c - r2 * coneRay(t0)).norm(), 1e-14);
    EXPECT_NEAR(c.z(), std::hypot(c.x(), c.y()), 1e-14);
    // Trace-1 slice.
    const Eigen::Vector2d z = traceSlice(S);
    EXPECT_NEAR(z.x(), 0.7 / 1.9, 1e-15);
    EXPECT_NEAR(z.y(), -0.8 / 1.9, 1e-15);
    expectMat(fromTraceSlice(z), S / S.trace(), 1e-15);
}

TEST(Cone, LinspaceLikeNumpy) {
    const std::vector<double> x = linspace(-1, 1, 20);
    ASSERT_EQ(x.size(), 20u);
    EXPECT_EQ(x.front(), -1.0);
    EXPECT_EQ(x.back(), 1.0);
    EXPECT_EQ(x[3], -1.0 + 3 * (2.0 / 19));
    EXPECT_EQ(linspace(0.5, 2, 1), std::vector<double>{0.5});
    EXPECT_TRUE(linspace(0, 1, 0).empty());
}

TEST(Cone, InitialGridCounts) {
    EXPECT_EQ(initGrid(10, 10, {-0.5, 0.5, -0.5, 0.5}).size(), 100u);
    EXPECT_EQ(initGrid(20, 20, {-1, 1, -1, 1}).size(), 276u);
    EXPECT_EQ(initGrid(30, 30, {-1, 1, -1, 1}).size(), 648u);
    EXPECT_EQ(initGrid(40, 40, {-1, 1, -1, 1}).size(), 1184u);
    // Order: x outer, y inner (numpy meshgrid(...).T.reshape).
    const auto g = initGrid(10, 10, {-0.5, 0.5, -0.5, 0.5});
    EXPECT_EQ(g[0], Eigen::Vector3d(-0.5, -0.5, 1));
    EXPECT_EQ(g[1].x(), -0.5);
    EXPECT_GT(g[1].y(), -0.5);
    EXPECT_EQ(g[10].x(), -0.5 + 1.0 / 9);

    ConeGridSpec spec;
    spec.nu = spec.nc = 20;
    const std::vector<Mat> covs = coneGrid(spec);
    ASSERT_EQ(covs.size(), 276u);
    for (const Mat& S : covs) {
        EXPECT_NEAR(S.trace(), 1.0, 1e-15);
        EXPECT_GT(spectrum(S)(1), 0.0); // strictly inside the cone: full rank
        EXPECT_EQ(S(0, 1), S(1, 0));
    }
    EXPECT_TRUE(coneGrid(ConeGridSpec{}).empty());
}

TEST(Cone, SpectrumAndRankThresholds) {
    Mat S = Mat::Zero(3, 3);
    S.diagonal() << 0.05, 5.0, 1e-9;
    const Mat R =
        Eigen::Quaterniond(Eigen::AngleAxisd(0.7, Eigen::Vector3d(1, 2, -1).normalized())).toRotationMatrix();
    S = (R * S * R.transpose()).eval();
    const Vec sp = spectrum(S);
    EXPECT_NEAR(sp(0), 5.0, 1e-14);
    EXPECT_NEAR(sp(1), 0.05, 1e-14);
    EXPECT_NEAR(sp(2), 1e-9, 1e-14);
    EXPECT_EQ(thresholdRank(S, 0.1, RankThreshold::Absolute), 1); // the authors' histogram threshold
    EXPECT_EQ(thresholdRank(S, 1e-3, RankThreshold::Absolute), 2);
    EXPECT_EQ(thresholdRank(S, 1e-12, RankThreshold::Absolute), 3);
    EXPECT_EQ(thresholdRank(S, 1e-6, RankThreshold::Relative), 2);
    EXPECT_EQ(thresholdRank(S, 1e-12, RankThreshold::Relative), 3);
    EXPECT_EQ(thresholdRank(S, 0.02, RankThreshold::Relative), 1);
    EXPECT_EQ(thresholdRank(Mat::Zero(2, 2), 1e-6, RankThreshold::Relative), 0);
    EXPECT_EQ(thresholdRank(-Mat::Identity(2, 2), 1e-6, RankThreshold::Absolute), 0);
}

// ---- docs/math/gaussian.md#energies: energies and distances ----------------------------------------------

namespace {

// The Sigma^{-1} form of docs/math/gaussian.md#softmax-energy (an independent evaluation).
double softmaxEnergyDigest(const Mat& A, const Vec& alpha, const Mat& Sigma) {
    const Eigen::Index d = Sigma.rows();
    const Mat Si = Sigma.inverse(), I = Mat::Identity(d, d);
    const Mat M = (A + Si).transpose() * (Si - A * Sigma * A.transpose()).inverse() * (A + Si) - Si;
    return std::exp(0.5 * alpha.dot(M * alpha)) /
           (2 * std::sqrt(std::abs((I - A * Sigma * A.transpose() * Sigma).determinant())));
}

} // namespace

TEST(GaussianEnergy, SoftmaxTwistedEnergy) {
    // 1-D check.
    const auto f1 =
        softmaxGaussianEnergy(Mat::Constant(1, 1, -0.7), Vec::Constant(1, 0.5), Mat::Constant(1, 1, 0.9));
    ASSERT_TRUE(f1.has_value());
    expectRel(*f1, 0.5782939275, 1e-9);
    // 2-D, non-symmetric A.
    const Mat A = m2(-0.5, 0.3, 0.1, -0.4), S = sym2(0.8, 0.2, 0.5);
    const Vec al = v2(0.4, 0.3);
    const auto f2 = softmaxGaussianEnergy(A, al, S);
    ASSERT_TRUE(f2.has_value());
    expectRel(*f2, 0.5171550244, 1e-9);
    expectRel(*f2, softmaxEnergyDigest(A, al, S), 1e-13);
    // The flow example's F(0).
    expectRel(*softmaxGaussianEnergy(m2(-0.6, 0.2, 0.2, -0.4), al, S), 0.52864, 1e-5);
    // Divergent integral: Sigma^{-1} - A Sigma A^T not positive definite.
    EXPECT_FALSE(softmaxGaussianEnergy(2 * Mat::Identity(2, 2), v2(0, 0), Mat::Identity(2, 2)).has_value());
    EXPECT_FALSE(
        softmaxGaussianEnergy(Mat::Constant(1, 1, 1.0), Vec::Zero(1), Mat::Constant(1, 1, 1.0)).has_value());
    // Sigma = 0 (a Dirac at alpha): F = e^{alpha^T A alpha}/2.
    expectRel(*softmaxGaussianEnergy(A, al, Mat::Zero(2, 2)), 0.5 * std::exp(al.dot(A * al)), 1e-15);
}

TEST(GaussianEnergy, SoftmaxHypothesis) {
    const Mat A = m2(-0.6, 0.2, 0.2, -0.4);
    EXPECT_TRUE(softmaxEnergyHypothesis(A, -A));                                          // B = I
    EXPECT_TRUE(softmaxEnergyHypothesis(A, Mat::Identity(2, 2)));                         // B = -A^{-1} SPD
    EXPECT_FALSE(softmaxEnergyHypothesis(A, A));                                          // B = -I
    EXPECT_FALSE(softmaxEnergyHypothesis(m2(-0.5, 0.3, 0.1, -0.4), Mat::Identity(2, 2))); // A not symmetric
    EXPECT_FALSE(softmaxEnergyHypothesis(m2(1, 1, 1, 1), -m2(1, 1, 1, 1)));               // A singular
    const Mat Ai = m2(0.6, 0.4, 0.4, -0.9); // indefinite A, V = -A: B = I
    EXPECT_TRUE(softmaxEnergyHypothesis(Ai, -Ai));
}

TEST(GaussianEnergy, ParticleEnergyDecreasesAlongSoftmaxFlow) {
    const Mat A = m2(0.6, 0.4, 0.4, -0.9);
    Tokens X2(2, 2);
    X2 << 1, 0, 0, 1;
    expectRel(particleEnergy(X2, A), (std::exp(0.6) + 2 * std::exp(0.4) + std::exp(-0.9)) / 8, 1e-15);

    // 30 random points, V = -A (B = I): E_N is non-increasing along the discrete softmax flow.
    Tokens X = randomTokens(30, 2, 11, 0.8);
    const auto field =
        makeCpuField(singleHead(AttentionType::Softmax, A, Mat::Identity(2, 2), -A), 2, Precision::Float64);
    IntegratorSpec is;
    is.method = Method::Rk4;
    auto integ = makeIntegrator(is);
    const Field f = [&](double t, const Tokens& Y, Tokens& dY) { field->velocity(t, Y, dY); };
    double prev = particleEnergy(X, A);
    const double first = prev;
    for (int k = 0; k < 300; ++k) {
        ASSERT_TRUE(integ->advance(f, k * 0.01, 0.01, X).ok);
        const double e = particleEnergy(X, A);
        EXPECT_LE(e, prev + 1e-12) << "step " << k;
        prev = e;
    }
    EXPECT_LT(prev, first);
}

TEST(GaussianEnergy, SinkhornEnergy) {
    const Mat A = sym2(0.8, 0.3, -0.5), V = -A, S = sym2(1.5, 0.4, 0.8);
    const Vec al = v2(0.3, -0.2);
    const double eps = 0.7;
    EXPECT_TRUE(sinkhornEnergyHypothesis(A, V));
    EXPECT_FALSE(sinkhornEnergyHypothesis(A, A));
    EXPECT_FALSE(sinkhornEnergyHypothesis(m2(1, 0.3, -0.2, 0.8), -m2(1, 0.3, -0.2, 0.8)));
    expectRel(sinkhornGaussianEnergy(A, eps, al, S), 0.6192698793, 1e-9);

    // The explicit form of docs/math/gaussian.md#sinkhorn-energy with S_yx and Sigma^{-1}.
    const Mat Syx = sinkhornCrossCovariance(A, eps, S), Sxy = Syx.transpose(), Si = S.inverse();
    const double digest = ((A * Sxy).trace() + al.dot(A * al)) / (2 * eps) +
                          0.25 * std::log((Mat::Identity(2, 2) - Si * Sxy * Si * Syx).determinant());
    expectRel(sinkhornGaussianEnergy(A, eps, al, S), digest, 1e-13);

    // -grad_alpha F = V alpha / eps (central differences).
    const double h = 1e-5;
    Vec g(2);
    for (int i = 0; i < 2; ++i) {
        Vec p = al, m = al;
        p(i) += h;
        m(i) -= h;
        g(i) = (sinkhornGaussianEnergy(A, eps, p, S) - sinkhornGaussianEnergy(A, eps, m, S)) / (2 * h);
    }
    expectMat(-g, v2(-0.2571428571, -0.2714285714), 1e-9);
    expectMat(-g, V * al / eps, 1e-9);

    // E3: Sigma' = (1/eps)(V S_yx + S_yx^T V^T) = -2 (G Sigma + Sigma G), G the Frobenius gradient.
    const Mat rate = (V * Syx + Syx.transpose() * V.transpose()) / eps;
    expectMat(rate, sym2(-3.00520078, -0.61697006, -0.56778818), 5e-9);
    Mat G(2, 2);
    for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 2; ++j) {
            Mat E = Mat::Zero(2, 2);
            E(i, j) = E(j, i) = (i == j) ? h : 0.5 * h; // symmetric perturbation: <G, E> = h G_ij
            G(i, j) =
                (sinkhornGaussianEnergy(A, eps, al, S + E) - sinkhornGaussianEnergy(A, eps, al, S - E)) /
                (2 * h);
        }
    expectMat(-2 * (G * S + S * G), rate, 1e-8);

    // 1-D, eps = 1: F = (R - 1/2)/2 - log(R + 1/2)/4 + a alpha^2/2, R = sqrt(a^2 s^2 + 1/4).
    const double a = -0.8, s = 1.7, m = 0.6, R = std::sqrt(a * a * s * s + 0.25);
    expectRel(
        sinkhornGaussianEnergy(Mat::Constant(1, 1, a), 1.0, Vec::Constant(1, m), Mat::Constant(1, 1, s)),
        0.5 * (R - 0.5) - 0.25 * std::log(R + 0.5) + 0.5 * a * m * m, 1e-14);
    // Sigma = 0: only the mean term.
    expectRel(sinkhornGaussianEnergy(A, eps, al, Mat::Zero(2, 2)), al.dot(A * al) / (2 * eps), 1e-15);
}

TEST(GaussianEnergy, SinkhornCrossCovarianceT12) {
    const Mat S = sym2(2, 0.5, 1), A = m2(1, 0.3, -0.2, 0.8);
    const Mat Syx = sinkhornCrossCovariance(A, 0.7, S);
    expectMat(Syx, m2(1.65343976, 0.70127807, 0.26428007, 0.66011397), 5e-9);
    const Mat V = m2(0.5, -1, 0.3, 0.2);
    expectMat((V * Syx + Syx.transpose() * V.transpose()) / 0.7, sym2(1.6069709, 0.34201858, 0.97830347),
              5e-8);
}

TEST(GaussianEnergy, BuresWasserstein) {
    const Mat S = sym2(1.2, 0.3, 0.6);
    const Vec m = v2(0.5, -1);
    EXPECT_NEAR(buresWasserstein(m, S, m, S), 0.0, 1e-7); // sqrt of a round-off-sized W2^2
    EXPECT_NEAR(buresWasserstein2(m, S, m, S), 0.0, 1e-14);
    // Commuting diagonals: |m1 - m2|^2 + sum (sqrt a_i - sqrt b_i)^2 = 25 + 1 + 4.
    expectRel(buresWasserstein2(v2(0, 0), m2(4, 0, 0, 1), v2(3, 4), m2(1, 0, 0, 9)), 30.0, 1e-14);
    expectRel(buresWasserstein(v2(0, 0), m2(4, 0, 0, 1), v2(3, 4), m2(1, 0, 0, 9)), std::sqrt(30.0), 1e-14);
    // 2x2 non-commuting: tr (S1^{1/2} S2 S1^{1/2})^{1/2} = sqrt(tr(S1 S2) + 2 sqrt(det S1 det S2)).
    const Mat S2 = sym2(0.5, -0.2, 2.0);
    const double cross = std::sqrt((S * S2).trace() + 2 * std::sqrt(S.determinant() * S2.determinant()));
    expectRel(buresWasserstein2(m, S, v2(0, 0), S2), m.squaredNorm() + S.trace() + S2.trace() - 2 * cross,
              1e-13);
    EXPECT_NEAR(buresWasserstein2(m, S, v2(0, 0), S2), buresWasserstein2(v2(0, 0), S2, m, S), 1e-13);
    // 1-D: (m1 - m2)^2 + (sqrt s1 - sqrt s2)^2.
    expectRel(buresWasserstein2(Vec::Constant(1, 1), Mat::Constant(1, 1, 4), Vec::Constant(1, -1),
                                Mat::Constant(1, 1, 0.25)),
              4 + 2.25, 1e-15);
}
