// Flowscope GPU: an attention field whose O(N^2) streaming passes run on a GPU backend.
//
// The field is the variant's own CPU class (makeField, engine/attention/StreamRunner.h) constructed with the
// backend's runner, so the variant math (head setup, Sinkhorn's potential iterations and warm start, the
// RWPO kernels, the drifting target, the double-precision assembly, the diagnostics) is written once and only
// the passes run, in float32, on the device. Linear attention has no pairwise pass: its O(N d^2) moments are
// computed in double on the host (uploading N x d tokens costs as much as reducing them there). Sphere
// projection is added by makeGlField / makeVkField, as makeCpuField adds it on the CPU.
#pragma once

#include "engine/gpu/common/KernelPass.h"

#include <memory>
#include <string>

namespace flowscope {

class GpuField : public VelocityField {
  public:
    // Throws SceneError for settings the CPU field rejects too (masked Sinkhorn or linear attention).
    GpuField(const AttentionSpec& spec, int d, std::shared_ptr<KernelPassRunner> runner, std::string backend);

    void velocity(double t, const Tokens& X, Tokens& dX) override { field_->velocity(t, X, dX); }
    // The record's one pass on the device: the kernel's ENTROPY knob accumulates e_i beside den_i.
    void velocityAndStats(double t, const Tokens& X, Tokens& dX, Vec* entropies, double* energy) override {
        field_->velocityAndStats(t, X, dX, entropies, energy);
    }
    Vec attentionEntropies(double t, const Tokens& X) override { return field_->attentionEntropies(t, X); }
    Vec attentionWeights(double t, const Tokens& X, Eigen::Index i) override {
        return field_->attentionWeights(t, X, i);
    }
    double interactionEnergy(double t, const Tokens& X) override { return field_->interactionEnergy(t, X); }
    // Keeps the variant's state (Sinkhorn's warm start) unless the attention type changes.
    void setAttention(const AttentionSpec& spec) override;
    std::string name() const override { return field_->name() + " (" + backend_ + ")"; }
    FieldDiagnostics diagnostics() const override { return field_->diagnostics(); }

    // The runner's settings (KernelPassRunner): shared-memory staging, queries formed in the shader.
    void setSharedStaging(bool on) { runner_->setSharedStaging(on); }
    bool sharedStaging() const { return runner_->sharedStaging(); }
    void setQueriesOnGpu(bool on) { runner_->setQueriesOnGpu(on); }
    bool queriesOnGpu() const { return runner_->queriesOnGpu(); }
    void setQueriesPerInvocation(int qpt) { runner_->setQueriesPerInvocation(qpt); }

  private:
    int d_;
    AttentionType type_;
    std::shared_ptr<KernelPassRunner> runner_;
    std::unique_ptr<VelocityField> field_;
    std::string backend_;
};

} // namespace flowscope
