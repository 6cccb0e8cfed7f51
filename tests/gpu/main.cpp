// The GPU test runner: creates the headless context (and the Vulkan device) once, before any test, and
// destroys them after all.
#include "GpuTestUtil.h"

#if FLOWSCOPE_HAVE_VULKAN
#include "engine/gpu/vulkan/VkContext.h"
#endif

namespace flowscope::test {

namespace {
std::unique_ptr<GlContext> gContext;
std::string gWhyNot;
#if FLOWSCOPE_HAVE_VULKAN
std::unique_ptr<VkContext> gVulkan;
std::string gVkWhyNot;
#else
const std::string gVkWhyNot =
    "this build has no Vulkan host (FLOWSCOPE_BUILD_VULKAN off, or libvulkan-dev or "
    "glslc missing at configure time)";
#endif

struct GpuEnvironment : ::testing::Environment {
    void SetUp() override {
        gContext = GlContext::createHeadless(&gWhyNot);
        if (gContext)
            std::printf("[ gpu      ] %s\n", gContext->describe().c_str());
        else
            std::printf("[ gpu      ] unavailable: %s\n", gWhyNot.c_str());
#if FLOWSCOPE_HAVE_VULKAN
        gVulkan = VkContext::create(&gVkWhyNot);
        if (gVulkan) std::printf("[ vulkan   ] %s\n", gVulkan->describe().c_str());
#endif
        if (!vkContext()) std::printf("[ vulkan   ] unavailable: %s\n", gVkWhyNot.c_str());
    }
    void TearDown() override {
#if FLOWSCOPE_HAVE_VULKAN
        gVulkan.reset();
#endif
        gContext.reset();
    }
};
} // namespace

GlContext* gpuContext() {
    return gContext.get();
}
const std::string& gpuUnavailable() {
    return gWhyNot;
}

VkContext* vkContext() {
#if FLOWSCOPE_HAVE_VULKAN
    return gVulkan.get();
#else
    return nullptr;
#endif
}
const std::string& vkUnavailable() {
    return gVkWhyNot;
}

} // namespace flowscope::test

int main(int argc, char** argv) {
    ::testing::InitGoogleTest(&argc, argv);
    ::testing::AddGlobalTestEnvironment(new flowscope::test::GpuEnvironment);
    return RUN_ALL_TESTS();
}
