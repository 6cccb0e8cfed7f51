// Flowscope GPU: the small Vulkan compute toolkit the kernels are built from (the Vulkan twin of
// GlCompute.h).
//
// Storage buffers (host-visible and mapped, or device-local behind a staging copy), a compute kernel made
// from one embedded SPIR-V module whose pipelines are specialized per variant (specialization constants 0, 1,
// ... in order), and command batches. A kernel runs two ways:
//  - dispatch(): one command buffer, submitted and waited for: every call is synchronous, the way
//    GlKernelField uses OpenGL, which is what a velocity(X) -> dX interface needs (VkStreamRunner);
//  - record(): into a caller's VkCommandBatch, with a descriptor set of its own per dispatch, so that many
//    dispatches (whole integration steps, VkStepper) go to the device in one submission that nobody waits
//    for until the results are read.
// Errors throw VkError naming the VkResult. Objects hold the context by pointer; it must outlive them.
#pragma once

#include "engine/gpu/vulkan/VkContext.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

namespace flowscope {

// The SPIR-V words of shaders/<name> (VkSpirv.h); throws VkError when this build did not compile it.
std::span<const std::uint32_t> requiredSpirv(std::string_view name);

// Where a storage buffer's memory lives.
enum class VkPlacement {
    // Host-visible, host-coherent, mapped for the buffer's whole life: upload and download are memcpy. On
    // lavapipe and integrated GPUs that is the device's own memory. On a discrete GPU a kernel reads it
    // across PCIe on every key sweep, so it suits data read once (parameters, staging, the field's passes).
    Host,
    // Device-local memory (any memory type where the device has none): what a kernel reads and writes over
    // and over, such as tokens that stay on the device. The host reaches it only through copies from and to
    // a Host buffer (VkCommandBatch::copy).
    Device,
};

// A storage buffer (also a transfer source and destination); grows on demand and never shrinks.
class VkStorageBuffer {
  public:
    explicit VkStorageBuffer(const VkContext& ctx, VkPlacement placement = VkPlacement::Host)
        : ctx_(&ctx), placement_(placement) {}
    ~VkStorageBuffer();
    VkStorageBuffer(const VkStorageBuffer&) = delete;
    VkStorageBuffer& operator=(const VkStorageBuffer&) = delete;

    // Makes room for at least `bytes` (at least 16; the contents are undefined after growing). No command
    // that uses the buffer may be pending on the device when it grows.
    void reserve(std::size_t bytes);
    // Host buffers: copies `bytes` from host memory to the start of the buffer, growing it when needed.
    void upload(const void* data, std::size_t bytes);
    // Host buffers: copies `bytes` from host memory to byte `offset`, within the capacity (no growing).
    void write(std::size_t offset, const void* data, std::size_t bytes);
    // Host buffers: copies the first `bytes` of the buffer to host memory (after the work that wrote them).
    void download(void* data, std::size_t bytes) const;
    VkBuffer handle() const { return buffer_; }
    std::size_t capacity() const { return capacity_; }
    VkPlacement placement() const { return placement_; }

  private:
    void release();
    void* mapped(const char* what) const;

    const VkContext* ctx_;
    VkPlacement placement_;
    VkBuffer buffer_ = VK_NULL_HANDLE;
    VkDeviceMemory memory_ = VK_NULL_HANDLE;
    void* mapped_ = nullptr;
    std::size_t capacity_ = 0;
};

// What one binding of a dispatch reads or writes: `size` bytes of `buffer` from `offset` (VK_WHOLE_SIZE: to
// the end).
struct VkBufferRange {
    VkBuffer buffer = VK_NULL_HANDLE;
    VkDeviceSize offset = 0;
    VkDeviceSize size = VK_WHOLE_SIZE;
};
// The whole of `b`.
inline VkBufferRange wholeOf(const VkStorageBuffer& b) {
    return {b.handle(), 0, VK_WHOLE_SIZE};
}

// Commands recorded into one command buffer and submitted at once, without waiting: the command buffer, a
// descriptor pool for one set per dispatch (each dispatch binds buffers of its own, and none of the sets may
// change while the submission is pending), a host-visible buffer of the parameter words its dispatches read,
// and the fence of its submission. A batch is reused: begin() waits for its previous submission first, so a
// few batches in turn let the host record while the device works.
class VkCommandBatch {
  public:
    explicit VkCommandBatch(const VkContext& ctx);
    ~VkCommandBatch(); // waits for a pending submission
    VkCommandBatch(const VkCommandBatch&) = delete;
    VkCommandBatch& operator=(const VkCommandBatch&) = delete;

    // Starts recording: waits for the previous submission, makes room for `dispatches` descriptor sets of up
    // to `bindings` storage buffers each and `parameterWords` words of parameters (in at most `dispatches`
    // blocks), and records a barrier that orders this batch after all work submitted to the queue before it
    // (its shader and transfer writes visible to this batch's shaders and transfers).
    void begin(std::uint32_t dispatches, std::uint32_t bindings, std::size_t parameterWords);
    // Copies `words` into the batch's parameter buffer: the range a dispatch binds to read them.
    VkBufferRange parameters(std::span<const std::uint32_t> words);
    // A descriptor set of `layout` for one dispatch of this recording (at most `dispatches` of them).
    VkDescriptorSet allocateSet(VkDescriptorSetLayout layout);
    VkCommandBuffer commands() const { return commands_; }

    // Records a memory barrier: the `srcAccess` of `src` stages before it, visible to `dstAccess` of `dst`.
    void barrier(VkPipelineStageFlags src, VkAccessFlags srcAccess, VkPipelineStageFlags dst,
                 VkAccessFlags dstAccess);
    // Shader writes before it -> shader reads and writes after it: between dispatches that read what the
    // previous wrote, or overwrite what it read.
    void computeBarrier();
    // Records a copy of the first `bytes` of `from` into `to` (order it with barrier()).
    void copy(const VkStorageBuffer& from, const VkStorageBuffer& to, std::size_t bytes);

    // Ends the recording and submits it; returns at once.
    void submit();
    // Waits for the submission, if one is pending.
    void wait();
    bool pending() const { return pending_; }

  private:
    void destroy();

    const VkContext* ctx_;
    VkCommandPool commandPool_ = VK_NULL_HANDLE;
    VkCommandBuffer commands_ = VK_NULL_HANDLE;
    VkFence fence_ = VK_NULL_HANDLE;
    VkDescriptorPool pool_ = VK_NULL_HANDLE;
    std::uint32_t poolSets_ = 0, poolDescriptors_ = 0; // the pool's room
    std::uint32_t setsLeft_ = 0;                       // in this recording
    VkStorageBuffer parameters_;
    std::size_t parameterBytes_ = 0; // used in this recording
    bool recording_ = false, pending_ = false;
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
    // constant_id 0, 1, ...; built once per distinct list) with buffers[k] (Host buffers) at binding k, and
    // waits for it. Shader writes are visible to VkStorageBuffer::download afterwards.
    void dispatch(const std::vector<std::uint32_t>& constants, std::span<VkStorageBuffer* const> buffers,
                  std::uint32_t groups);
    // Records the same dispatch into `batch`, buffers[k] at binding k through a descriptor set of its own;
    // nothing runs before batch.submit(). Order it against its neighbours with batch.computeBarrier().
    void record(VkCommandBatch& batch, const std::vector<std::uint32_t>& constants,
                std::span<const VkBufferRange> buffers, std::uint32_t groups);
    std::uint32_t bindings() const { return bindings_; }
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
    std::unique_ptr<VkCommandBatch> batch_; // dispatch()'s
    std::map<std::vector<std::uint32_t>, VkPipeline> pipelines_;
};

} // namespace flowscope
