#include "engine/dynamics/Integrator.h"

#include "engine/dynamics/DormandPrince.h"

#include <algorithm>
#include <cmath>

namespace flowscope {

namespace {

// One Transformer layer = one explicit Euler step.
class Euler : public Integrator {
  public:
    StepResult advance(const Field& f, double t, double h, Tokens& X) override {
        f(t, X, k_);
        X += h * k_;
        return {true, false, 1, h, t + h, 1};
    }
    int order() const override { return 1; }

  private:
    Tokens k_;
};

// Heun (explicit trapezoid): order 2.
class Heun : public Integrator {
  public:
    StepResult advance(const Field& f, double t, double h, Tokens& X) override {
        f(t, X, k1_);
        tmp_ = X + h * k1_;
        f(t + h, tmp_, k2_);
        X += (0.5 * h) * (k1_ + k2_);
        return {true, false, 2, h, t + h, 1};
    }
    int order() const override { return 2; }

  private:
    Tokens k1_, k2_, tmp_;
};

// Classical fourth-order Runge-Kutta; the field is re-evaluated at every stage.
class Rk4 : public Integrator {
  public:
    StepResult advance(const Field& f, double t, double h, Tokens& X) override {
        f(t, X, k1_);
        tmp_ = X + (0.5 * h) * k1_;
        f(t + 0.5 * h, tmp_, k2_);
        tmp_ = X + (0.5 * h) * k2_;
        f(t + 0.5 * h, tmp_, k3_);
        tmp_ = X + h * k3_;
        f(t + h, tmp_, k4_);
        X += (h / 6.0) * (k1_ + 2.0 * k2_ + 2.0 * k3_ + k4_);
        return {true, false, 4, h, t + h, 1};
    }
    int order() const override { return 4; }

  private:
    Tokens k1_, k2_, k3_, k4_, tmp_;
};

// Dormand-Prince 5(4): fifth-order solution, embedded fourth-order error estimate, FSAL within a call; the
// tableau and the step-size control are DormandPrince.h's, shared with the device steppers.
class DormandPrince : public Integrator {
  public:
    DormandPrince(double rtol, double atol, double minStep) : control_(rtol, atol, minStep) {}

    StepResult advance(const Field& f, double t, double H, Tokens& X) override {
        return stages_.advance(control_, f, t, H, X);
    }
    int order() const override { return 5; }
    void invalidate() override { control_.invalidate(); }

  private:
    DormandPrinceControl control_;
    DormandPrinceStages<Tokens> stages_;
};

} // namespace

std::unique_ptr<Integrator> makeIntegrator(const IntegratorSpec& s) {
    switch (s.method) {
    case Method::Euler:
        return std::make_unique<Euler>();
    case Method::Heun:
        return std::make_unique<Heun>();
    case Method::Rk4:
        return std::make_unique<Rk4>();
    case Method::DormandPrince:
        return std::make_unique<DormandPrince>(s.rtol, s.atol, s.minStep);
    }
    return nullptr;
}

} // namespace flowscope
