// Flowscope engine: ODE integrators for dX/dt = F(t, X) on token clouds.
//
// Euler (one Transformer layer = one Euler step), Heun, classical RK4 (the field is re-evaluated at every
// stage) and adaptive Dormand-Prince 5(4) with embedded error control (FSAL).
#pragma once

#include "engine/core/Types.h"
#include "engine/scene/Scene.h"

#include <functional>
#include <memory>

namespace flowscope {

using Field = std::function<void(double t, const Tokens& X, Tokens& dX)>;

// Dormand-Prince takes at most this many sub-steps (accepted or rejected) within one call: every loop that
// advances time has an exit, also when the tolerances ask for more than float64 gives or the horizon is
// astronomically long against the dynamics' time scale (docs/scene.md).
constexpr int kMaxSubsteps = 1000;

struct StepResult {
    bool ok = true;         // false: the step could not be completed (adaptive only; see exhausted)
    bool exhausted = false; // ... because it took kMaxSubsteps sub-steps (else: the step fell below minStep)
    int evaluations = 0;    // field evaluations used
    double lastH = 0.0;     // the last accepted sub-step (adaptive)
    double reached = 0.0;   // the time X is at on return (t + h unless the step collapsed)
    int accepted = 0;       // sub-steps taken (fixed methods: 1)
    int rejected = 0;       // sub-steps tried and rejected (adaptive: error too large, or not finite)
};

class Integrator {
  public:
    virtual ~Integrator() = default;
    // Advances X from t to t + h (adaptive methods may take several sub-steps to land exactly on t + h).
    virtual StepResult advance(const Field& f, double t, double h, Tokens& X) = 0;
    virtual int order() const = 0;
    // Called after the state was replaced from outside (reset, live edits): drop cached derivatives.
    virtual void invalidate() {}
};

std::unique_ptr<Integrator> makeIntegrator(const IntegratorSpec& spec);

} // namespace flowscope
