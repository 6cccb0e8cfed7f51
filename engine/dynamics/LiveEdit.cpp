#include "engine/dynamics/LiveEdit.h"

#include "engine/io/JsonReader.h"

namespace flowscope {

bool isLiveSetting(const std::string& pointer) {
    return pointer == "/attention" || pointer == "/integrator" || pointerIsUnder(pointer, "/attention") ||
           pointerIsUnder(pointer, "/integrator");
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
