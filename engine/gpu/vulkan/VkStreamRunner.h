// Flowscope GPU: the streaming passes of every attention variant on Vulkan compute.
//
// The Vulkan host of shaders/stream_kernel.comp: the GLSL compiled once to SPIR-V at build time, one
// pipeline per kernel variant (the knobs are specialization constants), built on first use and cached, and
// the five storage buffers the kernel reads and writes. Everything else is KernelPassRunner's
// (engine/gpu/common/KernelPass.h, shared with OpenGL). Headless: the CLI, tests and benchmarks use it where
// there is no OpenGL context to borrow.
#pragma once

#include "engine/gpu/common/KernelPass.h"
#include "engine/gpu/vulkan/VkCompute.h"

#include <cstdint>
#include <vector>

namespace flowscope {

// The specialization constants of shaders/stream_kernel.comp for a variant, in constant_id order: what
// VkStreamRunner dispatches with, for every Vulkan host of the kernel (VkStepper).
std::vector<std::uint32_t> streamKernelConstants(const StreamKernelVariant& variant);
// What `ctx` allows the kernel's layout (and whether it is a CPU device): what VkStreamRunner runs with.
StreamKernelDevice vkStreamKernelDevice(const VkContext& ctx);

class VkStreamRunner final : public KernelPassRunner {
  public:
    // Throws VkError when the kernel cannot be set up. `ctx` must outlive the runner; calls may come from
    // any one thread at a time.
    explicit VkStreamRunner(const VkContext& ctx);

    // Pipelines built so far (one per distinct kernel variant).
    std::size_t pipelineCount() const { return kernel_.pipelineCount(); }

  private:
    void dispatch(const StreamKernelInputs& in, Eigen::MatrixXf& out) override;

    const VkContext* ctx_;
    VkComputeKernel kernel_;
    VkStorageBuffer params_, keys_, bias_, queries_, out_;
};

} // namespace flowscope
