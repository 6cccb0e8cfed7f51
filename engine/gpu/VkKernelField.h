// Flowscope GPU: the kernel-average attention variants (softmax, l2, exp, relu, sigmoid; masked, multi-head,
// time-dependent) with their O(N^2) streaming pass on Vulkan compute: the Vulkan twin of GlKernelField.
//
// The pass is the same GLSL (shaders/stream_kernel.comp), compiled to SPIR-V at build time and specialized
// per variant through specialization constants. Everything else is shared: head setup from the variant's own
// CPU class, the kernel inputs and the double-precision head loop (engine/gpu/KernelPass.h). Headless: the
// CLI, tests and benchmarks use it where there is no OpenGL context to borrow.
#pragma once

#include "engine/attention/KernelAttention.h"
#include "engine/gpu/KernelPass.h"
#include "engine/gpu/VkCompute.h"

#include <memory>

namespace flowscope {

class VkKernelField : public VelocityField {
  public:
    // Throws SceneError for variants the backend does not implement yet (Sinkhorn, linear, RWPO, drifting),
    // VkError when the kernel cannot be set up. `ctx` must outlive the field; calls may come from any one
    // thread at a time.
    VkKernelField(const AttentionSpec& spec, int d, const VkContext& ctx);

    void velocity(double t, const Tokens& X, Tokens& dX) override;
    // Diagnostics are double-precision O(N d) or O(N^2) passes of the CPU reference field.
    Vec attentionEntropies(double t, const Tokens& X) override { return cpu_->attentionEntropies(t, X); }
    Vec attentionWeights(double t, const Tokens& X, Eigen::Index i) override {
        return cpu_->attentionWeights(t, X, i);
    }
    double interactionEnergy(double t, const Tokens& X) override { return cpu_->interactionEnergy(t, X); }
    void setAttention(const AttentionSpec& spec) override;
    std::string name() const override { return cpu_->name() + " (Vulkan)"; }

    // The streaming pass for one head: `out` is N x (d + 2) float, columns 0..d-1 num, d den, d+1 max (the
    // StreamArgs outputs). `keysUploaded`: X was already uploaded by this evaluation.
    void streamPass(const Tokens& X, const HeadSetup& head, bool causal, Eigen::MatrixXf& out,
                    bool keysUploaded = false);

    // As GlKernelField: keys staged in shared memory (default off on CPU devices such as lavapipe, whose
    // barriers are costly), and queries formed in the shader instead of on the host in double.
    void setSharedStaging(bool on) { sharedStaging_ = on; }
    bool sharedStaging() const { return sharedStaging_; }
    void setQueriesOnGpu(bool on) { queriesOnGpu_ = on; }
    bool queriesOnGpu() const { return queriesOnGpu_; }
    // Pipelines built so far (one per distinct variant).
    std::size_t pipelineCount() const { return kernel_.pipelineCount(); }

  private:
    const VkContext* ctx_;
    int d_;
    AttentionSpec spec_;
    std::unique_ptr<KernelAttention> cpu_; // float64 CPU field of the spec (no sphere): setup, diagnostics
    VkComputeKernel kernel_;
    VkStorageBuffer params_, keys_, bias_, queries_, out_;
    int tile_ = 64;
    bool sharedStaging_ = true;
    bool queriesOnGpu_ = false;
};

// The Vulkan field for a spec: VkKernelField, wrapped in the CPU's SphereProjection when spec.sphere is set.
// Throws SceneError for unsupported variants.
std::unique_ptr<VelocityField> makeVkField(const AttentionSpec& spec, int d, const VkContext& ctx);

} // namespace flowscope
