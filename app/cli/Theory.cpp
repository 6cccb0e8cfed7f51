// flowscope-cli theory influence: the "lost in the middle" influence profile of a scene
// (engine/dynamics/PositionalInfluence.h, docs/math/theory.md#influence).
#include "Commands.h"

#include "engine/core/Text.h"
#include "engine/dynamics/Equiangular.h"
#include "engine/dynamics/PositionalInfluence.h"
#include "engine/io/AtomicFile.h"
#include "engine/io/OutputSet.h"
#include "engine/scene/SceneShareString.h"

#include <cmath>
#include <iomanip>
#include <iostream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

namespace flowscope::cli {

namespace {

using Json = nlohmann::json;

bool endsWith(const std::string& text, const std::string& tail) {
    return text.size() >= tail.size() && text.compare(text.size() - tail.size(), tail.size(), tail) == 0;
}

// Throws SceneError at the first field that keeps the scene out of the profile's setting.
void requireInfluenceSetting(const Scene& s) {
    const AttentionSpec& a = s.attention;
    if (hasInfluenceProfile(a, s.d)) return;
    const std::string why = "the influence profile is for softmax with one head Q = K = V = I on the circle "
                            "(d = 2, normalization post)";
    if (s.d != 2) throw SceneError("/d", why + "; this scene has d = " + std::to_string(s.d));
    if (a.type != AttentionType::Softmax)
        throw SceneError("/attention/type", why + "; this scene has " + std::string(toString(a.type)));
    if (!a.keyframes.empty()) throw SceneError("/attention/keyframes", why + "; this scene has keyframes");
    if (a.heads.size() != 1)
        throw SceneError("/attention/heads",
                         why + "; this scene has " + std::to_string(a.heads.size()) + " heads");
    if (a.scaleByRootK)
        throw SceneError("/attention/scale_by_sqrt_k", why + "; this scene divides by sqrt(k)");
    if (normalizationOf(a) != Normalization::Post)
        throw SceneError("/attention/normalization",
                         why + "; this scene has " + std::string(toString(normalizationOf(a))));
    throw SceneError("/attention/heads/0", why + "; this scene's Q, K or V is not the identity");
}

} // namespace

int theory(const Args& raw) {
    ArgParser p(raw);
    const std::string out = p.option("--out");
    const std::optional<std::string> time = p.given("--t");
    const std::string width = p.option("--width");
    const std::vector<std::string> settings = p.options("--set");
    p.rejectUnknown();
    if (p.positional.empty() || p.positional[0] != "influence")
        throw UsageError("expected a sub-command: theory influence SCENE.json [--out influence.csv]");
    if (p.positional.size() != 2)
        throw UsageError("expected one SCENE.json or share string (usage: theory influence SCENE.json "
                         "[--out influence.csv|influence.json])");
    if (!out.empty() && !endsWith(out, ".csv") && !endsWith(out, ".json"))
        throw UsageError("--out: expected a .csv or .json file, got " + quoteForMessage(out));

    const Scene scene = withSetOptions(loadSceneOrShareString(p.positional[1]), settings);
    requireInfluenceSetting(scene);
    InfluenceSetting setting = influenceSetting(scene);
    if (!width.empty()) setting.width = parsePositive(width, "--width");
    // The engine's bounds (PositionalInfluence.h), named as this command's fields.
    if (setting.width > 1000.0) throw UsageError("--width: at most 1000 (the Fourier modes grow with it)");
    if (setting.n > 16384)
        throw UsageError(
            "/n: the influence profile is computed for at most 16384 tokens (its cost grows with N), "
            "got " +
            std::to_string(setting.n));
    const double t = time ? parsePositive(*time, "--t", true) : scene.integrator.T;

    std::vector<double> profile;
    try {
        profile = influenceProfile(setting, t);
    } catch (const std::invalid_argument& e) { // beta above 700, a time past exp's range
        throw UsageError(e.what());
    }
    const int n = setting.n;
    std::vector<double> s(std::size_t(n - 1)), meanField(s.size(), std::numeric_limits<double>::quiet_NaN());
    for (std::size_t k = 0; k < s.size(); ++k) {
        s[k] = (double(k) + 0.5) / n;
        if (setting.masked) meanField[k] = meanFieldInfluence(setting, t, s[k]);
    }
    const ProfileShape shape = profileShape(profile);
    const double end = setting.masked ? uShapeEndTime(setting) : std::numeric_limits<double>::quiet_NaN();

    std::ostringstream summary;
    summary << "theory influence " << scene.name << ": N = " << n << ", beta = " << setting.beta
            << ", lambda = " << setting.lambda << (setting.masked ? ", masked" : ", unmasked")
            << ", M = " << setting.width << ", t = " << t << ": "
            << (shape.uShaped ? "U-shaped" : "not U-shaped") << " (least at position " << shape.argmin
            << " of 0.." << n - 2 << ")";
    if (setting.masked) summary << "; the mean-field U lasts until t = " << std::setprecision(6) << end;

    const auto writeCsv = [&](std::ostream& o) {
        o << "index,s,influence,mean_field\n" << std::setprecision(17);
        for (std::size_t k = 0; k < s.size(); ++k) {
            o << k << "," << s[k] << "," << profile[k] << ",";
            if (std::isfinite(meanField[k])) o << meanField[k];
            o << "\n";
        }
    };
    if (out.empty()) {
        writeCsv(std::cout);
        std::cerr << summary.str() << "\n";
        return 0;
    }
    OutputSet outputs({out}, sceneInputs(p.positional[1], scene));
    {
        const OutputSet::Capture capture(outputs);
        if (endsWith(out, ".csv")) {
            writeFileAtomically(out, writeCsv);
        } else {
            Json mean = Json::array();
            for (const double v : meanField) mean.push_back(numberJson(v));
            const Json j = {{"scene", scene.name},
                            {"n", n},
                            {"beta", setting.beta},
                            {"lambda", setting.lambda},
                            {"masked", setting.masked},
                            {"width", setting.width},
                            {"t", t},
                            {"u_shaped", shape.uShaped},
                            {"argmin", shape.argmin},
                            {"u_shape_end_time", numberJson(end)},
                            {"s", s},
                            {"influence", profile},
                            {"mean_field", mean}};
            writeFileAtomically(out, [&](std::ostream& o) { o << j.dump() << "\n"; });
        }
    }
    outputs.commit();
    std::cerr << summary.str() << "; wrote " << out << "\n";
    return 0;
}

} // namespace flowscope::cli
