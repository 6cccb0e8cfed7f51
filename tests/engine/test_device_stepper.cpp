// Simulation on a DeviceStepper: the bookkeeping of device-resident runs (downloads only at recorded frames,
// the record gate, divergence checks, falling back to the fields when the device refuses an edit), tested
// with a stepper that "runs on a device" by integrating on the CPU with the same field and integrator. Its
// results must therefore equal the plain field run bit for bit; the real GPU stepper is tested in tests/gpu.
#include "TestUtil.h"

#include "engine/dynamics/DeviceStepper.h"
#include "engine/dynamics/Simulation.h"

#include <gtest/gtest.h>

#include <optional>
#include <stdexcept>
#include <string>

using namespace flowscope;
using namespace flowscope::test;

namespace {

// A device whose memory is a CPU matrix. It refuses l2 attention and (unless `adaptive`) Dormand-Prince,
// and counts the downloads. A Dormand-Prince step it cannot complete ends advance, the tokens kept at the
// step's start (outcome), as the device steppers do.
class EmulatedDevice : public DeviceStepper {
  public:
    EmulatedDevice(const AttentionSpec& spec, const IntegratorSpec& integrator, int d, int* downloads,
                   bool adaptive = false)
        : downloads_(downloads), adaptive_(adaptive) {
        setAttention(spec);
        setIntegrator(integrator);
        (void)d;
    }
    void upload(const Tokens& X, double t) override {
        X_ = X;
        t_ = t;
    }
    void advance(int steps) override {
        const Field f = [this](double t, const Tokens& X, Tokens& dX) { field_->velocity(t, X, dX); };
        outcome_ = {};
        for (int s = 0; s < steps; ++s) {
            const Tokens start = X_;
            outcome_ = integrator_->advance(f, t_, h_, X_);
            if (!outcome_.ok) {
                X_ = start;
                return;
            }
            t_ += h_;
        }
    }
    StepResult outcome() const override { return outcome_; }
    void download(Tokens& X) override {
        ++*downloads_;
        X = X_;
    }
    void setAttention(const AttentionSpec& spec) override {
        if (spec.type == AttentionType::L2) throw SceneError("/attention/type", "emulated device: no l2");
        field_ = makeCpuField(spec, spec.heads.at(0).V.rows(), Precision::Float64);
        if (integrator_) integrator_->invalidate();
    }
    void setIntegrator(const IntegratorSpec& spec) override {
        if (spec.method == Method::DormandPrince && !adaptive_)
            throw SceneError("/integrator/method", "emulated device: fixed steps");
        integrator_ = makeIntegrator(spec);
        h_ = spec.T / spec.steps;
    }
    std::string name() const override { return "emulated device"; }

  private:
    int* downloads_;
    bool adaptive_;
    StepResult outcome_;
    std::unique_ptr<VelocityField> field_;
    std::unique_ptr<Integrator> integrator_;
    Tokens X_;
    double t_ = 0.0, h_ = 0.0;
};

Scene deviceScene(int every = 1) {
    Scene s;
    s.name = "device";
    s.d = 2;
    s.n = 40;
    s.attention = singleHead(AttentionType::Softmax, Mat::Identity(2, 2), Mat::Identity(2, 2),
                             -0.5 * Mat::Identity(2, 2));
    s.integrator.method = Method::Rk4;
    s.integrator.T = 2.0;
    s.integrator.steps = 20;
    s.initial.kind = InitKind::Gaussian;
    s.initial.mean = Vec::Zero(2);
    s.initial.cov = Mat::Identity(2, 2);
    s.output.every = every;
    return s;
}

// What EmulatedDevice refuses, asked before it is made or edited (StepperFactory::supports).
std::optional<std::string> emulatedRefusal(const AttentionSpec& spec, const IntegratorSpec& integrator, int) {
    if (spec.type == AttentionType::L2) return "/attention/type: emulated device: no l2";
    if (integrator.method == Method::DormandPrince) return "/integrator/method: emulated device: fixed steps";
    return std::nullopt;
}

// `made` counts the steppers made, when given.
StepperFactory emulated(int* downloads, int* made = nullptr) {
    return StepperFactory(
        [downloads, made](const AttentionSpec& spec, const IntegratorSpec& integrator, int d) {
            if (made) ++*made;
            return std::unique_ptr<DeviceStepper>(new EmulatedDevice(spec, integrator, d, downloads));
        },
        emulatedRefusal);
}

} // namespace

TEST(DeviceRun, EqualsTheFieldRunAndDownloadsOnlyRecordedFrames) {
    const Scene scene = deviceScene(5);
    Simulation reference(scene);
    reference.run();
    int downloads = 0;
    Simulation device(scene);
    device.setStepper(emulated(&downloads));
    ASSERT_TRUE(device.onDevice());
    device.run();
    ASSERT_EQ(device.history().size(), reference.history().size()); // t = 0, 5, 10, 15, 20
    for (std::size_t k = 0; k < reference.history().size(); ++k) {
        EXPECT_EQ(device.history()[k].step, reference.history()[k].step);
        EXPECT_EQ(device.history()[k].tokens, reference.history()[k].tokens) << "frame " << k;
    }
    EXPECT_EQ(downloads, 4); // the frames at steps 5, 10, 15, 20; steps in between read nothing back
    EXPECT_DOUBLE_EQ(device.time(), reference.time());
}

TEST(DeviceRun, TheRecordGateSkipsDueFramesButNotTheLast) {
    int downloads = 0, asked = 0;
    Simulation sim(deviceScene(1));
    sim.setStepper(emulated(&downloads));
    sim.setRecordGate([&asked] { return ++asked % 4 == 0; }); // every fourth due frame
    sim.run();
    // 19 due frames before the last step ask the gate (4 pass: steps 4, 8, 12, 16); step 20 always records.
    EXPECT_EQ(asked, 19);
    ASSERT_EQ(sim.history().size(), 1u + 4u + 1u);
    EXPECT_EQ(sim.history().back().step, 20);
    EXPECT_EQ(downloads, 5);
}

TEST(DeviceRun, RefusedEditsFallBackToTheFieldsAndComeBack) {
    Scene scene = deviceScene(1);
    int downloads = 0;
    Simulation device(scene), reference(scene);
    device.setStepper(emulated(&downloads));
    for (int i = 0; i < 5; ++i) device.step(), reference.step();

    AttentionSpec l2 = scene.attention;
    l2.type = AttentionType::L2;
    device.setAttention(l2); // the device refuses: the fields take over from the downloaded state
    reference.setAttention(l2);
    EXPECT_FALSE(device.onDevice());
    EXPECT_NE(device.stepperNote().find("no l2"), std::string::npos) << device.stepperNote();
    for (int i = 0; i < 5; ++i) device.step(), reference.step();
    EXPECT_EQ(device.tokens(), reference.tokens());

    device.setAttention(scene.attention); // softmax again: back on the device
    reference.setAttention(scene.attention);
    EXPECT_TRUE(device.onDevice());
    EXPECT_TRUE(device.stepperNote().empty());
    for (int i = 0; i < 5; ++i) device.step(), reference.step();
    device.syncTokens();
    EXPECT_EQ(device.tokens(), reference.tokens());

    IntegratorSpec dopri = scene.integrator;
    dopri.method = Method::DormandPrince;
    device.setIntegrator(dopri);
    EXPECT_FALSE(device.onDevice());
    EXPECT_NE(device.stepperNote().find("fixed steps"), std::string::npos);
}

TEST(DeviceRun, ARefusedSceneIsAskedNotTried) {
    // The device is asked before anything is made: a scene it refuses never reaches its factory, and the
    // note is the device's answer.
    Scene scene = deviceScene(1);
    scene.integrator.method = Method::DormandPrince;
    int downloads = 0, made = 0;
    Simulation sim(scene);
    sim.setStepper(emulated(&downloads, &made));
    EXPECT_FALSE(sim.onDevice());
    EXPECT_EQ(made, 0);
    EXPECT_EQ(sim.stepperNote(), *emulatedRefusal(scene.attention, scene.integrator, scene.d));

    IntegratorSpec rk4 = scene.integrator;
    rk4.method = Method::Rk4;
    sim.setIntegrator(rk4); // accepted: made now, once
    EXPECT_TRUE(sim.onDevice());
    EXPECT_EQ(made, 1);
    EXPECT_TRUE(sim.stepperNote().empty());
}

TEST(DeviceRun, ADeviceFailureInALiveEditFallsBackToTheFields) {
    // A device that accepts an edit by its answer but fails doing it (as a driver might): the run goes on
    // with the fields from the synced tokens, and the note carries the failure.
    class Failing : public EmulatedDevice {
      public:
        using EmulatedDevice::EmulatedDevice;
        void setIntegrator(const IntegratorSpec& spec) override {
            if (armed) throw std::runtime_error("device lost");
            EmulatedDevice::setIntegrator(spec);
        }
        bool armed = false;
    };
    int downloads = 0;
    Failing* device = nullptr;
    const Scene scene = deviceScene(1);
    Simulation sim(scene), reference(scene);
    sim.setStepper([&](const AttentionSpec& a, const IntegratorSpec& i, int d) {
        auto s = std::make_unique<Failing>(a, i, d, &downloads);
        device = s.get();
        return std::unique_ptr<DeviceStepper>(std::move(s));
    });
    ASSERT_TRUE(sim.onDevice());
    for (int i = 0; i < 3; ++i) sim.step(), reference.step();
    device->armed = true;
    IntegratorSpec heun = scene.integrator;
    heun.method = Method::Heun;
    sim.setIntegrator(heun);
    reference.setIntegrator(heun);
    EXPECT_FALSE(sim.onDevice());
    EXPECT_EQ(sim.stepperNote(), "device lost");
    for (int i = 0; i < 3; ++i) sim.step(), reference.step();
    EXPECT_EQ(sim.tokens(), reference.tokens());
}

TEST(DeviceRun, ANonFiniteDownloadKeepsTheLastGoodFrame) {
    // A device that produces NaN after its third step: the run stops with a NonFinite event bracketed by the
    // last good download, and the tokens are those of that download.
    class Poisoned : public EmulatedDevice {
      public:
        using EmulatedDevice::EmulatedDevice;
        void advance(int steps) override {
            EmulatedDevice::advance(steps);
            poisoned_ = poisoned_ || ++count_ >= 3;
        }
        void download(Tokens& X) override {
            EmulatedDevice::download(X);
            if (poisoned_) X(0, 0) = std::numeric_limits<double>::quiet_NaN();
        }

      private:
        int count_ = 0;
        bool poisoned_ = false;
    };
    int downloads = 0;
    const Scene scene = deviceScene(2);
    Simulation sim(scene);
    sim.setStepper([&downloads](const AttentionSpec& a, const IntegratorSpec& i, int d) {
        return std::unique_ptr<DeviceStepper>(new Poisoned(a, i, d, &downloads));
    });
    Simulation reference(scene);
    for (int i = 0; i < 2; ++i) reference.step();
    while (sim.step()) {
    }
    ASSERT_TRUE(sim.event());
    EXPECT_EQ(sim.event()->kind, RunEvent::Kind::NonFinite);
    EXPECT_DOUBLE_EQ(sim.event()->t, 0.2); // the download at step 2 was the last good one
    EXPECT_EQ(sim.stepIndex(), 2);
    EXPECT_EQ(sim.tokens(), reference.tokens());
    EXPECT_TRUE(sim.tokens().allFinite());
}

TEST(DeviceRun, ADormandPrinceStepTheDeviceCannotCompleteIsTheCpuRunsEvent) {
    // A finite-time blow-up (exp attention, dx/dt = e^{x^2} x for one token from x = 1: singular at
    // t = E1(1)/2 = 0.1097): the second step of T/steps = 0.1 collapses. On a device that takes
    // Dormand-Prince the run ends as on the CPU: the same event, time and message, and the last frame at the
    // step's start.
    Scene scene = deviceScene(1);
    scene.d = 1;
    scene.n = 1;
    scene.attention =
        singleHead(AttentionType::Exp, Mat::Identity(1, 1), Mat::Identity(1, 1), Mat::Identity(1, 1));
    scene.integrator.method = Method::DormandPrince;
    scene.integrator.T = 1.0;
    scene.integrator.steps = 10;
    scene.initial.kind = InitKind::Points;
    scene.initial.points = Tokens::Ones(1, 1);
    Simulation reference(scene);
    reference.run();
    ASSERT_TRUE(reference.event());
    ASSERT_EQ(reference.event()->kind, RunEvent::Kind::StepCollapse);

    int downloads = 0;
    Simulation device(scene);
    device.setStepper(
        StepperFactory([&downloads](const AttentionSpec& spec, const IntegratorSpec& integrator, int d) {
            return std::unique_ptr<DeviceStepper>(new EmulatedDevice(spec, integrator, d, &downloads, true));
        }));
    ASSERT_TRUE(device.onDevice());
    device.run();
    ASSERT_TRUE(device.event());
    EXPECT_EQ(device.event()->kind, reference.event()->kind);
    EXPECT_EQ(device.event()->t, reference.event()->t);
    EXPECT_EQ(device.event()->message, reference.event()->message);
    EXPECT_DOUBLE_EQ(device.time(), 0.1);
    ASSERT_EQ(device.history().size(), reference.history().size());
    EXPECT_EQ(device.history().back().tokens, reference.history().back().tokens);
    EXPECT_EQ(device.history().back().step, reference.history().back().step);
}
