// Flowscope engine: where velocities are computed, as one value a front end can hold.
//
// A backend is a FieldFactory (and, on a GPU, a StepperFactory for whole steps on the device) plus the device
// it keeps alive, so Simulation, the live runner and the benchmarks take it without knowing which one they
// got. Backends are listed and opened by id in engine/backend/Registry.h; this header is all the rest of the
// engine needs, and it knows no backend by name.
#pragma once

#include "engine/attention/VelocityField.h"
#include "engine/dynamics/DeviceStepper.h"
#include "engine/scene/Scene.h"

#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

namespace flowscope {

struct ComputeBackend {
    std::string id;      // the registry's id (Registry.h); empty for a default-constructed backend
    std::string label;   // the registry's label, for people
    std::string device;  // what runs it, e.g. "llvmpipe (LLVM 15.0.6, 256 bits), OpenGL 4.5 core"
    std::string runName; // how a run on it calls itself in a status line, e.g. "OpenGL float32"; GPU only
    bool gpu = false;    // computes on a GPU, in float32 whatever the scene's precision
    // Fields on this backend; null: the CPU's (makeCpuField), so a default ComputeBackend computes on the
    // CPU.
    FieldFactory makeField;
    // Whole steps with the tokens kept on the device; null when the backend has none.
    StepperFactory makeStepper;
    // Why this backend's fields cannot compute a scene the CPU can; null when they compute every one.
    std::function<std::optional<std::string>(const Scene&)> fieldsRefuse;
    std::shared_ptr<void> context; // the device; fields and steppers must not outlive it

    // Why this backend cannot run `scene` (one line, naming the scene field); nullopt when it can. Asked
    // before a run starts, so a refused scene goes to the CPU with the reason as a note instead of an error.
    std::optional<std::string> supports(const Scene& scene) const;
    // Why the scene's tokens cannot stay on the device between steps (the fields then run every stage and
    // read the velocities back); nullopt when they can.
    std::optional<std::string> supportsDeviceSteps(const Scene& scene) const;
};

// Why a backend cannot be opened (unknown id, not built in, no device), in one line.
struct BackendError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

} // namespace flowscope
