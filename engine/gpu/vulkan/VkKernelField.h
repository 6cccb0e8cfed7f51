// Flowscope GPU: every attention variant on Vulkan compute.
//
// A GpuField (engine/gpu/common/GpuField.h: the variant's own CPU class, its streaming passes on the GPU)
// with a VkStreamRunner: the same GLSL as OpenGL, compiled to SPIR-V at build time and specialized per kernel
// variant. Headless: the CLI, tests and benchmarks use it where there is no OpenGL context to borrow.
#pragma once

#include "engine/gpu/common/GpuField.h"
#include "engine/gpu/vulkan/VkStreamRunner.h"

namespace flowscope {

class VkKernelField : public GpuField {
  public:
    // Throws SceneError as makeCpuField does, VkError when the kernel cannot be set up. `ctx` must outlive
    // the field; calls may come from any one thread at a time.
    VkKernelField(const AttentionSpec& spec, int d, const VkContext& ctx)
        : VkKernelField(spec, d, std::make_shared<VkStreamRunner>(ctx)) {}

    // Pipelines built so far (one per distinct kernel variant).
    std::size_t pipelineCount() const { return vk_->pipelineCount(); }

  private:
    VkKernelField(const AttentionSpec& spec, int d, std::shared_ptr<VkStreamRunner> runner)
        : GpuField(spec, d, runner, "Vulkan"), vk_(std::move(runner)) {}

    std::shared_ptr<VkStreamRunner> vk_; // GpuField's runner, typed
};

// The Vulkan field for a spec: VkKernelField, wrapped in the CPU's SphereProjection when spec.sphere is set.
std::unique_ptr<VelocityField> makeVkField(const AttentionSpec& spec, int d, const VkContext& ctx);

} // namespace flowscope
