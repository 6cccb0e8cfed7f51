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
#include <string>
#include <vector>

namespace flowscope {

// The knobs of shaders/stream_kernel.comp (#defines in OpenGL, specialization constants in Vulkan:
// kernelConstants).
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
    int qpt = 1;          // queries per invocation: a workgroup serves qpt * tile queries
    int unroll = 4;       // keys per step of the inner loop
    // Key biases -x_j^T M x_j formed in the kernel, M (d x d, row-major) after B in the Params block: l2
    // attention on a device that holds the tokens (StepperPlan).
    bool quadraticBias = false;
    // Positional decay s_ij -= slope |i - j| in the kernel from the two indices, the slope in the Params
    // block's third word (StreamPass::positionSlope; softmax and exp, queries = keys).
    bool positionalDecay = false;
    // Scores in log2 units, the queries scaled by log2(e) once (LOG2_SCORES; softmax averages without key
    // biases).
    bool log2Scores = false;
    // Tiles whose scores are bounded near the running max swept without tracking it (TILE_BOUND; softmax,
    // keys staged, no key biases).
    bool tileBound = false;
};

// How a dispatch is laid out on a device: keys staged per step (= invocations per workgroup), whether they
// are staged in shared memory, and queries per invocation.
struct StreamKernelLayout {
    int tile = 64;
    bool stageInShared = true;
    int qpt = 1;
    int unroll = 4;
    bool log2Scores = true; // softmax averages without key biases (StreamKernelVariant::log2Scores)
    bool tileBound = true;  // softmax passes with staged keys and no biases (StreamKernelVariant::tileBound)
};

// One knob of a variant as the kernel reads it: its name (the #define in OpenGL) and its value.
struct KernelConstant {
    const char* name;
    std::uint32_t value;
};
// Every knob of `variant`, in the kernel's constant_id order (Vulkan's specialization constants 0, 1, ...).
std::vector<KernelConstant> kernelConstants(const StreamKernelVariant& variant);

// Everything one dispatch reads, in its std430 / structure-of-arrays layout.
struct StreamKernelInputs {
    StreamKernelVariant variant;
    int n = 0;                         // keys
    int nq = 0;                        // queries (rows of the output)
    std::vector<std::uint32_t> params; // Params block: n, nq, the decay slope, a pad, B row-major (then M
                                       // with variant.quadraticBias) as float bits
    Eigen::MatrixXf keys;              // n x d (column-major = the kernel's SoA layout)
    Eigen::VectorXf bias;              // n key biases when variant.hasBias
    Eigen::MatrixXf queries;           // nq x d queries when variant.explicitQueries
};

// The inputs of one pass. Queries are formed on the host in double and rounded once, as the CPU float32
// path forms them, unless `queriesOnGpu` and the pass's queries come from its keys (then q = B x in the
// shader: float B times float x, two roundings, measured up to ~6x the CPU float32 error for exp attention,
// whose weight e^{m_i} amplifies score errors). Key biases are the pass's, uploaded, unless
// `quadraticBiasOnGpu` and the pass gives their quadratic form (StreamPass::quadraticBias, l2): then the
// kernel forms them from the keys it reads (QUAD_BIAS, M after B in the params), what a host whose keys are
// the device's tokens needs. A positional decay is computed in the kernel (POS_DECAY). Throws
// std::invalid_argument for a causal pass or a pass with a decay whose query count is not the key count, and
// for a decay with weights other than softmax and exp (as the CPU kernel does).
StreamKernelInputs streamKernelInputs(const StreamPass& pass, bool queriesOnGpu,
                                      const StreamKernelLayout& layout, bool quadraticBiasOnGpu = false);
// The inputs of one head's pass over keys X (headPass; explicit queries of the head always go to the kernel).
StreamKernelInputs streamKernelInputs(const Tokens& X, const HeadSetup& head, bool causal, bool queriesOnGpu,
                                      const StreamKernelLayout& layout, bool quadraticBiasOnGpu = false);
// Workgroups of one dispatch: ceil(nq / (tile * qpt)).
long streamKernelGroups(const StreamKernelVariant& variant, long nq);
// Why nq queries of `variant` do not fit one dispatch of at most `maxGroups` workgroups (the device's limit);
// empty when they do.
std::string dispatchRefusal(const StreamKernelVariant& variant, long nq, long maxGroups);

// The float64 CPU field of a kernel-average spec (softmax, l2, exp, relu, sigmoid) without sphere
// projection or a normalization scheme's wrapper, for hosts that need its head setup (GlStepper). Throws
// SceneError("/attention/type", "the <backend> backend does not implement ...") for the other variants. GPU
// fields take every variant (GpuField).
std::unique_ptr<KernelAttention> kernelAverageReference(AttentionSpec spec, int d, const char* backend);
// The error kernelAverageReference would throw for an attention type, without building anything: hosts ask it
// before they run (ComputeBackend::supports).
std::optional<SceneError> kernelAverageRefusal(AttentionType type, const char* backend);

// The layout of a pass of nq queries in dimension d on a device with `sharedBytes` of shared memory and at
// most `maxInvocations` per workgroup (docs/gpu.md#tuning has the grid measured on an H200):
// - tile: the largest power of two <= 64 whose staged keys (tile vec4 chunks of ceil((d + 1) / 4) each) fit
//   `sharedBytes` and whose workgroup fits `maxInvocations`;
// - qpt (queries per invocation): `qpt` when it is 1, 2 or 4; else (0, automatic) 1, or on GPUs 2 from
//   nq >= 2^18 and 4 from 2^20, where the workgroups still fill the device (on an H200: 4 beat 2 by 9% at
//   2^20, and lost 30% to 1 at 2^16);
// - unroll: 8 keys per step of the inner loop on GPUs, 4 on CPU devices;
// - the environment variables FLOWSCOPE_STREAM_TILE, FLOWSCOPE_STREAM_QPT and FLOWSCOPE_STREAM_UNROLL (1, 2,
//   4, 8) override them, and FLOWSCOPE_STREAM_LOG2=0 and FLOWSCOPE_STREAM_BOUND=0 turn off the kernel's
//   log2 scores and tile bound (tuning runs on a new device: `bench particles`; docs/gpu.md#tuning).
StreamKernelLayout streamKernelLayout(int d, long nq, long sharedBytes, long maxInvocations,
                                      bool stageInShared, int qpt = 0);

// Mesa's CPU drivers (llvmpipe, lavapipe) end a shader invocation's loops after 65 535 iterations in all
// (gallivm's loop limiter), silently. The kernel loops once per key, so there a pass would see only the first
// ~63 500 keys. Passes on a CPU device are refused above this many keys (docs/gpu.md#cpu-devices).
constexpr long kCpuDeviceMaxKeys = 60000;
// The SceneError (field /n) for n tokens on a CPU device named `device`, or nullopt when n is within reach.
std::optional<SceneError> cpuDeviceRefusal(long n, const std::string& device);

// What a device allows a dispatch's layout (streamKernelLayout's bounds) and whether it is a CPU device (keys
// read from the buffer, not staged; at most kCpuDeviceMaxKeys keys): what a host that lays out its own passes
// (a device stepper, StepperPlan) asks its device for, as KernelPassRunner's constructor takes it.
struct StreamKernelDevice {
    long sharedBytes = 32768;
    long maxInvocations = 1024;
    bool cpuDevice = false;
    std::string name; // the device, in cpuDeviceRefusal's message
};

// A StreamRunner on a GPU backend: float32 passes of shaders/stream_kernel.comp, one dispatch each.
class KernelPassRunner : public StreamRunner {
  public:
    // Throws cpuDeviceRefusal's SceneError for too many keys on a CPU device.
    void run(const StreamPass& pass, StreamSums& out) override;
    Precision precision() const override { return Precision::Float32; }

    // Whether each tile of keys is staged in shared memory (STAGE_IN_SHARED). On by default on GPUs; off on
    // CPU devices (llvmpipe, lavapipe), whose barriers are coroutine switches (measured 2.2x slower there).
    void setSharedStaging(bool on) { sharedStaging_ = on; }
    bool sharedStaging() const { return sharedStaging_; }
    // llvmpipe or lavapipe: at most kCpuDeviceMaxKeys keys per pass.
    bool cpuDevice() const { return cpuDevice_; }
    // Whether queries q_i = B x_i are formed in the shader (float32; what a GPU-resident token buffer needs)
    // or on the host in double, rounded once like the CPU float32 path (the default: more accurate).
    void setQueriesOnGpu(bool on) { queriesOnGpu_ = on; }
    bool queriesOnGpu() const { return queriesOnGpu_; }
    // Whether key biases given as a quadratic form of the keys (StreamPass::quadraticBias, l2) are formed in
    // the shader from the keys it reads (QUAD_BIAS; what a runner over the device's token buffer needs, which
    // uploads nothing) or uploaded as the pass's biases (the default: computed on the host in double).
    void setQuadraticBiasOnGpu(bool on) { quadraticBiasOnGpu_ = on; }
    bool quadraticBiasOnGpu() const { return quadraticBiasOnGpu_; }
    // Queries per invocation (1, 2 or 4; 0: streamKernelLayout's choice, the default).
    void setQueriesPerInvocation(int qpt) { qpt_ = qpt; }
    // The layout of a pass of nq queries in dimension d on this device (streamKernelLayout).
    StreamKernelLayout layout(int d, long nq) const {
        return streamKernelLayout(d, nq, sharedBytes_, maxInvocations_, sharedStaging_, qpt_);
    }

  protected:
    // The device's shared memory per workgroup and workgroup size bound the tile (streamKernelLayout).
    // cpuDevice: llvmpipe or lavapipe (no staging by default; at most kCpuDeviceMaxKeys keys per pass).
    KernelPassRunner(long sharedBytes, long maxInvocations, bool cpuDevice)
        : sharedBytes_(sharedBytes), maxInvocations_(maxInvocations), sharedStaging_(!cpuDevice),
          cpuDevice_(cpuDevice) {}
    // Uploads `in`, runs streamKernelGroups workgroups and downloads the nq x (d + 2) outputs into `out`
    // (resized by the caller; columns 0..d-1 num when values, d den, d+1 max; with variant.entropy one
    // more column, d+2, of e_i). Called only when nq > 0.
    virtual void dispatch(const StreamKernelInputs& in, Eigen::MatrixXf& out) = 0;

  private:
    long sharedBytes_, maxInvocations_;
    bool sharedStaging_;
    bool cpuDevice_;
    bool queriesOnGpu_ = false;
    bool quadraticBiasOnGpu_ = false;
    int qpt_ = 0;
};

} // namespace flowscope
