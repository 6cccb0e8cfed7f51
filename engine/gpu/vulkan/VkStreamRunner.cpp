#include "engine/gpu/vulkan/VkStreamRunner.h"

#include <algorithm>

namespace flowscope {

namespace {

// The workgroup size bound of the kernel (its local size is the tile).
long maxInvocations(const VkContext& ctx) {
    return long(
        std::min(ctx.limits().maxComputeWorkGroupInvocations, ctx.limits().maxComputeWorkGroupSize[0]));
}

// The specialization constants of shaders/stream_kernel.comp, in constant_id order.
std::vector<std::uint32_t> specialization(const StreamKernelVariant& v) {
    std::vector<std::uint32_t> values;
    for (const KernelConstant& c : kernelConstants(v)) values.push_back(c.value);
    return values;
}

} // namespace

std::vector<std::uint32_t> streamKernelConstants(const StreamKernelVariant& variant) {
    return specialization(variant);
}

StreamKernelDevice vkStreamKernelDevice(const VkContext& ctx) {
    return {long(ctx.limits().maxComputeSharedMemorySize), maxInvocations(ctx), ctx.cpuDevice(),
            ctx.describe()};
}

VkStreamRunner::VkStreamRunner(const VkContext& ctx)
    : KernelPassRunner(long(ctx.limits().maxComputeSharedMemorySize), maxInvocations(ctx), ctx.cpuDevice()),
      ctx_(&ctx), kernel_(ctx, requiredSpirv("stream_kernel.comp"), 5), params_(ctx), keys_(ctx), bias_(ctx),
      queries_(ctx), out_(ctx) {}

void VkStreamRunner::dispatch(const StreamKernelInputs& in, Eigen::MatrixXf& out) {
    const long maxGroups = long(ctx_->limits().maxComputeWorkGroupCount[0]);
    if (std::string why = dispatchRefusal(in.variant, in.nq, maxGroups); !why.empty()) throw VkError(why);
    const long groups = streamKernelGroups(in.variant, in.nq);

    params_.upload(in.params.data(), in.params.size() * sizeof(std::uint32_t));
    keys_.upload(in.keys.data(), std::size_t(in.keys.size()) * sizeof(float));
    // Unread buffers stay bound as 16-byte placeholders: every binding of the set must be valid.
    if (in.variant.hasBias)
        bias_.upload(in.bias.data(), std::size_t(in.bias.size()) * sizeof(float));
    else
        bias_.reserve(0);
    if (in.variant.explicitQueries)
        queries_.upload(in.queries.data(), std::size_t(in.queries.size()) * sizeof(float));
    else
        queries_.reserve(0);
    out_.reserve(std::size_t(out.size()) * sizeof(float));

    VkStorageBuffer* const buffers[] = {&params_, &keys_, &bias_, &queries_, &out_};
    kernel_.dispatch(specialization(in.variant), buffers, std::uint32_t(groups));
    out_.download(out.data(), std::size_t(out.size()) * sizeof(float));
}

} // namespace flowscope
