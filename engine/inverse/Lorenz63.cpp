#include "engine/inverse/Lorenz63.h"

#include "engine/core/Types.h"

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace flowscope::inverse {

namespace {

Eigen::Vector3d field(const Eigen::Vector3d& x, double sigma, double r, double beta) {
    return {sigma * (x(1) - x(0)), x(0) * (r - x(2)) - x(1), x(0) * x(1) - beta * x(2)};
}

class Lorenz63Linearization final : public Linearization {
  public:
    Lorenz63Linearization(const Lorenz63& model, const Vector& theta) : model_(model), theta_(theta) {}
    Eigen::Matrix3Xd trajectory;
    Vector& valueRef() { return value_; }
    bool finite = false;

    Vector pullback(const Vector& v) const override {
        const int windows = model_.observations() / 3;
        if (v.size() != 3 * windows)
            throw std::invalid_argument("lorenz63: pullback needs " + std::to_string(3 * windows) +
                                        " entries");
        if (!finite) return Vector::Constant(3, kNaN);
        const double dt = model_.setup().dt, sigma = theta_(0), r = theta_(1), beta = theta_(2);
        const int S = model_.spinUpSteps(), W = model_.windowSteps(), N = model_.steps();
        Eigen::Vector3d lambda = Eigen::Vector3d::Zero(), g = Eigen::Vector3d::Zero();
        // λ holds ∂(v·y)/∂x_{n+1} on entry to step n; the window that x_{n+1} belongs to adds v_j/W.
        for (int n = N - 1; n >= 0; --n) {
            const int next = n + 1;
            if (next > S) lambda += v.segment<3>(3 * ((next - S - 1) / W)) / double(W);
            const Eigen::Vector3d x = trajectory.col(n);
            g(0) += dt * (x(1) - x(0)) * lambda(0);
            g(1) += dt * x(0) * lambda(1);
            g(2) -= dt * x(2) * lambda(2);
            const Eigen::Vector3d mu{-sigma * lambda(0) + (r - x(2)) * lambda(1) + x(1) * lambda(2),
                                     sigma * lambda(0) - lambda(1) + x(0) * lambda(2),
                                     -x(0) * lambda(1) - beta * lambda(2)};
            lambda += dt * mu;
        }
        return g;
    }

  private:
    const Lorenz63& model_;
    Eigen::Vector3d theta_;
};

void checkTheta(const Vector& theta) {
    if (theta.size() != 3) throw std::invalid_argument("lorenz63: θ = (σ, r, β) must have 3 entries");
}

} // namespace

Lorenz63Setup Lorenz63Setup::reference9() {
    return Lorenz63Setup{};
}

Lorenz63Setup Lorenz63Setup::shortHorizon() {
    Lorenz63Setup s;
    s.spinUp = 0;
    s.window = 0.2;
    s.windows = 10;
    return s;
}

Lorenz63::Lorenz63(const Lorenz63Setup& setup) : setup_(setup) {
    if (!(setup.dt > 0) || !(setup.spinUp >= 0) || setup.windows < 1 || !setup.x0.allFinite())
        throw std::invalid_argument("lorenz63: needs dt > 0, spinUp >= 0, windows >= 1 and a finite x0");
    spinUpSteps_ = int(std::lround(setup.spinUp / setup.dt));
    windowSteps_ = int(std::lround(setup.window / setup.dt));
    windows_ = setup.windows;
    if (windowSteps_ < 1) throw std::invalid_argument("lorenz63: a window must hold at least one step");
}

bool Lorenz63::run(const Vector& theta, Vector& value, Eigen::Matrix3Xd* trajectory) const {
    const double dt = setup_.dt, sigma = theta(0), r = theta(1), beta = theta(2);
    const int S = spinUpSteps_, W = windowSteps_;
    value.resize(3 * windows_);
    Eigen::Vector3d x = setup_.x0;
    if (trajectory) {
        trajectory->resize(3, steps() + 1);
        trajectory->col(0) = x;
    }
    int n = 0;
    for (; n < S; ++n) {
        x += dt * field(x, sigma, r, beta);
        if (trajectory) trajectory->col(n + 1) = x;
    }
    for (int j = 0; j < windows_; ++j) {
        Eigen::Vector3d sum = Eigen::Vector3d::Zero();
        for (int k = 0; k < W; ++k, ++n) {
            x += dt * field(x, sigma, r, beta);
            if (trajectory) trajectory->col(n + 1) = x;
            sum += x;
        }
        value.segment<3>(3 * j) = sum / double(W);
        // A state that left the finite numbers stays there: stop at the first window that shows it.
        if (!x.allFinite() || !sum.allFinite()) {
            value.setConstant(kNaN);
            return false;
        }
    }
    if (!std::isfinite(sigma) || !std::isfinite(r) || !std::isfinite(beta)) {
        value.setConstant(kNaN);
        return false;
    }
    return true;
}

std::unique_ptr<Linearization> Lorenz63::linearize(const Vector& theta) const {
    checkTheta(theta);
    auto lin = std::make_unique<Lorenz63Linearization>(*this, theta);
    lin->finite = run(theta, lin->valueRef(), &lin->trajectory);
    return lin;
}

Vector Lorenz63::apply(const Vector& theta) const {
    checkTheta(theta);
    Vector value;
    run(theta, value, nullptr);
    return value;
}

} // namespace flowscope::inverse
