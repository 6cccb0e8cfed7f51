// Flowscope GPU: the small Vulkan compute toolkit the kernels are built from (the Vulkan twin of
// GlCompute.h).
//
// Storage buffers that upload and download plain arrays, and a compute kernel made from one embedded SPIR-V
// module whose pipelines are specialized per variant (specialization constants 0, 1, ... in order) and
// dispatched with one command buffer and a fence wait. Deliberately simple: every call is synchronous, the
// way GlKernelField uses OpenGL, which is what a velocity(X) -> dX interface needs. Errors throw VkError
// naming the VkResult. Objects hold the context by pointer; it must outlive them.
#pragma once

#include "engine/gpu/vulkan/VkContext.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <vector>

namespace flowscope {

// A storage buffer in host-visible, host-coherent memory, mapped for its whole life; grows on demand and
// never shrinks. On lavapipe and integrated GPUs that is the device's own memory. On a discrete GPU the
// kernel would read it across PCIe on every key sweep: there a device-local buffer filled through a staging
// copy (or a memory type that is both, with resizable BAR) is the faster layout.
class VkStorageBuffer {
  public:
    explicit VkStorageBuffer(const VkContext& ctx) : ctx_(&ctx) {}
    ~VkStorageBuffer();
    VkStorageBuffer(const VkStorageBuffer&) = delete;
    VkStorageBuffer& operator=(const VkStorageBuffer&) = delete;

    // Makes room for at least `bytes` (at least 16; the contents are undefined after growing).
    void reserve(std::size_t bytes);
    // Copies `bytes` from host memory to the start of the buffer, growing it when needed.
    void upload(const void* data, std::size_t bytes);
    // Copies the first `bytes` of the buffer to host memory (call after the dispatch that wrote them).
    void download(void* data, std::size_t bytes) const;
    VkBuffer handle() const { return buffer_; }
    std::size_t capacity() const { return capacity_; }

  private:
    void release();

    const VkContext* ctx_;
    VkBuffer buffer_ = VK_NULL_HANDLE;
    VkDeviceMemory memory_ = VK_NULL_HANDLE;
    void* mapped_ = nullptr;
    std::size_t capacity_ = 0;
};

// A compute shader with `bindings` storage buffers at set 0, bindings 0 .. bindings-1.
class VkComputeKernel {
  public:
    // Throws VkError when `spirv` is not a SPIR-V module or the driver rejects it.
    VkComputeKernel(const VkContext& ctx, std::span<const std::uint32_t> spirv, std::uint32_t bindings);
    ~VkComputeKernel();
    VkComputeKernel(const VkComputeKernel&) = delete;
    VkComputeKernel& operator=(const VkComputeKernel&) = delete;

    // Runs `groups` workgroups along x of the pipeline specialized by `constants` (32-bit values for
    // constant_id 0, 1, ...; built once per distinct list) with buffers[k] at binding k, and waits for it.
    // Shader writes are visible to VkStorageBuffer::download afterwards.
    void dispatch(const std::vector<std::uint32_t>& constants, std::span<VkStorageBuffer* const> buffers,
                  std::uint32_t groups);
    std::size_t pipelineCount() const { return pipelines_.size(); }

  private:
    void create(std::span<const std::uint32_t> spirv);
    void destroy();
    VkPipeline pipeline(const std::vector<std::uint32_t>& constants);

    const VkContext* ctx_;
    std::uint32_t bindings_;
    VkShaderModule module_ = VK_NULL_HANDLE;
    VkDescriptorSetLayout setLayout_ = VK_NULL_HANDLE;
    VkPipelineLayout layout_ = VK_NULL_HANDLE;
    VkDescriptorPool pool_ = VK_NULL_HANDLE;
    VkDescriptorSet set_ = VK_NULL_HANDLE;
    VkCommandPool commandPool_ = VK_NULL_HANDLE;
    VkCommandBuffer commands_ = VK_NULL_HANDLE;
    VkFence fence_ = VK_NULL_HANDLE;
    std::map<std::vector<std::uint32_t>, VkPipeline> pipelines_;
};

} // namespace flowscope
