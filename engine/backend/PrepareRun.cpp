#include "engine/backend/PrepareRun.h"

namespace flowscope {

std::unique_ptr<Simulation> PreparedRun::start(const Scene& scene) const {
    auto sim = std::make_unique<Simulation>(scene, makeField);
    if (makeStepper) sim->setStepper(makeStepper);
    return sim;
}

PreparedRun prepareRun(const ComputeBackend& backend, const Scene& scene, OnRefusal onRefusal) {
    const FieldFactory cpu = makeCpuField;
    if (std::optional<std::string> why = backend.supports(scene)) {
        if (onRefusal == OnRefusal::UseTheCpu) return {cpu, {}, false, *why + " — running on the CPU"};
        // A refusal names its field first: "/attention/positional_decay: the gl backend ...".
        const std::size_t colon = why->find(": ");
        if (why->starts_with("/") && colon != std::string::npos)
            throw SceneError(why->substr(0, colon), why->substr(colon + 2));
        throw SceneError("", *why);
    }
    return {backend.makeField ? backend.makeField : cpu, backend.makeStepper, true, {}};
}

} // namespace flowscope
