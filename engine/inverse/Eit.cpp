#include "engine/inverse/Eit.h"

#include "engine/core/Types.h"

#include <Eigen/OrderingMethods>
#include <Eigen/SparseCholesky>
#include <Eigen/SparseCore>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <stdexcept>
#include <string>

namespace flowscope::inverse {

namespace {

// The counter-clockwise arc length of a boundary point from (0, 0): bottom [0, 1), right [1, 2), top [2, 3),
// left [3, 4).
double arcLength(double s1, double s2) {
    if (s2 == 0) return s1;
    if (s1 == 1) return 1 + s2;
    if (s2 == 1) return 2 + (1 - s1);
    return 3 + (1 - s2);
}

} // namespace

std::vector<BoundaryPattern> EitSetup::trigonometricPatterns(int frequencies) {
    std::vector<BoundaryPattern> patterns;
    for (int q = 1; q <= frequencies; ++q) {
        const double k = std::numbers::pi * q / 2;
        patterns.emplace_back([k](double s1, double s2) { return std::cos(k * arcLength(s1, s2)); });
        patterns.emplace_back([k](double s1, double s2) { return std::sin(k * arcLength(s1, s2)); });
    }
    return patterns;
}

class EitLinearization final : public Linearization {
  public:
    // The cells are numbered in the model's fill-reducing order already: no ordering here.
    using Solver =
        Eigen::SimplicialLDLT<Eigen::SparseMatrix<double>, Eigen::Lower, Eigen::NaturalOrdering<int>>;

    EitLinearization(const Eit& model, const Vector& c) : model_(model) {
        const int n = model.n_, P = model.patterns(), nb = model.boundaryFaces();
        value_ = Vector::Constant(model.observations(), kNaN);
        if (!c.allFinite()) return;
        kappa_ = model.faceConductivity(c);
        if (!(kappa_.minCoeff() > 0)) return;

        // A(κ) w = b(κ): the current balance of every cell.
        std::vector<Eigen::Triplet<double>> entries;
        entries.reserve(3 * model.interiorFaces_ + nb);
        Matrix b = Matrix::Zero(n * n, P);
        for (int e = 0; e < model.interiorFaces_; ++e) {
            const auto& f = model.faces_[e];
            const double k = kappa_(e);
            entries.emplace_back(f.a, f.a, k);
            entries.emplace_back(f.b, f.b, k);
            entries.emplace_back(std::max(f.a, f.b), std::min(f.a, f.b), -k); // the lower triangle
        }
        for (int e = 0; e < nb; ++e) {
            const int face = model.interiorFaces_ + e, a = model.faces_[face].a;
            const double k2 = 2 * kappa_(face);
            entries.emplace_back(a, a, k2);
            b.row(a) += k2 * model.boundary_.row(e);
        }
        Eigen::SparseMatrix<double> A(n * n, n * n);
        A.setFromTriplets(entries.begin(), entries.end());
        solver_.compute(A);
        if (solver_.info() != Eigen::Success) return;
        w_ = solver_.solve(b);

        // y_e = 2 κ_e (f_e − w_a) / h.
        for (int p = 0; p < P; ++p)
            for (int e = 0; e < nb; ++e) {
                const int face = model.interiorFaces_ + e;
                value_(p * nb + e) =
                    2 * kappa_(face) * (model.boundary_(e, p) - w_(model.faces_[face].a, p)) / model.h_;
            }
        finite_ = value_.allFinite();
    }

    Vector pullback(const Vector& v) const override {
        const Eit& model = model_;
        const int n = model.n_, P = model.patterns(), nb = model.boundaryFaces();
        if (v.size() != model.observations())
            throw std::invalid_argument("eit: v must have " + std::to_string(model.observations()) +
                                        " entries");
        if (!finite_) return Vector::Constant(model.parameters(), kNaN);
        const double h = model.h_;

        // A λ_p = ∂L/∂w_p: L = Σ_e v_e 2 κ_e (f_e − w_a)/h.
        Matrix rhs = Matrix::Zero(n * n, P);
        for (int p = 0; p < P; ++p)
            for (int e = 0; e < nb; ++e) {
                const int face = model.interiorFaces_ + e;
                rhs(model.faces_[face].a, p) -= 2 * kappa_(face) * v(p * nb + e) / h;
            }
        const Matrix lambda = solver_.solve(rhs);

        // ∂L/∂κ_e: interior faces only through A; boundary faces through A, b and the observation.
        Vector gKappa(model.faces_.size());
        for (int e = 0; e < model.interiorFaces_; ++e) {
            const auto& f = model.faces_[e];
            gKappa(e) = -(lambda.row(f.a) - lambda.row(f.b)).dot(w_.row(f.a) - w_.row(f.b));
        }
        for (int e = 0; e < nb; ++e) {
            const int face = model.interiorFaces_ + e, a = model.faces_[face].a;
            double g = 0;
            for (int p = 0; p < P; ++p)
                g += 2 * (model.boundary_(e, p) - w_(a, p)) * (v(p * nb + e) / h + lambda(a, p));
            gKappa(face) = g;
        }
        return model.bumps_.transpose() * gKappa;
    }

  private:
    const Eit& model_;
    Vector kappa_;
    Solver solver_;
    Matrix w_; // n² × patterns
    bool finite_ = false;
};

Eit::Eit(const EitSetup& setup) : n_(setup.cells), kappa0_(setup.kappa0), bumpWidth_(setup.bumpWidth) {
    if (setup.cells < 2 || !(setup.kappa0 > 0) || !(setup.bumpWidth > 0) || setup.centresX < 1 ||
        setup.centresY < 1)
        throw std::invalid_argument("eit: needs at least 2 cells, kappa0 > 0, bumpWidth > 0 and centres");
    const int n = n_;
    h_ = 1.0 / n;
    for (int j = 0; j < setup.centresY; ++j)
        for (int i = 0; i < setup.centresX; ++i)
            centres_.emplace_back((i + 0.5) / setup.centresX, (j + 0.5) / setup.centresY);

    // Cell (i, j) has index i + n j and centre ((i + ½)h, (j + ½)h).
    for (int j = 0; j < n; ++j)
        for (int i = 0; i + 1 < n; ++i)
            faces_.push_back({i + n * j, i + 1 + n * j, {(i + 1) * h_, (j + 0.5) * h_}});
    for (int j = 0; j + 1 < n; ++j)
        for (int i = 0; i < n; ++i)
            faces_.push_back({i + n * j, i + n * (j + 1), {(i + 0.5) * h_, (j + 1) * h_}});
    interiorFaces_ = int(faces_.size());
    for (int i = 0; i < n; ++i) faces_.push_back({i, -1, {(i + 0.5) * h_, 0.0}});                    // bottom
    for (int j = 0; j < n; ++j) faces_.push_back({n - 1 + n * j, -1, {1.0, (j + 0.5) * h_}});        // right
    for (int i = n - 1; i >= 0; --i) faces_.push_back({i + n * (n - 1), -1, {(i + 0.5) * h_, 1.0}}); // top
    for (int j = n - 1; j >= 0; --j) faces_.push_back({n * j, -1, {0.0, (j + 0.5) * h_}});           // left

    // Renumber the cells once in a fill-reducing (AMD) order of the 5-point pattern, so that linearize
    // factorizes without computing an ordering (that was two thirds of its cost).
    std::vector<Eigen::Triplet<double>> pattern;
    for (int c = 0; c < n * n; ++c) pattern.emplace_back(c, c, 1.0);
    for (int e = 0; e < interiorFaces_; ++e)
        pattern.emplace_back(std::max(faces_[e].a, faces_[e].b), std::min(faces_[e].a, faces_[e].b), 1.0);
    Eigen::SparseMatrix<double> lower(n * n, n * n);
    lower.setFromTriplets(pattern.begin(), pattern.end());
    Eigen::PermutationMatrix<Eigen::Dynamic, Eigen::Dynamic, int> order;
    Eigen::AMDOrdering<int>()(lower.selfadjointView<Eigen::Lower>(), order);
    const Eigen::PermutationMatrix<Eigen::Dynamic, Eigen::Dynamic, int> inverse = order.inverse();
    const Eigen::VectorXi& renumber = inverse.indices(); // the new index of cell c
    for (auto& f : faces_) {
        f.a = renumber(f.a);
        if (f.b >= 0) f.b = renumber(f.b);
    }

    const double inv2l2 = 1.0 / (2 * setup.bumpWidth * setup.bumpWidth);
    bumps_.resize(Eigen::Index(faces_.size()), Eigen::Index(centres_.size()));
    for (size_t e = 0; e < faces_.size(); ++e)
        for (size_t k = 0; k < centres_.size(); ++k)
            bumps_(e, k) = std::exp(-(faces_[e].midpoint - centres_[k]).squaredNorm() * inv2l2);

    const auto patterns = setup.patterns.empty() ? EitSetup::trigonometricPatterns(3) : setup.patterns;
    boundary_.resize(boundaryFaces(), Eigen::Index(patterns.size()));
    for (int e = 0; e < boundaryFaces(); ++e) {
        const Eigen::Vector2d s = boundaryPoint(e);
        for (size_t p = 0; p < patterns.size(); ++p) boundary_(e, p) = patterns[p](s(0), s(1));
    }
}

Matrix Eit::bumpsAt(const Matrix& points) const {
    if (points.rows() != 2) throw std::invalid_argument("eit: bumpsAt takes 2 x P points");
    const double inv2l2 = 1.0 / (2 * bumpWidth_ * bumpWidth_);
    Matrix phi(points.cols(), Eigen::Index(centres_.size()));
    for (Eigen::Index p = 0; p < points.cols(); ++p)
        for (size_t k = 0; k < centres_.size(); ++k)
            phi(p, Eigen::Index(k)) = std::exp(-(points.col(p) - centres_[k]).squaredNorm() * inv2l2);
    return phi;
}

Eigen::Vector2d Eit::boundaryPoint(int e) const {
    return faces_.at(interiorFaces_ + e).midpoint;
}

Eigen::Vector2d Eit::outwardNormal(int e) const {
    const int side = e / n_; // bottom, right, top, left
    static const Eigen::Vector2d normals[4] = {{0, -1}, {1, 0}, {0, 1}, {-1, 0}};
    return normals[side];
}

Vector Eit::faceConductivity(const Vector& c) const {
    if (c.size() != parameters())
        throw std::invalid_argument("eit: c must have " + std::to_string(parameters()) + " entries");
    return (bumps_ * c).array() + kappa0_;
}

std::unique_ptr<Linearization> Eit::linearize(const Vector& c) const {
    if (c.size() != parameters())
        throw std::invalid_argument("eit: c must have " + std::to_string(parameters()) + " entries");
    return std::make_unique<EitLinearization>(*this, c);
}

} // namespace flowscope::inverse
