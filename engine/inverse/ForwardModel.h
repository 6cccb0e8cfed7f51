// Flowscope engine: the forward models of Bayesian inverse problems (docs/math/inverse.md), y = F(x) + ε,
// ε ~ N(0, σ² I), with their reverse-mode derivatives.
//
// A model maps the unknowns x ∈ ℝ^d to the predicted observations F(x) ∈ ℝ^m. Its derivative is a pullback
// (a vector-Jacobian product), as in reverse-mode automatic differentiation: linearize(x) runs the forward
// model once and keeps what the reverse sweep needs (a trajectory, a factorization); pullback(v) = J(x)ᵀ v
// then costs one reverse sweep or one adjoint solve, whatever m and d are. The gradient of the data misfit
// ½‖y − F(x)‖²/σ² is pullback(−(y − F(x))/σ²).
//
//     auto lin = model.linearize(x);                    // F(x) in lin->value()
//     Vector g = lin->pullback((lin->value() - y) / (sigma * sigma));   // ∇ of the misfit
//
// Every const member is safe to call from several threads at once (the posterior trainer evaluates a batch
// of samples on the pool); a Linearization belongs to the thread that made it.
#pragma once

#include <Eigen/Core>
#include <memory>
#include <string>

namespace flowscope::inverse {

using Vector = Eigen::VectorXd;
using Matrix = Eigen::MatrixXd;

// F at one point, with what J(x)ᵀ needs.
class Linearization {
  public:
    virtual ~Linearization() = default;
    const Vector& value() const { return value_; } // F(x), m entries
    // J(x)ᵀ v for v with m entries; d entries.
    virtual Vector pullback(const Vector& v) const = 0;

  protected:
    Vector value_;
};

class ForwardModel {
  public:
    virtual ~ForwardModel() = default;
    virtual int parameters() const = 0;   // d, the unknowns
    virtual int observations() const = 0; // m
    virtual std::string name() const = 0;
    // F(x) and its linearization at x (x has d entries; throws std::invalid_argument otherwise). A forward
    // run that does not stay finite gives non-finite values, never an exception.
    virtual std::unique_ptr<Linearization> linearize(const Vector& x) const = 0;
    // F(x) alone; models may override it with a run that keeps nothing for the reverse sweep.
    virtual Vector apply(const Vector& x) const { return linearize(x)->value(); }
};

// F(x) = G x + b: the oracle's model (a Gaussian prior then gives a Gaussian posterior in closed form).
class LinearModel final : public ForwardModel {
  public:
    LinearModel(Matrix G, Vector b);
    int parameters() const override { return int(G_.cols()); }
    int observations() const override { return int(G_.rows()); }
    std::string name() const override { return "linear"; }
    std::unique_ptr<Linearization> linearize(const Vector& x) const override;
    Vector apply(const Vector& x) const override;
    const Matrix& G() const { return G_; }
    const Vector& b() const { return b_; }

  private:
    Matrix G_;
    Vector b_;
};

// J(x)ᵀ v by central differences of v·F (2d runs of F with steps eps·max(1, |x_i|)): the tests' check of a
// model's pullback.
Vector pullbackByDifferences(const ForwardModel& model, const Vector& x, const Vector& v, double eps = 1e-6);

} // namespace flowscope::inverse
