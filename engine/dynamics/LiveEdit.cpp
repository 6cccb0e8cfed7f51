#include "engine/dynamics/LiveEdit.h"

#include <string_view>

namespace flowscope {

namespace {

bool under(const std::string& pointer, std::string_view part) {
    return pointer.size() > part.size() && pointer.compare(0, part.size(), part) == 0 &&
           pointer[part.size()] == '/';
}

} // namespace

bool isLiveSetting(const std::string& pointer) {
    return pointer == "/attention" || pointer == "/integrator" || under(pointer, "/attention") ||
           under(pointer, "/integrator");
}

void applyLiveSetting(Simulation& sim, const SceneSetting& setting) {
    if (!isLiveSetting(setting.pointer))
        throw SceneError(setting.pointer, "cannot change while the run goes on (/attention/... and "
                                          "/integrator/... can); set it on the scene and start a new run");
    const Scene edited = withSetting(sim.scene(), setting);
    if (setting.pointer.rfind("/attention", 0) == 0)
        sim.setAttention(edited.attention);
    else
        sim.setIntegrator(edited.integrator);
}

} // namespace flowscope
