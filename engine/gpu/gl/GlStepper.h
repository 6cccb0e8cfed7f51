// Flowscope GPU: whole fixed integration steps on OpenGL 4.3 compute, the tokens never leaving the GPU.
//
// GlKernelField evaluates one velocity per call and reads it back, so a trajectory pays a round trip per
// stage. Here the tokens, the stage inputs and the stage velocities live in device buffers and advance(k)
// only records dispatches: per stage, per head, the streaming kernel (shaders/stream_kernel.comp, queries
// q_i = B x_i formed in the shader) and the head assembly (shaders/head_assembly.comp: normalized average
// times outScale * V, summed over heads); then the Runge-Kutta combination (shaders/stage_combine.comp).
// Every dispatch is followed by a shader-storage barrier (each reads what the previous wrote, or overwrites
// what it read). The GUI can draw straight from tokenBuffer() (the particles stay on the GPU;
// docs/ARCHITECTURE.md, threads).
//
// What runs where: the head setup (B, V, outScale, weighting) is the variant's own CPU setupHead, through
// kernelAverageReference (engine/gpu/common/KernelPass.h), so no variant math is repeated; the GPU does
// float32 arithmetic only. Supported: softmax, exp, relu, sigmoid, masked (causal), multi-head, beta,
// scaleByRootK, keyframes (heads re-set up at every stage time), sphere (tangent projection of each stage
// velocity and re-normalization after each step, as SphereProjection and Simulation do). Not supported
// (SceneError): heads whose key biases or queries depend on the tokens (l2: -beta |K x_j|^2), non-kernel
// variants, and adaptive Dormand-Prince (fixed steps only).
//
// Divergence is not checked on the GPU yet: the caller checks the tokens it downloads (finite, max norm).
// The context of `gl` must be current on the calling thread for every call, the destructor included.
#pragma once

#include "engine/attention/KernelAttention.h"
#include "engine/dynamics/DeviceStepper.h"
#include "engine/gpu/common/KernelPass.h"
#include "engine/gpu/gl/GlCompute.h"
#include "engine/gpu/gl/GlStreamRunner.h"

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace flowscope {

class GlStepper : public DeviceStepper {
  public:
    // Throws SceneError for unsupported attention or integrators (see above).
    GlStepper(const AttentionSpec& spec, const IntegratorSpec& integrator, int d, const GlFunctions& gl);
    ~GlStepper() override;
    GlStepper(const GlStepper&) = delete;
    GlStepper& operator=(const GlStepper&) = delete;

    // Why the stepper cannot take whole steps of these parameters (the message of the SceneError the
    // constructor would throw, naming the field); nullopt when it can. Needs no OpenGL context: callers ask
    // before they make a stepper or edit one (ComputeBackend's StepperFactory::supports).
    static std::optional<std::string> refusal(const AttentionSpec& spec, const IntegratorSpec& integrator,
                                              int d);

    // Replaces the tokens (N x d; scaled to unit norm first for sphere dynamics) and the time. Throws
    // cpuDeviceRefusal's SceneError for too many tokens on llvmpipe.
    void upload(const Tokens& X, double t) override;
    // Records `steps` steps of h = T / M; nothing is read back and nothing waits for the GPU.
    void advance(int steps) override;
    // Reads the tokens back (waits for the GPU). Check divergence here: the GPU does not.
    void download(Tokens& X) override;
    // The time the tokens are at: upload time + steps taken * h (no drift from repeated addition).
    double time() const { return t0_ + double(steps_) * h_; }
    int tokenCount() const { return n_; }
    // Downloads so far (tests check that advance reads nothing back).
    long downloads() const { return downloads_; }

    // The GL name of the token buffer, fixed for the stepper's life (0 before the first upload): n x d
    // float32, structure-of-arrays, coordinate c of token i at float index c * n + i (byte offset
    // 4 (c n + i)); as vertex input, coordinate c is an attribute with offset 4 c n and stride 4. Read it
    // after a glMemoryBarrier(GL_VERTEX_ATTRIB_ARRAY_BARRIER_BIT) or the barrier the reading use needs.
    gl::Uint tokenBuffer() const { return x_.id(); }

    // Live edits: continue from the current tokens and time with new parameters (throws SceneError as the
    // constructor, leaving the stepper unchanged).
    void setAttention(const AttentionSpec& spec) override;
    void setIntegrator(const IntegratorSpec& integrator) override;

    // A copy of the tokens made on the GPU (glCopyBufferSubData after a buffer-update barrier) into a buffer
    // no published copy uses any more, fenced and flushed so that another context of the share group can
    // glWaitSync and draw it while the stepper goes on writing its own buffer. Nothing is read back.
    std::shared_ptr<const DeviceTokens> share(long step) override;
    std::string name() const override { return "OpenGL stepper"; }
    // The tag share() puts in DeviceTokens::shareGroup (the GUI's context group).
    void setShareGroup(const void* group) { shareGroup_ = group; }

  private:
    // One Runge-Kutta stage: evaluate at t + offset * h (at x or at the stage input y) into k[stage], then
    // target = x + a * sum w k[index] (target y: the next stage's input; x: the step's update).
    struct Stage {
        double offset;
        bool atY;
        double a;
        std::vector<std::pair<int, double>> terms;
        bool toX;
    };
    struct Head; // per-head parameter buffers and kernel variant

    static std::vector<Stage> stagesOf(const IntegratorSpec& integrator);
    // The SceneError stagesOf throws for an integrator the stepper cannot run.
    static std::optional<SceneError> integratorRefusal(const IntegratorSpec& integrator);
    // The SceneError for a head of `spec` whose key biases or queries depend on the tokens (set up by `ref`).
    static std::optional<SceneError> headsRefusal(const KernelAttention& ref, const AttentionSpec& spec,
                                                  int d);
    // Throws headsRefusal's error.
    void checkSupported(const KernelAttention& ref, const AttentionSpec& spec) const;
    void buildCombines();
    void prepareHeads(double t);
    void evaluate(double t, const GlBuffer& at, const GlBuffer& velocity);
    void normalizeTokens();
    // The streaming kernel's layout for n tokens on this context.
    StreamKernelLayout layout(int n) const;
    // Workgroups of `groupSize` invocations covering the tokens.
    long groups(int groupSize) const { return (long(n_) + groupSize - 1) / groupSize; }
    void dispatch(const GlProgram& program, long groups);

    const GlFunctions* gl_;
    int d_;
    AttentionSpec spec_;
    std::unique_ptr<KernelAttention> reference_; // float64 CPU field: head setup only
    std::vector<Stage> stages_;
    double h_ = 0.0;

    int n_ = 0;
    double t0_ = 0.0;
    long steps_ = 0;
    long downloads_ = 0;
    Tokens probe_; // n x d zeros: what setupHead sees (the supported heads do not read the tokens)

    long sharedBytes_ = 32768, invocations_ = 1024;
    bool sharedStaging_ = true;
    bool cpuDevice_ = false; // llvmpipe: at most kCpuDeviceMaxKeys tokens
    GlStreamPrograms streamPrograms_;
    std::optional<GlProgram> assembly_, combine_;
    GlBuffer x_, y_, kernelOut_, clearParams_;
    std::vector<std::unique_ptr<GlBuffer>> k_, combineParams_;
    std::vector<std::unique_ptr<Head>> heads_;
    bool headsReady_ = false; // constant heads: parameter buffers already hold this spec and N
    std::vector<std::shared_ptr<DeviceTokens>> shared_; // published copies; reused when only we hold one
    const void* shareGroup_ = nullptr;
};

} // namespace flowscope
