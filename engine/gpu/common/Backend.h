// Flowscope GPU: opening a compute backend by name, for the headless front ends (CLI, benchmarks).
//
//     cpu     the engine's CPU field (engine/attention/Backend.h)
//     gl      OpenGL 4.3 compute in a headless EGL context (Mesa llvmpipe where there is no GPU)
//     vulkan  Vulkan compute (Mesa lavapipe where there is no GPU), when this build has the Vulkan host
//
// GPU fields compute in float32 whatever the scene's precision. The GL context is current on the thread
// that opened the backend: use its fields on that thread.
#pragma once

#include "engine/attention/Backend.h"

#include <string>
#include <vector>

namespace flowscope {

// The backend names this build knows ("cpu", "gl", and "vulkan" when built with it).
std::vector<std::string> backendNames();

// Opens the named backend; throws BackendError naming why it is unavailable.
ComputeBackend openBackend(const std::string& kind);

} // namespace flowscope
