// Flowscope engine: Scene -> JSON (schema: docs/scene.md).
//
// Writing is complete: every field is written explicitly, so a saved scene does not change meaning if a
// default changes later. The text is pretty-printed with short arrays on one line (engine/io/JsonWrite.h),
// so that a saved scene is easy to edit by hand.
#include "engine/scene/Scene.h"

#include "engine/io/AtomicFile.h"
#include "engine/io/JsonReader.h"
#include "engine/io/JsonWrite.h"
#include "engine/scene/SceneSchema.h"

namespace flowscope {

namespace {

// ordered_json keeps the keys in the order written, so a saved scene reads top-down like the schema and the
// GUI-owned "view" object keeps its author's order.
using Json = nlohmann::ordered_json;

Json headsJson(const std::vector<HeadParams>& heads) {
    Json j = Json::array();
    for (const HeadParams& h : heads)
        j.push_back(Json{{"Q", matrixJson(h.Q)}, {"K", matrixJson(h.K)}, {"V", matrixJson(h.V)}});
    return j;
}

// A Scene built in code may leave vectors and matrices empty; they mean the documented defaults, which are
// written out so that the file is complete and valid.
Vec orDefault(const Vec& v, int d, double fill) {
    return v.size() ? v : Vec::Constant(d, fill);
}
Mat orIdentity(const Mat& m, int d) {
    return m.size() ? m : Mat::Identity(d, d);
}

// The structure of each section (the scalar parameters are the schema's, SceneSchema.h).
void writeInitial(const Scene& s, Json& j) {
    const InitialSpec& i = s.initial;
    j["mean"] = vectorJson(orDefault(i.mean, s.d, 0.0));
    j["cov"] = matrixJson(orIdentity(i.cov, s.d));
    j["low"] = vectorJson(orDefault(i.low, s.d, -1.0));
    j["high"] = vectorJson(orDefault(i.high, s.d, 1.0));
    j["radii"] = i.radii.empty() ? Json::array({1.0}) : Json(i.radii);
    j["path"] = i.path;
    if (i.points.rows()) j["points"] = matrixJson(i.points);
}

void writeAttention(const Scene& s, Json& j) {
    const AttentionSpec& a = s.attention;
    if (a.heads.empty() && a.keyframes.empty() && a.type != AttentionType::Rwpo &&
        a.type != AttentionType::Drifting)
        j["heads"] = headsJson({{Mat::Identity(s.d, s.d), Mat::Identity(s.d, s.d), Mat::Identity(s.d, s.d)}});
    else
        j["heads"] = headsJson(a.heads);
    j["keyframes"] = Json::array();
    for (const Keyframe& k : a.keyframes)
        j["keyframes"].push_back(Json{{"t", k.t}, {"heads", headsJson(k.heads)}});
    j["target"] = Json{{"mean", vectorJson(orDefault(a.targetMean, s.d, 0.0))},
                       {"cov", matrixJson(orIdentity(a.targetCov, s.d))}};
}

void writeGrid(const ConeGridSpec& g, Json& j) {
    if (g.enabled())
        j["grid"] = Json{{"nu", g.nu}, {"nc", g.nc}, {"limits", Json::array({g.x0, g.x1, g.y0, g.y1})}};
}

Json viewJson(const std::string& text) {
    if (text.empty()) return Json::object();
    Json j;
    try {
        j = Json::parse(text);
    } catch (const nlohmann::json::parse_error& e) {
        throw SceneError("/view", std::string("expected a JSON object, got invalid JSON: ") + e.what());
    }
    if (!j.is_object()) throw SceneError("/view", "expected object, got " + JsonReader(j).describe());
    return j;
}

} // namespace

std::string sceneToJson(const Scene& s) {
    Json j{{"version", s.version}, {"name", s.name}, {"description", s.description}, {"figure", s.figure}};
    writeSceneParams("", s, j); // d, n, precision and every section's parameters, in the schema's order
    writeInitial(s, j["initial"]);
    writeAttention(s, j["attention"]);
    writeGrid(s.moments.grid, j["moments"]);
    j["view"] = viewJson(s.viewJson);
    return prettyJson(j) + "\n";
}

void saveScene(const Scene& s, const std::string& path) {
    const std::string text = sceneToJson(s); // serialize first: a bad scene must not leave a partial file
    writeFileAtomically(path, [&](std::ostream& out) { out << text; });
}

} // namespace flowscope
