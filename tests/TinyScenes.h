// Small exact scenes the runner tests play (the engine's SimulationRunner tests and the UI tests).
#pragma once

#include "engine/core/Types.h"
#include "engine/scene/DefaultScene.h"
#include "engine/scene/Scene.h"

namespace flowscope::test {

// The built-in default (softmax, Q = K = I, V = -0.4 I, Gaussian tokens in the plane), small and in float64.
inline Scene tinyScene(int n = 256, int steps = 200) {
    Scene s = builtinDefaultScene();
    s.name = "tiny";
    s.n = n;
    s.precision = Precision::Float64;
    s.initial.seed = 7;
    s.integrator.T = 4.0;
    s.integrator.steps = steps;
    s.output.entropy = false;
    return s;
}

// V = I under explicit Euler to T = 20: the tokens leave the divergence bound (50) within the run.
inline Scene divergingScene() {
    Scene s = tinyScene(64, 400);
    s.name = "diverging";
    s.attention.heads = {HeadParams{Mat::Identity(2, 2), Mat::Identity(2, 2), Mat::Identity(2, 2)}};
    s.integrator.method = Method::Euler;
    s.integrator.T = 20.0;
    s.integrator.divergenceNorm = 50.0;
    return s;
}

} // namespace flowscope::test
