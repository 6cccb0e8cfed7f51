#include "engine/gpu/common/Backend.h"

#include "engine/gpu/gl/GlContext.h"
#include "engine/gpu/gl/GlKernelField.h"
#include "engine/gpu/gl/GlStepper.h"
#if FLOWSCOPE_HAVE_VULKAN
#include "engine/gpu/vulkan/VkContext.h"
#include "engine/gpu/vulkan/VkKernelField.h"
#endif

namespace flowscope {

std::vector<std::string> backendNames() {
#if FLOWSCOPE_HAVE_VULKAN
    return {"cpu", "gl", "vulkan"};
#else
    return {"cpu", "gl"};
#endif
}

ComputeBackend openBackend(const std::string& kind) {
    ComputeBackend b;
    b.kind = kind;
    if (kind == "cpu") return cpuBackend();
    if (kind == "gl") {
        std::string why;
        std::shared_ptr<GlContext> ctx = GlContext::createHeadless(&why);
        if (!ctx) throw BackendError("backend gl is unavailable: " + why);
        b.device = ctx->describe();
        b.makeField = [ctx](const AttentionSpec& spec, int d, Precision) {
            return makeGlField(spec, d, ctx->gl());
        };
        b.makeStepper = [ctx](const AttentionSpec& spec, const IntegratorSpec& integrator, int d) {
            return std::unique_ptr<DeviceStepper>(new GlStepper(spec, integrator, d, ctx->gl()));
        };
        b.context = ctx;
        return b;
    }
    if (kind == "vulkan") {
#if FLOWSCOPE_HAVE_VULKAN
        std::string why;
        std::shared_ptr<VkContext> ctx = VkContext::create(&why);
        if (!ctx) throw BackendError("backend vulkan is unavailable: " + why);
        b.device = ctx->describe();
        b.makeField = [ctx](const AttentionSpec& spec, int d, Precision) {
            return makeVkField(spec, d, *ctx);
        };
        b.context = ctx;
        return b;
#else
        throw BackendError("backend vulkan is unavailable: this build has no Vulkan host (libvulkan-dev and "
                           "glslc were missing when it was configured)");
#endif
    }
    std::string names;
    for (const std::string& n : backendNames()) names += (names.empty() ? "" : ", ") + n;
    throw BackendError("unknown backend \"" + kind + "\" (expected one of " + names + ")");
}

} // namespace flowscope
