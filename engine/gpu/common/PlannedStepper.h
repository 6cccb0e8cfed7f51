// Flowscope GPU: a DeviceStepper that follows a StepperPlan, the part every device stepper shares.
//
// The plan (StepperPlan.h) says what to compute; this base turns the DeviceStepper calls into it, so that
// GlStepper and VkStepper implement only how bytes and dispatches reach their device: writeTokens and
// readTokens (the float32 structure-of-arrays tokens), takeSteps (the dispatches plan().walk gives),
// projectTokens (sphere dynamics turned on by a live edit), and planChanged (the combine words changed).
//
// Dormand-Prince is walked here, on four more: evaluate, combine, errorPartials (the one read-back per
// sub-step: a float per workgroup) and keepTokens (a copy of x at each step's start, put back when a step
// fails), with the CPU integrator's controller (DormandPrince.h) choosing every sub-step. The stage
// velocities are the device's buffers 0..6; which one holds k1 rotates (first same as last), so accepting
// a sub-step moves no velocity.
#pragma once

#include "engine/attention/VelocityField.h"
#include "engine/dynamics/DeviceStepper.h"
#include "engine/gpu/common/StepperPlan.h"

#include <array>
#include <memory>
#include <string>
#include <vector>

namespace flowscope {

class PlannedStepper : public DeviceStepper {
  public:
    PlannedStepper(const PlannedStepper&) = delete;
    PlannedStepper& operator=(const PlannedStepper&) = delete;

    // Replaces the tokens (N x d; scaled to unit norm first for sphere dynamics) and the time. Throws
    // cpuDeviceRefusal's SceneError for too many tokens on a CPU device (llvmpipe, lavapipe).
    void upload(const Tokens& X, double t) final;
    // Records `steps` steps of h = T / M; for fixed steps nothing is read back and nothing waits for the
    // device. Dormand-Prince waits for each sub-step's error norm (one float per workgroup), and stops at
    // a step it cannot complete (outcome()).
    void advance(int steps) final;
    StepResult outcome() const final { return outcome_; }
    // Reads the tokens back (waits for the device). Check divergence here: the device does not.
    void download(Tokens& X) final;
    // Live edits: continue from the current tokens and time with new parameters (throw SceneError as the
    // constructor, leaving the stepper unchanged).
    void setAttention(const AttentionSpec& spec) final;
    void setIntegrator(const IntegratorSpec& integrator) final;
    // The attention's field on a StreamRunner that runs each pass on the token buffer (residentPass), where
    // the device has one and the field reads the tokens themselves (not pre- or peri-LN), else null. Nothing
    // is uploaded: l2's key biases are formed in the kernel from the tokens (QUAD_BIAS), as in the stepper's
    // own passes.
    VelocityField* residentField() final;

    // The time the tokens are at: upload time + steps taken * h (no drift from repeated addition).
    double time() const { return plan_.time(); }
    int tokenCount() const { return plan_.n(); }
    // Downloads so far (tests check that advance reads nothing back).
    long downloads() const { return downloads_; }

  protected:
    // Throws SceneError for what StepperPlan::refusal(spec, integrator, d, api) names.
    PlannedStepper(const AttentionSpec& spec, const IntegratorSpec& integrator, int d, std::string api,
                   StreamKernelDevice device)
        : plan_(spec, integrator, d, std::move(api), std::move(device)) {}

    StepperPlan& plan() { return plan_; }
    const StepperPlan& plan() const { return plan_; }

    // Grows the buffers a stepper keeps beside the tokens X (writeTokens): y, the stage velocities k, the
    // step's start and the directions (X's size each), the error partials (a float per workgroup) and the
    // kernel's output (n x (d + 3) floats: a resident pass may add the entropy's e_i, stream_kernel.comp's
    // ENTROPY).
    template <class Buffer, class Velocities>
    void reserveWork(const Eigen::MatrixXf& X, Buffer& y, Velocities& k, Buffer& start, Buffer& directions,
                     Buffer& partials, Buffer& kernelOut) const {
        const std::size_t bytes = std::size_t(X.size()) * sizeof(float);
        y.reserve(bytes);
        for (auto& velocity : k) velocity->reserve(bytes);
        start.reserve(bytes);
        directions.reserve(bytes);
        partials.reserve(std::size_t(stepperGroups(X.rows())) * sizeof(float));
        kernelOut.reserve(std::size_t(X.rows()) * (plan_.d() + 3) * sizeof(float));
    }

    // Puts X (n x d float32, column-major: the shaders' layout) in the token buffer, growing the device's
    // buffers for n tokens; throws the device's error, leaving the plan as it was, when it cannot take n.
    virtual void writeTokens(const Eigen::MatrixXf& X) = 0;
    // Reads the token buffer into X (sized n x d by the caller; n > 0).
    virtual void readTokens(Eigen::MatrixXf& X) = 0;
    // Records `steps` steps through plan().walk (n > 0).
    virtual void takeSteps(int steps) = 0;
    // Projects the tokens onto the unit sphere with plan().normalizeWords() (n > 0).
    virtual void projectTokens() = 0;
    // The plan's combine words changed (a new N, attention or integrator: plan().combinesVersion()).
    virtual void planChanged() {}
    // Dormand-Prince's steps (plan().adaptive()). `k` below is a stage-velocity buffer,
    // 0..kStageVelocities-1. Records the velocity at time t of x or y into buffer k.
    virtual void evaluate(double t, bool atY, int k) = 0;
    // Records stage_combine with call.words, slot s reading buffer k[call.k[s]].
    virtual void combine(const CombineCall& call, const std::array<int, kCombineSlots>& k) = 0;
    // Runs the error pass (stage_combine, call.words, the same binding of slots) after everything recorded,
    // waits for it and reads its per-workgroup partial sums into `partials` (sized stepperGroups(n)).
    virtual void errorPartials(const CombineCall& call, const std::array<int, kCombineSlots>& k,
                               std::vector<float>& partials) = 0;
    // Records a copy of x into a buffer of its own (restore: back into x).
    virtual void keepTokens(bool restore) = 0;
    // Submits what is recorded (called after the last sub-step of an advance).
    virtual void flush() {}
    // Whether residentPass is implemented.
    virtual bool hasResidentPass() const { return false; }
    // Runs shaders/stream_kernel.comp, variant in.variant with the parameter words in.params (queries B x_i
    // formed in the shader; with QUAD_BIAS the key biases too), over the token buffer as keys and queries,
    // and reads its n x out.cols() sums into `out` (waits for the device). in.keys is not read: the keys are
    // the device's tokens.
    virtual void residentPass(const StreamKernelInputs& in, Eigen::MatrixXf& out) {
        (void)in;
        (void)out;
    }

  private:
    class ResidentRunner;

    // One step of Dormand-Prince from plan().time(); when it fails (not ok), the tokens are put back.
    StepResult takeAdaptiveStep();

    StepperPlan plan_;
    StepResult outcome_;
    std::array<int, kStageVelocities> velocities_ = {0, 1, 2, 3, 4, 5, 6}; // stage j's k is in buffer [j]
    long downloads_ = 0;
    std::unique_ptr<VelocityField> resident_; // residentField(), made on first use
};

} // namespace flowscope
