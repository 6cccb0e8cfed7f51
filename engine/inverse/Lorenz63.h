// Flowscope engine: the Lorenz-63 parameter inverse problem (docs/math/inverse.md#lorenz-63).
//
// Unknowns θ = (σ, r, β). The state x ∈ ℝ³ follows
//     ẋ1 = σ (x2 − x1),   ẋ2 = x1 (r − x3) − x2,   ẋ3 = x1 x2 − β x3
// from a fixed x0, integrated by forward Euler with step Δt: x_{n+1} = x_n + Δt f(x_n; θ). Time is counted in
// whole steps: S = round(spinUp/Δt) spin-up steps, then `windows` windows of W = round(window/Δt) steps each
// (N = S + windows·W steps in all). The observation of window j is the mean of the states reached in it,
//     y_{3j+i} = (1/W) Σ_{n = S+jW+1}^{S+(j+1)W} x_{n,i},   i = 0, 1, 2,
// (the right-endpoint rectangle rule of the window mean of x_i), ordered window by window: m = 3·windows.
//
// The derivative is the exact discrete adjoint: linearize keeps the whole trajectory (one 3 × (N+1) matrix)
// and pullback runs the Euler steps backwards,
//     λ_N = ∂(v·y)/∂x_N,   g += Δt (∂f/∂θ)(x_n)ᵀ λ_{n+1},   λ_n = (I + Δt ∂f/∂x(x_n))ᵀ λ_{n+1} + ∂(v·y)/∂x_n,
// so J(θ)ᵀ v is the exact gradient of the discrete map (up to the rounding of the sweep), for every horizon.
//
// The horizon matters: with a fixed x0 the map θ → window means is chaotic, its derivative grows like
// e^{0.9 t}; over the reference set-up's 230 time units it is useless (‖Jᵀ1‖ ≈ 2e99 at the truth, and no
// finite-difference step reproduces it; docs/math/inverse.md#lorenz-horizon has the measured numbers).
// shortHorizon() is the preset for training; reference9() (= Lorenz63Setup{}) is the set-up of Huang,
// Schneider & Stuart (2022), kept for comparison.
//
// A run whose state stops being finite (large σ or r) gives NaN observations and a NaN pullback, never an
// exception.
#pragma once

#include "engine/inverse/ForwardModel.h"

#include <Eigen/Core>

namespace flowscope::inverse {

struct Lorenz63Setup {
    Eigen::Vector3d x0{-8.67139571762, 4.98065219709, 25.0};
    double dt = 0.01;
    double spinUp = 30; // time before the first window
    double window = 20; // time length of one window
    int windows = 10;

    // Huang, Schneider & Stuart (2022): the defaults above, T = 30 + 10·20 = 230.
    static Lorenz63Setup reference9();
    // The training preset: no spin-up, 10 windows of 0.2 time units (T = 2), where the map is smooth on the
    // prior's scale and the adjoint agrees with central differences.
    static Lorenz63Setup shortHorizon();
};

class Lorenz63 final : public ForwardModel {
  public:
    // Throws std::invalid_argument for dt ≤ 0, spinUp < 0, a window shorter than one step or windows < 1.
    explicit Lorenz63(const Lorenz63Setup& setup = Lorenz63Setup::shortHorizon());

    int parameters() const override { return 3; }
    int observations() const override { return 3 * windows_; }
    std::string name() const override { return "lorenz63"; }
    std::unique_ptr<Linearization> linearize(const Vector& theta) const override;
    Vector apply(const Vector& theta) const override; // keeps only the current state

    const Lorenz63Setup& setup() const { return setup_; }
    int spinUpSteps() const { return spinUpSteps_; }
    int windowSteps() const { return windowSteps_; }
    int steps() const { return spinUpSteps_ + windows_ * windowSteps_; }

  private:
    // Runs the Euler steps; stores every state in `trajectory` (3 × (N+1)) when it is not null. Returns
    // false (and leaves `value` NaN) when the state stops being finite.
    bool run(const Vector& theta, Vector& value, Eigen::Matrix3Xd* trajectory) const;

    Lorenz63Setup setup_;
    int spinUpSteps_ = 0;
    int windowSteps_ = 0;
    int windows_ = 0;
};

} // namespace flowscope::inverse
