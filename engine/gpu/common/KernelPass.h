// Flowscope GPU: the host side of the streaming attention kernel, shared by every GPU backend.
//
// shaders/stream_kernel.comp is one kernel run by several hosts (OpenGL, Vulkan). They differ only in how
// bytes reach the device and how the kernel is specialized; everything else lives here once: which kernel
// variant a pass needs, the pass's inputs in the kernel's float32 layout, and KernelPassRunner, the
// StreamRunner that turns a pass into those inputs and the kernel's outputs back into double sums. A backend
// implements only KernelPassRunner::dispatch. The variant math (head setup, Sinkhorn iterations, ...) is the
// CPU classes' own (engine/attention/StreamRunner.h); see GpuField.h.
#pragma once

#include "engine/attention/KernelAttention.h"

#include <Eigen/Dense>

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

namespace flowscope {

// The knobs of shaders/stream_kernel.comp (#defines in OpenGL, specialization constants 0..7 in Vulkan).
struct StreamKernelVariant {
    int dim = 1;
    Weighting weighting = Weighting::Softmax;
    bool causal = false;
    bool hasBias = false;
    bool explicitQueries = false;
    int tile = 64;
    bool stageInShared = true;
    bool values = true;
    bool entropy = false; // e_i in column d + 2 (softmax and exp only)
};

// Everything one dispatch reads, in its std430 / structure-of-arrays layout.
struct StreamKernelInputs {
    StreamKernelVariant variant;
    int n = 0;                         // keys
    int nq = 0;                        // queries (rows of the output)
    std::vector<std::uint32_t> params; // Params block: n, nq, two pads, B row-major as float bits
    Eigen::MatrixXf keys;              // n x d (column-major = the kernel's SoA layout)
    Eigen::VectorXf bias;              // n key biases when variant.hasBias
    Eigen::MatrixXf queries;           // nq x d queries when variant.explicitQueries
};

// The inputs of one pass. Queries are formed on the host in double and rounded once, as the CPU float32
// path forms them, unless `queriesOnGpu` and the pass's queries come from its keys (then q = B x in the
// shader: float B times float x, two roundings, measured up to ~6x the CPU float32 error for exp attention,
// whose weight e^{m_i} amplifies score errors). Throws std::invalid_argument for a causal pass whose query
// count is not the key count.
StreamKernelInputs streamKernelInputs(const StreamPass& pass, bool queriesOnGpu, int tile,
                                      bool stageInShared);
// The inputs of one head's pass over keys X (headPass; explicit queries of the head always go to the kernel).
StreamKernelInputs streamKernelInputs(const Tokens& X, const HeadSetup& head, bool causal, bool queriesOnGpu,
                                      int tile, bool stageInShared);

// The float64 CPU field of a kernel-average spec (softmax, l2, exp, relu, sigmoid) without sphere
// projection, for hosts that need its head setup (GlStepper). Throws SceneError("/attention/type", "the
// <backend> backend does not implement ...") for the other variants. GPU fields take every variant
// (GpuField).
std::unique_ptr<KernelAttention> kernelAverageReference(AttentionSpec spec, int d, const char* backend);
// The error kernelAverageReference would throw for an attention type, without building anything: hosts ask it
// before they run (ComputeBackend::supports).
std::optional<SceneError> kernelAverageRefusal(AttentionType type, const char* backend);

// The largest power-of-two tile <= 64 whose staged keys and biases (tile * (d + 1) floats) fit `sharedBytes`
// and whose workgroup fits `maxInvocations`.
int streamKernelTile(int d, long sharedBytes, long maxInvocations);

// The kernel's knobs that depend on the device, not on the pass: the tile (streamKernelTile) and
// shared-memory staging (KernelPassRunner::sharedStaging). A device stepper (StepperPlan) asks its host for
// them.
struct StreamKernelShape {
    int tile = 64;
    bool stageInShared = true;
};

// A StreamRunner on a GPU backend: float32 passes of shaders/stream_kernel.comp, one dispatch each.
class KernelPassRunner : public StreamRunner {
  public:
    void run(const StreamPass& pass, StreamSums& out) override;
    Precision precision() const override { return Precision::Float32; }

    // Whether each tile of keys is staged in shared memory (STAGE_IN_SHARED). On by default on GPUs; off on
    // CPU devices (llvmpipe, lavapipe), whose barriers are coroutine switches (measured 2.2x slower there).
    void setSharedStaging(bool on) { sharedStaging_ = on; }
    bool sharedStaging() const { return sharedStaging_; }
    // Whether queries q_i = B x_i are formed in the shader (float32; what a GPU-resident token buffer needs)
    // or on the host in double, rounded once like the CPU float32 path (the default: more accurate).
    void setQueriesOnGpu(bool on) { queriesOnGpu_ = on; }
    bool queriesOnGpu() const { return queriesOnGpu_; }

  protected:
    // The device's shared memory per workgroup and workgroup size bound the tile (streamKernelTile).
    KernelPassRunner(long sharedBytes, long maxInvocations, bool sharedStaging)
        : sharedBytes_(sharedBytes), maxInvocations_(maxInvocations), sharedStaging_(sharedStaging) {}
    // Uploads `in`, runs ceil(nq / tile) workgroups and downloads the nq x (d + 2) outputs into `out`
    // (resized by the caller; columns 0..d-1 num when values, d den, d+1 max; with variant.entropy one
    // more column, d+2, of e_i). Called only when nq > 0.
    virtual void dispatch(const StreamKernelInputs& in, Eigen::MatrixXf& out) = 0;

  private:
    long sharedBytes_, maxInvocations_;
    bool sharedStaging_;
    bool queriesOnGpu_ = false;
};

} // namespace flowscope
