// The live edits every backend's conformance suite runs (tests/engine/test_live_edits.cpp on the CPU,
// tests/gpu/test_gpu_live_edits.cpp on gl and vulkan): one list, so that a field made live is proved on
// every backend at once. Each edit is a scene to start from and a "POINTER=VALUE" setting (SceneSetting.h)
// that a run of it takes after kBefore steps, then runs kAfter more.
#pragma once

#include "engine/TestUtil.h"

#include "engine/scene/DefaultScene.h"

#include <string>
#include <vector>

namespace flowscope::test {

inline constexpr int kLiveEditBefore = 5, kLiveEditAfter = 6;

// The default scene with 48 tokens in float64, one random head, RK4 with 20 steps to T = 1.
inline Scene liveEditScene(AttentionType type = AttentionType::Softmax) {
    Scene s = builtinDefaultScene();
    s.name = "live";
    s.n = 48;
    s.precision = Precision::Float64;
    s.initial.seed = 3;
    s.attention.type = type;
    s.attention.heads = {
        HeadParams{randomTokens(2, 2, 11, 0.8), randomTokens(2, 2, 12, 0.8), randomTokens(2, 2, 13, 0.5)}};
    s.integrator.T = 1.0;
    s.integrator.steps = 20;
    return s;
}

// The exp kernel sums N unnormalized weights e^{s_ij}: smaller scores and V / N keep its run finite.
inline Scene liveEditExpScene() {
    Scene s = liveEditScene();
    s.attention.heads[0].Q *= 0.3;
    s.attention.heads[0].V /= double(s.n);
    return s;
}

// liveEditScene with time-dependent heads: two keyframes, at t = 0 (its heads) and t = 1, linearly
// interpolated.
inline Scene liveEditKeyframedScene() {
    Scene s = liveEditScene();
    const HeadParams later{randomTokens(2, 2, 21, 0.8), randomTokens(2, 2, 22, 0.8),
                           randomTokens(2, 2, 23, 0.5)};
    s.attention.keyframes = {{0.0, s.attention.heads}, {1.0, {later}}};
    s.attention.interpolation = Interpolation::Linear;
    return s;
}

struct LiveEditCase {
    std::string name;
    Scene base;
    std::string setting; // "POINTER=VALUE"
    // Sinkhorn only (test_live_edits.cpp says why): the largest coordinate difference the CPU allows between
    // the edited run and the fresh one (0: bit for bit).
    double tolerance = 0.0;
};

// Every live field: the type through every variant, beta, sqrt(k) scaling, Q, K, V, the heads, the mask, the
// sphere, the normalization, the positional decay, Sinkhorn's eps and iterations, RWPO's lambda and h,
// linear attention's eps, the integrator's method, its steps and its horizon.
inline std::vector<LiveEditCase> liveEdits() {
    const Scene base = liveEditScene();
    std::vector<LiveEditCase> e;
    for (const char* type : {"linear", "l2", "relu", "sigmoid", "rwpo"})
        e.push_back({std::string("type softmax to ") + type, base, std::string("/attention/type=") + type});
    e.push_back({"type softmax to exp", liveEditExpScene(), "/attention/type=exp"});
    e.push_back({"type softmax to sinkhorn", base, "/attention/type=sinkhorn", 1e-10});
    e.push_back({"type l2 to softmax", liveEditScene(AttentionType::L2), "/attention/type=softmax"});
    // Back from a variant the GPU backends' device steppers refuse: their runs go back onto the device.
    e.push_back(
        {"type sinkhorn to softmax", liveEditScene(AttentionType::Sinkhorn), "/attention/type=softmax"});
    e.push_back({"beta", base, "/attention/beta=2.5"});
    e.push_back({"scale by sqrt k", base, "/attention/scale_by_sqrt_k=true"});
    e.push_back({"Q", base, "/attention/heads/0/Q=[[1.5, 0.2], [-0.3, 0.9]]"});
    e.push_back({"K", base, "/attention/heads/0/K=[[0.4, 0], [0.1, 1.2]]"});
    e.push_back({"V", base, "/attention/heads/0/V=[[0.5, 0], [0, 0.5]]"});
    e.push_back({"a second head", base,
                 "/attention/heads=[{\"Q\": 1, \"K\": 1, \"V\": 0.3}, {\"Q\": [[0, 1], [1, 0]], \"K\": 1, "
                 "\"V\": [[0, -0.4], [0.4, 0]]}]"});
    e.push_back({"masked", base, "/attention/masked=true"});
    e.push_back({"sphere", base, "/attention/sphere=true"});
    for (const char* scheme : {"post", "pre", "peri"})
        e.push_back({std::string("normalization ") + scheme, base,
                     std::string("/attention/normalization=") + scheme});
    e.push_back({"positional decay", base, "/attention/positional_decay=3"});
    e.push_back(
        {"sinkhorn eps", liveEditScene(AttentionType::Sinkhorn), "/attention/sinkhorn/eps=0.5", 1e-10});
    e.push_back({"sinkhorn iterations", liveEditScene(AttentionType::Sinkhorn),
                 "/attention/sinkhorn/iterations=7", 1e-6});
    e.push_back({"rwpo lambda", liveEditScene(AttentionType::Rwpo), "/attention/rwpo/lambda=0.5"});
    e.push_back({"rwpo h", liveEditScene(AttentionType::Rwpo), "/attention/rwpo/h=0.1"});
    e.push_back({"linear eps", liveEditScene(AttentionType::Linear), "/attention/linear_eps=0.3"});
    for (const char* method : {"euler", "heun", "dopri5"})
        e.push_back({std::string("method ") + method, base, std::string("/integrator/method=") + method});
    e.push_back({"steps (the step h)", base, "/integrator/steps=40"});
    e.push_back({"horizon T (the step h)", base, "/integrator/T=2"});
    // The new step h = 0.1 leaves t = 0.25 off its grid: the next step lands on 0.4, and time-dependent heads
    // are evaluated at the run's time.
    e.push_back({"horizon T, keyframed heads", liveEditKeyframedScene(), "/integrator/T=2"});
    return e;
}

// A case's name as a test name: "type softmax to l2" -> "type_softmax_to_l2".
inline std::string liveEditTestName(std::string name) {
    for (char& c : name)
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
    return name;
}

} // namespace flowscope::test
