#include "engine/gpu/vulkan/VkCompute.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace flowscope {

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
    bci.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT;
    bci.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
    vkCheck(vkCreateBuffer(device, &bci, nullptr, &buffer_), "vkCreateBuffer");
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(device, buffer_, &req);
    VkMemoryAllocateInfo mai{};
    mai.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
    mai.allocationSize = req.size;
    mai.memoryTypeIndex = ctx_->memoryType(req.memoryTypeBits, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                                                   VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
    try {
        vkCheck(vkAllocateMemory(device, &mai, nullptr, &memory_), "vkAllocateMemory");
        vkCheck(vkBindBufferMemory(device, buffer_, memory_, 0), "vkBindBufferMemory");
        vkCheck(vkMapMemory(device, memory_, 0, VK_WHOLE_SIZE, 0, &mapped_), "vkMapMemory");
    } catch (...) {
        release();
        throw;
    }
    capacity_ = size;
}

void VkStorageBuffer::upload(const void* data, std::size_t bytes) {
    reserve(bytes);
    if (bytes) std::memcpy(mapped_, data, bytes);
}

void VkStorageBuffer::download(void* data, std::size_t bytes) const {
    if (bytes > capacity_) throw std::out_of_range("VkStorageBuffer::download past the end of the buffer");
    if (bytes) std::memcpy(data, mapped_, bytes);
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

    const VkDescriptorPoolSize poolSize{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, bindings};
    VkDescriptorPoolCreateInfo dpci{};
    dpci.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO;
    dpci.maxSets = 1;
    dpci.poolSizeCount = 1;
    dpci.pPoolSizes = &poolSize;
    vkCheck(vkCreateDescriptorPool(device, &dpci, nullptr, &pool_), "vkCreateDescriptorPool");
    VkDescriptorSetAllocateInfo dsai{};
    dsai.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO;
    dsai.descriptorPool = pool_;
    dsai.descriptorSetCount = 1;
    dsai.pSetLayouts = &setLayout_;
    vkCheck(vkAllocateDescriptorSets(device, &dsai, &set_), "vkAllocateDescriptorSets");

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
}

VkComputeKernel::~VkComputeKernel() {
    destroy();
}

void VkComputeKernel::destroy() {
    const VkDevice device = ctx_->device();
    for (auto& [constants, p] : pipelines_) vkDestroyPipeline(device, p, nullptr);
    pipelines_.clear();
    // Pools free the descriptor set and the command buffer with them.
    if (fence_) vkDestroyFence(device, fence_, nullptr);
    if (commandPool_) vkDestroyCommandPool(device, commandPool_, nullptr);
    if (pool_) vkDestroyDescriptorPool(device, pool_, nullptr);
    if (layout_) vkDestroyPipelineLayout(device, layout_, nullptr);
    if (setLayout_) vkDestroyDescriptorSetLayout(device, setLayout_, nullptr);
    if (module_) vkDestroyShaderModule(device, module_, nullptr);
    fence_ = VK_NULL_HANDLE;
    commandPool_ = VK_NULL_HANDLE;
    pool_ = VK_NULL_HANDLE;
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
    std::vector<VkDescriptorBufferInfo> infos(bindings_);
    std::vector<VkWriteDescriptorSet> writes(bindings_);
    for (std::uint32_t k = 0; k < bindings_; ++k) {
        if (!buffers[k] || !buffers[k]->handle())
            throw std::invalid_argument("VkComputeKernel::dispatch: no buffer for binding " +
                                        std::to_string(k));
        infos[k] = {buffers[k]->handle(), 0, VK_WHOLE_SIZE};
        writes[k] = {};
        writes[k].sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
        writes[k].dstSet = set_;
        writes[k].dstBinding = k;
        writes[k].descriptorCount = 1;
        writes[k].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
        writes[k].pBufferInfo = &infos[k];
    }
    const VkPipeline p = pipeline(constants);
    const VkDevice device = ctx_->device();
    // The previous dispatch was waited for, so the set is not in use: buffers may have been reallocated.
    vkUpdateDescriptorSets(device, bindings_, writes.data(), 0, nullptr);

    VkCommandBufferBeginInfo begin{};
    begin.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
    begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    vkCheck(vkBeginCommandBuffer(commands_, &begin), "vkBeginCommandBuffer");
    vkCmdBindPipeline(commands_, VK_PIPELINE_BIND_POINT_COMPUTE, p);
    vkCmdBindDescriptorSets(commands_, VK_PIPELINE_BIND_POINT_COMPUTE, layout_, 0, 1, &set_, 0, nullptr);
    vkCmdDispatch(commands_, groups, 1, 1);
    // Shader writes -> host reads of the mapped memory after the fence.
    VkMemoryBarrier toHost{};
    toHost.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
    toHost.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
    toHost.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
    vkCmdPipelineBarrier(commands_, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1,
                         &toHost, 0, nullptr, 0, nullptr);
    vkCheck(vkEndCommandBuffer(commands_), "vkEndCommandBuffer");

    VkSubmitInfo submit{};
    submit.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
    submit.commandBufferCount = 1;
    submit.pCommandBuffers = &commands_;
    vkCheck(vkQueueSubmit(ctx_->queue(), 1, &submit, fence_), "vkQueueSubmit");
    vkCheck(vkWaitForFences(device, 1, &fence_, VK_TRUE, UINT64_MAX), "vkWaitForFences");
    vkCheck(vkResetFences(device, 1, &fence_), "vkResetFences");
}

} // namespace flowscope
