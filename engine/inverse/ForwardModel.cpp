#include "engine/inverse/ForwardModel.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace flowscope::inverse {

namespace {

class LinearLinearization final : public Linearization {
  public:
    LinearLinearization(const Matrix& G, Vector value) : G_(G) { value_ = std::move(value); }
    Vector pullback(const Vector& v) const override { return G_.transpose() * v; }

  private:
    const Matrix& G_;
};

} // namespace

LinearModel::LinearModel(Matrix G, Vector b) : G_(std::move(G)), b_(std::move(b)) {
    if (G_.rows() < 1 || G_.cols() < 1 || b_.size() != G_.rows())
        throw std::invalid_argument("linear model: G must be m x d and b have m entries");
}

Vector LinearModel::apply(const Vector& x) const {
    if (x.size() != G_.cols())
        throw std::invalid_argument("linear model: x must have " + std::to_string(G_.cols()) + " entries");
    return G_ * x + b_;
}

std::unique_ptr<Linearization> LinearModel::linearize(const Vector& x) const {
    return std::make_unique<LinearLinearization>(G_, apply(x));
}

Vector pullbackByDifferences(const ForwardModel& model, const Vector& x, const Vector& v, double eps) {
    Vector g(x.size());
    for (Eigen::Index i = 0; i < x.size(); ++i) {
        const double step = eps * std::max(1.0, std::abs(x(i)));
        Vector xp = x, xm = x;
        xp(i) += step;
        xm(i) -= step;
        g(i) = v.dot(model.apply(xp) - model.apply(xm)) / (2 * step);
    }
    return g;
}

} // namespace flowscope::inverse
