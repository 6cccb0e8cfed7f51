#include "engine/backend/ComputeBackend.h"

namespace flowscope {

std::optional<std::string> ComputeBackend::supports(const Scene& scene) const {
    return fieldsRefuse ? fieldsRefuse(scene) : std::nullopt;
}

std::optional<std::string> ComputeBackend::supportsDeviceSteps(const Scene& scene) const {
    if (!makeStepper)
        return (id.empty() ? std::string("this backend") : "backend " + id) + " has no device stepper";
    return makeStepper.refusal(scene.attention, scene.integrator, scene.d);
}

} // namespace flowscope
