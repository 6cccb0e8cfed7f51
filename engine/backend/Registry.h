// Flowscope engine: the compute backends this build knows, listed and opened by id.
//
//     cpu     CPU         the engine's fields (float32 SIMD or the float64 reference, as the scene says)
//     gl      OpenGL compute  OpenGL 4.3 compute shaders: a headless EGL context of its own (Mesa llvmpipe
//                         where there is no GPU), or a context the caller made current (BackendHost)
//     vulkan  Vulkan compute  the same shaders as SPIR-V (Mesa lavapipe where there is no GPU)
//
// The ids and labels are spelled in Registry.cpp only; the CLI, the GUI and `flowscope-cli bench` take them
// from listBackends(). The registry is its own library (flowscope_backend) on top of the engine and, where
// EGL was found, the GPU backends (flowscope_gpu): the engine library itself never depends on a GPU. In a
// build without them, gl and vulkan are still listed, as unavailable, with the reason.
//
// GPU fields compute in float32 whatever the scene's precision. A GL backend's context is current on the
// thread that opened it: use its fields on that thread (SimulationRunner opens it on its worker).
#pragma once

#include "engine/backend/ComputeBackend.h"
#include "engine/gpu/gl/GlFunctions.h"

#include <memory>
#include <string>
#include <vector>

namespace flowscope {

struct BackendInfo {
    std::string id;    // what --backend and the settings take: "cpu", "gl", "vulkan"
    std::string label; // what a menu shows: "CPU", "OpenGL compute", "Vulkan compute"
    // Compiled into this build. No device is probed (creating a context costs tens of milliseconds and
    // a driver may print to stderr): an available backend can still fail to open, and openBackend says why.
    bool available = false;
    std::string why;          // when not available, e.g. "not built in this build (EGL was not found ...)"
    bool deviceSteps = false; // can keep the tokens on the device between steps (has a StepperFactory)
    bool takesGlHost = false; // can compute in an OpenGL context the caller made current (BackendHost)
};

// Every backend, in menu order (cpu first), available or not.
std::vector<BackendInfo> listBackends();

// The ids, comma-separated in menu order, for messages ("cpu, gl, vulkan").
std::string backendIdList();

// Where an opened backend runs when the caller already has a device: today an OpenGL context the caller
// made current on this thread (the GUI's, in the views' share group), so that the gl backend computes in
// it instead of a headless context of its own and the views can draw its device copies of the tokens.
struct BackendHost {
    GlProcLoader getProcAddress; // resolves GL functions in the caller's current context
    // The tag device copies of the tokens carry (DeviceTokens::shareGroup): the views' share group.
    const void* shareGroup = nullptr;
    // Fields only, no stepper: set when the context cannot share buffers with the views, which then draw
    // the tokens the fields read back every stage.
    bool fieldsOnly = false;
    // Kept alive with the backend (e.g. the context object) and released after the fields and steppers.
    std::shared_ptr<void> keepAlive;
};

// Opens a backend by id; `host` is used by "gl" only (null: a headless context). Throws BackendError naming
// why: an unknown id (the message lists listBackends' ids), a backend not built in, or no device.
ComputeBackend openBackend(const std::string& id, const BackendHost* host = nullptr);

// The CPU backend (openBackend("cpu")), which always opens.
ComputeBackend cpuBackend();

} // namespace flowscope
