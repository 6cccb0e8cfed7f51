#include "engine/dynamics/Integrator.h"

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
        return {true, false, 1, h, t + h};
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
        return {true, false, 2, h, t + h};
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
        return {true, false, 4, h, t + h};
    }
    int order() const override { return 4; }

  private:
    Tokens k1_, k2_, k3_, k4_, tmp_;
};

// Dormand-Prince 5(4): fifth-order solution, embedded fourth-order error estimate, FSAL within a call.
// Error norm: RMS of err / (atol + rtol max(|x|, |x_new|)); accepted when <= 1.
class DormandPrince : public Integrator {
  public:
    DormandPrince(double rtol, double atol, double minStep) : rtol_(rtol), atol_(atol), minStep_(minStep) {}

    StepResult advance(const Field& f, double t, double H, Tokens& X) override {
        static constexpr double a21 = 1.0 / 5, a31 = 3.0 / 40, a32 = 9.0 / 40, a41 = 44.0 / 45,
                                a42 = -56.0 / 15, a43 = 32.0 / 9, a51 = 19372.0 / 6561, a52 = -25360.0 / 2187,
                                a53 = 64448.0 / 6561, a54 = -212.0 / 729, a61 = 9017.0 / 3168,
                                a62 = -355.0 / 33, a63 = 46732.0 / 5247, a64 = 49.0 / 176,
                                a65 = -5103.0 / 18656, b1 = 35.0 / 384, b3 = 500.0 / 1113, b4 = 125.0 / 192,
                                b5 = -2187.0 / 6784, b6 = 11.0 / 84, e1 = 71.0 / 57600, e3 = -71.0 / 16695,
                                e4 = 71.0 / 1920, e5 = -17253.0 / 339200, e6 = 22.0 / 525, e7 = -1.0 / 40;
        StepResult r;
        const double tEnd = t + H;
        r.reached = t;
        if (!(tEnd > t)) return {false, false, 0, 0.0, t}; // too small to advance t (float64): never ends
        if (!(h_ > 0.0)) h_ = H;
        f(t, X, k1_);
        ++r.evaluations;
        for (int substeps = 0; t < tEnd; ++substeps) {
            if (substeps == kMaxSubsteps) return {false, true, r.evaluations, h_, t};
            double h = std::min(h_, tEnd - t);
            const bool last = h >= tEnd - t;
            // Below min_step, or too small to change t: every loop that advances time has an exit.
            if ((h < minStep_ || !(t + h > t)) && !last) return {false, false, r.evaluations, h, t};
            tmp_ = X + h * a21 * k1_;
            f(t + h / 5, tmp_, k2_);
            tmp_ = X + h * (a31 * k1_ + a32 * k2_);
            f(t + 3 * h / 10, tmp_, k3_);
            tmp_ = X + h * (a41 * k1_ + a42 * k2_ + a43 * k3_);
            f(t + 4 * h / 5, tmp_, k4_);
            tmp_ = X + h * (a51 * k1_ + a52 * k2_ + a53 * k3_ + a54 * k4_);
            f(t + 8 * h / 9, tmp_, k5_);
            tmp_ = X + h * (a61 * k1_ + a62 * k2_ + a63 * k3_ + a64 * k4_ + a65 * k5_);
            f(t + h, tmp_, k6_);
            xNew_ = X + h * (b1 * k1_ + b3 * k3_ + b4 * k4_ + b5 * k5_ + b6 * k6_);
            f(t + h, xNew_, k7_);
            r.evaluations += 6;
            err_ = h * (e1 * k1_ + e3 * k3_ + e4 * k4_ + e5 * k5_ + e6 * k6_ + e7 * k7_);
            const auto scale = atol_ + rtol_ * X.cwiseAbs().cwiseMax(xNew_.cwiseAbs()).array();
            const double n = std::sqrt((err_.array() / scale).square().mean());
            if (!std::isfinite(n)) {
                // Non-finite stage values: shrink hard; give up below the minimum step.
                h_ = h / 10;
                if (h_ < minStep_) return {false, false, r.evaluations, h, t};
                continue;
            }
            const double factor = std::clamp(0.9 * std::pow(std::max(n, 1e-10), -0.2), 0.2, 5.0);
            if (n <= 1.0) {
                t = last ? tEnd : t + h;
                X.swap(xNew_);
                k1_.swap(k7_); // first same as last
                r.lastH = h;
                if (!last || factor < 1.0) h_ = h * factor; // keep the untruncated step size across calls
            } else {
                h_ = h * std::min(1.0, factor);
                if (h_ < minStep_) return {false, false, r.evaluations, h_, t};
            }
        }
        r.reached = tEnd;
        return r;
    }
    int order() const override { return 5; }
    void invalidate() override { h_ = 0.0; }

  private:
    double rtol_, atol_, minStep_;
    double h_ = 0.0;
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
