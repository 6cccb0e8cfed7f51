#include "engine/dynamics/Equiangular.h"

#include "engine/dynamics/Integrator.h"

#include <cmath>
#include <limits>
#include <stdexcept>

namespace flowscope {

double meanCosine(const Tokens& X) {
    const Eigen::Index n = X.rows();
    if (n < 2) return std::numeric_limits<double>::quiet_NaN();
    Vec sum = Vec::Zero(X.cols());
    for (Eigen::Index i = 0; i < n; ++i) {
        const double norm = X.row(i).norm();
        if (norm > 0.0) sum += X.row(i).transpose() / norm;
    }
    const double nonzero = double((X.rowwise().squaredNorm().array() > 0.0).count());
    return (sum.squaredNorm() - nonzero) / (double(n) * double(n - 1));
}

Equiangular equiangularRate(Normalization scheme, int n, double beta, const Equiangular& s) {
    // Softmax weights of a token on itself (cosine 1) and on each other token (cosine rho), divided by
    // e^{beta rho}: the ratio keeps the exponentials in range for any beta.
    const double m = double(n - 1), self = std::exp(beta * (1.0 - s.rho)), z = self + m;
    const double tangent = 2.0 * (1.0 - s.rho) * (m * s.rho + 1.0) / z; // post-LN's rho'
    const double radial = (self + m * s.rho) / z;                       // <A_i, theta_i>
    switch (scheme) {
    case Normalization::Post:
        return {tangent, 0.0};
    case Normalization::Pre:
        return {tangent / s.r, radial};
    case Normalization::Peri: {
        // |A_i|^2 = |self theta_i + sum_{j != i} theta_j|^2 / z^2.
        const double norm =
            std::sqrt(self * self + 2.0 * m * s.rho * self + m * (1.0 + (m - 1.0) * s.rho)) / z;
        return {tangent / (s.r * norm), radial / norm};
    }
    default:
        throw std::invalid_argument("equiangularRate: the equiangular reduction needs post, pre or peri");
    }
}

std::vector<double> equiangularRho(Normalization scheme, int n, double beta, const Equiangular& start,
                                   const std::vector<double>& times) {
    IntegratorSpec spec;
    spec.method = Method::DormandPrince;
    spec.rtol = 1e-13;
    spec.atol = 1e-15;
    spec.minStep = 1e-14;
    const std::unique_ptr<Integrator> integrator = makeIntegrator(spec);
    const Field field = [&](double, const Tokens& X, Tokens& dX) {
        const Equiangular rate = equiangularRate(scheme, n, beta, {X(0, 0), X(0, 1)});
        dX.resize(1, 2);
        dX << rate.rho, rate.r;
    };
    Tokens X(1, 2);
    X << start.rho, start.r;
    std::vector<double> rho;
    double t = 0.0;
    for (double target : times) {
        if (target < t) throw std::invalid_argument("equiangularRho: times must be ascending and >= 0");
        // Calls of at most unit length: each has a bounded number of sub-steps (kMaxSubsteps).
        while (t < target) {
            const double next = std::min(target, t + 1.0);
            if (!integrator->advance(field, t, next - t, X).ok)
                throw std::runtime_error("equiangularRho: the integrator failed at t = " + std::to_string(t));
            t = next;
        }
        rho.push_back(X(0, 0));
    }
    return rho;
}

ConsensusRate consensusRate(Normalization scheme, const std::vector<double>& t,
                            const std::vector<double>& rho) {
    ConsensusRate rate;
    rate.perLogT = scheme == Normalization::Pre || scheme == Normalization::Peri;
    if (scheme != Normalization::None) rate.predicted = -2.0;
    if (t.empty() || t.size() != rho.size()) return rate;
    const double half = t.back() / 2;
    double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (std::size_t k = 0; k < t.size(); ++k) {
        const double gap = 1.0 - rho[k];
        // Gaps at rounding level are no law's: the mean cosine cancels to about n eps at consensus.
        if (!(t[k] >= half) || !(gap > 1e-12) || !std::isfinite(gap) || (rate.perLogT && !(t[k] > 0)))
            continue;
        const double x = rate.perLogT ? std::log(t[k]) : t[k], y = std::log(gap);
        n += 1, sx += x, sy += y, sxx += x * x, sxy += x * y;
    }
    rate.samples = int(n);
    const double spread = n * sxx - sx * sx;
    if (n >= 4 && spread > 0) rate.slope = (n * sxy - sx * sy) / spread;
    return rate;
}

bool isIdentity(const Mat& m, int d) {
    return m.rows() == d && m.cols() == d && m == Mat::Identity(d, d);
}

bool hasConsensusLaw(const AttentionSpec& a, int d) {
    if (a.type != AttentionType::Softmax || !a.keyframes.empty() || a.heads.size() != 1 || a.masked ||
        a.positionalDecay != 0.0 || normalizationOf(a) == Normalization::None)
        return false;
    return isIdentity(a.heads.front().V, d);
}

// The law's hypotheses, and Q = K = I with the plain β.
bool hasEquiangularReduction(const AttentionSpec& a, int d) {
    return hasConsensusLaw(a, d) && !a.scaleByRootK && isIdentity(a.heads.front().Q, d) &&
           isIdentity(a.heads.front().K, d);
}

std::optional<Equiangular> equiangularState(const Tokens& X, double tolerance) {
    const Eigen::Index n = X.rows();
    if (n < 2) return std::nullopt;
    const Vec radii = X.rowwise().norm();
    const double r = radii(0);
    if (!(r > 0) || (radii.array() - r).abs().maxCoeff() > tolerance * r) return std::nullopt;
    // Pair by pair, leaving at the first that differs (a cloud that is not equiangular costs a few pairs, not
    // an n x n matrix).
    const double rho = X.row(0).dot(X.row(1)) / (r * r);
    for (Eigen::Index i = 0; i < n; ++i)
        for (Eigen::Index j = i + 1; j < n; ++j)
            if (std::abs(X.row(i).dot(X.row(j)) / (r * r) - rho) > tolerance) return std::nullopt;
    return Equiangular{rho, r};
}

} // namespace flowscope
