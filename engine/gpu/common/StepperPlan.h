// Flowscope GPU: what a device stepper computes, whatever the device (GlStepper, VkStepper).
//
// A device stepper keeps the tokens x, a stage input y and the stage velocities k0..k3 in device buffers and
// takes whole fixed Runge-Kutta steps there with three shaders: per stage, per head, the streaming kernel
// (shaders/stream_kernel.comp, queries q_i = B x_i formed in the shader) and the head assembly
// (shaders/head_assembly.comp: normalized average times outScale * V, summed over heads); then the stage
// combination (shaders/stage_combine.comp). Everything about those dispatches that is not the device's API
// lives here once: which integrators, heads and variants a stepper takes (and the SceneError naming the field
// when not), the stage table, the shaders' parameter words, and the time bookkeeping. A device only moves
// bytes and records dispatches in the order walk() gives.
//
// What runs where: the head setup (B, V, outScale, weighting) is the variant's own CPU setupHead, through
// kernelAverageReference (KernelPass.h), so no variant math is repeated; the device does float32 arithmetic
// only. Supported: softmax, exp, relu, sigmoid, masked (causal), multi-head, beta, scaleByRootK, keyframes
// (heads re-set up at every stage time), sphere (tangent projection of each stage velocity and
// re-normalization after each step, as SphereProjection and Simulation do), pre- and peri-LN (the kernel
// reads the directions x_j / |x_j|, which a stage_combine pass writes first, directionWords; peri's last head
// assembly scales the velocity to unit norm: DirectionField), positional decay (the kernel's POS_DECAY), l2
// (its key biases -gamma |K x_j|^2 are a quadratic form of the keys, which the kernel forms from the tokens
// it reads: QUAD_BIAS, KernelAttention::quadraticKeyBias). Refused (SceneError): heads whose key biases or
// queries depend on the tokens in any other way, and non-kernel variants.
//
// Integrators: Euler, Heun and RK4 as a fixed stage table (walk); adaptive Dormand-Prince 5(4) as sub-steps
// the CPU's controller chooses (DormandPrince.h): the plan gives each sub-step's combinations
// (dormandPrinceCombine) and its error pass (dormandPrinceError, stage_combine's per-workgroup sums of
// squared scaled errors, read back and added in double), and PlannedStepper drives them.
#pragma once

#include "engine/attention/KernelAttention.h"
#include "engine/dynamics/DormandPrince.h"
#include "engine/gpu/common/KernelPass.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace flowscope {

// The local size of head_assembly.comp and stage_combine.comp (one invocation per token).
inline constexpr int kStepperGroup = 64;
// Workgroups of kStepperGroup covering n tokens (also the error pass's partial sums).
inline long stepperGroups(long n) {
    return (n + kStepperGroup - 1) / kStepperGroup;
}
// The stage velocities stage_combine.comp reads (bindings 3..8), and the ones a stepper keeps: k0..k3 for the
// fixed methods, k0..k6 for Dormand-Prince.
inline constexpr int kCombineSlots = 6;
inline constexpr int kStageVelocities = 7;

// One dispatch of stage_combine.comp: its Params words, and the stage velocity each slot reads (the plan's
// index of k; unread slots repeat a read one).
struct CombineCall {
    std::vector<std::uint32_t> words;
    std::array<int, kCombineSlots> k{};
};

// One Runge-Kutta stage: evaluate at t + offset * h (at x or at the stage input y) into k[stage], then
// target = x + a * sum w k[index] (target y: the next stage's input; x: the step's update).
struct StepperStage {
    double offset;
    bool atY;
    double a;
    std::vector<std::pair<int, double>> terms; // (index of k, weight w)
    bool toX;
};

// One head at one time: the streaming kernel's variant and Params words (n, n, pads, B) and head_assembly's
// Params words (n, d, weighting, flags, 1/n, pads, W = outScale V).
struct StepperHead {
    StreamKernelVariant variant;
    std::vector<std::uint32_t> kernelParams, assemblyParams;
};

class StepperPlan {
  public:
    // `api` names the stepper in messages ("OpenGL": "the OpenGL stepper does not implement ..."),
    // `device` lays out the streaming kernel (streamKernelLayout). Throws SceneError for what refusal()
    // names, in the same order.
    StepperPlan(const AttentionSpec& spec, const IntegratorSpec& integrator, int d, std::string api,
                StreamKernelDevice device);

    // Why a stepper on `api` cannot take whole steps of these parameters (the message of the SceneError the
    // constructor would throw, naming the field); nullopt when it can. Needs no device.
    static std::optional<std::string> refusal(const AttentionSpec& spec, const IntegratorSpec& integrator,
                                              int d, const std::string& api);

    int d() const { return d_; }
    int n() const { return n_; }
    const AttentionSpec& spec() const { return spec_; }
    const StreamKernelDevice& device() const { return device_; }
    const std::vector<StepperStage>& stages() const { return stages_; }
    double h() const { return h_; }
    // The streaming kernel's layout for n tokens on the device, and a bound on its workgroups (what a device
    // checks against its dispatch limit before it takes n tokens).
    StreamKernelLayout layout(int n) const;
    long kernelGroupsBound(long n) const { return streamKernelGroups({.tile = layout(int(n)).tile}, n); }
    // The time the tokens are at: upload time + steps taken * h (no drift from repeated addition).
    double time() const { return t0_ + double(steps_) * h_; }
    // Bumped whenever the combine words change (a new N, attention or integrator): re-upload them then.
    long combinesVersion() const { return combinesVersion_; }

    // The tokens as the device stores them: float32, column-major (the shaders' structure-of-arrays layout,
    // coordinate c of token i at c n + i), scaled to unit norm first for sphere dynamics. Throws
    // std::invalid_argument when X does not have d columns, and cpuDeviceRefusal's SceneError for more tokens
    // than a CPU device's shader loops reach.
    Eigen::MatrixXf deviceTokens(const Tokens& X) const;
    // The device now holds n tokens at time t (after deviceTokens' upload).
    void restart(int n, double t);

    // Calls evaluate(t, stage, index) and then combine(stage, index) for every stage of `steps` steps from
    // the current time, counting the steps as they are taken. evaluate computes k[index] at time t from x or
    // y (stage.atY); combine writes the stage's target with combineWords(index).
    template <class Evaluate, class Combine> void walk(int steps, Evaluate&& evaluate, Combine&& combine) {
        for (int step = 0; step < steps; ++step) {
            const double t = time();
            for (std::size_t s = 0; s < stages_.size(); ++s) {
                evaluate(stageTime(t, t + stages_[s].offset * h_), stages_[s], s);
                combine(stages_[s], s);
            }
            ++steps_;
        }
    }
    // The time a stage of the step from t0 evaluates the heads at: t itself, except that piecewise-constant
    // keyframes are layers, so every stage uses the layer in force inside the step (clamped 1e-9 h inside
    // it), as Simulation::step does on the CPU.
    double stageTime(double t0, double t) const;

    // Dormand-Prince: whether the plan takes adaptive sub-steps (then stages() is empty and PlannedStepper
    // walks them), and their step-size control (kept across steps, reset by restart and live edits).
    bool adaptive() const { return control_.has_value(); }
    DormandPrinceControl& control() { return *control_; }
    // The combination of a sub-step of size h that forms stage s's input in y (s = 1..5: x + h sum a_sj k_j)
    // or x_new (s = 6); with toX, x_new written to x instead (the accepted sub-step; normalized for sphere
    // dynamics when it lands on the step's end).
    CombineCall dormandPrinceCombine(int s, double h, bool toX = false, bool landing = false) const;
    // The error pass of a sub-step of size h: per workgroup of kStepperGroup tokens, the sum over its tokens
    // and coordinates of (h sum e_j k_j / (atol + rtol max(|x|, |y|)))^2, y holding x_new.
    CombineCall dormandPrinceError(double h) const;
    // Counts steps without any work (no tokens uploaded yet).
    void skip(int steps) { steps_ += std::max(steps, 0); }

    // The heads at time t (set up again only for keyframes, or after a new N or attention) and a version
    // bumped whenever they were set up again: a device re-uploads their words when it changed.
    const std::vector<StepperHead>& heads(double t);
    long headsVersion() const { return headsVersion_; }

    // stage_combine's dispatch for stage s: Params words n, d, count, flags (write x; normalize for sphere
    // dynamics at the step's update; error pass), a, w0..w5, atol, rtol.
    CombineCall combine(std::size_t s) const;
    std::vector<std::uint32_t> combineWords(std::size_t s) const { return combine(s).words; }
    // stage_combine's words that only project x onto the sphere (count 0, write x, normalize).
    std::vector<std::uint32_t> normalizeWords() const;
    // head_assembly's words that clear the velocity (a spec with no heads).
    std::vector<std::uint32_t> clearWords() const;
    // Pre- and peri-LN: the kernel's keys and queries are the directions of the evaluation point, which
    // stage_combine writes into a buffer of their own with directionWords() (count 0, target y, normalize;
    // bound with the evaluation point as x and the directions' buffer as y) before each evaluation.
    bool readsDirections() const;
    std::vector<std::uint32_t> directionWords() const;

    // Live edits, continuing from the current tokens and time; throw SceneError and change nothing when
    // refused. setAttention returns whether the tokens must now be projected onto the sphere (sphere
    // dynamics turned on: dispatch normalizeWords), as Simulation::setAttention does.
    bool setAttention(const AttentionSpec& spec);
    void setIntegrator(const IntegratorSpec& integrator);

  private:
    CombineCall combineCall(const std::vector<std::pair<int, double>>& terms, double a,
                            std::uint32_t flags) const;
    static std::optional<DormandPrinceControl> controlOf(const IntegratorSpec& integrator);
    static std::vector<StepperStage> stagesOf(const IntegratorSpec& integrator, const std::string& api);
    // The SceneError stagesOf throws for an integrator the stepper cannot run.
    static std::optional<SceneError> integratorRefusal(const IntegratorSpec& integrator,
                                                       const std::string& api);
    // The SceneError for a head of `spec` whose key biases or queries depend on the tokens (set up by `ref`).
    static std::optional<SceneError> headsRefusal(const KernelAttention& ref, const AttentionSpec& spec,
                                                  int d, const std::string& api);
    // The float64 CPU field whose head setup the stepper uses; throws what refusal() names.
    static std::unique_ptr<KernelAttention> reference(const AttentionSpec& spec, int d,
                                                      const std::string& api);

    int d_;
    std::string api_;
    StreamKernelDevice device_;
    AttentionSpec spec_;
    std::unique_ptr<KernelAttention> reference_; // float64 CPU field: head setup only
    std::vector<StepperStage> stages_;
    std::optional<DormandPrinceControl> control_; // Dormand-Prince
    double h_ = 0.0;

    int n_ = 0;
    double t0_ = 0.0;
    long steps_ = 0;
    long combinesVersion_ = 0;
    Tokens probe_; // n x d zeros: what setupHead sees (the supported heads do not read the tokens)
    std::vector<StepperHead> heads_;
    bool headsReady_ = false; // constant heads: heads_ hold this spec and N
    long headsVersion_ = 0;
};

} // namespace flowscope
