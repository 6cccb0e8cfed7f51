#include "engine/gpu/vulkan/VkKernelField.h"

#include "engine/attention/SphereProjection.h"

namespace flowscope {

std::unique_ptr<VelocityField> makeVkField(const AttentionSpec& spec, int d, const VkContext& ctx) {
    return withSphereProjection(spec, std::make_unique<VkKernelField>(spec, d, ctx));
}

} // namespace flowscope
