// Flowscope engine: a running simulation edited by JSON pointer, as the Scene panel edits it live.
//
// The attention (/attention/...) and the integrator (/integrator/...) take at once: the run continues from
// its current tokens and time with the new parameters, exactly as a fresh run of the edited scene started
// from that state would (tests/engine/test_live_edits.cpp checks it bit for bit for every live field). Every
// other field changes what the run is (d, N, the initial tokens, the precision, what is recorded) and needs a
// new run of the edited scene.
#pragma once

#include "engine/dynamics/Simulation.h"
#include "engine/scene/SceneSetting.h"

#include <string>

namespace flowscope {

// Whether a field set at `pointer` can change while a run goes on.
bool isLiveSetting(const std::string& pointer);

// Applies the setting to `sim` (Simulation::setAttention or setIntegrator with the edited scene's part).
// Throws SceneError naming the pointer when the field is not live or the value is refused; `sim` then keeps
// its parameters.
void applyLiveSetting(Simulation& sim, const SceneSetting& setting);

} // namespace flowscope
