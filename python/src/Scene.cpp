// flowscope.Scene and flowscope.presets(): the scene schema of docs/scene.md, read and validated by the
// engine (engine/scene), from a dict, a file, a share string or a preset name.
#include "Common.h"

#include "engine/core/Text.h"
#include "engine/scene/SceneSchema.h"
#include "engine/scene/SceneSetting.h"
#include "engine/scene/SceneShareString.h"

#include <algorithm>
#include <filesystem>

namespace flowscope::py {

namespace {

std::string presetDir = FLOWSCOPE_PRESET_DIR; // the package's copy where it has one (__init__.py sets it)

std::vector<std::string> presetNames() {
    std::vector<std::string> names;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(presetDir, ec))
        if (e.path().extension() == ".json") names.push_back(e.path().stem().string());
    std::sort(names.begin(), names.end());
    return names;
}

Scene sceneFromText(const std::string& text) {
    std::error_code ec;
    if (std::filesystem::exists(text, ec) || looksLikeShareString(text)) return loadSceneOrShareString(text);
    if (text.ends_with(".json") || text.find('/') != std::string::npos) { // a file's name, not a preset's
        PyErr_SetString(PyExc_FileNotFoundError,
                        ("scene: no such file: " + quoteForMessage(text, kMaxQuotedPath)).c_str());
        throw pb::error_already_set();
    }
    const std::filesystem::path preset = std::filesystem::path(presetDir) / (text + ".json");
    if (text.find('/') == std::string::npos && std::filesystem::is_regular_file(preset, ec))
        return loadScene(preset.string());
    throw InputError("scene",
                     quoteForMessage(text) +
                         " is not a scene file, a share string or a preset (flowscope.presets() lists them)");
}

// A dict's n against its inline points (initial.kind "points"): n left out is their number; another n is
// refused unless the points are jittered cluster centres (noise > 0), which a scene cycles over its n tokens
// (docs/scene.md). Without noise, n below the points' number would drop some and above it repeat some.
pb::dict withPointCount(const pb::dict& scene) {
    if (!scene.contains("initial") || !pb::isinstance<pb::dict>(scene["initial"])) return scene;
    const pb::dict initial = scene["initial"];
    if (!initial.contains("kind") || !pb::isinstance<pb::str>(initial["kind"]) ||
        initial["kind"].cast<std::string>() != "points" || !initial.contains("points") ||
        !pb::hasattr(initial["points"], "__len__"))
        return scene;
    const long m = long(pb::len(initial["points"]));
    if (!scene.contains("n")) {
        pb::dict copy(scene);
        copy["n"] = m;
        return copy;
    }
    double noise = 0; // a bad noise or n is the scene reader's to name
    if (initial.contains("noise") &&
        (pb::isinstance<pb::float_>(initial["noise"]) || pb::isinstance<pb::int_>(initial["noise"])))
        noise = initial["noise"].cast<double>();
    if (pb::isinstance<pb::int_>(scene["n"]) && !pb::isinstance<pb::bool_>(scene["n"]) && !(noise > 0)) {
        const long long n = scene["n"].cast<long long>();
        if (n != m)
            throw InputError(
                "/n", "expected " + std::to_string(m) +
                          ", the number of points in /initial/points "
                          "(or leave n out), got " +
                          std::to_string(n) + ": " +
                          (n < m ? "the last " + std::to_string(m - n) + " points would be dropped"
                                 : std::to_string(n - m) + " points would be repeated") +
                          " (with /initial/noise > 0 the points are cluster centres cycled over n tokens)");
    }
    return scene;
}

} // namespace

Scene toScene(const pb::handle& scene) {
    if (pb::isinstance<Scene>(scene)) return scene.cast<Scene>();
    if (pb::isinstance<pb::dict>(scene))
        return sceneFromJson(dictToJson(withPointCount(scene.cast<pb::dict>())));
    if (pb::isinstance<pb::str>(scene) || pb::hasattr(scene, "__fspath__"))
        return sceneFromText(pathText(scene));
    throw InputError("scene", "expected a Scene, a dict, a file name, a share string or a preset name, got " +
                                  pb::str(scene.get_type().attr("__name__")).cast<std::string>());
}

void bindScene(pb::module_& m) {
    m.def("_set_preset_dir", [](const std::string& dir) { presetDir = dir; });
    m.def("presets", &presetNames, R"(presets() -> list[str]

The names of the shipped scenes (assets/presets), each one a valid ``Scene(name)``; ``Scene(name).description``
says what it shows and ``.figure`` which paper figure it reproduces.)");

    m.def(
        "parameters",
        [] {
            pb::list out;
            for (const SceneParam& p : sceneParams()) {
                pb::dict d;
                d["pointer"] = std::string(p.pointer);
                d["keyword"] = std::string(p.keyword);
                d["label"] = std::string(p.label);
                d["unit"] = std::string(p.unit);
                d["accepts"] = acceptedText(p);
                if (p.kind == ParamKind::Choice) {
                    pb::list choices;
                    for (std::string_view c : p.choices) choices.append(std::string(c));
                    d["choices"] = choices;
                }
                d["default"] = p.required ? pb::object(pb::none()) : jsonToPython(paramDefault(p).dump());
                d["required"] = p.required;
                d["live"] = p.edit == ParamEdit::Live;
                d["summary"] = std::string(p.summary);
                d["docs"] = std::string(p.anchor);
                out.append(d);
            }
            return out;
        },
        R"(The scene's scalar parameters, one dict each, from the engine's parameter schema (the table
``flowscope-cli help set`` prints and the app's Scene panel is made from): ``pointer`` (for Scene.replace,
Run.set and --set), ``keyword`` (for simulate(..., beta=4)), ``label``, ``unit``, ``accepts`` (the range, as
the reader's messages say it), ``choices`` (named values), ``default`` (None when required), ``required``,
``live`` (a running Run takes a new value), ``summary`` and ``docs`` (where docs/ explains it).)");

    pb::class_<Scene>(
        m, "Scene", R"(One experiment: dimension d, N tokens, the initial distribution, the attention variant
and its parameters, the integrator and what is recorded (the schema: docs/scene.md).

    Scene(source)

``source`` is a dict in the scene schema, the name of a scene file (.json), a share string (``fs1.…``, as
``flowscope-cli share`` prints and the app copies) or a preset name (``flowscope.presets()``). The engine
reads and validates it; a bad field raises ValueError with the message the CLI prints, naming the field by
JSON pointer, e.g. ``/attention/heads/1/V: expected 2x2 matrix, got 2x3``. Running a scene reproduces the
CLI's run of it bit for bit.)")
        .def(pb::init([](const pb::handle& source) { return toScene(source); }), pb::arg("source"))
        .def(
            "to_dict", [](const Scene& s) { return jsonToPython(sceneToJson(s)); },
            "The scene as a dict in the schema, every field explicit (Scene(s.to_dict()) is s).")
        .def("to_json", &sceneToJson, "The scene as JSON text, as a scene file holds it.")
        .def(
            "replace",
            [](const Scene& s, const std::string& pointer, const pb::handle& value) {
                return withSetting(s, SceneSetting{pointer, pythonToJson(value, pointer)});
            },
            pb::arg("pointer"), pb::arg("value"),
            "A new scene with the field at a JSON pointer replaced (\"/attention/beta\", 4), checked as a "
            "scene "
            "file is: flowscope-cli's --set POINTER=VALUE.")
        .def(
            "__eq__", [](const Scene& a, const Scene& b) { return sceneToJson(a) == sceneToJson(b); },
            pb::arg("other"), "Whether the two scenes are the same scene (the same JSON).")
        .def("share", &encodeShareString,
             "The scene as one share string (``fs1.`` + base64url of its deflated JSON; tokens read from a "
             "file "
             "inlined), which Scene(), flowscope-cli and the app all take.")
        .def(
            "save", [](const Scene& s, const pb::object& path) { saveScene(s, pathText(path)); },
            pb::arg("path"), "Writes the scene as a JSON file (atomically).")
        .def_readonly("name", &Scene::name)
        .def_readonly("description", &Scene::description)
        .def_readonly("figure", &Scene::figure)
        .def_readonly("d", &Scene::d, "The token dimension d.")
        .def_readonly("n", &Scene::n, "The number of tokens N.")
        .def_property_readonly("attention_type",
                               [](const Scene& s) { return std::string(toString(s.attention.type)); })
        .def("__repr__", [](const Scene& s) {
            return "<flowscope.Scene " + quoteForMessage(s.name) + ": " + toString(s.attention.type) +
                   ", d=" + std::to_string(s.d) + ", n=" + std::to_string(s.n) + ">";
        });
}

} // namespace flowscope::py
