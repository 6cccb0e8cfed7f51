#include "engine/gpu/VkKernelField.h"

#include "engine/attention/SphereProjection.h"
#include "engine/gpu/VkSpirv.h"

namespace flowscope {

namespace {

std::span<const std::uint32_t> streamKernelSpirv() {
    const std::span<const std::uint32_t> words = embeddedSpirv("stream_kernel.comp");
    if (words.empty()) throw VkError("stream_kernel.comp was not compiled to SPIR-V in this build");
    return words;
}

// Largest power-of-two workgroup <= 64 whose staged tile fits the device's shared memory.
int tileFor(const VkContext& ctx, int d) {
    const VkPhysicalDeviceLimits& l = ctx.limits();
    return streamKernelTile(d, long(l.maxComputeSharedMemorySize),
                            long(std::min(l.maxComputeWorkGroupInvocations, l.maxComputeWorkGroupSize[0])));
}

// The specialization constants of shaders/stream_kernel.comp, in constant_id order.
std::vector<std::uint32_t> specialization(const StreamKernelVariant& v) {
    return {std::uint32_t(v.dim),          std::uint32_t(v.weighting),       std::uint32_t(v.causal),
            std::uint32_t(v.hasBias),      std::uint32_t(v.explicitQueries), std::uint32_t(v.tile),
            std::uint32_t(v.stageInShared)};
}

} // namespace

VkKernelField::VkKernelField(const AttentionSpec& spec, int d, const VkContext& ctx)
    : ctx_(&ctx), d_(d), spec_(spec), cpu_(kernelAverageReference(spec, d, "Vulkan")),
      kernel_(ctx, streamKernelSpirv(), 5), params_(ctx), keys_(ctx), bias_(ctx), queries_(ctx), out_(ctx),
      tile_(tileFor(ctx, d)), sharedStaging_(!ctx.cpuDevice()) {}

void VkKernelField::setAttention(const AttentionSpec& spec) {
    cpu_ = kernelAverageReference(spec, d_, "Vulkan");
    spec_ = spec;
}

void VkKernelField::streamPass(const Tokens& X, const HeadSetup& h, bool causal, Eigen::MatrixXf& out,
                               bool keysUploaded) {
    const StreamKernelInputs in = streamKernelInputs(X, h, causal, queriesOnGpu_, tile_, sharedStaging_);
    out.resize(in.nq, X.cols() + 2);
    if (in.nq == 0) return;
    const long groups = (long(in.nq) + tile_ - 1) / tile_;
    const long maxGroups = long(ctx_->limits().maxComputeWorkGroupCount[0]);
    if (groups > maxGroups)
        throw VkError("too many tokens for one dispatch (" + std::to_string(in.nq) + " queries, at most " +
                      std::to_string(maxGroups * tile_) + ")");

    params_.upload(in.params.data(), in.params.size() * sizeof(std::uint32_t));
    if (!keysUploaded) {
        const Eigen::MatrixXf keys = X.cast<float>(); // column-major = the kernel's SoA layout
        keys_.upload(keys.data(), std::size_t(keys.size()) * sizeof(float));
    }
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

void VkKernelField::velocity(double t, const Tokens& X, Tokens& dX) {
    assembleKernelVelocity(spec_, *cpu_, t, X, dX,
                           [&](const HeadSetup& h, bool firstHead, Eigen::MatrixXf& out) {
                               streamPass(X, h, spec_.masked, out, !firstHead);
                           });
}

std::unique_ptr<VelocityField> makeVkField(const AttentionSpec& spec, int d, const VkContext& ctx) {
    std::unique_ptr<VelocityField> f = std::make_unique<VkKernelField>(spec, d, ctx);
    if (spec.sphere) f = std::make_unique<SphereProjection>(std::move(f));
    return f;
}

} // namespace flowscope
