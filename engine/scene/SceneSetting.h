// Flowscope engine: one field of a scene set by its JSON pointer, "POINTER=VALUE". flowscope-cli's --set, a
// sweep's "set" and axes, the Python module's Run.set and the live-edit conformance tests all go through
// here, so a setting means the same everywhere: the scene is written out, the value placed, and the scene
// read back, with every rule and message of the reader (docs/scene.md).
#pragma once

#include "engine/scene/Scene.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace flowscope {

struct SceneSetting {
    std::string pointer; // e.g. "/attention/beta"
    nlohmann::ordered_json value;
};

// "POINTER=VALUE". VALUE is read as JSON (4, 1e-3, true, [[1, 0], [0, 1]], "l2"), and when it is not JSON as
// a bare string (l2, rk4). Throws SceneError (with an empty pointer) saying what is wrong.
SceneSetting parseSceneSetting(const std::string& text);

// Puts `value` at `pointer` of the scene document `doc`. The parent must exist: an object, or an array the
// index lies in. Returns "" when placed, else why not ("the scene has no /attention/foo"); `doc` is then
// unchanged.
std::string placeAtPointer(nlohmann::ordered_json& doc, const std::string& pointer,
                           nlohmann::ordered_json value);

// The scene with the setting applied (see above). Throws SceneError naming the field: the pointer itself when
// it cannot be placed, else the reader's pointer (a value out of range, a matrix of the wrong shape).
Scene withSetting(const Scene& scene, const SceneSetting& setting);

// Each "POINTER=VALUE" in turn. Throws SceneError whose message starts with the setting that failed.
Scene withSettings(Scene scene, const std::vector<std::string>& settings);

} // namespace flowscope
