#include "engine/inverse/Elliptic.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

namespace flowscope::inverse {

namespace {

class EllipticLinearization final : public Linearization {
  public:
    EllipticLinearization(const Elliptic& model, Vector value) : model_(model) { value_ = std::move(value); }
    Vector pullback(const Vector& v) const override { return model_.pullback(v); }

  private:
    const Elliptic& model_;
};

} // namespace

Elliptic::Elliptic(const EllipticSetup& setup) : setup_(setup) {
    if (!(setup.alpha > 0) || setup.nodes < 3 || setup.centres < 1 || setup.observed < 1 ||
        !(setup.bumpWidth > 0))
        throw std::invalid_argument("elliptic: needs alpha > 0, bumpWidth > 0, nodes >= 3, centres and "
                                    "observation points");
    const int n = setup.nodes, d = setup.centres, m = setup.observed;
    h_ = 1.0 / (n - 1);

    // A = (α/h²) K + M, K the Neumann second difference with halved boundary rows.
    const double a = setup.alpha / (h_ * h_);
    std::vector<Eigen::Triplet<double>> entries;
    entries.reserve(3 * n);
    for (int k = 0; k < n; ++k) {
        const bool boundary = k == 0 || k == n - 1;
        entries.emplace_back(k, k, (boundary ? a : 2 * a) + (boundary ? 0.5 : 1.0));
        if (k + 1 < n) {
            entries.emplace_back(k, k + 1, -a);
            entries.emplace_back(k + 1, k, -a);
        }
    }
    Eigen::SparseMatrix<double> A(n, n);
    A.setFromTriplets(entries.begin(), entries.end());
    solver_.compute(A);
    if (solver_.info() != Eigen::Success) throw std::runtime_error("elliptic: the factorization failed");

    // B = M Φ.
    B_.resize(n, d);
    const double inv2w2 = 1.0 / (2 * setup.bumpWidth * setup.bumpWidth);
    for (int j = 0; j < d; ++j) {
        const double centre = (j + 0.5) / d;
        for (int k = 0; k < n; ++k) {
            const double ds = node(k) - centre;
            B_(k, j) = std::exp(-ds * ds * inv2w2) * (k == 0 || k == n - 1 ? 0.5 : 1.0);
        }
    }

    // O: w(γ) = (1 − t) w_k + t w_{k+1} with γ = (k + t) h.
    entries.clear();
    for (int i = 0; i < m; ++i) {
        const double x = observationPoint(i) / h_;
        const int k = std::min(int(std::floor(x)), n - 2);
        const double t = x - k;
        entries.emplace_back(i, k, 1 - t);
        if (t != 0) entries.emplace_back(i, k + 1, t);
    }
    O_.resize(m, n);
    O_.setFromTriplets(entries.begin(), entries.end());

    const Matrix solved = solver_.solve(B_);
    G_ = O_ * solved;
}

Vector Elliptic::solve(const Vector& sourceAtNodes) const {
    const int n = setup_.nodes;
    if (sourceAtNodes.size() != n)
        throw std::invalid_argument("elliptic: the source needs " + std::to_string(n) + " node values");
    Vector Mu = sourceAtNodes;
    Mu(0) *= 0.5;
    Mu(n - 1) *= 0.5;
    return solver_.solve(Mu);
}

namespace {

void checkSize(const Vector& x, int size, const char* what) {
    if (x.size() != size)
        throw std::invalid_argument(std::string("elliptic: ") + what + " must have " + std::to_string(size) +
                                    " entries");
}

} // namespace

Vector Elliptic::apply(const Vector& c) const {
    checkSize(c, setup_.centres, "c");
    return G_ * c;
}

Vector Elliptic::pullback(const Vector& v) const {
    checkSize(v, setup_.observed, "v");
    return G_.transpose() * v;
}

Vector Elliptic::applyBySolve(const Vector& c) const {
    checkSize(c, setup_.centres, "c");
    const Vector w = solver_.solve(B_ * c);
    return O_ * w;
}

Vector Elliptic::pullbackBySolve(const Vector& v) const {
    checkSize(v, setup_.observed, "v");
    const Vector rhs = O_.transpose() * v;
    const Vector lambda = solver_.solve(rhs); // A is symmetric: Aᵀ = A
    return B_.transpose() * lambda;
}

std::unique_ptr<Linearization> Elliptic::linearize(const Vector& c) const {
    return std::make_unique<EllipticLinearization>(*this, apply(c));
}

} // namespace flowscope::inverse
