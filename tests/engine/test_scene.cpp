// Tests of the Scene JSON layer (engine/scene/SceneJson.cpp) and of the initial tokens (InitialTokens.cpp).
#include "engine/io/Npy.h"
#include "engine/scene/Scene.h"

#include "../TempDir.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <optional>
#include <string>
#include <utility>

// The test target defines the absolute path; this fallback serves a run from the repository root.
namespace flowscope {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

// ---------------------------------------------------------------------------------------------------------
// Helpers

using test::TempDir; // a fresh directory per test, removed at the end

void writeText(const std::string& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary);
    out << text;
}

json minimal() {
    return json{{"d", 2}, {"n", 10}, {"attention", {{"type", "softmax"}}}};
}

// minimal() with `value` assigned at the JSON pointer `at` (objects on the way are created).
json minimalWith(const std::string& at, const json& value) {
    json j = minimal();
    j[json::json_pointer(at)] = value;
    return j;
}

// Expects load() to throw a SceneError at `pointer` whose message contains each of `fragments`; the message,
// or nothing where load() threw none.
std::optional<std::string> expectSceneError(const std::function<void()>& load, const std::string& pointer,
                                            std::initializer_list<std::string> fragments) {
    try {
        load();
    } catch (const SceneError& e) {
        EXPECT_EQ(e.pointer, pointer) << e.what();
        for (const std::string& fragment : fragments)
            EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos)
                << "message \"" << e.what() << "\" lacks \"" << fragment << "\"";
        return std::string(e.what());
    }
    ADD_FAILURE() << "no error (expected " << pointer << ": ...)";
    return std::nullopt;
}

// Expects sceneFromJson(text) to throw a SceneError at `pointer` whose message contains `fragment` and, at a
// pointer, starts with it.
void expectTextError(const std::string& text, const std::string& pointer, const std::string& fragment) {
    SCOPED_TRACE("scene text: " + text);
    const auto message = expectSceneError([&] { sceneFromJson(text); }, pointer, {fragment});
    if (message && !pointer.empty()) EXPECT_EQ(message->rfind(pointer + ": ", 0), 0u) << *message;
}
void expectError(const json& j, const std::string& pointer, const std::string& fragment) {
    expectTextError(j.dump(), pointer, fragment);
}
// Expects minimalWith(at, value) to fail at `at` itself.
void expectValueError(const std::string& at, const json& value, const std::string& fragment) {
    expectError(minimalWith(at, value), at, fragment);
}

bool sameMatrix(const Mat& a, const Mat& b) {
    return a.rows() == b.rows() && a.cols() == b.cols() && (a.size() == 0 || a == b);
}

void expectSameHeads(const std::vector<HeadParams>& a, const std::vector<HeadParams>& b) {
    ASSERT_EQ(a.size(), b.size());
    for (std::size_t h = 0; h < a.size(); ++h) {
        EXPECT_TRUE(sameMatrix(a[h].Q, b[h].Q)) << "head " << h << " Q";
        EXPECT_TRUE(sameMatrix(a[h].K, b[h].K)) << "head " << h << " K";
        EXPECT_TRUE(sameMatrix(a[h].V, b[h].V)) << "head " << h << " V";
    }
}

// Field-by-field exact equality of two scenes; a failure names the field.
void expectSameScene(const Scene& a, const Scene& b) {
#define EXPECT_SAME_FIELD(f) EXPECT_EQ(a.f, b.f) << #f
#define EXPECT_SAME_MATRIX(f) EXPECT_TRUE(sameMatrix(a.f, b.f)) << #f
    EXPECT_SAME_FIELD(version);
    EXPECT_SAME_FIELD(name);
    EXPECT_SAME_FIELD(description);
    EXPECT_SAME_FIELD(figure);
    EXPECT_SAME_FIELD(d);
    EXPECT_SAME_FIELD(n);
    EXPECT_SAME_FIELD(precision);
    EXPECT_SAME_FIELD(initial.kind);
    EXPECT_SAME_FIELD(initial.seed);
    EXPECT_SAME_MATRIX(initial.mean);
    EXPECT_SAME_MATRIX(initial.cov);
    EXPECT_SAME_MATRIX(initial.low);
    EXPECT_SAME_MATRIX(initial.high);
    EXPECT_SAME_FIELD(initial.radii);
    EXPECT_SAME_FIELD(initial.noise);
    EXPECT_SAME_FIELD(initial.path);
    EXPECT_SAME_MATRIX(initial.points);
    const AttentionSpec &x = a.attention, &y = b.attention;
    EXPECT_SAME_FIELD(attention.type);
    expectSameHeads(x.heads, y.heads);
    ASSERT_EQ(x.keyframes.size(), y.keyframes.size());
    for (std::size_t k = 0; k < x.keyframes.size(); ++k) {
        EXPECT_EQ(x.keyframes[k].t, y.keyframes[k].t);
        expectSameHeads(x.keyframes[k].heads, y.keyframes[k].heads);
    }
    EXPECT_SAME_FIELD(attention.interpolation);
    EXPECT_SAME_FIELD(attention.beta);
    EXPECT_SAME_FIELD(attention.scaleByRootK);
    EXPECT_SAME_FIELD(attention.masked);
    EXPECT_SAME_FIELD(attention.sphere);
    EXPECT_SAME_FIELD(attention.normalization);
    EXPECT_SAME_FIELD(attention.positionalDecay);
    EXPECT_SAME_FIELD(attention.linearEps);
    EXPECT_SAME_FIELD(attention.sinkhornEps);
    EXPECT_SAME_FIELD(attention.sinkhornIterations);
    EXPECT_SAME_FIELD(attention.sinkhornTol);
    EXPECT_SAME_FIELD(attention.lambda);
    EXPECT_SAME_FIELD(attention.h);
    EXPECT_SAME_FIELD(attention.rwpoKernel);
    EXPECT_SAME_FIELD(integrator.method);
    EXPECT_SAME_FIELD(integrator.T);
    EXPECT_SAME_FIELD(integrator.steps);
    EXPECT_SAME_FIELD(integrator.rtol);
    EXPECT_SAME_FIELD(integrator.atol);
    EXPECT_SAME_FIELD(integrator.divergenceNorm);
    EXPECT_SAME_FIELD(integrator.minStep);
    EXPECT_SAME_FIELD(output.every);
    EXPECT_SAME_FIELD(output.entropy);
    EXPECT_SAME_FIELD(output.clusterTol);
    EXPECT_SAME_FIELD(output.rankTol);
    EXPECT_SAME_FIELD(moments.method);
    EXPECT_SAME_FIELD(moments.step);
    EXPECT_SAME_FIELD(moments.tolLow);
    EXPECT_SAME_FIELD(moments.tolHigh);
    EXPECT_SAME_FIELD(moments.maxIter);
    EXPECT_SAME_FIELD(moments.grid.nu);
    EXPECT_SAME_FIELD(moments.grid.nc);
    EXPECT_SAME_FIELD(moments.grid.x0);
    EXPECT_SAME_FIELD(moments.grid.y1);
    const auto meanOf = [](const Scene& s) -> Mat {
        return s.attention.targetMean.size() ? Mat(s.attention.targetMean) : Mat(Mat::Zero(s.d, 1));
    };
    const auto covOf = [](const Scene& s) -> Mat {
        return s.attention.targetCov.size() ? s.attention.targetCov : Mat(Mat::Identity(s.d, s.d));
    };
    EXPECT_TRUE(sameMatrix(meanOf(a), meanOf(b)));
    EXPECT_TRUE(sameMatrix(covOf(a), covOf(b)));
    EXPECT_SAME_FIELD(viewJson);
#undef EXPECT_SAME_FIELD
#undef EXPECT_SAME_MATRIX
}

Mat mat2(double a, double b, double c, double d) {
    Mat m(2, 2);
    m << a, b, c, d;
    return m;
}

// ---------------------------------------------------------------------------------------------------------
// Defaults and round trip

TEST(SceneJson, MinimalSceneGetsEveryDefault) {
    const Scene s = sceneFromJson(minimal().dump());
    EXPECT_EQ(s.version, 1);
    EXPECT_EQ(s.name, "");
    EXPECT_EQ(s.description, "");
    EXPECT_EQ(s.figure, "");
    EXPECT_EQ(s.d, 2);
    EXPECT_EQ(s.n, 10);
    EXPECT_EQ(s.precision, Precision::Float64);
    EXPECT_EQ(s.initial.kind, InitKind::Gaussian);
    EXPECT_EQ(s.initial.seed, 1u);
    EXPECT_TRUE(sameMatrix(s.initial.mean, Vec::Zero(2)));
    EXPECT_TRUE(sameMatrix(s.initial.cov, Mat::Identity(2, 2)));
    EXPECT_TRUE(sameMatrix(s.initial.low, Vec::Constant(2, -1.0)));
    EXPECT_TRUE(sameMatrix(s.initial.high, Vec::Constant(2, 1.0)));
    EXPECT_EQ(s.initial.radii, std::vector<double>{1.0});
    EXPECT_EQ(s.initial.noise, 0.0);
    EXPECT_EQ(s.initial.path, "");
    const AttentionSpec& a = s.attention;
    EXPECT_EQ(a.type, AttentionType::Softmax);
    ASSERT_EQ(a.heads.size(), 1u);
    EXPECT_TRUE(sameMatrix(a.heads[0].Q, Mat::Identity(2, 2)));
    EXPECT_TRUE(sameMatrix(a.heads[0].K, Mat::Identity(2, 2)));
    EXPECT_TRUE(sameMatrix(a.heads[0].V, Mat::Identity(2, 2)));
    EXPECT_TRUE(a.keyframes.empty());
    EXPECT_EQ(a.headCount(), 1);
    EXPECT_EQ(a.interpolation, Interpolation::Piecewise);
    EXPECT_EQ(a.beta, 1.0);
    EXPECT_FALSE(a.scaleByRootK);
    EXPECT_FALSE(a.masked);
    EXPECT_FALSE(a.sphere);
    EXPECT_FALSE(a.linearEps.has_value());
    EXPECT_EQ(a.sinkhornEps, 1.0);
    EXPECT_EQ(a.sinkhornIterations, 100);
    EXPECT_EQ(a.sinkhornTol, 1e-9);
    EXPECT_EQ(a.lambda, 2.0);
    EXPECT_EQ(a.h, 1.0 / 48.0);
    EXPECT_EQ(a.rwpoKernel, RwpoKernel::Corrected);
    EXPECT_EQ(s.integrator.method, Method::Rk4);
    EXPECT_EQ(s.integrator.T, 1.0);
    EXPECT_EQ(s.integrator.steps, 100);
    EXPECT_EQ(s.integrator.rtol, 1e-6);
    EXPECT_EQ(s.integrator.atol, 1e-9);
    EXPECT_EQ(s.integrator.divergenceNorm, 1e8);
    EXPECT_EQ(s.integrator.minStep, 1e-12);
    EXPECT_EQ(s.output.every, 1);
    EXPECT_TRUE(s.output.entropy);
    EXPECT_EQ(s.output.clusterTol, 1e-3);
    EXPECT_EQ(s.output.rankTol, 1e-6);
    EXPECT_EQ(s.viewJson, "{}");
}

TEST(SceneJson, RwpoHasNoDefaultHeads) {
    json j = minimal();
    j["attention"] = {{"type", "rwpo"}};
    const Scene s = sceneFromJson(j.dump());
    EXPECT_EQ(s.attention.type, AttentionType::Rwpo);
    EXPECT_TRUE(s.attention.heads.empty());
    EXPECT_EQ(s.attention.headCount(), 0);
}

TEST(SceneJson, ShorthandsAndAliases) {
    json j = minimal();
    j["initial"] = {{"mean", 0.5}, {"cov", 2}};
    j["attention"] = {{"type", "masked"}, {"heads", {{{"Q", 1}, {"K", 2.5}, {"V", -0.4}}}}};
    const Scene s = sceneFromJson(j.dump());
    EXPECT_TRUE(sameMatrix(s.initial.mean, Vec::Constant(2, 0.5)));
    EXPECT_TRUE(sameMatrix(s.initial.cov, 2.0 * Mat::Identity(2, 2)));
    EXPECT_EQ(s.attention.type, AttentionType::Softmax);
    EXPECT_TRUE(s.attention.masked);
    EXPECT_TRUE(sameMatrix(s.attention.heads[0].K, 2.5 * Mat::Identity(2, 2)));
    EXPECT_TRUE(sameMatrix(s.attention.heads[0].V, -0.4 * Mat::Identity(2, 2)));
    // An integral float is an integer (some tools print every number as a float).
    j["n"] = 2048.0;
    EXPECT_EQ(sceneFromJson(j.dump()).n, 2048);
}

// A scene exercising every field with values that are hard to print exactly.
Scene fullScene() {
    json j = {
        {"version", 1},
        {"name", "full \"scene\" / test"},
        {"description", "unicode: σ, ε; newline\nand tab\t"},
        {"figure", "Castin et al. Fig 2(c)"},
        {"d", 2},
        {"n", 4097},
        {"precision", "float32"},
        {"initial",
         {{"kind", "rings"},
          {"seed", 18446744073709551615ull},
          {"mean", {0.1, -1.0 / 3.0}},
          {"cov", {{2.0, 0.5}, {0.5, 1.0}}},
          {"low", {-2.5, -1e-300}},
          {"high", {3.0, 7.0}},
          {"radii", {0.5, 1.0 / 7.0, 2.0}},
          {"noise", 0.05}}},
        {"attention",
         {{"type", "linear"},
          {"beta", 0.7071067811865476},
          {"scale_by_sqrt_k", true},
          {"sphere", true},
          {"heads",
           {{{"Q", {{0.4063236467, 0.9137292236}}}, {"K", {{-0.4063236467, -0.9137292236}}}, {"V", 1}}}},
          {"keyframes",
           {{{"t", 0.0}, {"heads", {{{"Q", 1}, {"K", 1}, {"V", -0.4}}}}},
            {{"t", 0.1}, {"heads", {{{"Q", 1}, {"K", 1}, {"V", {{0.0, -1.0}, {1.0, 1e-17}}}}}}}}},
          {"interpolation", "linear"},
          {"linear_eps", 0.3},
          {"sinkhorn", {{"eps", 0.7}, {"iterations", 250}, {"tol", 0.0}}},
          {"rwpo", {{"lambda", 0.0}, {"h", 1.0 / 48.0}, {"kernel", "per_coordinate"}}}}},
        {"integrator",
         {{"method", "dopri5"},
          {"T", 2.2654091966},
          {"steps", 777},
          {"rtol", 1e-7},
          {"atol", 1e-11},
          {"divergence_norm", 1e6},
          {"min_step", 1e-14}}},
        {"output", {{"every", 7}, {"entropy", false}, {"cluster_tol", 2e-3}, {"rank_tol", 1e-8}}},
        {"view", {{"zoom", 1.5}, {"camera", {{"azim", -174}, {"elev", 20}}}, {"colormap", "viridis"}}},
    };
    return sceneFromJson(j.dump());
}

TEST(SceneJson, RoundTripReproducesEveryField) {
    const Scene s = fullScene();
    EXPECT_EQ(s.initial.seed, 18446744073709551615ull);
    EXPECT_EQ(s.attention.linearEps, 0.3);
    EXPECT_EQ(s.viewJson, R"({"zoom":1.5,"camera":{"azim":-174,"elev":20},"colormap":"viridis"})");
    const std::string text = sceneToJson(s);
    const Scene back = sceneFromJson(text);
    expectSameScene(s, back);
    // Writing is a fixed point, and writes every field explicitly.
    EXPECT_EQ(sceneToJson(back), text);
    const json written = json::parse(text);
    for (const char* key : {"version", "name", "description", "figure", "d", "n", "precision", "initial",
                            "attention", "integrator", "output", "moments", "view"})
        EXPECT_TRUE(written.contains(key)) << key;
    EXPECT_EQ(written["attention"].size(), 13u);              // "stacked" is read, and written as the heads
    EXPECT_EQ(written["attention"]["normalization"], "post"); // "sphere": true, written canonically
    EXPECT_EQ(written["moments"].size(), 5u);                 // "grid" only when set
    EXPECT_EQ(written["initial"].size(), 9u);
    EXPECT_EQ(written["integrator"].size(), 7u);
    EXPECT_EQ(written["output"].size(), 4u);
}

// "normalization" names the scheme; the older "sphere" is "post" and may stay beside it when they agree. Each
// scheme and a positional decay read back from what is written (docs/scene.md#attention).
TEST(SceneJson, NormalizationSchemesAndPositionalDecay) {
    EXPECT_EQ(normalizationOf(sceneFromJson(minimal().dump()).attention), Normalization::None);
    for (const char* name : {"none", "post", "pre", "peri"}) {
        SCOPED_TRACE(name);
        json j = minimalWith("/attention/normalization", name);
        j["attention"]["positional_decay"] = 2.5;
        const Scene s = sceneFromJson(j.dump());
        EXPECT_STREQ(toString(normalizationOf(s.attention)), name);
        EXPECT_EQ(s.attention.sphere, std::string(name) == "post");
        EXPECT_EQ(s.attention.positionalDecay, 2.5);
        const Scene back = sceneFromJson(sceneToJson(s));
        expectSameScene(s, back);
        EXPECT_EQ(json::parse(sceneToJson(s))["attention"]["normalization"], name);
        EXPECT_FALSE(json::parse(sceneToJson(s))["attention"].contains("sphere"));
    }
    json agree = minimalWith("/attention/sphere", true);
    agree["attention"]["normalization"] = "post";
    EXPECT_TRUE(sceneFromJson(agree.dump()).attention.sphere);
    json clash = minimalWith("/attention/sphere", true);
    clash["attention"]["normalization"] = "pre";
    expectError(clash, "/attention/normalization", "agreeing with \"sphere\"");
    clash["attention"]["sphere"] = false;
    clash["attention"]["normalization"] = "post";
    expectError(clash, "/attention/normalization", "agreeing with \"sphere\"");
    expectValueError("/attention/normalization", "layer", "normalization");
    expectValueError("/attention/positional_decay", -1.0, "expected");
    json rwpo = minimalWith("/attention/type", "rwpo");
    rwpo["attention"]["normalization"] = "pre";
    expectError(rwpo, "/attention/normalization", "expected \"none\" or \"post\" for rwpo");
    for (const char* type : {"relu", "sigmoid", "sinkhorn", "linear", "rwpo", "drifting"}) {
        json decay = minimalWith("/attention/type", type);
        decay["attention"]["positional_decay"] = 1.0;
        expectError(decay, "/attention/positional_decay", std::string("expected 0 for ") + type);
    }
    json d1 = minimalWith("/attention/normalization", "post");
    d1["d"] = 1;
    expectError(d1, "/attention/normalization", "expected d >= 2");
}

TEST(SceneJson, RoundTripOfDefaultsAndUnsetOptional) {
    const Scene s = sceneFromJson(minimal().dump());
    const std::string text = sceneToJson(s);
    EXPECT_TRUE(json::parse(text)["attention"]["linear_eps"].is_null());
    expectSameScene(s, sceneFromJson(text));
}

TEST(SceneJson, CodeBuiltSceneWritesEffectiveDefaults) {
    Scene s; // empty mean/cov/heads mean the documented defaults
    s.d = 3;
    const Scene back = sceneFromJson(sceneToJson(s));
    EXPECT_TRUE(sameMatrix(back.initial.mean, Vec::Zero(3)));
    EXPECT_TRUE(sameMatrix(back.initial.cov, Mat::Identity(3, 3)));
    ASSERT_EQ(back.attention.heads.size(), 1u);
    EXPECT_TRUE(sameMatrix(back.attention.heads[0].V, Mat::Identity(3, 3)));
}

TEST(SceneJson, SaveAndLoadFile) {
    TempDir dir;
    const Scene s = fullScene();
    saveScene(s, dir.file("scene.json"));
    expectSameScene(s, loadScene(dir.file("scene.json")));
    // No temporary file is left beside it.
    EXPECT_EQ(std::distance(fs::directory_iterator(dir.str()), fs::directory_iterator{}), 1);
}

TEST(SceneJson, ToString) {
    const std::pair<AttentionType, const char*> types[] = {
        {AttentionType::Softmax, "softmax"}, {AttentionType::Linear, "linear"},
        {AttentionType::L2, "l2"},           {AttentionType::Sinkhorn, "sinkhorn"},
        {AttentionType::Exp, "exp"},         {AttentionType::Relu, "relu"},
        {AttentionType::Sigmoid, "sigmoid"}, {AttentionType::Rwpo, "rwpo"}};
    for (const auto& [type, name] : types) EXPECT_STREQ(toString(type), name);
    const std::pair<Method, const char*> methods[] = {{Method::Euler, "euler"},
                                                      {Method::Heun, "heun"},
                                                      {Method::Rk4, "rk4"},
                                                      {Method::DormandPrince, "dopri5"}};
    for (const auto& [method, name] : methods) EXPECT_STREQ(toString(method), name);
}

// ---------------------------------------------------------------------------------------------------------
// Multi-head stacking and keyframes

TEST(SceneJson, StackedExpandsToRowBlocksAndEhV) {
    Mat Q(4, 4), K(4, 4), V(4, 4);
    for (int r = 0; r < 4; ++r)
        for (int c = 0; c < 4; ++c) {
            Q(r, c) = 1 + r * 4 + c;
            K(r, c) = -(1 + r * 4 + c) / 10.0;
            V(r, c) = 100 + r * 4 + c;
        }
    auto rows = [](const Mat& m) {
        json out = json::array();
        for (int r = 0; r < m.rows(); ++r) {
            json row = json::array();
            for (int c = 0; c < m.cols(); ++c) row.push_back(m(r, c));
            out.push_back(row);
        }
        return out;
    };
    json j = minimal();
    j["d"] = 4;
    j["attention"] = {{"type", "softmax"},
                      {"stacked", {{"H", 2}, {"Q", rows(Q)}, {"K", rows(K)}, {"V", rows(V)}}}};
    const Scene s = sceneFromJson(j.dump());
    ASSERT_EQ(s.attention.heads.size(), 2u);
    Mat sumV = Mat::Zero(4, 4), sumA = Mat::Zero(4, 4);
    for (int h = 0; h < 2; ++h) {
        const HeadParams& head = s.attention.heads[std::size_t(h)];
        EXPECT_TRUE(sameMatrix(head.Q, Q.middleRows(2 * h, 2))) << h;
        EXPECT_TRUE(sameMatrix(head.K, K.middleRows(2 * h, 2))) << h;
        Mat E = Mat::Zero(4, 4);
        E.diagonal().segment(2 * h, 2).setOnes();
        EXPECT_TRUE(sameMatrix(head.V, E * V)) << h;
        sumV += head.V;
        sumA += head.K.transpose() * head.Q;
    }
    EXPECT_TRUE(sameMatrix(sumV, V));
    EXPECT_TRUE(sumA.isApprox(K.transpose() * Q, 1e-15));
}

TEST(SceneJson, StackedShortQueryLeavesLaterHeadsEmpty) {
    // Fig 2(c): one query row, H = 2 in d = 2: head 2 gets an empty slice, i.e. zero scores.
    json j = minimal();
    j["attention"] = {{"type", "softmax"},
                      {"stacked", {{"H", 2}, {"Q", {{0.6, 0.8}}}, {"K", {{-0.6, -0.8}}}, {"V", 1}}}};
    const Scene s = sceneFromJson(j.dump());
    ASSERT_EQ(s.attention.heads.size(), 2u);
    EXPECT_TRUE(sameMatrix(s.attention.heads[0].Q, mat2(0.6, 0.8, 0, 0).topRows(1)));
    EXPECT_TRUE(sameMatrix(s.attention.heads[1].Q, Mat::Zero(1, 2)));
    EXPECT_TRUE(sameMatrix(s.attention.heads[1].K, Mat::Zero(1, 2)));
    EXPECT_TRUE(sameMatrix(s.attention.heads[0].V, mat2(1, 0, 0, 0)));
    EXPECT_TRUE(sameMatrix(s.attention.heads[1].V, mat2(0, 0, 0, 1)));
}

json keyframeScene(const char* interpolation) {
    json j = minimal();
    j["attention"] = {{"type", "softmax"},
                      {"interpolation", interpolation},
                      {"keyframes",
                       {{{"t", 0.0}, {"heads", {{{"Q", 1}, {"K", 1}, {"V", -1}}}}},
                        {{"t", 0.5}, {"heads", {{{"Q", 3}, {"K", 1}, {"V", {{0, -1}, {1, 0}}}}}}},
                        {{"t", 1.0}, {"heads", {{{"Q", 1}, {"K", 5}, {"V", 2}}}}}}}};
    return j;
}

TEST(SceneJson, HeadsAtPiecewise) {
    const Scene s = sceneFromJson(keyframeScene("piecewise").dump());
    EXPECT_TRUE(s.attention.heads.empty());
    EXPECT_EQ(s.attention.headCount(), 1);
    const Mat I = Mat::Identity(2, 2);
    EXPECT_TRUE(sameMatrix(s.attention.headsAt(-1.0)[0].V, -I)); // before the first: the first
    EXPECT_TRUE(sameMatrix(s.attention.headsAt(0.0)[0].V, -I));
    EXPECT_TRUE(sameMatrix(s.attention.headsAt(0.49)[0].V, -I));
    EXPECT_TRUE(sameMatrix(s.attention.headsAt(0.5)[0].V, mat2(0, -1, 1, 0)));
    EXPECT_TRUE(sameMatrix(s.attention.headsAt(0.5)[0].Q, 3 * I));
    EXPECT_TRUE(sameMatrix(s.attention.headsAt(0.99)[0].Q, 3 * I));
    EXPECT_TRUE(sameMatrix(s.attention.headsAt(1.0)[0].K, 5 * I));
    EXPECT_TRUE(sameMatrix(s.attention.headsAt(7.0)[0].V, 2 * I)); // after the last: the last
}

TEST(SceneJson, HeadsAtLinear) {
    const Scene s = sceneFromJson(keyframeScene("linear").dump());
    const Mat I = Mat::Identity(2, 2);
    EXPECT_TRUE(sameMatrix(s.attention.headsAt(-1.0)[0].V, -I));
    EXPECT_TRUE(sameMatrix(s.attention.headsAt(0.0)[0].V, -I));
    EXPECT_TRUE(sameMatrix(s.attention.headsAt(0.25)[0].Q, 2 * I)); // (1 + 3) / 2
    EXPECT_TRUE(sameMatrix(s.attention.headsAt(0.25)[0].V, mat2(-0.5, -0.5, 0.5, -0.5)));
    EXPECT_TRUE(sameMatrix(s.attention.headsAt(0.5)[0].V, mat2(0, -1, 1, 0)));      // exactly at a keyframe
    EXPECT_TRUE(sameMatrix(s.attention.headsAt(0.75)[0].K, 3 * I));                 // (1 + 5) / 2
    EXPECT_TRUE(sameMatrix(s.attention.headsAt(0.75)[0].V, mat2(1, -0.5, 0.5, 1))); // (J + 2I) / 2
    EXPECT_TRUE(sameMatrix(s.attention.headsAt(1.0)[0].V, 2 * I));
    EXPECT_TRUE(sameMatrix(s.attention.headsAt(3.0)[0].V, 2 * I));
}

TEST(SceneJson, HeadsAtWithoutKeyframesIsConstant) {
    const Scene s = sceneFromJson(minimal().dump());
    expectSameHeads(s.attention.headsAt(123.0), s.attention.heads);
}

TEST(SceneJson, KeyframesMayBeStacked) {
    json j = minimal();
    j["attention"] = {{"type", "softmax"},
                      {"keyframes",
                       {{{"t", 0}, {"stacked", {{"H", 2}, {"Q", 1}, {"K", 1}, {"V", 1}}}},
                        {{"t", 1}, {"stacked", {{"H", 2}, {"Q", 2}, {"K", 1}, {"V", 1}}}}}}};
    const Scene s = sceneFromJson(j.dump());
    EXPECT_EQ(s.attention.headCount(), 2);
    EXPECT_TRUE(sameMatrix(s.attention.keyframes[1].heads[1].Q, Mat(Mat::Identity(2, 2).bottomRows(1) * 2)));
}

// ---------------------------------------------------------------------------------------------------------
// Malformed input: every error names the field and says what was expected and found

// Drawn points: kept inline, written back exactly, and the tokens are the points (repeated when N > m).
TEST(SceneJson, InlinePointsAreTheTokens) {
    json j = minimal();
    j["n"] = 3;
    j["initial"] = {{"kind", "points"}, {"points", {{0.5, -1.0}, {2.0, 0.25}, {-3.0, 1e-3}}}};
    const Scene s = sceneFromJson(j.dump());
    ASSERT_EQ(s.initial.kind, InitKind::Points);
    ASSERT_EQ(s.initial.points.rows(), 3);
    const Tokens X = initialTokens(s);
    EXPECT_EQ(X, s.initial.points);
    expectSameScene(s, sceneFromJson(sceneToJson(s)));

    // N = 7 > m = 3: token i is point i mod 3; with noise, the jitter has the requested scale.
    Scene wrapped = s;
    wrapped.n = 7;
    const Tokens W = initialTokens(wrapped);
    for (int i = 0; i < 7; ++i) EXPECT_EQ(W.row(i), s.initial.points.row(i % 3)) << i;
    wrapped.n = 30000;
    wrapped.initial.noise = 0.1;
    const Tokens J = initialTokens(wrapped);
    double sum2 = 0;
    for (int i = 0; i < J.rows(); ++i) sum2 += (J.row(i) - s.initial.points.row(i % 3)).squaredNorm();
    EXPECT_NEAR(std::sqrt(sum2 / (2.0 * J.rows())), 0.1, 0.002); // std of 60000 normals: 0.1 ± 0.3 %
}

TEST(SceneErrors, InlinePoints) {
    json j = minimal();
    j["initial"] = {{"kind", "points"}};
    expectError(j, "/initial/points", "required for kind \"points\"");
    j["initial"]["points"] = json::array();
    expectError(j, "/initial/points", "required for kind \"points\"");
    j["initial"]["points"] = {{1.0, 2.0}, {1.0}};
    expectError(j, "/initial/points/1", "expected point of 2 numbers");
    j["initial"]["points"] = {{1.0, 2.0}, {1.0, "x"}};
    expectError(j, "/initial/points/1/1", "expected number");
    j["initial"]["points"] = 3;
    expectError(j, "/initial/points", "expected array of points");
    j["initial"]["points"] = json::array();
    for (int i = 0; i < 65537; ++i) j["initial"]["points"].push_back({0.0, 0.0});
    expectError(j, "/initial/points", "at most 65536 points");
}

TEST(SceneErrors, Syntax) {
    expectSceneError([&] { sceneFromJson("{\n  \"d\": 2,\n  \"n\": 10,,\n}"); }, "",
                     {"line 3, column", "invalid JSON"});
    expectTextError("", "", "invalid JSON");
    expectTextError("[1, 2]", "", "expected a JSON object");
    expectTextError("{\"d\": NaN}", "", "invalid JSON");
}

TEST(SceneErrors, DuplicateKeys) {
    expectTextError(R"({"d": 2, "n": 3, "n": 4, "attention": {"type": "softmax"}})", "/n", "duplicate field");
    expectTextError(
        R"({"d": 2, "n": 3, "attention": {"type": "softmax", "heads": [{"Q": 1}, {"V": 1, "V": 2}]}})",
        "/attention/heads/1/V", "duplicate field \"V\"");
}

TEST(SceneErrors, RequiredFields) {
    json j = minimal();
    j.erase("d");
    expectError(j, "/d", "required field is missing");
    j = minimal();
    j.erase("n");
    expectError(j, "/n", "required field is missing");
    j = minimal();
    j.erase("attention");
    expectError(j, "/attention", "required field is missing");
    j = minimal();
    j["attention"] = json::object();
    expectError(j, "/attention/type", "required field is missing");
}

TEST(SceneErrors, UnknownKeys) {
    expectError(minimalWith("/stpes", 3), "/stpes", "unknown field \"stpes\"");
    expectError(minimalWith("/integrator", {{"stpes", 3}}), "/integrator/stpes", "did you mean \"steps\"?");
    expectError(minimalWith("/attention/bta", 2), "/attention/bta", "did you mean \"beta\"?");
    expectError(minimalWith("/initial", {{"covariance", 1}}), "/initial/covariance", "unknown field");
    expectError(minimalWith("/output", {{"evry", 1}}), "/output/evry", "unknown field");
    expectError(minimalWith("/attention/sinkhorn", {{"epsilon", 1}}), "/attention/sinkhorn/epsilon",
                "unknown field");
    expectError(minimalWith("/attention/heads", {{{"Q", 1}, {"W", 1}}}), "/attention/heads/0/W",
                "unknown field");
    expectError(minimalWith("/a~1b", 1), "/a~1b", "unknown field");
}

TEST(SceneErrors, SizeAndDimension) {
    expectValueError("/n", -5, "expected integer >= 1, got -5");
    expectValueError("/n", 0, "expected integer >= 1, got 0");
    expectValueError("/n", 16777217, "expected integer <= 16777216, got 16777217");
    expectValueError("/n", 2.5, "expected integer, got 2.5");
    expectValueError("/n", "10", "expected integer, got string \"10\"");
    expectValueError("/d", 1025, "expected integer <= 1024, got 1025");
    expectValueError("/d", 0, "expected integer >= 1, got 0");
    expectValueError("/d", 1e30, "expected integer <= 1024");
    expectValueError("/d", true, "expected integer, got true");
}

TEST(SceneErrors, VersionPrecisionAndStrings) {
    expectError(minimalWith("/version", 2), "/version", "unsupported scene version 2");
    expectError(minimalWith("/precision", "float16"), "/precision",
                "unknown precision \"float16\" (expected one of float32, float64)");
    expectError(minimalWith("/name", 5), "/name", "expected string, got 5");
    expectError(minimalWith("/view", {1, 2}), "/view", "expected object, got array");
}

TEST(SceneErrors, NonFiniteNumbers) {
    // JSON has no NaN or infinity literal; a literal beyond the range of a double is reported at its field.
    expectTextError(R"({"d": 2, "n": 3, "attention": {"type": "softmax", "beta": 1e999}})", "/attention/beta",
                    "expected finite number, got number overflow parsing '1e999'");
    expectTextError(R"({"d": 2, "n": 3, "attention": {"type": "softmax"}, "integrator": {"T": -1e999}})",
                    "/integrator/T", "expected finite number");
    expectTextError(
        R"({"d": 2, "n": 3, "attention": {"type": "softmax", "heads": [{"V": [[1, 0], [0, 1e400]]}]}})",
        "/attention/heads/0/V/1/1", "expected finite number");
    expectError(minimalWith("/integrator", {{"T", "nan"}}), "/integrator/T",
                "expected number, got string \"nan\"");
    expectError(minimalWith("/integrator", {{"T", nullptr}}), "/integrator/T", "expected number, got null");
}

TEST(SceneErrors, AttentionType) {
    json j = minimal();
    j["attention"]["type"] = "sofmax";
    expectError(
        j, "/attention/type",
        "unknown attention type \"sofmax\" (expected one of softmax, linear, l2, sinkhorn, exp, relu, "
        "sigmoid, rwpo, drifting, hardmax, masked)");
    expectError(j, "/attention/type", "did you mean \"softmax\"?");
    j["attention"]["type"] = 3;
    expectError(j, "/attention/type", "expected string, got 3");
}

TEST(SceneErrors, HeadShapes) {
    json j = minimal();
    j["attention"]["heads"] = {{{"V", 1}}, {{"V", {{1, 0, 0}, {0, 1, 0}}}}};
    expectError(j, "/attention/heads/1/V", "expected 2x2 matrix, got 2x3");
    j["attention"]["heads"] = {{{"Q", {{1, 0, 0}}}}};
    expectError(j, "/attention/heads/0/Q", "expected k x 2 matrix with 1 <= k <= 2, got 1x3");
    j["attention"]["heads"] = {{{"Q", {{1, 0}, {0, 1}, {1, 1}}}}};
    expectError(j, "/attention/heads/0/Q", "got 3x2");
    j["attention"]["heads"] = {{{"Q", {{1, 0}}}, {"K", {{1, 0}, {0, 1}}}}};
    expectError(j, "/attention/heads/0/K", "expected 1x2 matrix (same shape as Q), got 2x2");
    j["attention"]["heads"] = {{{"V", {{1, 0}, {0}}}}};
    expectError(j, "/attention/heads/0/V", "rows of equal length");
    j["attention"]["heads"] = {{{"V", {{1, "x"}, {0, 1}}}}};
    expectError(j, "/attention/heads/0/V/0/1", "expected number, got string \"x\"");
    j["attention"]["heads"] = {{{"V", json::array()}}};
    expectError(j, "/attention/heads/0/V", "expected matrix");
    j["attention"]["heads"] = json::array();
    expectError(j, "/attention/heads", "expected at least one head");
    j["attention"]["heads"] = {1};
    expectError(j, "/attention/heads/0", "expected object, got 1");
    j["attention"]["heads"] = {{{"V", 1}}};
    j["attention"]["stacked"] = {{"H", 1}};
    expectError(j, "/attention/stacked", "not both");
}

TEST(SceneErrors, Stacked) {
    json j = minimal();
    j["d"] = 3;
    j["attention"]["stacked"] = {{"H", 2}};
    expectError(j, "/attention/stacked/H", "expected H dividing d = 3, got 2");
    j["attention"]["stacked"] = {{"H", 4}};
    expectError(j, "/attention/stacked/H", "expected integer <= 3, got 4");
    j["attention"]["stacked"] = json::object();
    expectError(j, "/attention/stacked/H", "required field is missing");
    j["attention"]["stacked"] = {{"H", 3}, {"V", {{1, 0}, {0, 1}}}};
    expectError(j, "/attention/stacked/V", "expected 3x3 matrix, got 2x2");
}

TEST(SceneErrors, Keyframes) {
    json j = keyframeScene("linear");
    j["attention"]["keyframes"][2]["t"] = 0.5;
    expectError(j, "/attention/keyframes/2/t", "strictly increasing");
    j = keyframeScene("linear");
    j["attention"]["keyframes"][1]["heads"].push_back({{"V", 1}});
    expectError(j, "/attention/keyframes/1/heads", "expected 1 heads like keyframe 0, got 2");
    j = keyframeScene("linear");
    j["attention"]["keyframes"][2]["heads"][0]["Q"] = {{1, 0}};
    j["attention"]["keyframes"][2]["heads"][0]["K"] = {{1, 0}};
    expectError(j, "/attention/keyframes/2/heads/0/Q", "expected 2x2 matrix like keyframe 0, got 1x2");
    j = keyframeScene("linear");
    j["attention"]["keyframes"][0].erase("t");
    expectError(j, "/attention/keyframes/0/t", "required field is missing");
    j = keyframeScene("linear");
    j["attention"]["keyframes"][0].erase("heads");
    expectError(j, "/attention/keyframes/0/heads", "expected at least one head");
    j = keyframeScene("cubic");
    expectError(j, "/attention/interpolation", "unknown interpolation \"cubic\"");
}

TEST(SceneErrors, AttentionParameters) {
    expectError(minimalWith("/attention/beta", 0), "/attention/beta", "expected number > 0, got 0");
    json j = minimalWith("/attention/type", "sinkhorn");
    j["attention"]["sinkhorn"] = {{"eps", 0}};
    expectError(j, "/attention/sinkhorn/eps", "expected number > 0, got 0");
    j["attention"]["sinkhorn"] = {{"iterations", 0}};
    expectError(j, "/attention/sinkhorn/iterations", "expected integer >= 1, got 0");
    j["attention"]["sinkhorn"] = {{"tol", -1e-3}};
    expectError(j, "/attention/sinkhorn/tol", "expected number >= 0, got -0.001");
    j = minimal();
    j["attention"] = {{"type", "rwpo"}, {"rwpo", {{"h", 0}}}};
    expectError(j, "/attention/rwpo/h", "expected number > 0, got 0");
    j["attention"]["rwpo"] = {{"lambda", -1}};
    expectError(j, "/attention/rwpo/lambda", "expected number >= 0, got -1");
    j["attention"]["rwpo"] = {{"kernel", "printed"}};
    expectError(j, "/attention/rwpo/kernel", "unknown RWPO kernel \"printed\"");
    expectError(minimalWith("/attention", {{"type", "linear"}, {"linear_eps", -0.5}}),
                "/attention/linear_eps", "expected number > 0 or null, got -0.5");
    expectError(minimalWith("/attention/masked", "yes"), "/attention/masked",
                "expected true or false, got string \"yes\"");
}

TEST(SceneErrors, UnsupportedCombinations) {
    json j = minimal();
    j["attention"] = {{"type", "linear"}, {"masked", true}};
    expectError(j, "/attention/masked", "not supported for linear attention");
    j["attention"] = {{"type", "sinkhorn"}, {"masked", true}};
    expectError(j, "/attention/masked", "not supported for sinkhorn");
    j["attention"] = {{"type", "masked"}, {"masked", false}};
    expectError(j, "/attention/masked", "expected true");
    j = minimal();
    j["d"] = 1;
    j["attention"] = {{"type", "softmax"}, {"sphere", true}};
    expectError(j, "/attention/sphere", "expected d >= 2");
    j["attention"] = {{"type", "softmax"}};
    j["initial"] = {{"kind", "rings"}};
    expectError(j, "/initial/kind", "expected d >= 2 for rings");
}

TEST(SceneErrors, Integrator) {
    json j = minimal();
    j["integrator"] = {{"method", "rk45"}};
    expectError(j, "/integrator/method",
                "unknown integrator method \"rk45\" (expected one of euler, heun, rk4, dopri5)");
    j["integrator"] = {{"steps", 0}};
    expectError(j, "/integrator/steps", "expected integer >= 1, got 0");
    j["integrator"] = {{"T", 0}};
    expectError(j, "/integrator/T", "expected number > 0, got 0");
    j["integrator"] = {{"T", -2.5}};
    expectError(j, "/integrator/T", "expected number > 0, got -2.5");
    j["integrator"] = {{"rtol", 0}};
    expectError(j, "/integrator/rtol", "expected number > 0");
    j["integrator"] = {{"divergence_norm", -1}};
    expectError(j, "/integrator/divergence_norm", "expected number > 0");
    j["integrator"] = {{"min_step", 0}};
    expectError(j, "/integrator/min_step", "expected number > 0");
    j["integrator"] = 5;
    expectError(j, "/integrator", "expected object, got 5");
}

TEST(SceneErrors, Output) {
    json j = minimal();
    j["output"] = {{"every", 0}};
    expectError(j, "/output/every", "expected integer >= 1, got 0");
    j["output"] = {{"cluster_tol", 0}};
    expectError(j, "/output/cluster_tol", "expected number > 0");
    j["output"] = {{"rank_tol", 1}};
    expectError(j, "/output/rank_tol", "expected number in (0, 1), got 1");
    j["output"] = {{"entropy", 1}};
    expectError(j, "/output/entropy", "expected true or false, got 1");
}

TEST(SceneErrors, Initial) {
    json j = minimal();
    j["initial"] = {{"kind", "normal"}};
    expectError(j, "/initial/kind", "unknown initial kind \"normal\"");
    j["initial"] = {{"cov", {{1, 0}, {0, -1}}}};
    expectError(j, "/initial/cov", "expected symmetric positive semi-definite 2x2 matrix");
    j["initial"] = {{"cov", {{1, 0.5}, {0.4, 1}}}};
    expectError(j, "/initial/cov", "expected symmetric positive semi-definite 2x2 matrix");
    j["initial"] = {{"cov", {{1, 2}, {2, 1}}}}; // symmetric but indefinite
    expectError(j, "/initial/cov", "smallest eigenvalue -1");
    j["initial"] = {{"cov", {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}}};
    expectError(j, "/initial/cov", "expected 2x2 matrix, got 3x3");
    j["initial"] = {{"mean", {0, 0, 0}}};
    expectError(j, "/initial/mean", "expected array of 2 numbers");
    j["initial"] = {{"kind", "uniform"}, {"low", {0, 1}}, {"high", {1, 1}}};
    expectError(j, "/initial/high", "expected high > low in every coordinate, got high[1] = 1 <= low[1] = 1");
    j["initial"] = {{"kind", "rings"}, {"radii", {1, -2}}};
    expectError(j, "/initial/radii/1", "expected number >= 0, got -2");
    j["initial"] = {{"kind", "rings"}, {"radii", json::array()}};
    expectError(j, "/initial/radii", "expected non-empty array");
    j["initial"] = {{"kind", "rings"}, {"noise", -0.1}};
    expectError(j, "/initial/noise", "expected number >= 0, got -0.1");
    j["initial"] = {{"seed", -1}};
    expectError(j, "/initial/seed", "expected integer >= 0, got -1");
    j["initial"] = {{"seed", 1.5}};
    expectError(j, "/initial/seed", "got 1.5");
    j["initial"] = {{"kind", "file"}};
    expectError(j, "/initial/path", "required for kind \"file\"");
    j["initial"] = {{"kind", "file"}, {"path", "tokens.txt"}};
    expectError(j, "/initial/path", "expected a .npy or .csv file");
    j["initial"] = {{"kind", "file"}, {"path", "/nonexistent/flowscope/tokens.npy"}};
    expectError(j, "/initial/path", "file not found");
}

TEST(SceneErrors, LoadSceneMissingFile) {
    expectSceneError([&] { loadScene("/nonexistent/flowscope/scene.json"); }, "",
                     {"/nonexistent/flowscope/scene.json"});
    TempDir dir;
    expectSceneError([&] { loadScene(dir.str()); }, "", {"directory"});
}

TEST(SceneErrors, LoadSceneSyntaxErrorNamesFileAndPosition) {
    TempDir dir;
    writeText(dir.file("bad.json"), "{\n  \"d\": 2\n  \"n\": 3\n}\n");
    expectSceneError([&] { loadScene(dir.file("bad.json")); }, "", {"bad.json", "line 3"});
    writeText(dir.file("field.json"), R"({"d": 2, "n": -5, "attention": {"type": "softmax"}})");
    expectSceneError([&] { loadScene(dir.file("field.json")); }, "/n", {});
}

// ---------------------------------------------------------------------------------------------------------
// Initial tokens

Scene tokenScene(int n, const json& initial, int d = 2) {
    json j = minimal();
    j["d"] = d;
    j["n"] = n;
    j["initial"] = initial;
    return sceneFromJson(j.dump());
}

TEST(InitialTokens, GaussianMatchesMeanAndCovariance) {
    const int n = 20000;
    const Scene s = tokenScene(
        n, {{"kind", "gaussian"}, {"seed", 7}, {"mean", {1.5, -2}}, {"cov", {{2, 0.5}, {0.5, 1}}}});
    const Tokens X = initialTokens(s);
    ASSERT_EQ(X.rows(), n);
    ASSERT_EQ(X.cols(), 2);
    const Vec mean = X.colwise().mean();
    const Tokens centred = X.rowwise() - mean.transpose();
    const Mat cov = centred.transpose() * centred / double(n - 1);
    // Standard errors: sqrt(Sigma_cc / n) ~ 0.01 for the mean, ~ sqrt(2/n) Sigma ~ 0.02 for the covariance.
    EXPECT_NEAR(mean(0), 1.5, 0.05);
    EXPECT_NEAR(mean(1), -2.0, 0.05);
    EXPECT_NEAR(cov(0, 0), 2.0, 0.1);
    EXPECT_NEAR(cov(0, 1), 0.5, 0.05);
    EXPECT_NEAR(cov(1, 1), 1.0, 0.05);
}

TEST(InitialTokens, StandardNormalMoments) {
    // Box-Muller itself: mean 0, variance 1, no correlation, fourth moment 3.
    const Scene s = tokenScene(20000, {{"seed", 3}}, 1);
    const Tokens X = initialTokens(s);
    EXPECT_NEAR(X.mean(), 0.0, 0.03);
    EXPECT_NEAR(X.array().square().mean(), 1.0, 0.04);
    EXPECT_NEAR(X.array().pow(4).mean(), 3.0, 0.25);
}

TEST(InitialTokens, BitReproducibleInTheSeed) {
    for (const char* kind : {"gaussian", "uniform", "rings"}) {
        const json spec = {{"kind", kind}, {"seed", 42}, {"noise", 0.1}};
        const Tokens a = initialTokens(tokenScene(500, spec, 3));
        const Tokens b = initialTokens(tokenScene(500, spec, 3));
        EXPECT_TRUE(a == b) << kind;
        json other = spec;
        other["seed"] = 43;
        EXPECT_FALSE(a == initialTokens(tokenScene(500, other, 3))) << kind;
    }
}

TEST(InitialTokens, SingularCovarianceGivesALine) {
    const Scene s = tokenScene(1000, {{"cov", {{1, 1}, {1, 1}}}, {"mean", {0.5, 0.5}}});
    const Tokens X = initialTokens(s);
    for (int i = 0; i < X.rows(); ++i) EXPECT_NEAR(X(i, 0), X(i, 1), 1e-12) << i;
    EXPECT_GT((X.col(0).array() - 0.5).abs().maxCoeff(), 1.0); // spread along the line
    // A zero covariance puts every token at the mean.
    const Tokens Y = initialTokens(tokenScene(10, {{"cov", 0}, {"mean", {3, 4}}}));
    for (int i = 0; i < Y.rows(); ++i) EXPECT_TRUE(Y.row(i) == (Vec(2) << 3, 4).finished().transpose());
}

TEST(InitialTokens, UniformBox) {
    const Scene s = tokenScene(5000, {{"kind", "uniform"}, {"low", {-1, 2}}, {"high", {0, 6}}});
    const Tokens X = initialTokens(s);
    EXPECT_GE(X.col(0).minCoeff(), -1.0);
    EXPECT_LT(X.col(0).maxCoeff(), 0.0);
    EXPECT_GE(X.col(1).minCoeff(), 2.0);
    EXPECT_LT(X.col(1).maxCoeff(), 6.0);
    EXPECT_NEAR(X.col(0).mean(), -0.5, 0.03);
    EXPECT_NEAR(X.col(1).mean(), 4.0, 0.1);
}

TEST(InitialTokens, RingsRadii) {
    const Scene s = tokenScene(999, {{"kind", "rings"}, {"radii", {1, 2, 3.5}}}, 3);
    const Tokens X = initialTokens(s);
    int counts[3] = {0, 0, 0};
    for (int i = 0; i < X.rows(); ++i) {
        const double r = std::hypot(X(i, 0), X(i, 1));
        EXPECT_EQ(X(i, 2), 0.0);
        int ring = -1;
        for (int k = 0; k < 3; ++k)
            if (std::fabs(r - std::vector<double>{1, 2, 3.5}[std::size_t(k)]) < 1e-12) ring = k;
        ASSERT_GE(ring, 0) << "token " << i << " at radius " << r;
        ++counts[ring];
    }
    EXPECT_EQ(counts[0], 333);
    EXPECT_EQ(counts[1], 333);
    EXPECT_EQ(counts[2], 333);
    // Angles cover the circle.
    EXPECT_LT(X.col(0).minCoeff(), -0.99);
    EXPECT_GT(X.col(1).maxCoeff(), 3.4);
    // Noise jitters every coordinate by about its standard deviation.
    const Tokens Y = initialTokens(tokenScene(2000, {{"kind", "rings"}, {"radii", 2}, {"noise", 0.05}}, 3));
    double sq = 0;
    for (int i = 0; i < Y.rows(); ++i) sq += Y(i, 2) * Y(i, 2);
    EXPECT_NEAR(std::sqrt(sq / Y.rows()), 0.05, 0.005);
}

TEST(InitialTokens, NpyFileRelativeToScene) {
    TempDir dir;
    Tokens T(3, 2);
    T << 1, 2, 3, 4, 5.5, -6;
    std::vector<double> rowMajor{1, 2, 3, 4, 5.5, -6};
    writeNpy(dir.file("tokens.npy"), {3, 2}, rowMajor.data(), false);
    writeText(
        dir.file("scene.json"),
        R"({"d": 2, "n": 3, "attention": {"type": "softmax"}, "initial": {"kind": "file", "path": "tokens.npy"}})");
    const Scene s = loadScene(dir.file("scene.json"));
    EXPECT_EQ(fs::path(s.initial.path), fs::absolute(dir.file("tokens.npy")).lexically_normal());
    EXPECT_TRUE(initialTokens(s) == T);
    // The resolved path survives a round trip, from anywhere.
    expectSameScene(s, sceneFromJson(sceneToJson(s), "/"));
    // float32 files are accepted too.
    writeNpy(dir.file("tokens32.npy"), {3, 2}, rowMajor.data(), true);
    Scene s32 = s;
    s32.initial.path = dir.file("tokens32.npy");
    EXPECT_TRUE(initialTokens(s32) == T);
}

TEST(InitialTokens, CsvFile) {
    TempDir dir;
    writeText(dir.file("tokens.csv"), "x,y\n1,2\n3,4\n5.5,-6\n");
    const Scene s = sceneFromJson(
        R"({"d": 2, "n": 3, "attention": {"type": "softmax"}, "initial": {"kind": "file", "path": "tokens.csv"}})",
        dir.str());
    Tokens T(3, 2);
    T << 1, 2, 3, 4, 5.5, -6;
    EXPECT_TRUE(initialTokens(s) == T);
}

void expectTokenError(const Scene& s, const std::string& fragment) {
    try {
        initialTokens(s);
        ADD_FAILURE() << "no error";
    } catch (const SceneError& e) {
        EXPECT_EQ(e.pointer, "/initial/path");
        EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
}

TEST(InitialTokens, FileShapeMismatch) {
    TempDir dir;
    std::vector<double> data(12, 1.0);
    writeNpy(dir.file("a.npy"), {4, 3}, data.data(), false);
    writeNpy(dir.file("b.npy"), {12}, data.data(), false);
    writeText(dir.file("c.csv"), "1,2\n3,4\n");
    writeText(dir.file("d.npy"), "not a numpy file");
    auto scene = [&](int n, int d, const std::string& file) {
        return tokenScene(n, {{"kind", "file"}, {"path", dir.file(file)}}, d);
    };
    expectTokenError(scene(4, 2, "a.npy"), "expected tokens of shape (4, 2)");
    expectTokenError(scene(4, 2, "a.npy"), "got shape (4, 3)");
    expectTokenError(scene(3, 3, "a.npy"), "expected tokens of shape (3, 3)");
    expectTokenError(scene(12, 2, "b.npy"), "got shape (12)");
    expectTokenError(scene(3, 2, "c.csv"), "got shape (2, 2)");
    expectTokenError(scene(4, 3, "d.npy"), "cannot read tokens");
    EXPECT_EQ(initialTokens(scene(12, 1, "b.npy")).rows(), 12); // a 1-D array is a column when d = 1
    EXPECT_TRUE(initialTokens(scene(4, 3, "a.npy")) == Tokens::Ones(4, 3));
    // The file vanished after loading.
    const Scene gone = scene(4, 3, "a.npy");
    fs::remove(dir.file("a.npy"));
    expectTokenError(gone, "cannot read tokens");
}

// ---------------------------------------------------------------------------------------------------------
// Documentation and presets

// The JSON blocks of docs/scene.md: every example must load, and the first is what the writer produces.
TEST(SceneDocs, ExamplesLoadAndWriterOutputIsDocumented) {
    const fs::path doc = fs::path(FLOWSCOPE_PRESET_DIR) / ".." / ".." / "docs" / "scene.md";
    std::ifstream in(doc);
    if (!in) GTEST_SKIP() << "no " << doc;
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::vector<std::string> blocks;
    const std::string open = "```json\n", close = "```";
    for (std::size_t at = text.find(open); at != std::string::npos; at = text.find(open, at)) {
        const std::size_t begin = at + open.size(), end = text.find(close, begin);
        ASSERT_NE(end, std::string::npos);
        blocks.push_back(text.substr(begin, end - begin));
        at = end + close.size();
    }
    ASSERT_GE(blocks.size(), 11u); // the writer's output and one example per attention type
    for (const std::string& block : blocks) EXPECT_NO_THROW(sceneFromJson(block)) << block;
    EXPECT_EQ(blocks[0], sceneToJson(sceneFromJson(minimal().dump())));
}

TEST(Presets, EveryPresetLoads) {
    int count = 0;
    for (const auto& entry : fs::directory_iterator(FLOWSCOPE_PRESET_DIR)) {
        if (entry.path().extension() != ".json") continue;
        SCOPED_TRACE(entry.path().string());
        ++count;
        Scene s;
        ASSERT_NO_THROW(s = loadScene(entry.path().string())) << [&] {
            try {
                loadScene(entry.path().string());
            } catch (const std::exception& e) {
                return std::string(e.what());
            }
            return std::string();
        }();
        EXPECT_FALSE(s.name.empty());
        EXPECT_FALSE(s.description.empty());
        // Reading back what we write gives the same scene.
        expectSameScene(s, sceneFromJson(sceneToJson(s)));
        const Tokens X = initialTokens(s);
        EXPECT_EQ(X.rows(), s.n);
        EXPECT_EQ(X.cols(), s.d);
        EXPECT_TRUE(X.allFinite());
    }
    EXPECT_GE(count, 13);
}

TEST(Presets, DefaultPresetIsTheDocumentedOne) {
    const Scene s = loadScene(std::string(FLOWSCOPE_PRESET_DIR) + "/default.json");
    EXPECT_EQ(s.d, 2);
    EXPECT_EQ(s.n, 2048);
    EXPECT_EQ(s.attention.type, AttentionType::Softmax);
    EXPECT_TRUE(sameMatrix(s.initial.cov, mat2(2, 0.5, 0.5, 1)));
    EXPECT_TRUE(sameMatrix(s.attention.heads[0].V, -0.4 * Mat::Identity(2, 2)));
    EXPECT_EQ(s.integrator.method, Method::Rk4);
    EXPECT_EQ(s.precision, Precision::Float32);
}

} // namespace
} // namespace flowscope
