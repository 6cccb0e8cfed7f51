#include "engine/scene/SceneSetting.h"

#include "engine/core/Text.h"
#include "engine/io/JsonReader.h"

#include <algorithm>
#include <cctype>

namespace flowscope {

using Json = nlohmann::ordered_json;

SceneSetting parseSceneSetting(const std::string& text) {
    const std::size_t eq = text.find('=');
    if (eq == std::string::npos || eq == 0)
        throw SceneError("", "expected POINTER=VALUE (e.g. /attention/beta=4), got " + quoteForMessage(text));
    SceneSetting s{text.substr(0, eq), {}};
    if (s.pointer.front() != '/')
        throw SceneError("", "expected a JSON pointer starting with / (e.g. /attention/beta), got " +
                                 quoteForMessage(s.pointer));
    const std::string value = text.substr(eq + 1);
    if (value.empty()) throw SceneError("", "no value after " + quoteForMessage(s.pointer + "="));
    try {
        s.value = parseJson(value, kSceneMaxJsonDepth);
    } catch (const JsonError&) {
        s.value = value; // a bare word: l2, rk4, float32
    }
    return s;
}

std::string placeAtPointer(Json& doc, const std::string& pointer, Json value) {
    Json::json_pointer at;
    try {
        at = Json::json_pointer(pointer);
    } catch (const nlohmann::json::exception&) {
        return "expected a JSON pointer (/attention/beta), got " + quoteForMessage(pointer);
    }
    if (at.empty()) return "the pointer names the whole scene, not one of its fields";
    const Json::json_pointer parentAt = at.parent_pointer();
    if (!parentAt.empty() && !doc.contains(parentAt)) return "the scene has no " + parentAt.to_string();
    Json& parent = parentAt.empty() ? doc : doc.at(parentAt);
    if (parent.is_array()) {
        const std::string& last = at.back();
        if (last.empty() || last.size() > 9 || !std::all_of(last.begin(), last.end(), ::isdigit) ||
            std::stoul(last) >= parent.size())
            return "past the end of " + parentAt.to_string() + " (" + std::to_string(parent.size()) +
                   " elements)";
        parent[std::stoul(last)] = std::move(value);
        return "";
    }
    if (!parent.is_object()) return parentAt.to_string() + " is no object or array";
    parent[at.back()] = std::move(value);
    return "";
}

Scene withSetting(const Scene& scene, const SceneSetting& setting) {
    // The scene's file paths are absolute once read, so the document reads back from any directory.
    Json doc = parseJson(sceneToJson(scene), kSceneMaxJsonDepth);
    // "sphere" is the older name of "normalization": "post" (docs/scene.md): setting it replaces the scheme.
    if (setting.pointer == "/attention/sphere") doc["attention"].erase("normalization");
    if (const std::string why = placeAtPointer(doc, setting.pointer, setting.value); !why.empty())
        throw SceneError(setting.pointer, why);
    return sceneFromJson(doc.dump(), ".");
}

Scene withSettings(Scene scene, const std::vector<std::string>& settings) {
    for (const std::string& text : settings) {
        try {
            scene = withSetting(scene, parseSceneSetting(text));
        } catch (const SceneError& e) {
            throw SceneError("", quoteForMessage(text) + ": " + e.what());
        }
    }
    return scene;
}

} // namespace flowscope
