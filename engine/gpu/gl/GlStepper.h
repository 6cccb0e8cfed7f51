// Flowscope GPU: whole fixed integration steps on OpenGL 4.3 compute, the tokens never leaving the GPU.
//
// GlKernelField evaluates one velocity per call and reads it back, so a trajectory pays a round trip per
// stage. Here the tokens, the stage inputs and the stage velocities live in device buffers and advance(k)
// only issues the dispatches StepperPlan (engine/gpu/common/StepperPlan.h) walks: per stage, per head, the
// streaming kernel and the head assembly, then the Runge-Kutta combination; what is supported, the stage
// table, every parameter word and the DeviceStepper calls are the plan's and PlannedStepper's, shared with
// the Vulkan stepper. Every dispatch is followed
// by a shader-storage barrier (each reads what the previous wrote, or overwrites what it read). The GUI can
// draw straight from tokenBuffer() (the particles stay on the GPU; docs/ARCHITECTURE.md, threads).
//
// Divergence is not checked on the GPU yet: the caller checks the tokens it downloads (finite, max norm).
// The context of `gl` must be current on the calling thread for every call, the destructor included.
#pragma once

#include "engine/gpu/common/PlannedStepper.h"
#include "engine/gpu/gl/GlCompute.h"
#include "engine/gpu/gl/GlStreamRunner.h"

#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace flowscope {

class GlStepper : public PlannedStepper {
  public:
    // Throws SceneError for unsupported attention or integrators (StepperPlan), GlError when a shader fails.
    GlStepper(const AttentionSpec& spec, const IntegratorSpec& integrator, int d, const GlFunctions& gl);
    ~GlStepper() override;

    // Why the stepper cannot take whole steps of these parameters (the message of the SceneError the
    // constructor would throw, naming the field); nullopt when it can. Needs no OpenGL context: callers ask
    // before they make a stepper or edit one (ComputeBackend's StepperFactory::supports).
    static std::optional<std::string> refusal(const AttentionSpec& spec, const IntegratorSpec& integrator,
                                              int d) {
        return StepperPlan::refusal(spec, integrator, d, "OpenGL");
    }

    // The GL name of the token buffer, fixed for the stepper's life (0 before the first upload): n x d
    // float32, structure-of-arrays, coordinate c of token i at float index c * n + i (byte offset
    // 4 (c n + i)); as vertex input, coordinate c is an attribute with offset 4 c n and stride 4. Read it
    // after a glMemoryBarrier(GL_VERTEX_ATTRIB_ARRAY_BARRIER_BIT) or the barrier the reading use needs.
    gl::Uint tokenBuffer() const { return x_.id(); }

    // A copy of the tokens made on the GPU (glCopyBufferSubData after a buffer-update barrier) into a buffer
    // no published copy uses any more, fenced and flushed so that another context of the share group can
    // glWaitSync and draw it while the stepper goes on writing its own buffer. Nothing is read back.
    std::shared_ptr<const DeviceTokens> share(long step) override;
    std::string name() const override { return "OpenGL stepper"; }
    // The tag share() puts in DeviceTokens::shareGroup (the GUI's context group).
    void setShareGroup(const void* group) { shareGroup_ = group; }
    // Fixed steps queued on the GPU and not yet known to be done (at most kQueuedAdvances; see paceQueue).
    int queuedAdvances() const { return int(queued_.size()); }
    // Advances the CPU may queue ahead of the GPU. The GL queue is otherwise as deep as the driver lets it
    // be, and a view's draw in another context waits behind all of it: uncapped steps at N = 65536 left
    // frames at 375 ms each (2.6 frames/s on an H200; docs/gpu.md#drawing-at-scale).
    static constexpr int kQueuedAdvances = 3;

  private:
    struct Head; // per-head parameter buffers and kernel variant

    void writeTokens(const Eigen::MatrixXf& X) override;
    void readTokens(Eigen::MatrixXf& X) override;
    void takeSteps(int steps) override;
    void projectTokens() override;
    void planChanged() override; // uploads the combine words
    bool hasResidentPass() const override { return true; }
    void residentPass(const StreamKernelInputs& in, Eigen::MatrixXf& out) override;
    void evaluate(double t, bool atY, int k) override;
    void combine(const CombineCall& call, const std::array<int, kCombineSlots>& k) override;
    void errorPartials(const CombineCall& call, const std::array<int, kCombineSlots>& k,
                       std::vector<float>& partials) override;
    void keepTokens(bool restore) override;

    void uploadHeads(double t);
    void evaluateInto(double t, const GlBuffer& at, const GlBuffer& velocity);
    // Binds stage_combine's buffers: x, y, the slots' velocities and the error partials.
    void bindCombine(const std::array<int, kCombineSlots>& k);
    // Workgroups of `groupSize` invocations covering the tokens.
    long groups(int groupSize) const { return (long(plan().n()) + groupSize - 1) / groupSize; }
    void dispatch(const GlComputeProgram& program, long groups);
    // Fences the advance just recorded, then waits until at most kQueuedAdvances are queued.
    void paceQueue();

    const GlFunctions* gl_;

    GlStreamPrograms streamPrograms_;
    std::optional<GlComputeProgram> assembly_, combine_;
    // directions_: pre- and peri-LN's x_j / |x_j| at the evaluation point, written before each evaluation
    // with directionParams_ (StepperPlan::directionWords).
    GlBuffer x_, y_, kernelOut_, clearParams_, start_, partials_, directions_, directionParams_;
    std::vector<std::unique_ptr<GlBuffer>> k_, combineParams_;
    std::vector<std::array<int, kCombineSlots>> combineSlots_; // the velocities each stage's combine reads
    // Dormand-Prince's combine words, used in turn: a sub-step uploads at most 8, and its error read-back
    // waits for the last one, so no buffer is overwritten while a queued dispatch still reads it.
    std::vector<std::unique_ptr<GlBuffer>> adaptiveParams_;
    std::size_t nextParams_ = 0;
    std::vector<std::unique_ptr<Head>> heads_;
    long combinesUploaded_ = -1, headsUploaded_ = -1;   // the plan's versions the buffers hold
    std::vector<std::shared_ptr<DeviceTokens>> shared_; // published copies; reused when only we hold one
    const void* shareGroup_ = nullptr;
    std::deque<gl::Sync> queued_; // a fence after each advance not yet waited for, oldest first
};

} // namespace flowscope
