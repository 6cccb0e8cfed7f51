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
        using T = DormandPrinceTableau;
        static constexpr double a21 = T::a[1][0], a31 = T::a[2][0], a32 = T::a[2][1], a41 = T::a[3][0],
                                a42 = T::a[3][1], a43 = T::a[3][2], a51 = T::a[4][0], a52 = T::a[4][1],
                                a53 = T::a[4][2], a54 = T::a[4][3], a61 = T::a[5][0], a62 = T::a[5][1],
                                a63 = T::a[5][2], a64 = T::a[5][3], a65 = T::a[5][4], b1 = T::a[6][0],
                                b3 = T::a[6][2], b4 = T::a[6][3], b5 = T::a[6][4], b6 = T::a[6][5],
                                e1 = T::e[0], e3 = T::e[2], e4 = T::e[3], e5 = T::e[4], e6 = T::e[5],
                                e7 = T::e[6];
        if (!control_.begin(t, H)) return control_.result();
        f(t, X, k1_);
        while (const std::optional<double> step = control_.next()) {
            const double h = *step;
            t = control_.time();
            tmp_ = X + h * a21 * k1_;
            f(T::stageTime(1, t, h), tmp_, k2_);
            tmp_ = X + h * (a31 * k1_ + a32 * k2_);
            f(T::stageTime(2, t, h), tmp_, k3_);
            tmp_ = X + h * (a41 * k1_ + a42 * k2_ + a43 * k3_);
            f(T::stageTime(3, t, h), tmp_, k4_);
            tmp_ = X + h * (a51 * k1_ + a52 * k2_ + a53 * k3_ + a54 * k4_);
            f(T::stageTime(4, t, h), tmp_, k5_);
            tmp_ = X + h * (a61 * k1_ + a62 * k2_ + a63 * k3_ + a64 * k4_ + a65 * k5_);
            f(t + h, tmp_, k6_);
            xNew_ = X + h * (b1 * k1_ + b3 * k3_ + b4 * k4_ + b5 * k5_ + b6 * k6_);
            f(t + h, xNew_, k7_);
            err_ = h * (e1 * k1_ + e3 * k3_ + e4 * k4_ + e5 * k5_ + e6 * k6_ + e7 * k7_);
            const auto scale =
                control_.atol() + control_.rtol() * X.cwiseAbs().cwiseMax(xNew_.cwiseAbs()).array();
            if (control_.judge(std::sqrt((err_.array() / scale).square().mean()))) {
                X.swap(xNew_);
                k1_.swap(k7_); // first same as last
            }
        }
        return control_.result();
    }
    int order() const override { return 5; }
    void invalidate() override { control_.invalidate(); }

  private:
    DormandPrinceControl control_;
    Tokens k1_, k2_, k3_, k4_, k5_, k6_, k7_, tmp_, xNew_, err_;
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
