// Flowscope UI: the scene the application opens when no preset file provides one.
#pragma once

#include "engine/scene/Scene.h"

namespace flowscope {

// 2-D softmax attention, N = 2048 Gaussian tokens, Q = K = I, V = -0.4 I, float32, RK4, T = 10 in 500 steps.
Scene builtinDefaultScene();

} // namespace flowscope
