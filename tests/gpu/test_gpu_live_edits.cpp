// Live edits take on the GPU backends, gl and vulkan: tests/engine/test_live_edits.cpp's conformance suite,
// on the same list of edits (tests/LiveEdits.h), through the path the app's runner takes. A run is started as
// every front end starts one (prepareRun, then PreparedRun::start: the backend's fields, and its device
// stepper whenever it takes the scene), runs k steps, takes the edit (applyLiveSetting: Simulation's
// setAttention or setIntegrator, what SimulationRunner calls on an edit), then runs m more steps. Two
// oracles:
//
// 1. A fresh run of the edited scene on the same backend, started from the state at step k, reaches the same
//    tokens within 1e-6 of the cloud's extent (max_i |x_i|), with the same number of field evaluations. Both
//    runs do the same float32 arithmetic on the same device from the same tokens; what may differ is the
//    rounding where the two paths differ (a sphere edit projects the tokens on the device, setState in
//    double), and Sinkhorn's warm start: each solve starts from the potentials of the previous call
//    (test_live_edits.cpp's reason), which leaves about float32's resolution here, within the same bound.
// 2. The edited run tracks the CPU float64 run of the same edit as closely as the CPU float32 run does: its
//    error is at most 3x the CPU float32 error plus one float32 rounding of the tokens per sub-step, twice
//    (the device steppers keep the tokens in float32), the criterion of the device stepper tests.
//
// And the edit took: the run is not the unedited one's, by its tokens or, for a change of method, by its
// work. A run whose device stepper cannot take the edited scene goes on with the backend's fields
// (Simulation::setStepper), saying why, naming the field: the device steppers run the kernel averages only
// (docs/backends.md), so for sinkhorn, rwpo and linear attention the test checks that note. The fields of
// both backends run every attention the CPU runs: supports() answers nothing for every scene here, checked
// too.
#include "../LiveEdits.h"
#include "GpuTestUtil.h"

#include "engine/backend/PrepareRun.h"
#include "engine/backend/Registry.h"
#include "engine/dynamics/LiveEdit.h"
#include "engine/scene/SceneSetting.h"

#include <array>

namespace flowscope::test {
namespace {

// The registry's backends, opened once for the suite: gl on the run's context (as the app opens it on its
// own, BackendHost), vulkan on a device of its own. Released before main's environment destroys the
// contexts.
class GpuLiveEdit : public ::testing::TestWithParam<std::tuple<GpuBackendKind, int>> {
  public:
    static void SetUpTestSuite() {
        for (GpuBackendKind b : kGpuBackends) {
            if (b == GpuBackendKind::Gl ? !gpuContext() : !vkContext()) continue;
            try {
                BackendHost host;
                host.getProcAddress = GlContext::procLoader();
                backends_[int(b)] = openBackend(backendName(b), b == GpuBackendKind::Gl ? &host : nullptr);
            } catch (const BackendError& e) {
                why_[int(b)] = e.what();
            }
        }
    }
    static void TearDownTestSuite() {
        for (ComputeBackend& b : backends_) b = {};
    }

  protected:
    void SetUp() override {
        FLOWSCOPE_REQUIRE_BACKEND(kind_);
        if (!why_[int(kind_)].empty()) GTEST_SKIP() << why_[int(kind_)];
    }

    const GpuBackendKind kind_ = std::get<0>(GetParam());
    const LiveEditCase edit_ = liveEdits().at(std::size_t(std::get<1>(GetParam())));
    const ComputeBackend& backend() const { return backends_[int(kind_)]; }

  private:
    static inline std::array<ComputeBackend, 2> backends_;
    static inline std::array<std::string, 2> why_;
};

// Steps a run `steps` times; false (and a failure naming the event) when it stopped.
::testing::AssertionResult stepped(Simulation& sim, int steps) {
    for (int k = 0; k < steps; ++k)
        if (!sim.step() || sim.event())
            return ::testing::AssertionFailure()
                   << "step " << k << ": " << (sim.event() ? sim.event()->message : "not taken");
    return ::testing::AssertionSuccess();
}

// The current tokens (a device run downloads them).
Tokens tokensOf(Simulation& sim) {
    sim.syncTokens();
    return sim.tokens();
}

// The run on the CPU in `precision`: k steps of the base scene, the edit (unless `edit` is false), m steps.
struct CpuRun {
    Tokens X;
    long subSteps = 0;         // the whole run's
    long evaluationsAfter = 0; // the field evaluations of the m steps
};
CpuRun cpuRun(const LiveEditCase& e, Precision precision, bool edit = true) {
    Scene base = e.base;
    base.precision = precision;
    Simulation sim(base);
    EXPECT_TRUE(stepped(sim, kLiveEditBefore));
    const long atEdit = sim.timings().evaluations;
    if (edit) applyLiveSetting(sim, parseSceneSetting(e.setting));
    EXPECT_TRUE(stepped(sim, kLiveEditAfter));
    return {sim.tokens(), sim.timings().subSteps, sim.timings().evaluations - atEdit};
}

// The attention types the device steppers take (kernel averages); the fields run the others.
bool deviceStepsTake(AttentionType type) {
    for (AttentionType t : {AttentionType::Softmax, AttentionType::L2, AttentionType::Exp,
                            AttentionType::Relu, AttentionType::Sigmoid})
        if (type == t) return true;
    return false;
}

TEST_P(GpuLiveEdit, EqualsAFreshRunOfTheEditedSceneAndTracksFloat64) {
    const LiveEditCase& e = edit_;
    const SceneSetting setting = parseSceneSetting(e.setting);
    const Scene edited = withSetting(e.base, setting);
    // The backend's fields run every scene here: nothing is refused up front.
    ASSERT_EQ(backend().supports(e.base), std::nullopt);
    ASSERT_EQ(backend().supports(edited), std::nullopt);

    const std::unique_ptr<Simulation> live = prepareRun(backend(), e.base).start(e.base);
    EXPECT_EQ(live->onDevice(), deviceStepsTake(e.base.attention.type)) << live->stepperNote();
    ASSERT_TRUE(stepped(*live, kLiveEditBefore));
    const Tokens atEdit = tokensOf(*live);
    const double tEdit = live->time();
    const long evaluationsAtEdit = live->timings().evaluations;
    ASSERT_NO_THROW(applyLiveSetting(*live, setting)) << e.setting;

    // Whole steps on the device when its stepper takes the edited scene; else the fields, naming the field.
    EXPECT_EQ(live->onDevice(), deviceStepsTake(edited.attention.type));
    if (!live->onDevice())
        EXPECT_EQ(live->stepperNote().rfind("/attention/type: ", 0), 0u) << live->stepperNote();

    const std::unique_ptr<Simulation> fresh = prepareRun(backend(), edited).start(edited);
    fresh->setState(atEdit, tEdit);
    EXPECT_EQ(live->stepIndex(), fresh->stepIndex());
    EXPECT_EQ(live->onDevice(), fresh->onDevice());
    ASSERT_TRUE(stepped(*live, kLiveEditAfter));
    ASSERT_TRUE(stepped(*fresh, kLiveEditAfter));
    EXPECT_EQ(live->time(), fresh->time());
    const Tokens X = tokensOf(*live), Xfresh = tokensOf(*fresh);
    ASSERT_EQ(X.rows(), Xfresh.rows());

    // 1. The fresh run of the edited scene on this backend: the same tokens, and the same work.
    ASSERT_EQ(live->history().back().step, fresh->history().back().step);
    const double extent = maxRowNorm(Xfresh), fromFresh = maxRowError(X, Xfresh);
    EXPECT_LE(fromFresh, 1e-6 * extent) << "relative " << fromFresh / extent;
    const long evaluations = live->timings().evaluations - evaluationsAtEdit;
    EXPECT_EQ(evaluations, fresh->timings().evaluations);
    // And what the plots show of the last frame: its kinetic energy, entropy and interaction energy (NaN for
    // a variant without one), computed after the edit by the new attention.
    const Observables &obs = live->lastObservables(), &freshObs = fresh->lastObservables();
    for (auto [a, b] : {std::pair{obs.kinetic, freshObs.kinetic}, std::pair{obs.entropy, freshObs.entropy},
                        std::pair{obs.energy, freshObs.energy}}) {
        ASSERT_EQ(std::isnan(a), std::isnan(b));
        if (!std::isnan(b)) EXPECT_LE(std::abs(a - b), 1e-6 * std::abs(b)) << a << " against " << b;
    }

    // 2. The CPU float64 run of the same edit.
    const CpuRun cpu64 = cpuRun(e, Precision::Float64), cpu32 = cpuRun(e, Precision::Float32);
    const double gpu = maxRowError(X, cpu64.X), cpuF32 = maxRowError(cpu32.X, cpu64.X);
    const double storage =
        double(cpu64.subSteps) * 0.5 * FLT_EPSILON * std::max(maxRowNorm(cpu64.X), maxRowNorm(atEdit));
    const double bound = 3.0 * cpuF32 + 2.0 * storage;
    EXPECT_LE(gpu, bound) << "cpu-f32 " << cpuF32;

    // The edit took: the run is not the unedited one's. An edit of the method shows in the work (RK4's four
    // evaluations a step against Euler's one, Heun's two, Dormand-Prince's six or seven a sub-step: what
    // Dormand-Prince changes in the tokens at this step is below float32's resolution); any other edit moves
    // the tokens away from the CPU's unedited run by more than oracle 2 allows around the edited one.
    const CpuRun unedited = cpuRun(e, Precision::Float64, false);
    const double fromUnedited = maxRowError(X, unedited.X);
    EXPECT_TRUE(evaluations != unedited.evaluationsAfter || fromUnedited > bound)
        << "the unedited run is " << fromUnedited << " away, within " << bound << ", with the same work";
    std::printf("[ live     ] %-7s %-26s fresh %.1e (rel %.1e)  f64 %.1e  cpu-f32 %.1e  unedited %.1e  "
                "evaluations %ld (unedited %ld)%s\n",
                backendName(kind_), e.name.c_str(), fromFresh, fromFresh / extent, gpu, cpuF32, fromUnedited,
                evaluations, unedited.evaluationsAfter, live->onDevice() ? "" : "  (fields)");

    // The run's scene is the edited one, as Save would write it.
    EXPECT_EQ(sceneToJson(live->scene()), sceneToJson(edited));
}

INSTANTIATE_TEST_SUITE_P(EveryLiveField, GpuLiveEdit,
                         ::testing::Combine(::testing::ValuesIn(kGpuBackends),
                                            ::testing::Range(0, int(liveEdits().size()))),
                         [](const ::testing::TestParamInfo<GpuLiveEdit::ParamType>& info) {
                             return std::string(backendName(std::get<0>(info.param))) + "_" +
                                    liveEditTestName(liveEdits()[std::size_t(std::get<1>(info.param))].name);
                         });

} // namespace
} // namespace flowscope::test
