#include "engine/backend/ComputeBackend.h"

namespace flowscope {

std::optional<std::string> ComputeBackend::supports(const Scene& scene) const {
    // The GPU passes have no positional term (docs/math/theory.md#positional-decay): the CPU computes it.
    if (gpu && scene.attention.positionalDecay != 0.0)
        return "/attention/positional_decay: the " + (id.empty() ? std::string("GPU") : id) +
               " backend does not compute positional decay; use the CPU backend";
    return fieldsRefuse ? fieldsRefuse(scene) : std::nullopt;
}

std::optional<std::string> ComputeBackend::supportsDeviceSteps(const Scene& scene) const {
    if (!makeStepper)
        return (id.empty() ? std::string("this backend") : "backend " + id) + " has no device stepper";
    return makeStepper.refusal(scene.attention, scene.integrator, scene.d);
}

} // namespace flowscope
