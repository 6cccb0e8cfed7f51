#include "engine/gpu/gl/GlKernelField.h"

#include "engine/attention/SphereProjection.h"

namespace flowscope {

std::unique_ptr<VelocityField> makeGlField(const AttentionSpec& spec, int d, const GlFunctions& gl) {
    return withSphereProjection(spec, std::make_unique<GlKernelField>(spec, d, gl));
}

} // namespace flowscope
