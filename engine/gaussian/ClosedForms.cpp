// Closed-form solutions of the Gaussian moment ODEs; formulas in ClosedForms.h.
#include "engine/gaussian/ClosedForms.h"
#include "engine/gaussian/MatrixRoots.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace flowscope {

using Index = Eigen::Index;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kEps = std::numeric_limits<double>::epsilon();

// Root of an increasing function on [lo, hi] (f(lo) <= 0 <= f(hi); infinite end values allowed) by Newton's
// method, falling back to bisection whenever a step leaves the current bracket. `f(x, df)` returns f(x) and
// writes f'(x) to df. Converges to round-off.
template <class F> double solveIncreasing(F f, double lo, double hi, double x) {
    for (int it = 0; it < 400; ++it) {
        double df = 0.0;
        const double fx = f(x, df);
        if (fx == 0.0) return x;
        if (fx < 0.0)
            lo = x;
        else
            hi = x;
        double xn = x - fx / df;
        if (!(xn > lo && xn < hi)) xn = lo + 0.5 * (hi - lo);
        const double tol = 4.0 * kEps * std::max(std::abs(xn), 1e-300);
        if (std::abs(xn - x) <= tol || hi - lo <= tol) return xn;
        x = xn;
    }
    return x;
}

// Expands [x0, x0 + step] (step > 0: upwards, step < 0: downwards) until f changes sign, doubling the step.
// Returns the far end, or +-inf when it passes `limit` (|limit| as a bound on |x|).
template <class F> double expandBracket(F f, double x0, double step, double limit) {
    double x = x0 + step;
    for (int it = 0; it < 2000; ++it) {
        double df = 0.0;
        const double fx = f(x, df);
        if ((step > 0 && fx >= 0.0) || (step < 0 && fx <= 0.0)) return x;
        step *= 2.0;
        x = x0 + step;
        if (std::abs(x) > limit) return step > 0 ? kInf : -kInf;
    }
    return step > 0 ? kInf : -kInf;
}

// Largest |x| = ln s before exp overflows / underflows.
constexpr double kLogLimit = 700.0;

// s = e^u for the root u of an increasing f(u) = 0 (as solveIncreasing) that lies above u0 (`up`) or below
// it: the bracket is expanded from u0 that way, and s is inf (up) or 0 (down) when u passes kLogLimit.
template <class F> double solveForExpOfRoot(F f, double u0, bool up) {
    double lo = u0, hi = u0;
    if (up) {
        hi = expandBracket(f, u0, 1.0, kLogLimit);
        if (std::isinf(hi)) return kInf;
    } else {
        lo = expandBracket(f, u0, -1.0, kLogLimit);
        if (std::isinf(lo)) return 0.0;
    }
    return std::exp(solveIncreasing(f, lo, hi, up ? lo : hi));
}

} // namespace

// ---- Softmax, commuting case ------------------------------------------------------------------------------

Mat commutingB(const Mat& V, const Mat& A) {
    return V * A + A.transpose() * V.transpose();
}

bool commutes(const Mat& V, const Mat& A, const Mat& Sigma0, double tol) {
    const Mat B = commutingB(V, A);
    const auto ok = [tol](const Mat& X, const Mat& Y) {
        return (X * Y - Y * X).norm() <= tol * std::max(X.norm() * Y.norm(), 1e-300);
    };
    const Mat Vt = V.transpose();
    return ok(V, Sigma0) && ok(Vt, Sigma0) && ok(V, B) && ok(Vt, B);
}

double commutingBlowupTime(const Mat& B, const Mat& Sigma0) {
    const Mat S = psdSqrt(Sigma0);
    const Eigen::SelfAdjointEigenSolver<Mat> es(symmetricPart(S * B * S), Eigen::EigenvaluesOnly);
    const Vec ev = es.eigenvalues();
    const double lmax = ev.maxCoeff();
    const double scale = ev.cwiseAbs().maxCoeff();
    // An exact zero eigenvalue (B singular, the "convergence to a line" cases) comes out as +-round-off.
    if (!(lmax > 64.0 * kEps * scale)) return kInf;
    return 1.0 / lmax;
}

std::optional<Mat> commutingCovariance(const Mat& B, const Mat& Sigma0, double t) {
    if (t >= commutingBlowupTime(B, Sigma0)) return std::nullopt;
    const Mat S = psdSqrt(Sigma0);
    const Index d = Sigma0.rows();
    const Mat M = Mat::Identity(d, d) - t * symmetricPart(S * B * S);
    const Eigen::LLT<Mat> llt(M);
    if (llt.info() != Eigen::Success) return std::nullopt;
    return symmetricPart(S * llt.solve(S));
}

std::optional<Mat> commutingLimit(const Mat& B, const Mat& Sigma0, double tol) {
    const Index d = B.rows();
    const Eigen::SelfAdjointEigenSolver<Mat> es(symmetricPart(B));
    const Vec ev = es.eigenvalues();
    const double scale = ev.cwiseAbs().maxCoeff();
    if (scale == 0.0) return Sigma0; // B = 0: Sigma is constant
    if (ev.maxCoeff() > tol * scale) return std::nullopt;
    const Eigen::LLT<Mat> llt(symmetricPart(Sigma0));
    if (llt.info() != Eigen::Success) return std::nullopt;
    std::vector<Index> kernel;
    for (Index i = 0; i < d; ++i)
        if (std::abs(ev(i)) <= tol * scale) kernel.push_back(i);
    if (kernel.empty()) return Mat(Mat::Zero(d, d));
    Mat U(d, Index(kernel.size()));
    for (Index j = 0; j < U.cols(); ++j) U.col(j) = es.eigenvectors().col(kernel[j]);
    const Mat X = U.transpose() * llt.solve(U); // U^T Sigma0^{-1} U (SPD)
    return symmetricPart(U * X.llt().solve(U.transpose()));
}

int stationaryRankBound(const Mat& A, double tol) {
    const Eigen::SelfAdjointEigenSolver<Mat> es(symmetricPart(A), Eigen::EigenvaluesOnly);
    const Vec ev = es.eigenvalues();
    const double scale = ev.size() ? ev.cwiseAbs().maxCoeff() : 0.0;
    int pos = 0, neg = 0, zero = 0;
    for (Index i = 0; i < ev.size(); ++i) {
        if (std::abs(ev(i)) <= tol * scale)
            ++zero;
        else if (ev(i) > 0)
            ++pos;
        else
            ++neg;
    }
    return zero + std::min(pos, neg);
}

// ---- Softmax, other exact cases ---------------------------------------------------------------------------

double softmaxBlowupTime1d(double a, double v, double s0) {
    const double c = 2.0 * a * v * s0;
    return c > 0.0 ? 1.0 / c : kInf;
}

double softmaxVariance1d(double a, double v, double s0, double t) {
    if (s0 == 0.0) return 0.0;
    if (t >= softmaxBlowupTime1d(a, v, s0)) return kInf;
    return s0 / (1.0 - 2.0 * a * v * s0 * t);
}

double softmaxMean1d(double a, double v, double s0, double alpha0, double t) {
    if (t >= softmaxBlowupTime1d(a, v, s0)) return alpha0 == 0.0 ? 0.0 : std::copysign(kInf, alpha0);
    // sqrt(s(t)/s0) = (1 - 2 a v s0 t)^{-1/2}
    return alpha0 * std::exp(v * t) / std::sqrt(1.0 - 2.0 * a * v * s0 * t);
}

Mat rotatingCovariance(const Mat& Sigma0, double t) {
    const double th = -Sigma0.trace() * t;
    Mat R(2, 2);
    R << std::cos(th), -std::sin(th), std::sin(th), std::cos(th);
    return symmetricPart(R * Sigma0 * R.transpose());
}

Vec rank1Rate(const Mat& A, const Mat& V, const Vec& u) {
    return u.dot(A * u) * (V * u);
}

// ---- l2, Sinkhorn, drifting -------------------------------------------------------------------------------

double l2Variance1d(double q, double k, double v, double s0, double t) {
    const double a = q * k, kk = k * k;
    const double rate = 4.0 * a * v * t;
    if (rate == 0.0 || s0 <= 0.0) return s0;
    // g(u) = -e^{-u} + 2 k^2 u with u = ln s is increasing; solve g(u) = g(u0) + 4 a v t.
    const double u0 = std::log(s0);
    const double target = -1.0 / s0 + 2.0 * kk * u0 + rate;
    const auto f = [&](double u, double& df) {
        const double e = std::exp(-u);
        df = e + 2.0 * kk;
        return -e + 2.0 * kk * u - target;
    };
    return solveForExpOfRoot(f, u0, rate > 0.0);
}

double sinkhornPhi(double w) {
    return std::asinh(w) - (1.0 + std::sqrt(1.0 + w * w)) / w;
}

double sinkhornVariance1d(double a, double v, double eps, double s0, double t) {
    const double shift = 2.0 * v * (a > 0 ? 1.0 : -1.0) * t / eps;
    if (a == 0.0 || shift == 0.0 || s0 <= 0.0) return s0;
    const double scale = 2.0 * std::abs(a) / eps; // w = scale * s
    const double u0 = std::log(scale * s0);
    const double target = sinkhornPhi(scale * s0) + shift;
    // Phi(e^u) is increasing in u, with d/du Phi(e^u) = w Phi'(w) = (w^2 + 1 + r) / (r w), r = sqrt(1 + w^2).
    const auto f = [&](double u, double& df) {
        const double w = std::exp(u), r = std::sqrt(1.0 + w * w);
        df = (w * w + 1.0 + r) / (r * w);
        return sinkhornPhi(w) - target;
    };
    return solveForExpOfRoot(f, u0, shift > 0.0) / scale; // inf and 0 stay so (scale > 0)
}

Vec sinkhornMean(const Mat& V, double eps, const Vec& alpha0, double t) {
    return expm((t / eps) * V) * alpha0;
}

double driftingVariance1d(double sNu, double s0, double t) {
    if (t == 0.0 || s0 <= 0.0 || s0 == sNu) return s0;
    if (sNu <= 0.0) {
        // s' = -2 s^2 / (s + 1): ln s - 1/s = ln s0 - 1/s0 - 2 t, solved for u = ln s (decreasing in t).
        const double u0 = std::log(s0);
        const double target = u0 - 1.0 / s0 - 2.0 * t;
        const auto f = [&](double u, double& df) {
            const double e = std::exp(-u);
            df = 1.0 + e;
            return u - e - target;
        };
        return solveForExpOfRoot(f, u0, false);
    }
    // h(s) = ln s - (1 + s_nu) ln|s_nu - s| = h(s0) + 2 s_nu t / (s_nu + 1); s stays on s0's side of s_nu.
    const double c = 1.0 + sNu;
    const auto h = [&](double s) { return std::log(s) - c * std::log(std::abs(sNu - s)); };
    const double target = h(s0) + 2.0 * sNu * t / c;
    if (s0 < sNu) {
        // h increasing on (0, s_nu), +inf at s_nu.
        const auto f = [&](double s, double& df) {
            df = 1.0 / s + c / (sNu - s);
            return h(s) - target;
        };
        return solveIncreasing(f, s0, sNu, s0);
    }
    // h decreasing on (s_nu, inf), +inf at s_nu: solve target - h(s) = 0, increasing in s.
    const auto f = [&](double s, double& df) {
        df = -(1.0 / s - c / (s - sNu));
        return target - h(s);
    };
    return solveIncreasing(f, sNu, s0, s0);
}

Vec driftingMean(const Vec& m0, const Vec& mNu, const Mat& SigmaNu, double t) {
    const Index d = m0.size();
    const Mat Minv = (SigmaNu + Mat::Identity(d, d)).ldlt().solve(Mat::Identity(d, d));
    return mNu + expm(-t * Minv) * (m0 - mNu);
}

} // namespace flowscope
