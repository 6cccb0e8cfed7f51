// Flowscope GPU: the kernel-average attention variants (softmax, l2, exp, relu, sigmoid; masked, multi-head,
// time-dependent) with their O(N^2) streaming pass on an OpenGL 4.3 compute shader.
//
// Everything but that pass is shared with the CPU: the head setup (query map B, key bias, V, weighting,
// output scale) comes from the variant's own CPU class (KernelAttention::setupHead), and the velocity is
// assembled in double as KernelAttention::velocity does (engine/gpu/KernelPass.h, shared with Vulkan). The
// pass itself (shaders/stream_kernel.comp) runs in float32 and meets the StreamArgs contract, so it is tested
// against the CPU float64 reference.
#pragma once

#include "engine/attention/KernelAttention.h"
#include "engine/gpu/GlCompute.h"
#include "engine/gpu/KernelPass.h"

#include <map>
#include <memory>

namespace flowscope {

class GlKernelField : public VelocityField {
  public:
    // Throws SceneError for variants the backend does not implement yet (Sinkhorn, linear, RWPO, drifting).
    // `gl` must outlive the field, and its context must be current on the thread of every call (including
    // the destructor, which frees the GPU buffers).
    GlKernelField(const AttentionSpec& spec, int d, const GlFunctions& gl);

    void velocity(double t, const Tokens& X, Tokens& dX) override;
    // Diagnostics are double-precision O(N d) or O(N^2) passes of the CPU reference field.
    Vec attentionEntropies(double t, const Tokens& X) override { return cpu_->attentionEntropies(t, X); }
    Vec attentionWeights(double t, const Tokens& X, Eigen::Index i) override {
        return cpu_->attentionWeights(t, X, i);
    }
    double interactionEnergy(double t, const Tokens& X) override { return cpu_->interactionEnergy(t, X); }
    void setAttention(const AttentionSpec& spec) override;
    std::string name() const override { return cpu_->name() + " (OpenGL)"; }

    // The streaming pass for one head on the GPU: `out` is N x (d + 2) float, columns 0..d-1 num, d den,
    // d+1 max (the StreamArgs outputs). `keysUploaded`: X was already uploaded by this evaluation.
    void streamPass(const Tokens& X, const HeadSetup& head, bool causal, Eigen::MatrixXf& out,
                    bool keysUploaded = false);

    // Whether each tile of keys is staged in shared memory (STAGE_IN_SHARED). On by default; off on
    // llvmpipe and softpipe, whose barriers are coroutine switches (measured 2.2x slower there).
    void setSharedStaging(bool on) { sharedStaging_ = on; }
    bool sharedStaging() const { return sharedStaging_; }

    // Whether the queries q_i = B x_i are formed in the shader (float32; what a GPU-resident token buffer
    // needs) or on the host in double, rounded once like the CPU float32 path (the default: more accurate).
    void setQueriesOnGpu(bool on) { queriesOnGpu_ = on; }
    bool queriesOnGpu() const { return queriesOnGpu_; }

  private:
    const GlProgram& program(const StreamKernelVariant& variant);

    const GlFunctions* gl_;
    int d_;
    AttentionSpec spec_;
    std::unique_ptr<KernelAttention> cpu_; // float64 CPU field of the spec (no sphere): setup, diagnostics
    std::map<std::string, GlProgram> programs_;
    GlBuffer params_, keys_, bias_, queries_, out_;
    int tile_ = 64;
    bool sharedStaging_ = true;
    bool queriesOnGpu_ = false;
};

// The GPU field for a spec: GlKernelField, wrapped in the CPU's SphereProjection when spec.sphere is set.
// Throws SceneError for unsupported variants.
std::unique_ptr<VelocityField> makeGlField(const AttentionSpec& spec, int d, const GlFunctions& gl);

} // namespace flowscope
