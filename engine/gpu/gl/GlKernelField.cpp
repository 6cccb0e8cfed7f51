#include "engine/gpu/gl/GlKernelField.h"

#include "engine/attention/SphereProjection.h"

namespace flowscope {

std::unique_ptr<VelocityField> makeGlField(const AttentionSpec& spec, int d, const GlFunctions& gl) {
    std::unique_ptr<VelocityField> f = std::make_unique<GlKernelField>(spec, d, gl);
    if (spec.sphere) f = std::make_unique<SphereProjection>(std::move(f));
    return f;
}

} // namespace flowscope
