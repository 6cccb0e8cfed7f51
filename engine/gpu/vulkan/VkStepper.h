// Flowscope GPU: whole fixed integration steps on Vulkan compute, the tokens never leaving the device.
//
// VkKernelField evaluates one velocity per call, waits for it and reads it back, so a trajectory pays a
// round trip per stage. Here the tokens x, the stage input y, the stage velocities k0..k3 and the kernel's
// output live in device-local buffers (VkPlacement::Device), and advance(k) records the dispatches
// StepperPlan (engine/gpu/common/StepperPlan.h) walks: per stage, per head, the streaming kernel
// (shaders/stream_kernel.comp, specialized by the head's StreamKernelVariant) and the head assembly
// (shaders/head_assembly.comp), then the Runge-Kutta combination (shaders/stage_combine.comp), with a
// compute-to-compute barrier between consecutive dispatches (each reads what the previous wrote, or
// overwrites what it read). What is supported, the stage table, every parameter word and the DeviceStepper
// calls are the plan's and PlannedStepper's, shared with GlStepper, so the two steppers compute the same
// float32 arithmetic.
//
// Submission: the dispatches of up to kMaxDispatches go into one VkCommandBatch with a descriptor set per
// dispatch and the parameter words they read (keyframed heads are set up again at every stage time, so each
// evaluation may read words of its own), and are submitted without waiting. A few batches are used in turn,
// so the host records the next steps while the device runs the last ones; only download() (and upload(),
// which may grow the buffers) waits. Tokens reach the device through a host-visible staging buffer.
// Dormand-Prince records each sub-step into one batch (its update goes into the next) and waits for its
// error partials, which come back through the staging buffer.
//
// Divergence is not checked on the device: the caller checks the tokens it downloads (finite, max norm).
// There is no drawable device copy (share() is null: Vulkan memory is not an OpenGL buffer here). Calls may
// come from any one thread at a time; `ctx` must outlive the stepper.
#pragma once

#include "engine/gpu/common/PlannedStepper.h"
#include "engine/gpu/vulkan/VkCompute.h"

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace flowscope {

class VkStepper : public PlannedStepper {
  public:
    // Throws SceneError for unsupported attention or integrators (StepperPlan), VkError when the device
    // cannot set the kernels up.
    VkStepper(const AttentionSpec& spec, const IntegratorSpec& integrator, int d, const VkContext& ctx);
    ~VkStepper() override; // waits for the device

    // Why the stepper cannot take whole steps of these parameters (the message of the SceneError the
    // constructor would throw, naming the field); nullopt when it can. Needs no device.
    static std::optional<std::string> refusal(const AttentionSpec& spec, const IntegratorSpec& integrator,
                                              int d) {
        return StepperPlan::refusal(spec, integrator, d, "Vulkan");
    }

    // Submissions so far: advance records its steps into few (only a batch the device still runs when its
    // turn to be recorded comes again is waited for), and only download waits for the device.
    long submissions() const { return submissions_; }
    std::string name() const override { return "Vulkan stepper"; }

    // The most dispatches one submission records (advance splits longer runs of steps).
    static constexpr int kMaxDispatches = 1024;

  private:
    void writeTokens(const Eigen::MatrixXf& X) override;
    void readTokens(Eigen::MatrixXf& X) override;
    void takeSteps(int steps) override;
    // Copies the first `bytes` of `from` to host memory `to` through the staging buffer, at the end of
    // `batch` (submitted, and waited for).
    void readBack(VkCommandBatch& batch, const VkStorageBuffer& from, void* to, std::size_t bytes);
    bool hasResidentPass() const override { return true; }
    void residentPass(const StreamKernelInputs& in, Eigen::MatrixXf& out) override;
    void projectTokens() override;
    void evaluate(double t, bool atY, int k) override;
    void combine(const CombineCall& call, const std::array<int, kCombineSlots>& k) override;
    void errorPartials(const CombineCall& call, const std::array<int, kCombineSlots>& k,
                       std::vector<float>& partials) override;
    void keepTokens(bool restore) override;
    void flush() override;
    // The batch Dormand-Prince records into, begun with room for one sub-step and an update.
    VkCommandBatch& openBatch();

    // The next batch of the ring, begun with room for `dispatches` dispatches and `parameterWords` words.
    VkCommandBatch& beginBatch(int dispatches, std::size_t parameterWords);
    void submit(VkCommandBatch& batch);
    // Waits for every submitted batch.
    void finish();
    // Records the evaluation of k = v(t, at) into the batch.
    void recordEvaluation(VkCommandBatch& batch, double t, const VkStorageBuffer& at,
                          const VkStorageBuffer& velocity);
    void recordCombine(VkCommandBatch& batch, const VkBufferRange& params,
                       const std::array<int, kCombineSlots>& k);
    std::uint32_t groups(int groupSize) const;
    // Dispatches and parameter words of `steps` steps (upper bounds), for beginBatch.
    int dispatchesPerStep() const;
    std::size_t parameterWords(int steps) const;
    // The parameter words of one set of heads (each kernel's and assembly's; a QUAD_BIAS kernel adds M).
    std::size_t headWords() const;

    const VkContext* ctx_;
    long submissions_ = 0;

    VkComputeKernel stream_, assembly_, combine_;
    // directions_: pre- and peri-LN's x_j / |x_j| at the evaluation point (StepperPlan::directionWords).
    VkStorageBuffer x_, y_, kernelOut_, staging_, start_, partials_, directions_;
    std::array<std::unique_ptr<VkStorageBuffer>, kStageVelocities> k_;
    VkCommandBatch* open_ = nullptr; // openBatch(), until submitted

    // The batch being recorded: the parameter ranges its dispatches bind (heads as of the plan's
    // headsVersion, -1: none yet in this batch).
    struct HeadRanges {
        VkBufferRange kernel, assembly;
        std::vector<std::uint32_t> constants; // the stream kernel's specialization (streamKernelConstants)
        long groups;                          // its workgroups (streamKernelGroups)
    };
    std::vector<HeadRanges> headRanges_;
    long headsRecorded_ = -1;
    VkBufferRange clearRange_, directionRange_; // this batch's clear and direction words, once recorded

    // Declared last: destroyed (each waiting for its submission) before the buffers they use.
    std::array<std::unique_ptr<VkCommandBatch>, 3> batches_;
    std::size_t nextBatch_ = 0;
};

} // namespace flowscope
