// Flowscope engine: Dormand-Prince 5(4), the parts every implementation shares.
//
// The CPU integrator (Integrator.cpp) and the device steppers (engine/gpu/common/PlannedStepper) take the
// same adaptive sub-steps: the tableau below, and one step-size controller (DormandPrinceControl) that
// decides which sub-step to try, whether to accept it and when a call has failed. Only the arithmetic of the
// stages differs (float64 Eigen expressions on the CPU, DormandPrinceStages below, shared with the moment
// solvers' stepper; float32 shaders on a device).
// docs/math/integrators.md#dopri5.
#pragma once

#include "engine/dynamics/Integrator.h"

#include <algorithm>
#include <cmath>
#include <optional>

namespace flowscope {

// The Butcher tableau: stage s (0..6) is evaluated at stageTime(s, t, h) = t + c_s h, at x + h sum_j a[s][j]
// k_j (j < s); the fifth-order solution is x + h sum b_j k_j (b = a[6]: first same as last), and the error
// estimate h sum e_j k_j (the fifth- minus the embedded fourth-order weights).
struct DormandPrinceTableau {
    static constexpr double a[7][6] = {
        {},
        {1.0 / 5},
        {3.0 / 40, 9.0 / 40},
        {44.0 / 45, -56.0 / 15, 32.0 / 9},
        {19372.0 / 6561, -25360.0 / 2187, 64448.0 / 6561, -212.0 / 729},
        {9017.0 / 3168, -355.0 / 33, 46732.0 / 5247, 49.0 / 176, -5103.0 / 18656},
        {35.0 / 384, 0.0, 500.0 / 1113, 125.0 / 192, -2187.0 / 6784, 11.0 / 84},
    };
    static constexpr double e[7] = {71.0 / 57600,      0.0,        -71.0 / 16695, 71.0 / 1920,
                                    -17253.0 / 339200, 22.0 / 525, -1.0 / 40};

    // t + c[s] h, written as the integrator always has (h / 5 rather than (1/5) h: the same last bits).
    static double stageTime(int s, double t, double h) {
        switch (s) {
        case 0:
            return t;
        case 1:
            return t + h / 5;
        case 2:
            return t + 3 * h / 10;
        case 3:
            return t + 4 * h / 5;
        case 4:
            return t + 8 * h / 9;
        default:
            return t + h;
        }
    }
};

// The step-size control of one call from t to t + H (StepResult's meaning, Integrator.h). The error norm a
// caller measures is the RMS of err / (atol + rtol max(|x|, |x_new|)) over every coordinate; a sub-step is
// accepted when it is <= 1, the next size is h * clamp(0.9 norm^(-1/5), 0.2, 5), a non-finite norm shrinks
// the step tenfold, and the call fails below minStep or after kMaxSubsteps sub-steps. The last accepted size
// (untruncated by the landing) carries over to the next call until invalidate().
//
//     if (control.begin(t, H)) ... k1 at (t, x) ...
//     while (std::optional<double> h = control.next()) {
//         ... six stages of size *h at control.time(), the error norm n ...
//         if (control.judge(n)) ... x = x_new, k1 = k7 ...
//     }
//     control.result();                          // ok, or why not; x is at result().reached
class DormandPrinceControl {
  public:
    DormandPrinceControl(double rtol, double atol, double minStep)
        : rtol_(rtol), atol_(atol), minStep_(minStep) {}

    double rtol() const { return rtol_; }
    double atol() const { return atol_; }
    void invalidate() { h_ = 0.0; }

    // Starts a call; false when t + H does not exceed t in float64 (the call failed: it would never end).
    // Else the caller evaluates k1 at (t, x), counted here.
    bool begin(double t, double H) {
        t_ = t;
        tEnd_ = t + H;
        substeps_ = 0;
        done_ = false;
        r_ = {true, false, 1, 0.0, t, 0, 0};
        if (!(tEnd_ > t)) return fail(false, 0.0, 0), false;
        if (!(h_ > 0.0)) h_ = H;
        return true;
    }

    // The size of the next sub-step to try from time(), or nullopt when the call is over.
    std::optional<double> next() {
        if (done_) return std::nullopt;
        if (!(t_ < tEnd_)) {
            r_.reached = tEnd_;
            done_ = true;
            return std::nullopt;
        }
        if (substeps_ == kMaxSubsteps) return fail(true, h_), std::nullopt;
        const double h = std::min(h_, tEnd_ - t_);
        last_ = h >= tEnd_ - t_;
        // Below min_step, or too small to change t: every loop that advances time has an exit.
        if ((h < minStep_ || !(t_ + h > t_)) && !last_) return fail(false, h), std::nullopt;
        ++substeps_;
        tried_ = h;
        return h;
    }

    // The error norm of the sub-step next() gave (its six evaluations counted); whether it is accepted.
    bool judge(double norm) {
        const double h = tried_;
        r_.evaluations += 6;
        if (!std::isfinite(norm)) {
            // Non-finite stage values: shrink hard; give up below the minimum step.
            h_ = h / 10;
            ++r_.rejected;
            if (h_ < minStep_) fail(false, h);
            return false;
        }
        const double factor = std::clamp(0.9 * std::pow(std::max(norm, 1e-10), -0.2), 0.2, 5.0);
        if (norm <= 1.0) {
            t_ = last_ ? tEnd_ : t_ + h;
            r_.lastH = h;
            ++r_.accepted;
            if (!last_ || factor < 1.0) h_ = h * factor; // keep the untruncated step size across calls
            return true;
        }
        h_ = h * std::min(1.0, factor);
        ++r_.rejected;
        if (h_ < minStep_) fail(false, h_);
        return false;
    }

    // The time the accepted sub-steps reached.
    double time() const { return t_; }
    // Whether the sub-step next() gave lands on t + H.
    bool landing() const { return last_; }
    const StepResult& result() const { return r_; }

  private:
    void fail(bool exhausted, double h, int evaluations = -1) {
        r_.ok = false;
        r_.exhausted = exhausted;
        r_.lastH = h;
        r_.reached = t_;
        if (evaluations >= 0) r_.evaluations = evaluations;
        done_ = true;
    }

    double rtol_, atol_, minStep_;
    double h_ = 0.0; // the next sub-step's size, kept across calls
    double t_ = 0.0, tEnd_ = 0.0, tried_ = 0.0;
    int substeps_ = 0;
    bool last_ = false, done_ = false;
    StepResult r_;
};

// The float64 stages of one Dormand-Prince call on any Eigen state type (the CPU integrator's Tokens, the
// moment stepper's packed [alpha | R]), and their workspace, kept between calls so that a step allocates
// nothing once the sizes settle. `eval(t, x, k)` writes the derivative at (t, x) into k. One code for both,
// so the two take the same sub-steps with the same arithmetic in the same order.
template <class State> class DormandPrinceStages {
  public:
    template <class Eval>
    StepResult advance(DormandPrinceControl& control, Eval&& eval, double t, double H, State& X) {
        using T = DormandPrinceTableau;
        static constexpr double a21 = T::a[1][0], a31 = T::a[2][0], a32 = T::a[2][1], a41 = T::a[3][0],
                                a42 = T::a[3][1], a43 = T::a[3][2], a51 = T::a[4][0], a52 = T::a[4][1],
                                a53 = T::a[4][2], a54 = T::a[4][3], a61 = T::a[5][0], a62 = T::a[5][1],
                                a63 = T::a[5][2], a64 = T::a[5][3], a65 = T::a[5][4], b1 = T::a[6][0],
                                b3 = T::a[6][2], b4 = T::a[6][3], b5 = T::a[6][4], b6 = T::a[6][5],
                                e1 = T::e[0], e3 = T::e[2], e4 = T::e[3], e5 = T::e[4], e6 = T::e[5],
                                e7 = T::e[6];
        if (!control.begin(t, H)) return control.result();
        eval(t, X, k1_);
        while (const std::optional<double> step = control.next()) {
            const double h = *step;
            t = control.time();
            tmp_ = X + h * a21 * k1_;
            eval(T::stageTime(1, t, h), tmp_, k2_);
            tmp_ = X + h * (a31 * k1_ + a32 * k2_);
            eval(T::stageTime(2, t, h), tmp_, k3_);
            tmp_ = X + h * (a41 * k1_ + a42 * k2_ + a43 * k3_);
            eval(T::stageTime(3, t, h), tmp_, k4_);
            tmp_ = X + h * (a51 * k1_ + a52 * k2_ + a53 * k3_ + a54 * k4_);
            eval(T::stageTime(4, t, h), tmp_, k5_);
            tmp_ = X + h * (a61 * k1_ + a62 * k2_ + a63 * k3_ + a64 * k4_ + a65 * k5_);
            eval(t + h, tmp_, k6_);
            xNew_ = X + h * (b1 * k1_ + b3 * k3_ + b4 * k4_ + b5 * k5_ + b6 * k6_);
            eval(t + h, xNew_, k7_);
            err_ = h * (e1 * k1_ + e3 * k3_ + e4 * k4_ + e5 * k5_ + e6 * k6_ + e7 * k7_);
            const auto scale =
                control.atol() + control.rtol() * X.cwiseAbs().cwiseMax(xNew_.cwiseAbs()).array();
            if (control.judge(std::sqrt((err_.array() / scale).square().mean()))) {
                X.swap(xNew_);
                k1_.swap(k7_); // first same as last
            }
        }
        return control.result();
    }

  private:
    State k1_, k2_, k3_, k4_, k5_, k6_, k7_, tmp_, xNew_, err_;
};

} // namespace flowscope
