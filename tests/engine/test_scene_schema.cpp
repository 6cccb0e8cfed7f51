// The parameter schema (engine/scene/SceneSchema.h): every scalar parameter of a scene is declared once,
// and the reader, the writer, --set and the live edits all follow that one declaration. Each test walks the
// whole table, so a parameter added to it is covered without a line here.
#include "engine/dynamics/LiveEdit.h"
#include "engine/scene/DefaultScene.h"
#include "engine/scene/SceneSchema.h"
#include "engine/scene/SceneSetting.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <string>

namespace flowscope {
namespace {

using Json = SceneParam::Json;

// A scene every parameter can be set on (softmax, d = 2).
Scene base() {
    Scene s = builtinDefaultScene();
    s.n = 8;
    return s;
}

std::string setting(const SceneParam& p, const Json& value) {
    return std::string(p.pointer) + "=" + value.dump();
}

// A value the parameter accepts other than its default (the middle of a range, the next choice, the other
// boolean).
Json anotherValue(const SceneParam& p) {
    const Json def = paramDefault(p);
    switch (p.kind) {
    case ParamKind::Boolean:
        return !def.get<bool>();
    case ParamKind::Seed:
        return def.get<std::uint64_t>() + 12345;
    case ParamKind::Choice:
        return std::string(p.choices[(p.get(Scene{}).get<std::size_t>() + 1) % p.choices.size()]);
    case ParamKind::Integer: {
        const double low = p.range.low, high = std::min(p.range.high, 1e6);
        const long long v = (long long)std::floor((low + high) / 2);
        return v == def.get<long long>() ? v + 1 : v;
    }
    case ParamKind::Number:
        break;
    }
    if (std::isfinite(p.range.high)) return (p.range.low + p.range.high) / 3; // inside either kind of end
    const double from = std::isfinite(p.range.low) ? p.range.low : 0.0;
    return from + (def.is_number() && def.get<double>() > from ? 2.5 * (def.get<double>() - from) : 0.75);
}

TEST(SceneSchema, PointersAndKeywordsAreUnique) {
    std::set<std::string_view> pointers, keywords;
    for (const SceneParam& p : sceneParams()) {
        EXPECT_TRUE(pointers.insert(p.pointer).second) << p.pointer;
        EXPECT_TRUE(keywords.insert(p.keyword).second) << p.keyword;
        EXPECT_EQ(p.pointer.front(), '/');
        EXPECT_FALSE(p.label.empty()) << p.pointer;
        EXPECT_FALSE(p.summary.empty()) << p.pointer;
        EXPECT_FALSE(p.tooltip.empty()) << p.pointer;
        EXPECT_NE(p.get, nullptr);
        EXPECT_NE(p.set, nullptr);
        if (p.kind == ParamKind::Choice) EXPECT_GE(p.choices.size(), 2u) << p.pointer;
    }
    EXPECT_EQ(&sceneParam("/attention/beta"), findSceneParam("/attention/beta"));
    EXPECT_EQ(findSceneParam("/attention/heads"), nullptr); // structure, not a scalar parameter
}

// The default a parameter reports is what the reader makes of a scene that leaves it out, and what the
// writer writes for it.
TEST(SceneSchema, DefaultsAreWhatAMinimalSceneReadsAs) {
    const Scene minimal = sceneFromJson(R"({"d": 2, "n": 10, "attention": {"type": "softmax"}})");
    const Json written = Json::parse(sceneToJson(minimal));
    for (const SceneParam& p : sceneParams()) {
        if (p.required) continue;
        EXPECT_EQ(paramJson(p, minimal), paramDefault(p)) << p.pointer;
        if (p.written)
            EXPECT_EQ(written.at(Json::json_pointer(std::string(p.pointer))), paramDefault(p)) << p.pointer;
    }
}

// Every parameter set by --set to another valid value reads back as that value, and the writer writes it
// there; a field the writer leaves out (sphere, the older name of normalization "post") reads back too.
TEST(SceneSchema, EveryParameterSetsReadsAndWritesBack) {
    for (const SceneParam& p : sceneParams()) {
        if (p.pointer == "/d") continue; // a new d needs new matrices: SceneJson's tests
        const Json value = anotherValue(p);
        SCOPED_TRACE(setting(p, value));
        Scene s;
        ASSERT_NO_THROW(s = withSettings(base(), {setting(p, value)}));
        EXPECT_EQ(paramJson(p, s), value);
        const Json written = Json::parse(sceneToJson(s));
        if (p.written) EXPECT_EQ(written.at(Json::json_pointer(std::string(p.pointer))), value);
        EXPECT_EQ(sceneToJson(sceneFromJson(sceneToJson(s))), sceneToJson(s));
    }
}

// Each end of a range is enforced exactly where the schema puts it, with the schema's words, at the field's
// pointer: a closed end is accepted, an open end and the values beyond are refused.
TEST(SceneSchema, RangesAreEnforcedAtTheirEndsWithTheSchemasWords) {
    int checkedEnds = 0;
    for (const SceneParam& p : sceneParams()) {
        if (p.kind != ParamKind::Number && p.kind != ParamKind::Integer) continue;
        const double step = p.kind == ParamKind::Integer ? 1.0 : 0.0;
        auto check = [&](double end, bool open, double outward) {
            if (!std::isfinite(end)) return;
            ++checkedEnds;
            const double beyond = step ? end + outward * step : end + outward * std::max(1.0, std::fabs(end));
            for (double v : {beyond, open ? end : std::nan("")}) {
                if (std::isnan(v)) continue;
                try {
                    (void)withSetting(base(), {std::string(p.pointer), Json(v)});
                    ADD_FAILURE() << p.pointer << " accepted " << v;
                } catch (const SceneError& e) {
                    EXPECT_EQ(e.pointer, p.pointer) << e.what();
                    if (p.kind == ParamKind::Number)
                        EXPECT_NE(e.detail.find("expected " + acceptedText(p)), std::string::npos)
                            << e.what();
                }
            }
            if (!open && p.pointer != "/n" && p.pointer != "/d") // N = 2^24 and d = 1024 are real but big
                EXPECT_NO_THROW((void)withSetting(base(), {std::string(p.pointer), Json(end)})) << p.pointer;
        };
        check(p.range.low, p.range.lowOpen, -1.0);
        check(p.range.high, p.range.highOpen, +1.0);
    }
    EXPECT_GE(checkedEnds, 25);
}

TEST(SceneSchema, ChoicesAndKindsAreEnforced) {
    for (const SceneParam& p : sceneParams()) {
        SCOPED_TRACE(std::string(p.pointer));
        if (p.kind == ParamKind::Choice) {
            // Every name is accepted by the field itself (a kind "file" still needs its path: an error
            // elsewhere).
            for (std::string_view name : p.choices) {
                try {
                    (void)withSetting(base(), {std::string(p.pointer), Json(std::string(name))});
                } catch (const SceneError& e) {
                    EXPECT_NE(e.pointer, p.pointer) << name << ": " << e.what();
                }
            }
            try {
                (void)withSetting(base(), {std::string(p.pointer), Json("no-such-name")});
                ADD_FAILURE() << "accepted no-such-name";
            } catch (const SceneError& e) {
                EXPECT_EQ(e.pointer, p.pointer);
                EXPECT_NE(e.detail.find(std::string(p.choiceNoun)), std::string::npos) << e.what();
            }
        }
        // A string where a number or switch belongs, and a number where a name belongs.
        const Json wrong = p.kind == ParamKind::Choice ? Json(1.5) : Json("text");
        EXPECT_THROW((void)withSetting(base(), {std::string(p.pointer), wrong}), SceneError);
    }
}

TEST(SceneSchema, AcceptedTextSaysTheRange) {
    EXPECT_EQ(acceptedText(sceneParam("/attention/beta")), "number > 0");
    EXPECT_EQ(acceptedText(sceneParam("/attention/rwpo/lambda")), "number >= 0");
    EXPECT_EQ(acceptedText(sceneParam("/output/rank_tol")), "number in (0, 1)");
    EXPECT_EQ(acceptedText(sceneParam("/attention/sinkhorn/iterations")), "integer in [1, 1000000]");
    EXPECT_EQ(acceptedText(sceneParam("/attention/linear_eps")), "number > 0 or null");
    EXPECT_EQ(acceptedText(sceneParam("/integrator/method")), "one of euler, heun, rk4, dopri5");
    try {
        (void)sceneFromJson(R"({"n": 10, "attention": {"type": "softmax"}})");
        ADD_FAILURE();
    } catch (const SceneError& e) {
        EXPECT_EQ(std::string(e.what()),
                  "/d: required field is missing (the token dimension, an integer in [1, 1024])");
    }
}

// Live means live: a parameter the schema calls live is one a running simulation takes (LiveEdit.h), and one
// it calls restart is refused there.
TEST(SceneSchema, LiveParametersAreTheOnesARunTakes) {
    for (const SceneParam& p : sceneParams())
        EXPECT_EQ(isLiveSetting(std::string(p.pointer)), p.edit == ParamEdit::Live) << p.pointer;
}

// The reference of every parameter: docs/scene.md has a row for it, and its docs anchor names a file that
// exists.
TEST(SceneSchema, EveryParameterIsDocumented) {
    const std::string root = std::string(FLOWSCOPE_PRESET_DIR) + "/../../";
    std::ifstream in(root + "docs/scene.md");
    ASSERT_TRUE(in) << root;
    const std::string doc((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    for (const SceneParam& p : sceneParams()) {
        EXPECT_NE(doc.find("| `" + std::string(p.name()) + "` |"), std::string::npos) << p.pointer;
        const std::string file(p.anchor.substr(0, p.anchor.find('#')));
        EXPECT_TRUE(std::ifstream(root + file).good()) << p.pointer << ": " << p.anchor;
    }
}

} // namespace
} // namespace flowscope
