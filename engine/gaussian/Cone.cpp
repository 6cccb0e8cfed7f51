// PSD-cone coordinates, the trace-1 grid and spectral read-outs; formulas in Cone.h.
#include "engine/gaussian/Cone.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace flowscope {

Eigen::Vector3d toCone(const Mat& Sigma) {
    const double a = Sigma(0, 0), b = Sigma(1, 1), c = 0.5 * (Sigma(0, 1) + Sigma(1, 0));
    return {a - b, 2.0 * c, a + b};
}

Mat fromCone(const Eigen::Vector3d& p) {
    const double a = 0.5 * (p.z() + p.x()), b = 0.5 * (p.z() - p.x()), c = 0.5 * p.y();
    Mat S(2, 2);
    S << a, c, c, b;
    return S;
}

Eigen::Vector2d traceSlice(const Mat& Sigma) {
    const Eigen::Vector3d p = toCone(Sigma);
    return {p.x() / p.z(), p.y() / p.z()};
}

Mat fromTraceSlice(const Eigen::Vector2d& p) {
    return fromCone({p.x(), p.y(), 1.0});
}

Eigen::Vector2d coneEigenvalues(const Eigen::Vector3d& p) {
    const double r = std::hypot(p.x(), p.y());
    return {0.5 * (p.z() + r), 0.5 * (p.z() - r)};
}

double conePrincipalAngle(const Eigen::Vector3d& p) {
    return 0.5 * std::atan2(p.y(), p.x());
}

Eigen::Vector3d coneRay(double theta) {
    return {std::cos(2.0 * theta), std::sin(2.0 * theta), 1.0};
}

std::vector<Eigen::Vector3d> initGrid(int nU, int nC, const std::array<double, 4>& limits) {
    const std::vector<double> xs = linspace(limits[0], limits[1], nU);
    const std::vector<double> ys = linspace(limits[2], limits[3], nC);
    std::vector<Eigen::Vector3d> points;
    for (double x : xs)
        for (double y : ys)
            if (insideTraceOneDisc(x, y)) points.emplace_back(x, y, 1.0); // v^2 - u^2 > w^2 with v = 1
    return points;
}

std::vector<Mat> coneGrid(const ConeGridSpec& spec) {
    std::vector<Mat> out;
    if (!spec.enabled()) return out;
    for (const Eigen::Vector3d& p : initGrid(spec.nu, spec.nc, {spec.x0, spec.x1, spec.y0, spec.y1}))
        out.push_back(fromCone(p));
    return out;
}

Vec spectrum(const Mat& Sigma) {
    if (Sigma.size() == 0) return Vec();
    const Eigen::SelfAdjointEigenSolver<Mat> es(Mat(0.5 * (Sigma + Sigma.transpose())),
                                                Eigen::EigenvaluesOnly);
    return es.eigenvalues().reverse();
}

int thresholdRank(const Mat& Sigma, double tol, RankThreshold mode) {
    if (Sigma.size() == 0 || !Sigma.allFinite()) return 0;
    const Vec ev = spectrum(Sigma);
    double threshold = tol;
    if (mode == RankThreshold::Relative) {
        if (!(ev(0) > 0.0)) return 0;
        threshold = tol * ev(0);
    }
    return int((ev.array() > threshold).count());
}

std::vector<Eigen::Vector2d> IsotropicDirections::directions() const {
    std::vector<Eigen::Vector2d> out;
    for (double th : angles) out.emplace_back(std::cos(th), std::sin(th));
    return out;
}

namespace {

// th modulo pi, in (-pi/2, pi/2].
double wrapHalfTurn(double th) {
    constexpr double pi = std::numbers::pi;
    th = std::remainder(th, pi); // [-pi/2, pi/2]
    if (th <= -0.5 * pi) th += pi;
    return th;
}

} // namespace

IsotropicDirections isotropicDirections(const Mat& M, double tol) {
    IsotropicDirections out;
    const double p = M(0, 0), q = M(1, 1), r = 0.5 * (M(0, 1) + M(1, 0));
    const double m = 0.5 * (p + q), h = 0.5 * (p - q);
    const double R = std::hypot(h, r);
    const double scale = std::abs(m) + R; // max |eigenvalue|
    if (scale == 0.0) {
        out.everyDirection = true;
        return out;
    }
    const double gap = R - std::abs(m); // = min |eigenvalue| with the sign of -det
    if (gap < -tol * scale) return out; // definite
    if (gap <= tol * scale) {
        if (R <= tol * scale) { // m ~ 0 too: M ~ 0
            out.everyDirection = true;
            return out;
        }
        // Semi-definite: the kernel direction, cos(2th - phi) = -sign(m).
        const double phi = std::atan2(r, h);
        out.angles.push_back(wrapHalfTurn(0.5 * (phi + (m > 0 ? std::numbers::pi : 0.0))));
        return out;
    }
    const double phi = std::atan2(r, h);
    const double delta = std::acos(std::clamp(-m / R, -1.0, 1.0));
    out.angles = {wrapHalfTurn(0.5 * (phi + delta)), wrapHalfTurn(0.5 * (phi - delta))};
    std::sort(out.angles.begin(), out.angles.end());
    return out;
}

} // namespace flowscope
