#include "engine/gpu/vulkan/VkCompute.h"

#include "engine/gpu/vulkan/VkSpirv.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>

namespace flowscope {

std::span<const std::uint32_t> requiredSpirv(std::string_view name) {
    const std::span<const std::uint32_t> words = embeddedSpirv(name);
    if (words.empty()) throw VkError(std::string(name) + " was not compiled to SPIR-V in this build");
    return words;
}

namespace {

// Device-local memory for Device buffers (any type where there is none); host-visible, coherent memory for
// Host buffers.
std::uint32_t memoryTypeFor(const VkContext& ctx, std::uint32_t typeBits, VkPlacement placement) {
    if (placement == VkPlacement::Host)
        return ctx.memoryType(typeBits,
                              VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
    try {
        return ctx.memoryType(typeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
    } catch (const VkError&) {
        return ctx.memoryType(typeBits, 0);
    }
}

} // namespace

VkStorageBuffer::~VkStorageBuffer() {
    release();
}

void VkStorageBuffer::release() {
    const VkDevice device = ctx_->device();
    if (mapped_) vkUnmapMemory(device, memory_);
    if (buffer_) vkDestroyBuffer(device, buffer_, nullptr);
    if (memory_) vkFreeMemory(device, memory_, nullptr);
    mapped_ = nullptr;
    buffer_ = VK_NULL_HANDLE;
    memory_ = VK_NULL_HANDLE;
    capacity_ = 0;
}

void VkStorageBuffer::reserve(std::size_t bytes) {
    if (buffer_ && bytes <= capacity_) return;
    release();
    const VkDevice device = ctx_->device();
    const std::size_t size = std::max<std::size_t>(bytes, 16);
    VkBufferCreateInfo bci{};
    bci.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
    bci.size = size;
    bci.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    bci.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
    vkCheck(vkCreateBuffer(device, &bci, nullptr, &buffer_), "vkCreateBuffer");
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(device, buffer_, &req);
    VkMemoryAllocateInfo mai{};
    mai.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
    mai.allocationSize = req.size;
    try {
        mai.memoryTypeIndex = memoryTypeFor(*ctx_, req.memoryTypeBits, placement_);
        vkCheck(vkAllocateMemory(device, &mai, nullptr, &memory_), "vkAllocateMemory");
        vkCheck(vkBindBufferMemory(device, buffer_, memory_, 0), "vkBindBufferMemory");
        if (placement_ == VkPlacement::Host)
            vkCheck(vkMapMemory(device, memory_, 0, VK_WHOLE_SIZE, 0, &mapped_), "vkMapMemory");
    } catch (...) {
        release();
        throw;
    }
    capacity_ = size;
}

void* VkStorageBuffer::mapped(const char* what) const {
    if (placement_ != VkPlacement::Host)
        throw std::logic_error(std::string("VkStorageBuffer::") + what +
                               ": a device-local buffer is reached through copies");
    return mapped_;
}

void VkStorageBuffer::upload(const void* data, std::size_t bytes) {
    mapped("upload");
    reserve(bytes);
    if (bytes) std::memcpy(mapped_, data, bytes);
}

void VkStorageBuffer::write(std::size_t offset, const void* data, std::size_t bytes) {
    char* at = static_cast<char*>(mapped("write"));
    if (offset > capacity_ || bytes > capacity_ - offset)
        throw std::out_of_range("VkStorageBuffer::write past the end of the buffer");
    if (bytes) std::memcpy(at + offset, data, bytes);
}

void VkStorageBuffer::download(void* data, std::size_t bytes) const {
    const void* from = mapped("download");
    if (bytes > capacity_) throw std::out_of_range("VkStorageBuffer::download past the end of the buffer");
    if (bytes) std::memcpy(data, from, bytes);
}

VkCommandBatch::VkCommandBatch(const VkContext& ctx) : ctx_(&ctx), parameters_(ctx) {
    const VkDevice device = ctx_->device();
    try {
        VkCommandPoolCreateInfo cpci{};
        cpci.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO;
        cpci.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
        cpci.queueFamilyIndex = ctx_->queueFamily();
        vkCheck(vkCreateCommandPool(device, &cpci, nullptr, &commandPool_), "vkCreateCommandPool");
        VkCommandBufferAllocateInfo cbai{};
        cbai.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
        cbai.commandPool = commandPool_;
        cbai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
        cbai.commandBufferCount = 1;
        vkCheck(vkAllocateCommandBuffers(device, &cbai, &commands_), "vkAllocateCommandBuffers");
        VkFenceCreateInfo fci{};
        fci.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO;
        vkCheck(vkCreateFence(device, &fci, nullptr, &fence_), "vkCreateFence");
    } catch (...) {
        destroy();
        throw;
    }
}

VkCommandBatch::~VkCommandBatch() {
    if (pending_) vkWaitForFences(ctx_->device(), 1, &fence_, VK_TRUE, UINT64_MAX); // no throw here
    destroy();
}

void VkCommandBatch::destroy() {
    const VkDevice device = ctx_->device();
    // The pools free the descriptor sets and the command buffer with them.
    vkDestroyDescriptorPool(device, std::exchange(pool_, VK_NULL_HANDLE), nullptr); // null: no-ops
    vkDestroyFence(device, std::exchange(fence_, VK_NULL_HANDLE), nullptr);
    vkDestroyCommandPool(device, std::exchange(commandPool_, VK_NULL_HANDLE), nullptr);
}

void VkCommandBatch::wait() {
    if (!pending_) return;
    const VkDevice device = ctx_->device();
    vkCheck(vkWaitForFences(device, 1, &fence_, VK_TRUE, UINT64_MAX), "vkWaitForFences");
    vkCheck(vkResetFences(device, 1, &fence_), "vkResetFences");
    pending_ = false;
}

void VkCommandBatch::begin(std::uint32_t dispatches, std::uint32_t bindings, std::size_t parameterWords) {
    wait();
    const VkDevice device = ctx_->device();
    // Sets and descriptors: reset the pool when it is large enough, else make a larger one.
    const std::uint32_t sets = std::max<std::uint32_t>(dispatches, 1);
    const std::uint32_t descriptors = std::max<std::uint32_t>(sets * std::max<std::uint32_t>(bindings, 1), 1);
    if (pool_ && sets <= poolSets_ && descriptors <= poolDescriptors_) {
        vkCheck(vkResetDescriptorPool(device, pool_, 0), "vkResetDescriptorPool");
    } else {
        if (pool_) vkDestroyDescriptorPool(device, pool_, nullptr);
        pool_ = VK_NULL_HANDLE;
        poolSets_ = poolDescriptors_ = 0;
        const VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, descriptors};
        VkDescriptorPoolCreateInfo dpci{};
        dpci.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO;
        dpci.maxSets = sets;
        dpci.poolSizeCount = 1;
        dpci.pPoolSizes = &size;
        vkCheck(vkCreateDescriptorPool(device, &dpci, nullptr, &pool_), "vkCreateDescriptorPool");
        poolSets_ = sets;
        poolDescriptors_ = descriptors;
    }
    setsLeft_ = dispatches;
    // Each block starts at a multiple of the device's storage-buffer offset alignment.
    const std::size_t align = std::size_t(ctx_->limits().minStorageBufferOffsetAlignment);
    parameters_.reserve(parameterWords * sizeof(std::uint32_t) + std::size_t(dispatches) * align);
    parameterBytes_ = 0;

    vkCheck(vkResetCommandBuffer(commands_, 0), "vkResetCommandBuffer");
    VkCommandBufferBeginInfo info{};
    info.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
    info.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    vkCheck(vkBeginCommandBuffer(commands_, &info), "vkBeginCommandBuffer");
    recording_ = true;
    // Submissions on one queue start in order but may overlap: wait for the writes of the earlier ones.
    const VkPipelineStageFlags stages = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
    barrier(stages, VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT, stages,
            VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                VK_ACCESS_TRANSFER_WRITE_BIT);
}

VkBufferRange VkCommandBatch::parameters(std::span<const std::uint32_t> words) {
    const std::size_t align = std::size_t(ctx_->limits().minStorageBufferOffsetAlignment);
    const std::size_t offset = (parameterBytes_ + align - 1) / align * align;
    parameters_.write(offset, words.data(), words.size_bytes()); // throws past what begin() made room for
    parameterBytes_ = offset + words.size_bytes();
    return {parameters_.handle(), VkDeviceSize(offset),
            VkDeviceSize(std::max<std::size_t>(words.size_bytes(), 4))};
}

VkDescriptorSet VkCommandBatch::allocateSet(VkDescriptorSetLayout layout) {
    if (!recording_ || setsLeft_ == 0)
        throw std::logic_error("VkCommandBatch: more dispatches than begin() made room for");
    --setsLeft_;
    VkDescriptorSetAllocateInfo dsai{};
    dsai.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO;
    dsai.descriptorPool = pool_;
    dsai.descriptorSetCount = 1;
    dsai.pSetLayouts = &layout;
    VkDescriptorSet set = VK_NULL_HANDLE;
    vkCheck(vkAllocateDescriptorSets(ctx_->device(), &dsai, &set), "vkAllocateDescriptorSets");
    return set;
}

void VkCommandBatch::barrier(VkPipelineStageFlags src, VkAccessFlags srcAccess, VkPipelineStageFlags dst,
                             VkAccessFlags dstAccess) {
    VkMemoryBarrier b{};
    b.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
    b.srcAccessMask = srcAccess;
    b.dstAccessMask = dstAccess;
    vkCmdPipelineBarrier(commands_, src, dst, 0, 1, &b, 0, nullptr, 0, nullptr);
}

void VkCommandBatch::computeBarrier() {
    barrier(VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
            VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
}

void VkCommandBatch::copy(const VkStorageBuffer& from, const VkStorageBuffer& to, std::size_t bytes) {
    if (bytes > from.capacity() || bytes > to.capacity())
        throw std::out_of_range("VkCommandBatch::copy past the end of a buffer");
    if (!bytes) return;
    const VkBufferCopy region{0, 0, VkDeviceSize(bytes)};
    vkCmdCopyBuffer(commands_, from.handle(), to.handle(), 1, &region);
}

void VkCommandBatch::submit() {
    if (!recording_) throw std::logic_error("VkCommandBatch::submit without begin");
    recording_ = false;
    vkCheck(vkEndCommandBuffer(commands_), "vkEndCommandBuffer");
    VkSubmitInfo info{};
    info.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
    info.commandBufferCount = 1;
    info.pCommandBuffers = &commands_;
    vkCheck(vkQueueSubmit(ctx_->queue(), 1, &info, fence_), "vkQueueSubmit");
    pending_ = true;
}

VkComputeKernel::VkComputeKernel(const VkContext& ctx, std::span<const std::uint32_t> spirv,
                                 std::uint32_t bindings)
    : ctx_(&ctx), bindings_(bindings) {
    // Drivers need not check their input, so a truncated or missing module is caught here.
    if (spirv.size() < 5 || spirv[0] != 0x07230203u)
        throw VkError("not a SPIR-V module (" + std::to_string(spirv.size()) +
                      " words, no SPIR-V magic number)");
    // Every handle is null until created, so destroy() can clean up after a throw half-way.
    try {
        create(spirv);
    } catch (...) {
        destroy();
        throw;
    }
}

void VkComputeKernel::create(std::span<const std::uint32_t> spirv) {
    const VkDevice device = ctx_->device();
    const std::uint32_t bindings = bindings_;
    VkShaderModuleCreateInfo smci{};
    smci.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO;
    smci.codeSize = spirv.size_bytes();
    smci.pCode = spirv.data();
    vkCheck(vkCreateShaderModule(device, &smci, nullptr, &module_), "vkCreateShaderModule");

    std::vector<VkDescriptorSetLayoutBinding> slots(bindings);
    for (std::uint32_t k = 0; k < bindings; ++k) {
        slots[k] = {};
        slots[k].binding = k;
        slots[k].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
        slots[k].descriptorCount = 1;
        slots[k].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
    }
    VkDescriptorSetLayoutCreateInfo dslci{};
    dslci.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO;
    dslci.bindingCount = bindings;
    dslci.pBindings = slots.data();
    vkCheck(vkCreateDescriptorSetLayout(device, &dslci, nullptr, &setLayout_), "vkCreateDescriptorSetLayout");

    VkPipelineLayoutCreateInfo plci{};
    plci.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO;
    plci.setLayoutCount = 1;
    plci.pSetLayouts = &setLayout_;
    vkCheck(vkCreatePipelineLayout(device, &plci, nullptr, &layout_), "vkCreatePipelineLayout");

    batch_ = std::make_unique<VkCommandBatch>(*ctx_);
}

VkComputeKernel::~VkComputeKernel() {
    destroy();
}

void VkComputeKernel::destroy() {
    const VkDevice device = ctx_->device();
    for (auto& [constants, p] : pipelines_) vkDestroyPipeline(device, p, nullptr);
    pipelines_.clear();
    batch_.reset();
    if (layout_) vkDestroyPipelineLayout(device, layout_, nullptr);
    if (setLayout_) vkDestroyDescriptorSetLayout(device, setLayout_, nullptr);
    if (module_) vkDestroyShaderModule(device, module_, nullptr);
    layout_ = VK_NULL_HANDLE;
    setLayout_ = VK_NULL_HANDLE;
    module_ = VK_NULL_HANDLE;
}

VkPipeline VkComputeKernel::pipeline(const std::vector<std::uint32_t>& constants) {
    auto it = pipelines_.find(constants);
    if (it != pipelines_.end()) return it->second;
    std::vector<VkSpecializationMapEntry> entries(constants.size());
    for (std::size_t k = 0; k < constants.size(); ++k)
        entries[k] = {std::uint32_t(k), std::uint32_t(k * sizeof(std::uint32_t)), sizeof(std::uint32_t)};
    VkSpecializationInfo si{};
    si.mapEntryCount = std::uint32_t(entries.size());
    si.pMapEntries = entries.data();
    si.dataSize = constants.size() * sizeof(std::uint32_t);
    si.pData = constants.data();
    VkComputePipelineCreateInfo cpci{};
    cpci.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO;
    cpci.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
    cpci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    cpci.stage.module = module_;
    cpci.stage.pName = "main";
    cpci.stage.pSpecializationInfo = &si;
    cpci.layout = layout_;
    VkPipeline p = VK_NULL_HANDLE;
    vkCheck(vkCreateComputePipelines(ctx_->device(), VK_NULL_HANDLE, 1, &cpci, nullptr, &p),
            "vkCreateComputePipelines");
    pipelines_.emplace(constants, p);
    return p;
}

void VkComputeKernel::dispatch(const std::vector<std::uint32_t>& constants,
                               std::span<VkStorageBuffer* const> buffers, std::uint32_t groups) {
    if (buffers.size() != bindings_)
        throw std::invalid_argument("VkComputeKernel::dispatch: " + std::to_string(buffers.size()) +
                                    " buffers for " + std::to_string(bindings_) + " bindings");
    std::vector<VkBufferRange> ranges(bindings_);
    for (std::uint32_t k = 0; k < bindings_; ++k) {
        if (!buffers[k] || !buffers[k]->handle())
            throw std::invalid_argument("VkComputeKernel::dispatch: no buffer for binding " +
                                        std::to_string(k));
        ranges[k] = wholeOf(*buffers[k]);
    }
    batch_->begin(1, bindings_, 0);
    record(*batch_, constants, ranges, groups);
    // Shader writes -> host reads of the mapped memory after the fence.
    batch_->barrier(VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
                    VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT);
    batch_->submit();
    batch_->wait();
}

void VkComputeKernel::record(VkCommandBatch& batch, const std::vector<std::uint32_t>& constants,
                             std::span<const VkBufferRange> buffers, std::uint32_t groups) {
    if (buffers.size() != bindings_)
        throw std::invalid_argument("VkComputeKernel::record: " + std::to_string(buffers.size()) +
                                    " buffers for " + std::to_string(bindings_) + " bindings");
    for (std::uint32_t k = 0; k < bindings_; ++k)
        if (!buffers[k].buffer)
            throw std::invalid_argument("VkComputeKernel::record: no buffer for binding " +
                                        std::to_string(k));
    const VkPipeline p = pipeline(constants);
    const VkDescriptorSet set = batch.allocateSet(setLayout_);
    std::vector<VkDescriptorBufferInfo> infos(bindings_);
    std::vector<VkWriteDescriptorSet> writes(bindings_);
    for (std::uint32_t k = 0; k < bindings_; ++k) {
        infos[k] = {buffers[k].buffer, buffers[k].offset, buffers[k].size};
        writes[k] = {};
        writes[k].sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
        writes[k].dstSet = set;
        writes[k].dstBinding = k;
        writes[k].descriptorCount = 1;
        writes[k].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
        writes[k].pBufferInfo = &infos[k];
    }
    // A fresh set: no pending submission uses it, so it may be written now.
    vkUpdateDescriptorSets(ctx_->device(), bindings_, writes.data(), 0, nullptr);
    const VkCommandBuffer commands = batch.commands();
    vkCmdBindPipeline(commands, VK_PIPELINE_BIND_POINT_COMPUTE, p);
    vkCmdBindDescriptorSets(commands, VK_PIPELINE_BIND_POINT_COMPUTE, layout_, 0, 1, &set, 0, nullptr);
    vkCmdDispatch(commands, groups, 1, 1);
}

} // namespace flowscope
