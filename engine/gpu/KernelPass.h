// Flowscope GPU: the host side of the streaming attention kernel, shared by every GPU backend.
//
// shaders/stream_kernel.comp is one kernel run by several hosts (OpenGL, Vulkan). They differ only in how
// bytes reach the device and how the kernel is specialized; everything else lives here once: which CPU field
// sets up the heads (the variant math is never duplicated), which kernel variant a head needs, the Params
// block and host-formed queries in the kernel's float32 layout, and the head loop that assembles the velocity
// in double exactly as KernelAttention::velocity does.
#pragma once

#include "engine/attention/KernelAttention.h"

#include <Eigen/Dense>

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace flowscope {

// The knobs of shaders/stream_kernel.comp (#defines in OpenGL, specialization constants in Vulkan).
struct StreamKernelVariant {
    int dim = 1;
    Weighting weighting = Weighting::Softmax;
    bool causal = false;
    bool hasBias = false;
    bool explicitQueries = false;
    int tile = 64;
    bool stageInShared = true;
};

// Everything one pass of the kernel reads, in its std430 / structure-of-arrays layout, except the keys
// (X as float, column-major), which a backend uploads once per evaluation for all heads.
struct StreamKernelInputs {
    StreamKernelVariant variant;
    int n = 0;                         // keys
    int nq = 0;                        // queries (rows of the output)
    std::vector<std::uint32_t> params; // Params block: n, nq, two pads, B row-major as float bits
    Eigen::VectorXf bias;              // n key biases when variant.hasBias
    Eigen::MatrixXf queries;           // nq x d queries when variant.explicitQueries
};

// The inputs for one head. Queries are formed on the host in double and rounded once, as the CPU float32
// path forms them, unless `queriesOnGpu` (then q = B x in the shader: float B times float x, two roundings,
// measured up to ~6x the CPU float32 error for exp attention, whose weight e^{m_i} amplifies score errors).
// Explicit queries of the head always go to the kernel. Throws std::invalid_argument for a causal pass whose
// query count is not the key count.
StreamKernelInputs streamKernelInputs(const Tokens& X, const HeadSetup& head, bool causal, bool queriesOnGpu,
                                      int tile, bool stageInShared);

// The float64 CPU field of `spec` without sphere projection, which sets up heads and answers diagnostics.
// Throws SceneError("/attention/type", "the <backend> backend does not implement ...") for variants that are
// not kernel averages (Sinkhorn, linear, RWPO, drifting).
std::unique_ptr<KernelAttention> kernelAverageReference(AttentionSpec spec, int d, const char* backend);

// The largest power-of-two tile <= 64 whose staged keys and biases (tile * (d + 1) floats) fit `sharedBytes`
// and whose workgroup fits `maxInvocations`.
int streamKernelTile(int d, long sharedBytes, long maxInvocations);

// One pass for one head: fills `out` with nq x (d + 2) floats (columns 0..d-1 num, d den, d+1 max).
// `firstHead`: X has not been uploaded in this evaluation yet.
using StreamPass = std::function<void(const HeadSetup& head, bool firstHead, Eigen::MatrixXf& out)>;

// dX = sum over the heads at time t of outScale * normalizeHeadAverage(pass outputs) * V^T, masked per spec.
void assembleKernelVelocity(const AttentionSpec& spec, const KernelAttention& reference, double t,
                            const Tokens& X, Tokens& dX, const StreamPass& pass);

} // namespace flowscope
