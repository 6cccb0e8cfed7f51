#include "engine/scene/SceneShareString.h"

#include <filesystem>
#include <nlohmann/json.hpp>

namespace flowscope {

std::string encodeShareString(const Scene& scene) {
    Scene s = scene;
    if (s.initial.kind == InitKind::File) {
        // Inline the tokens: kind "points" with N = m points and no jitter gives token i = row i exactly.
        if (s.n > kSceneMaxInlinePoints)
            shareStringFail("/initial/path: " + std::to_string(s.n) +
                            " tokens from a file are more than the " + std::to_string(kSceneMaxInlinePoints) +
                            " a scene can hold inline; share the scene file and \"" + s.initial.path +
                            "\" instead");
        Tokens tokens;
        try {
            tokens = initialTokens(s);
        } catch (const std::exception& e) {
            shareStringFail(std::string("cannot inline the tokens: ") + e.what());
        }
        s.initial.kind = InitKind::Points;
        s.initial.points = std::move(tokens);
        s.initial.noise = 0.0;
    }
    s.initial.path.clear(); // unused by every other kind
    std::string json;
    try {
        json = nlohmann::ordered_json::parse(sceneToJson(s)).dump();
    } catch (const std::exception& e) {
        shareStringFail(e.what());
    }
    return encodeShareText(json);
}

Scene decodeShareString(std::string_view text) {
    const std::string json = decodeShareText(text);
    // A string never refers to local files: refuse kind "file" before sceneFromJson goes looking for one.
    // Parsed with sceneFromJson's depth limit: a few KB of "[[[[..." would otherwise cost hundreds of MB.
    const auto root = nlohmann::json::parse(
        json,
        [](int depth, nlohmann::json::parse_event_t event, nlohmann::json&) {
            using E = nlohmann::json::parse_event_t;
            if ((event == E::object_start || event == E::array_start) && depth >= kSceneMaxJsonDepth)
                shareStringFail("expected at most 64 levels of JSON nesting");
            return true;
        },
        false);
    if (root.is_object() && root.contains("initial") && root["initial"].is_object() &&
        root["initial"].value("kind", nlohmann::json()) == "file")
        shareStringFail("/initial/kind: \"file\" is not allowed in a share string (it would read a local "
                        "file); the tokens belong inline, as kind \"points\"");
    try {
        return sceneFromJson(json, ".");
    } catch (const SceneError& e) {
        // Whole-document errors (syntax) have no pointer: drop the empty one and its ": ".
        shareStringFail(e.pointer.empty() ? e.detail : e.what());
    } catch (const std::exception& e) {
        shareStringFail(e.what());
    }
}

Scene loadSceneOrShareString(const std::string& arg) {
    std::error_code ec;
    if (looksLikeShareString(arg) && !std::filesystem::exists(arg, ec)) return decodeShareString(arg);
    return loadScene(arg);
}

} // namespace flowscope
