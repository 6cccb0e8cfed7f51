#include "engine/gpu/vulkan/VkKernelField.h"

#include "engine/attention/SphereProjection.h"

namespace flowscope {

std::unique_ptr<VelocityField> makeVkField(const AttentionSpec& spec, int d, const VkContext& ctx) {
    std::unique_ptr<VelocityField> f = std::make_unique<VkKernelField>(spec, d, ctx);
    if (spec.sphere) f = std::make_unique<SphereProjection>(std::move(f));
    return f;
}

} // namespace flowscope
