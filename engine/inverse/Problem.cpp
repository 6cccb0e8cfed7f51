#include "engine/inverse/Problem.h"

#include "engine/flows/Datasets.h"
#include "engine/inverse/Eit.h"
#include "engine/inverse/Elliptic.h"
#include "engine/inverse/Lorenz63.h"

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace flowscope::inverse {

namespace {

constexpr std::array<std::string_view, 4> kModelTypes{"linear", "lorenz63", "elliptic", "eit"};

std::shared_ptr<ForwardModel> readModel(const JsonReader& j, std::string& type) {
    j.expectObject();
    type = kModelTypes[std::size_t(j.require("type").choice("forward-model type", kModelTypes))];
    if (type == "linear") {
        j.expectObject({"type", "G", "b"});
        const Mat G = j.require("G").matrix();
        const Vec b = j.has("b") ? j.require("b").vector(int(G.rows())) : Vec::Zero(G.rows());
        return std::make_shared<LinearModel>(G, b);
    }
    if (type == "lorenz63") { // defaults: Lorenz63Setup::shortHorizon()
        j.expectObject({"type", "x0", "dt", "spin_up", "window", "windows"});
        Lorenz63Setup s = Lorenz63Setup::shortHorizon();
        if (auto v = j.find("x0")) s.x0 = v->vector(3);
        if (auto v = j.find("dt")) s.dt = v->numberIn(1e-6, 1);
        if (auto v = j.find("spin_up")) s.spinUp = v->numberIn(0, 1e4);
        if (auto v = j.find("window")) s.window = v->numberIn(1e-6, 1e4);
        if (auto v = j.find("windows")) s.windows = int(v->integer(1, 1000));
        if (s.window < s.dt) j.failAt("window", "is shorter than one step dt = " + numberText(s.dt));
        if ((s.spinUp + s.window * s.windows) / s.dt > 1e7)
            j.fail("the run would take more than 10^7 Euler steps per evaluation");
        return std::make_shared<Lorenz63>(s);
    }
    if (type == "elliptic") {
        j.expectObject({"type", "alpha", "centres", "bump_width", "observed", "nodes"});
        EllipticSetup s;
        if (auto v = j.find("alpha")) s.alpha = v->numberIn(1e-9, 1e6);
        if (auto v = j.find("centres")) s.centres = int(v->integer(1, 1024));
        if (auto v = j.find("bump_width")) s.bumpWidth = v->numberIn(1e-6, 1e3);
        if (auto v = j.find("observed")) s.observed = int(v->integer(1, 4096));
        if (auto v = j.find("nodes")) s.nodes = int(v->integer(3, 1 << 16));
        return std::make_shared<Elliptic>(s);
    }
    j.expectObject({"type", "cells", "kappa0", "bump_width", "centres_x", "centres_y", "frequencies"});
    EitSetup s;
    if (auto v = j.find("cells")) s.cells = int(v->integer(2, 256));
    if (auto v = j.find("kappa0")) s.kappa0 = v->numberIn(1e-9, 1e9);
    if (auto v = j.find("bump_width")) s.bumpWidth = v->numberIn(1e-6, 1e3);
    if (auto v = j.find("centres_x")) s.centresX = int(v->integer(1, 64));
    if (auto v = j.find("centres_y")) s.centresY = int(v->integer(1, 64));
    s.patterns = EitSetup::trigonometricPatterns(
        j.has("frequencies") ? int(j.require("frequencies").integer(1, 32)) : 3);
    return std::make_shared<Eit>(s);
}

Prior readPrior(const JsonReader& j, int d) {
    j.expectObject();
    constexpr std::array<std::string_view, 2> kinds{"gaussian", "laplace"};
    Prior p;
    p.kind =
        j.require("type").choice("prior type", kinds) == 0 ? Prior::Kind::Gaussian : Prior::Kind::Laplace;
    p.mean = j.has("mean") ? j.require("mean").vector(d) : Vec::Zero(d);
    if (p.kind == Prior::Kind::Gaussian) {
        j.expectObject({"type", "mean", "sd"});
        p.sd = j.require("sd").vector(d);
        for (int i = 0; i < d; ++i)
            if (!(p.sd(i) > 0)) j.require("sd").fail("expected numbers > 0, got " + numberText(p.sd(i)));
    } else {
        j.expectObject({"type", "mean", "lambda"});
        p.lambda = j.require("lambda").numberAbove(0);
    }
    return p;
}

void readFlow(const JsonReader& j, PosteriorFlowConfig& c) {
    j.expectObject({"rwpo", "width", "depth", "layers", "T", "frame", "batch", "keys", "iterations", "lr",
                    "lr_final", "transport_weight", "hjb_weight", "exact_log_det", "lambda0", "beta0",
                    "train_beta", "seed", "base_seed"});
    flows::FlowConfig& f = c.flow;
    if (auto v = j.find("rwpo")) f.rwpo = v->boolean();
    if (auto v = j.find("width")) f.width = int(v->integer(1, 1024));
    if (auto v = j.find("depth")) f.depth = int(v->integer(2, 16));
    if (auto v = j.find("layers")) f.layers = int(v->integer(1, 256));
    if (auto v = j.find("T")) f.T = v->numberIn(1e-6, 1e6);
    if (auto v = j.find("frame")) {
        constexpr std::array<std::string_view, 2> frames{"prior", "laplace"};
        c.frame = v->choice("frame", frames) == 0 ? FrameKind::Prior : FrameKind::Laplace;
    }
    if (auto v = j.find("batch")) c.batch = int(v->integer(2, 65536));
    if (auto v = j.find("keys")) c.keys = int(v->integer(2, 65536));
    if (auto v = j.find("iterations")) c.iterations = long(v->integer(1, 100000000));
    c.adam.decaySteps = c.iterations;
    if (auto v = j.find("lr")) c.adam.lr = v->numberIn(1e-12, 10);
    if (auto v = j.find("lr_final")) c.adam.lrFinal = v->numberIn(1e-12, 10);
    if (auto v = j.find("transport_weight")) f.transportWeight = v->numberIn(0, 1e6);
    if (auto v = j.find("hjb_weight")) f.hjbWeight = v->numberIn(0, 1e6);
    if (auto v = j.find("exact_log_det")) { // both sub-steps' (where d allows); false: the first-order traces
        f.exactDriftLogDet = v->boolean();
        f.rwpoOptions.exactLogDet = v->boolean();
    }
    if (auto v = j.find("lambda0")) f.lambda0 = v->numberIn(1e-12, 1e6);
    if (auto v = j.find("beta0")) f.beta0 = v->numberIn(1e-12, 1e6);
    if (auto v = j.find("train_beta")) f.trainBeta = v->boolean();
    if (auto v = j.find("seed")) f.seed = v->unsignedInteger();
    if (auto v = j.find("base_seed")) c.seed = v->unsignedInteger();
}

} // namespace

std::vector<std::string_view> modelTypes() {
    return {kModelTypes.begin(), kModelTypes.end()};
}

Problem readProblem(const JsonReader& j) {
    j.expectObject({"name", "description", "model", "noise", "prior", "truth", "data", "data_seed",
                    "map_search", "flow"});
    Problem pr;
    pr.name = j.has("name") ? j.require("name").string() : "inverse problem";
    if (auto v = j.find("description")) pr.description = v->string();
    auto post = std::make_shared<Posterior>();
    post->model = readModel(j.require("model"), pr.modelType);
    const int d = post->model->parameters(), m = post->model->observations();
    post->noise = j.require("noise").numberAbove(0);
    post->prior = readPrior(j.require("prior"), d);
    if (auto v = j.find("truth")) post->truth = v->vector(d);
    if (auto v = j.find("data")) {
        if (j.has("data_seed"))
            j.failAt("data_seed", "is for data made from the truth; this file gives data");
        post->y = v->vector(m);
    } else {
        if (!post->truth)
            j.failAt("data", "required field is missing (the observations, or a truth to make them from)");
        const Vec clean = post->model->apply(*post->truth);
        if (!clean.allFinite()) j.failAt("truth", "the forward model is not finite there");
        flows::Rng rng(j.has("data_seed") ? j.require("data_seed").unsignedInteger() : 0);
        post->y = clean;
        for (int i = 0; i < m; ++i) post->y(i) += post->noise * rng.normal();
    }
    if (auto v = j.find("map_search")) {
        v->expectObject({"low", "high", "starts", "seed"});
        MapSearch& m = post->mapSearch;
        m.low = v->require("low").vector(d);
        m.high = v->require("high").vector(d);
        for (int i = 0; i < d; ++i)
            if (m.low(i) > m.high(i)) v->failAt("high", "each entry must be >= low's");
        m.starts = int(v->has("starts") ? v->require("starts").integer(1, 100000) : 32);
        if (auto s = v->find("seed")) m.seed = s->unsignedInteger();
    }
    if (auto v = j.find("flow")) readFlow(*v, pr.flow);
    pr.flow.flow.d = d;
    post->validate();
    pr.posterior = std::move(post);
    pr.source = j.json().dump();
    return pr;
}

Problem problemFromJson(const std::string& text) {
    const JsonReader::Json doc = parseJson(text);
    return readProblem(JsonReader(doc));
}

Problem loadProblem(const std::string& pathOrName, const std::string& dir) {
    namespace fs = std::filesystem;
    std::error_code ec;
    fs::path path = pathOrName;
    if (!fs::exists(path, ec) && pathOrName.find('/') == std::string::npos && !pathOrName.ends_with(".json"))
        path = fs::path(dir) / (pathOrName + ".json");
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot read the problem " + path.string());
    std::ostringstream text;
    text << in.rdbuf();
    return problemFromJson(text.str());
}

std::vector<std::string> problemNames(const std::string& dir) {
    namespace fs = std::filesystem;
    std::vector<std::string> names;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec))
        if (e.path().extension() == ".json") names.push_back(e.path().stem().string());
    std::sort(names.begin(), names.end());
    return names;
}

} // namespace flowscope::inverse
