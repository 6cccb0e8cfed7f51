#include "render/picture/ParticleLayers.h"

#include "engine/dynamics/HardmaxCells.h"

#include "engine/gaussian/MatrixRoots.h"
#include "engine/runner/Snapshot.h"
#include "render/GaussianOverlay.h"
#include "render/picture/Colormap.h"

#include <Eigen/Eigenvalues>

#include <algorithm>
#include <cmath>
#include <limits>

namespace flowscope {

namespace {

// Greedy leader clustering labels (the rule of countClusters): token i joins the first leader within tol.
std::vector<int> clusterLabels(const Tokens& X, double tol) {
    std::vector<Eigen::Index> leaders;
    std::vector<int> label(std::size_t(X.rows()), 0);
    for (Eigen::Index i = 0; i < X.rows(); ++i) {
        int found = -1;
        for (std::size_t l = 0; l < leaders.size() && found < 0; ++l)
            if ((X.row(i) - X.row(leaders[l])).norm() <= tol) found = int(l);
        if (found < 0 && leaders.size() < 4096) {
            found = int(leaders.size());
            leaders.push_back(i);
        }
        label[std::size_t(i)] = std::max(found, 0);
    }
    return label;
}

// A qualitative palette for cluster labels (Tableau 10), repeated.
QColor categorical(int k) {
    static const QColor colors[] = {{78, 121, 167}, {242, 142, 43}, {225, 87, 89},   {118, 183, 178},
                                    {89, 161, 79},  {237, 201, 72}, {176, 122, 161}, {255, 157, 167},
                                    {156, 117, 95}, {186, 176, 172}};
    return colors[k % 10];
}

// The 95th percentile of the finite entries of v (0 when there are none): the speed colour scale, robust to a
// few outliers.
double percentile95(const Vec& v) {
    std::vector<double> sorted(v.data(), v.data() + v.size());
    std::erase_if(sorted, [](double x) { return !std::isfinite(x); });
    if (sorted.empty()) return 0.0;
    const std::size_t q = std::size_t(0.95 * double(sorted.size() - 1));
    std::nth_element(sorted.begin(), sorted.begin() + std::ptrdiff_t(q), sorted.end());
    return sorted[q];
}

void segment(VertexBuffer& out, const Eigen::Vector3d& a, const Eigen::Vector3d& b, const QColor& c,
             double alpha) {
    out.push_back(pointVertex(a, c, alpha));
    out.push_back(pointVertex(b, c, alpha));
}

} // namespace

Eigen::Vector3d ParticleFrame::place(const Vec& shown) const {
    Eigen::Vector3d v = Eigen::Vector3d::Zero();
    for (Eigen::Index k = 0; k < std::min<Eigen::Index>(shown.size(), is3D ? 3 : 2); ++k) v(k) = shown(k);
    return v - origin;
}

PointVertex pointVertex(const Eigen::Vector3d& p, const QColor& c, double alpha) {
    return {float(p.x()),      float(p.y()),     float(p.z()), float(c.redF()),
            float(c.greenF()), float(c.blueF()), float(alpha)};
}

bool finiteRow(const Tokens& P, Eigen::Index i) {
    return P.row(i).allFinite();
}

bool finiteBox(const Tokens& P, Eigen::Vector3d& lo, Eigen::Vector3d& hi) {
    lo.setConstant(std::numeric_limits<double>::infinity());
    hi = -lo;
    bool any = false;
    const Eigen::Index k = std::min<Eigen::Index>(P.cols(), 3);
    for (Eigen::Index i = 0; i < P.rows(); ++i) {
        if (!finiteRow(P, i)) continue;
        for (Eigen::Index c = 0; c < k; ++c) {
            lo(c) = std::min(lo(c), P(i, c));
            hi(c) = std::max(hi(c), P(i, c));
        }
        any = true;
    }
    for (Eigen::Index c = k; c < 3; ++c) lo(c) = hi(c) = 0.0;
    return any;
}

void TokensLayer::append(const ParticleFrame& f, VertexBuffer& points) const {
    const Tokens& X = f.snapshot->tokens;
    const Tokens& P = f.projected;
    Vec speed;
    double speedScale = 0.0;
    if (colorBy == ColorBy::Speed && f.previous && f.previous->tokens.rows() == X.rows() &&
        f.snapshot->t > f.previous->t) {
        speed = (X - f.previous->tokens).rowwise().norm() / (f.snapshot->t - f.previous->t);
        speedScale = percentile95(speed);
    }
    // Per-token entropies come with the recorded frames (every output.every steps).
    const Vec& entropy = f.snapshot->observables.tokenEntropy;
    const std::vector<int> labels =
        colorBy == ColorBy::Cluster ? clusterLabels(X, clusterTol) : std::vector<int>();

    points.reserve(points.size() + std::size_t(X.rows()));
    const double last = double(std::max<Eigen::Index>(X.rows() - 1, 1));
    const double logN = std::log(double(std::max<Eigen::Index>(X.rows(), 2)));
    for (Eigen::Index i = 0; i < X.rows(); ++i) {
        if (!finiteRow(P, i)) {
            points.push_back({0, 0, 0, 0, 0, 0, 0});
            continue;
        }
        QColor c;
        switch (colorBy) {
        case ColorBy::Index:
            c = viridis(double(i) / last);
            break;
        case ColorBy::Speed:
            c = viridis(speedScale > 0 ? speed(i) / speedScale : 0.0);
            break;
        case ColorBy::Cluster:
            c = categorical(labels[std::size_t(i)]);
            break;
        case ColorBy::Entropy:
            c = entropy.size() == X.rows() ? viridis(entropy(i) / logN) : QColor(128, 128, 128);
            break;
        }
        points.push_back(pointVertex(f.place(P.row(i).transpose()), c));
    }
}

void TrailsLayer::append(const ParticleFrame& f, VertexBuffer& lines) const {
    const Snapshot& s = *f.snapshot;
    if (!enabled || !s.history || s.tokens.rows() > kMaxTokens) return;
    const std::size_t size = s.history->size();
    const std::size_t from = size > std::size_t(kFrames) ? size - std::size_t(kFrames) : 0;
    std::vector<RecordedFrame> frames = s.history->since(from);
    std::erase_if(frames, [&](const RecordedFrame& r) {
        return !r.tokens || r.tokens->rows() != s.tokens.rows() || r.tokens->cols() != f.basis.rows() ||
               r.t > s.t;
    });
    const double last = double(std::max<Eigen::Index>(s.tokens.rows() - 1, 1));
    for (std::size_t k = 1; k < frames.size(); ++k) {
        const Tokens A = *frames[k - 1].tokens * f.basis, B = *frames[k].tokens * f.basis;
        const double alpha = 0.6 * double(k) / double(frames.size());
        for (Eigen::Index i = 0; i < A.rows(); ++i)
            if (finiteRow(A, i) && finiteRow(B, i))
                segment(lines, f.place(A.row(i).transpose()), f.place(B.row(i).transpose()),
                        viridis(double(i) / last), alpha);
    }
}

void GaussianLayer::append(const ParticleFrame& f, VertexBuffer& lines) const {
    if (!enabled || !overlay || !overlay->available() || f.basis.rows() != overlay->at(0)->mean.size())
        return;
    const GaussianState g = *overlay->at(f.snapshot->t);
    const Vec m = f.basis.transpose() * g.mean;
    const Mat S = f.basis.transpose() * g.cov * f.basis;
    if (!m.allFinite() || !S.allFinite()) return;
    // The plane: the ellipse of S's top 2 x 2 block through its square root; 3-D: S = R diag(lambda) R^T and
    // the ellipse of each pair of principal axes.
    std::vector<std::pair<int, int>> planes{{0, 1}};
    Mat R = Mat::Identity(S.rows(), S.cols());
    Vec lambda = S.diagonal();
    Mat root2;
    if (f.is3D) {
        Eigen::SelfAdjointEigenSolver<Mat> eig(symmetricPart(S));
        R = eig.eigenvectors();
        lambda = eig.eigenvalues().cwiseMax(0.0);
        planes = {{0, 1}, {1, 2}, {0, 2}};
    } else {
        root2 = psdSqrt(symmetricPart(S.topLeftCorner(2, 2)));
    }
    constexpr int kSegments = 96;
    for (const auto& [a, b] : planes)
        for (double k : {1.0, 2.0}) {
            Vec prev;
            for (int s = 0; s <= kSegments; ++s) {
                const double th = 2.0 * M_PI * s / kSegments;
                Vec p = m;
                if (f.is3D)
                    p += k * (std::sqrt(lambda(a)) * std::cos(th) * R.col(a) +
                              std::sqrt(lambda(b)) * std::sin(th) * R.col(b));
                else
                    p.head(2) += k * root2 * Eigen::Vector2d(std::cos(th), std::sin(th));
                if (s > 0) segment(lines, f.place(prev), f.place(p), color, k == 1.0 ? 1.0 : 0.8);
                prev = p;
            }
        }
}

void AttentionLayer::append(const ParticleFrame& f, VertexBuffer& lines) const {
    const Tokens& P = f.projected;
    if (!enabled() || weights.size() != P.rows() || token >= P.rows()) return;
    const double top = weights.maxCoeff();
    const QColor c(255, 214, 102);
    for (Eigen::Index j = 0; top > 0 && j < P.rows(); ++j) {
        const double w = weights(j) / top;
        if (w < 0.02 || j == token || !finiteRow(P, j)) continue;
        segment(lines, f.place(P.row(token).transpose()), f.place(P.row(j).transpose()), c, 0.9 * w);
    }
}

double AxesLayer::length(const ParticleFrame& f) {
    return std::max((f.boxHi - f.boxLo).maxCoeff(), 1e-12) * 0.25;
}

void AxesLayer::append(const ParticleFrame& f, VertexBuffer& lines) const {
    if (!enabled || !f.is3D || !f.boxValid) return;
    const QColor axis[3] = {{230, 90, 90}, {90, 200, 110}, {100, 140, 240}};
    for (int k = 0; k < 3; ++k)
        segment(lines, f.boxLo - f.origin, f.boxLo - f.origin + length(f) * Eigen::Vector3d::Unit(k), axis[k],
                0.9);
}

void ParkingLayer::append(const ParticleFrame& f, VertexBuffer& lines) const {
    if (!enabled || f.is3D || leaders.rows() == 0 || leaders.cols() != 2 || f.basis.rows() != 2) return;
    // A point of the plane of the tokens, in the shown coordinates (the identity basis unless the user picked
    // other axes), and the point at `angle` and `radius`.
    const auto shown = [&](const Eigen::Vector2d& x) { return f.place(f.basis.transpose() * Vec(x)); };
    const auto polar = [&](double angle, double radius) {
        return shown(radius * Eigen::Vector2d(std::cos(angle), std::sin(angle)));
    };
    const auto arc = [&](const Eigen::Vector2d& centre, double radius, double from, double to, int segments,
                         double alpha) {
        for (int s = 0; s < segments; ++s) {
            const double a0 = from + (to - from) * s / segments, a1 = from + (to - from) * (s + 1) / segments;
            segment(lines, shown(centre + radius * Eigen::Vector2d(std::cos(a0), std::sin(a0))),
                    shown(centre + radius * Eigen::Vector2d(std::cos(a1), std::sin(a1))), color, alpha);
        }
    };
    for (Eigen::Index k = 0; k < leaders.rows(); ++k) {
        const Eigen::Vector2d start = leaders.row(k).transpose();
        const double a = std::atan2(start.y(), start.x());
        arc(start, kRing, 0.0, 2.0 * M_PI, kRingSegments, 0.95);                         // the ring
        segment(lines, polar(a, 1.0 + kRing), polar(a, kArcRadius + 0.06), color, 0.95); // the tick
        arc(Eigen::Vector2d::Zero(), kArcRadius, a - delta / 2, a + delta / 2, 12, 0.6); // the spot
    }
}

void HardmaxLayer::append(const ParticleFrame& f, VertexBuffer& lines) const {
    if (!enabled || !active || f.is3D || !f.snapshot || f.basis.rows() != 2) return;
    const Tokens& X = f.snapshot->tokens;
    if (X.cols() != 2 || X.rows() < 2 || X.rows() > kMaxTokens || !X.allFinite()) return;
    const double reach = 1.5 * X.rowwise().norm().maxCoeff();
    const auto shown = [&](double angle, double radius) {
        return f.place(f.basis.transpose() * Vec(radius * Eigen::Vector2d(std::cos(angle), std::sin(angle))));
    };
    for (const HardmaxArc& cell : hardmaxCells(X, M)) {
        if (cell.empty() || cell.length > M_PI) continue; // no cell, or no condition (every direction)
        for (const double angle : {cell.start, cell.start + cell.length})
            segment(lines, shown(angle, 0.0), shown(angle, reach), color, 0.7);
    }
}

void SphereLayer::append(const ParticleFrame& f, VertexBuffer& lines) const {
    if (!enabled || !f.is3D) return;
    // A circle: the points c + cos(s) u + sin(s) v, s over a full turn.
    const auto circle = [&](const Eigen::Vector3d& c, const Eigen::Vector3d& u, const Eigen::Vector3d& v) {
        for (int k = 0; k < kSegments; ++k) {
            const double s0 = 2.0 * M_PI * k / kSegments, s1 = 2.0 * M_PI * (k + 1) / kSegments;
            segment(lines, c + std::cos(s0) * u + std::sin(s0) * v - f.origin,
                    c + std::cos(s1) * u + std::sin(s1) * v - f.origin, color, 0.45);
        }
    };
    const Eigen::Vector3d z = Eigen::Vector3d::UnitZ();
    for (int m = 0; m < kMeridians; ++m) { // great circles through the poles: two meridians each
        const double phi = M_PI * m / kMeridians;
        circle(Eigen::Vector3d::Zero(), Eigen::Vector3d(std::cos(phi), std::sin(phi), 0.0), z);
    }
    for (int p = 1; p <= kParallels; ++p) { // latitudes -60, -30, 0, 30, 60 degrees
        const double lat = M_PI * (double(p) / (kParallels + 1) - 0.5);
        circle(std::sin(lat) * z, std::cos(lat) * Eigen::Vector3d::UnitX(),
               std::cos(lat) * Eigen::Vector3d::UnitY());
    }
}

} // namespace flowscope
