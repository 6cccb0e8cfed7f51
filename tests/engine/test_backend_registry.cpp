// The backend registry (engine/backend/Registry.h): what it lists, what it opens, what it refuses and why.
// Device-free: the GPU backends are listed in every build but only opened in tests/gpu, where a device may
// be missing.
#include "TestUtil.h"

#include "engine/backend/PrepareRun.h"
#include "engine/backend/Registry.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

using namespace flowscope;
using namespace flowscope::test;

TEST(BackendRegistry, IdsAreUniqueAndTheCpuComesFirstAndIsAlwaysAvailable) {
    const std::vector<BackendInfo> list = listBackends();
    ASSERT_FALSE(list.empty());
    std::set<std::string> ids, labels;
    for (const BackendInfo& b : list) {
        EXPECT_FALSE(b.id.empty());
        EXPECT_FALSE(b.label.empty()) << b.id;
        EXPECT_TRUE(ids.insert(b.id).second) << "id listed twice: " << b.id;
        EXPECT_TRUE(labels.insert(b.label).second) << "label listed twice: " << b.label;
        // Available exactly when there is no reason given.
        EXPECT_EQ(b.available, b.why.empty()) << b.id << ": " << b.why;
    }
    EXPECT_TRUE(list.front().available);
    EXPECT_EQ(cpuBackend().id, list.front().id);
    EXPECT_EQ(cpuBackend().label, list.front().label);
    EXPECT_FALSE(cpuBackend().gpu);
}

TEST(BackendRegistry, TheIdListIsTheListedIdsInOrder) {
    std::string expected;
    for (const BackendInfo& b : listBackends()) expected += (expected.empty() ? "" : ", ") + b.id;
    EXPECT_EQ(backendIdList(), expected);
}

TEST(BackendRegistry, AnUnknownIdNamesEveryKnownOne) {
    try {
        openBackend("metal");
        FAIL() << "opened an unknown backend";
    } catch (const BackendError& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("unknown backend \"metal\""), std::string::npos) << what;
        for (const BackendInfo& b : listBackends()) EXPECT_NE(what.find(b.id), std::string::npos) << what;
    }
}

TEST(BackendRegistry, OpeningAnUnavailableBackendSaysWhy) {
    for (const BackendInfo& b : listBackends()) {
        if (b.available) continue;
        try {
            openBackend(b.id);
            ADD_FAILURE() << "opened " << b.id << ", listed as unavailable";
        } catch (const BackendError& e) {
            EXPECT_NE(std::string(e.what()).find(b.why), std::string::npos) << e.what();
        }
    }
}

TEST(BackendRegistry, TheCpuOpensByIdAndRunsEveryValidSceneWithoutADeviceStepper) {
    const std::string id = listBackends().front().id;
    const ComputeBackend cpu = openBackend(id);
    EXPECT_EQ(cpu.id, id);
    EXPECT_FALSE(cpu.device.empty());
    ASSERT_TRUE(cpu.makeField);
    EXPECT_FALSE(cpu.makeStepper);

    Scene scene;
    scene.d = 2;
    scene.n = 8;
    scene.attention =
        singleHead(AttentionType::L2, Mat::Identity(2, 2), Mat::Identity(2, 2), Mat::Identity(2, 2));
    scene.integrator.method = Method::DormandPrince;
    EXPECT_EQ(cpu.supports(scene), std::nullopt);
    const std::optional<std::string> steps = cpu.supportsDeviceSteps(scene);
    ASSERT_TRUE(steps);
    EXPECT_NE(steps->find("no device stepper"), std::string::npos) << *steps;
    EXPECT_NE(steps->find(id), std::string::npos) << *steps;
}

TEST(BackendRegistry, ADefaultBackendComputesOnTheCpu) {
    // What SimulationRunner falls back to: no factory means the CPU's, and no GPU.
    const ComputeBackend none;
    EXPECT_FALSE(none.gpu);
    EXPECT_FALSE(none.makeField);
    Scene scene;
    EXPECT_EQ(none.supports(scene), std::nullopt);
}

// prepareRun, the one contract of a particle run (engine/backend/PrepareRun.h): the backend is asked before
// anything is made on it. A backend that refuses a scene is a SceneError at the field it names under Fail,
// with no field made, and the CPU with the reason as the note under UseTheCpu, whose run equals the CPU's.
TEST(PrepareRun, ARefusalComesBeforeAnyWorkAndNamesTheField) {
    int made = 0;
    ComputeBackend gpu;
    gpu.id = "fake";
    gpu.gpu = true;
    gpu.makeField = [&made](const AttentionSpec& a, int d, Precision p) {
        ++made;
        return makeCpuField(a, d, p);
    };
    gpu.fieldsRefuse = [](const Scene& s) -> std::optional<std::string> {
        if (s.n > 64) return "/n: the fake device takes at most 64 tokens, got " + std::to_string(s.n);
        return std::nullopt;
    };
    Scene scene = sceneFromJson(R"({"d": 2, "n": 100, "attention": {"type": "softmax"},
                                    "integrator": {"T": 0.5, "steps": 5}})");
    try {
        (void)prepareRun(gpu, scene);
        ADD_FAILURE() << "refused nothing";
    } catch (const SceneError& e) {
        EXPECT_EQ(e.pointer, "/n");
        EXPECT_EQ(e.detail, "the fake device takes at most 64 tokens, got 100");
    }
    EXPECT_EQ(made, 0);

    const PreparedRun fallback = prepareRun(gpu, scene, OnRefusal::UseTheCpu);
    EXPECT_FALSE(fallback.onBackend);
    EXPECT_EQ(fallback.note, "/n: the fake device takes at most 64 tokens, got 100 — running on the CPU");
    const auto onCpu = fallback.start(scene);
    onCpu->run();
    Simulation reference(scene);
    reference.run();
    EXPECT_EQ(made, 0);
    EXPECT_TRUE(onCpu->tokens() == reference.tokens()); // bit for bit

    scene.n = 32;
    const PreparedRun accepted = prepareRun(gpu, scene);
    EXPECT_TRUE(accepted.onBackend && accepted.note.empty());
    accepted.start(scene)->run();
    EXPECT_GT(made, 0);
}
