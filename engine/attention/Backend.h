// Flowscope engine: where velocities are computed, as one value a front end can hold.
//
// A backend is a FieldFactory plus the device it keeps alive, so Simulation and the benchmarks take it
// without knowing which one they got. The CPU one is here; the GPU ones (OpenGL, Vulkan) are opened by name
// in engine/gpu/common/Backend.h, which builds only where EGL is found.
#pragma once

#include "engine/attention/VelocityField.h"
#include "engine/dynamics/DeviceStepper.h"

#include <memory>
#include <stdexcept>
#include <string>

namespace flowscope {

struct ComputeBackend {
    std::string kind;              // "cpu", "gl" or "vulkan"
    std::string device;            // what runs it, e.g. "llvmpipe (LLVM 15.0.6, 256 bits), OpenGL 4.5 core"
    FieldFactory makeField;        // fields on this backend
    StepperFactory makeStepper;    // whole steps with the tokens kept on the device; null when it has none
    std::shared_ptr<void> context; // the device; fields must not outlive it
};

// Why a backend cannot be opened (unknown name, not built in, no device), in one line.
struct BackendError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// The engine's CPU fields (float32 SIMD or the float64 reference, as the scene says).
ComputeBackend cpuBackend();

} // namespace flowscope
