// Flowscope engine: checks the tape's gradients against finite differences (for tests of ops and models).
//
// gradCheck(f, inputs) records f on a Tape<double> with every matrix of `inputs` as an input() leaf, runs
// backward(), and compares each input entry's gradient g with a finite difference fd of the loss:
//
//   D(h)  = (f(x + h) - f(x - h)) / (2h)          central difference, error O(h^2)
//   fd    = (4 D(h/2) - D(h)) / 3                 Richardson extrapolation, error O(h^4)
//   h     = step * max(1, |x|)                    (step = 1e-3 by default)
//   noise = 12 eps max|f| / h                     bound on fd's rounding error (below)
//   error = max(0, |g - fd| - noise) / max(|g| + |fd|, 1e-8 * scale)
//   scale = max over the checked entries of |g| + |fd|
//
// error is the relative error of g against fd, less what fd's own rounding can explain: each evaluation of
// f is rounded by ~eps |f| (4 eps |f| allowed), so D(h) carries ~eps |f| / h and fd three times that. On a
// loss summing many terms this is far from negligible: |f| = 30, h = 3e-3 gives 1e-11 absolutely, which is a
// relative 1e-5 on a gradient entry of 1e-6. The floor (1e-8 of the largest entry) only keeps gradients that
// are zero on both sides (a dead ReLU) from dividing by zero. Why h = 1e-3 rather than 1e-6: the noise grows
// as 1 / h, and with Richardson the truncation at h = 1e-3 is already ~1e-12. Kinked functions must keep
// their inputs farther than 2h from the kinks.
#pragma once

#include "engine/autodiff/Tape.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <functional>
#include <vector>

namespace flowscope::ad {

using LossFunction = std::function<Var<double>(Tape<double>&, const std::vector<Var<double>>&)>;

struct GradCheckOptions {
    double step = 1e-3;   // relative finite-difference step
    Index maxEntries = 0; // per input, check at most this many entries (evenly strided); 0 checks all
};

struct GradCheckResult {
    double maxRelError = 0;    // the largest error (see above) over the checked entries
    double maxRawRelError = 0; // the same without the noise allowance, for reports
    int input = -1;            // where it occurred: input index and entry
    Index row = -1, col = -1;
    double analytic = 0, numeric = 0;
    double noise = 0; // the finite difference's rounding bound there
    int checked = 0;  // number of entries checked
};

inline GradCheckResult gradCheck(const LossFunction& f, const std::vector<Matrix<double>>& inputs,
                                 const GradCheckOptions& options = {}) {
    Tape<double> tape;
    std::vector<Var<double>> vars;
    auto record = [&](const std::vector<Matrix<double>>& xs) {
        tape.clear();
        vars.clear();
        for (const Matrix<double>& x : xs) vars.push_back(tape.input(x));
        return f(tape, vars);
    };
    tape.backward(record(inputs));
    std::vector<Matrix<double>> grads;
    for (const Var<double>& v : vars) grads.push_back(tape.grad(v));

    struct Entry {
        int input;
        Index i;
        double g, fd, noise;
    };
    std::vector<Entry> entries;
    std::vector<Matrix<double>> xs = inputs;
    double scale = 0;
    for (int k = 0; k < int(inputs.size()); ++k) {
        const Index n = inputs[k].size();
        const Index stride = options.maxEntries > 0
                                 ? std::max<Index>(1, (n + options.maxEntries - 1) / options.maxEntries)
                                 : 1;
        for (Index i = 0; i < n; i += stride) {
            double& xi = xs[k].data()[i];
            const double x = xi;
            double fmax = 0;
            auto central = [&](double h) {
                const double xp = x + h, xm = x - h; // the step actually taken is xp - xm
                xi = xp;
                const double fp = record(xs).scalar();
                xi = xm;
                const double fm = record(xs).scalar();
                xi = x;
                fmax = std::max({fmax, std::abs(fp), std::abs(fm)});
                return (fp - fm) / (xp - xm);
            };
            const double h = options.step * std::max(1.0, std::abs(x));
            const double fd = (4 * central(h / 2) - central(h)) / 3;
            const double g = grads[k].data()[i];
            entries.push_back({k, i, g, fd, 12 * DBL_EPSILON * fmax / h});
            scale = std::max(scale, std::abs(g) + std::abs(fd));
        }
    }

    GradCheckResult r;
    r.checked = int(entries.size());
    const double floor = std::max(1e-8 * scale, DBL_MIN);
    for (const Entry& e : entries) {
        const double denominator = std::max(std::abs(e.g) + std::abs(e.fd), floor);
        const double err = std::max(0.0, std::abs(e.g - e.fd) - e.noise) / denominator;
        r.maxRawRelError = std::max(r.maxRawRelError, std::abs(e.g - e.fd) / denominator);
        if (err > r.maxRelError || r.input < 0) {
            const Index rows = inputs[e.input].rows();
            r = {err, r.maxRawRelError, e.input, e.i % rows, e.i / rows, e.g, e.fd, e.noise, r.checked};
        }
    }
    return r;
}

} // namespace flowscope::ad
