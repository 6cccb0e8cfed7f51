// Flowscope engine: Scene -> JSON (schema: docs/scene.md).
//
// Writing is complete: every field is written explicitly, so a saved scene does not change meaning if a
// default changes later. The text is pretty-printed with short arrays on one line (engine/io/JsonWrite.h),
// so that a saved scene is easy to edit by hand.
#include "engine/scene/Scene.h"

#include "engine/io/AtomicFile.h"
#include "engine/io/JsonReader.h"
#include "engine/io/JsonWrite.h"
#include "engine/scene/SceneNames.h"

namespace flowscope {

namespace {

// ordered_json keeps the keys in the order written, so a saved scene reads top-down like the schema and the
// GUI-owned "view" object keeps its author's order.
using Json = nlohmann::ordered_json;

template <std::size_t N> std::string nameOf(const std::array<std::string_view, N>& names, auto value) {
    return std::string(names[std::size_t(value)]);
}

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

Json initialJson(const Scene& s) {
    const InitialSpec& i = s.initial;
    Json j;
    j["kind"] = nameOf(scene_names::kInit, i.kind);
    j["seed"] = i.seed;
    j["mean"] = vectorJson(orDefault(i.mean, s.d, 0.0));
    j["cov"] = matrixJson(orIdentity(i.cov, s.d));
    j["low"] = vectorJson(orDefault(i.low, s.d, -1.0));
    j["high"] = vectorJson(orDefault(i.high, s.d, 1.0));
    j["radii"] = i.radii.empty() ? Json::array({1.0}) : Json(i.radii);
    j["noise"] = i.noise;
    j["path"] = i.path;
    if (i.points.rows()) j["points"] = matrixJson(i.points);
    return j;
}

Json attentionJson(const Scene& s) {
    const AttentionSpec& a = s.attention;
    Json j;
    j["type"] = nameOf(scene_names::kAttention, a.type);
    j["beta"] = a.beta;
    j["scale_by_sqrt_k"] = a.scaleByRootK;
    j["masked"] = a.masked;
    j["normalization"] = toString(normalizationOf(a)); // "post" is the older "sphere": true
    j["positional_decay"] = a.positionalDecay;
    if (a.heads.empty() && a.keyframes.empty() && a.type != AttentionType::Rwpo &&
        a.type != AttentionType::Drifting)
        j["heads"] = headsJson({{Mat::Identity(s.d, s.d), Mat::Identity(s.d, s.d), Mat::Identity(s.d, s.d)}});
    else
        j["heads"] = headsJson(a.heads);
    j["keyframes"] = Json::array();
    for (const Keyframe& k : a.keyframes)
        j["keyframes"].push_back(Json{{"t", k.t}, {"heads", headsJson(k.heads)}});
    j["interpolation"] = nameOf(scene_names::kInterpolation, a.interpolation);
    j["linear_eps"] = a.linearEps ? Json(*a.linearEps) : Json(nullptr);
    j["sinkhorn"] =
        Json{{"eps", a.sinkhornEps}, {"iterations", a.sinkhornIterations}, {"tol", a.sinkhornTol}};
    j["rwpo"] =
        Json{{"lambda", a.lambda}, {"h", a.h}, {"kernel", nameOf(scene_names::kRwpoKernel, a.rwpoKernel)}};
    j["target"] = Json{{"mean", vectorJson(orDefault(a.targetMean, s.d, 0.0))},
                       {"cov", matrixJson(orIdentity(a.targetCov, s.d))}};
    return j;
}

Json integratorJson(const IntegratorSpec& i) {
    return Json{{"method", nameOf(scene_names::kMethod, i.method)},
                {"T", i.T},
                {"steps", i.steps},
                {"rtol", i.rtol},
                {"atol", i.atol},
                {"divergence_norm", i.divergenceNorm},
                {"min_step", i.minStep}};
}

Json outputJson(const OutputSpec& o) {
    return Json{
        {"every", o.every}, {"entropy", o.entropy}, {"cluster_tol", o.clusterTol}, {"rank_tol", o.rankTol}};
}

Json momentsJson(const Scene& s) {
    const MomentsSpec& m = s.moments;
    Json j{{"method", nameOf(scene_names::kMomentMethod, m.method)},
           {"step", m.step},
           {"tol_low", m.tolLow},
           {"tol_high", m.tolHigh},
           {"max_iter", m.maxIter}};
    if (m.grid.enabled())
        j["grid"] = Json{{"nu", m.grid.nu},
                         {"nc", m.grid.nc},
                         {"limits", Json::array({m.grid.x0, m.grid.x1, m.grid.y0, m.grid.y1})}};
    return j;
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
    const Json j{{"version", s.version},
                 {"name", s.name},
                 {"description", s.description},
                 {"figure", s.figure},
                 {"d", s.d},
                 {"n", s.n},
                 {"precision", nameOf(scene_names::kPrecision, s.precision)},
                 {"initial", initialJson(s)},
                 {"attention", attentionJson(s)},
                 {"integrator", integratorJson(s.integrator)},
                 {"output", outputJson(s.output)},
                 {"moments", momentsJson(s)},
                 {"view", viewJson(s.viewJson)}};
    return prettyJson(j) + "\n";
}

void saveScene(const Scene& s, const std::string& path) {
    const std::string text = sceneToJson(s); // serialize first: a bad scene must not leave a partial file
    writeFileAtomically(path, [&](std::ostream& out) { out << text; });
}

} // namespace flowscope
