#include "engine/backend/Registry.h"

#include "engine/attention/StreamKernel.h"
#include "engine/core/Parallel.h"
#include "engine/core/Text.h"

#if FLOWSCOPE_HAVE_GPU
#include "engine/gpu/gl/GlContext.h"
#include "engine/gpu/gl/GlKernelField.h"
#include "engine/gpu/gl/GlStepper.h"
#include "engine/gpu/gl/GlStreamRunner.h"
#if FLOWSCOPE_HAVE_VULKAN
#include "engine/gpu/vulkan/VkContext.h"
#include "engine/gpu/vulkan/VkKernelField.h"
#include "engine/gpu/vulkan/VkStepper.h"
#endif
#endif

namespace flowscope {

namespace {

// The one place the ids and labels are spelled. A fourth backend adds a row here and a case in open().
struct Entry {
    const char* id;
    const char* label;
    const char* runName; // ComputeBackend::runName
    bool deviceSteps;    // BackendInfo::deviceSteps
    bool takesGlHost;    // BackendInfo::takesGlHost
};
constexpr Entry kEntries[] = {
    {"cpu", "CPU", "CPU", false, false},
    {"gl", "OpenGL compute", "OpenGL float32", true, true},
    {"vulkan", "Vulkan compute", "Vulkan float32", true, false},
};
enum Row { kCpu, kGl, kVulkan }; // kEntries' rows

bool is(const Entry& e, Row row) {
    return &e == &kEntries[row];
}

// Why an entry is not in this build; empty when it is. FLOWSCOPE_NO_GPU_WHY comes from CMake
// (engine/CMakeLists.txt), which knows whether the GPU backends were turned off or EGL was missing.
std::string notBuiltWhy(const Entry& e) {
    if (is(e, kCpu)) return {};
#if !FLOWSCOPE_HAVE_GPU
    return std::string("not built in this build (") + FLOWSCOPE_NO_GPU_WHY + ")";
#else
    if (is(e, kVulkan) && !FLOWSCOPE_HAVE_VULKAN)
        return "not built in this build (libvulkan-dev or glslc were missing when it was configured)";
    return {};
#endif
}

ComputeBackend named(const Entry& e) {
    ComputeBackend b;
    b.id = e.id;
    b.label = e.label;
    b.runName = e.runName;
    b.gpu = &e != &kEntries[0];
    return b;
}

#if FLOWSCOPE_HAVE_GPU
// A CPU device's refusal of a scene with more tokens than its shader loops reach (KernelPass.h).
std::optional<std::string> cpuDeviceLimit(const Scene& scene, const std::string& device) {
    if (auto refused = cpuDeviceRefusal(scene.n, device)) return std::string(refused->what());
    return std::nullopt;
}

// The GL backend on a table loaded from some context: fields, and a stepper unless `fieldsOnly`. `device`
// owns the table (and the context); it is released after everything made from it.
template <class Device>
ComputeBackend glBackend(std::shared_ptr<Device> device, const GlFunctions& gl, const void* shareGroup,
                         bool fieldsOnly) {
    ComputeBackend b = named(kEntries[kGl]);
    b.device = gl.describe();
    const GlFunctions* table = &gl;
    if (glSoftwareRenderer(gl))
        b.fieldsRefuse = [device = b.device](const Scene& scene) { return cpuDeviceLimit(scene, device); };
    b.makeField = [table](const AttentionSpec& spec, int d, Precision) {
        return makeGlField(spec, d, *table);
    };
    if (!fieldsOnly)
        b.makeStepper = StepperFactory(
            [table, shareGroup](const AttentionSpec& spec, const IntegratorSpec& integrator, int d) {
                auto stepper = std::make_unique<GlStepper>(spec, integrator, d, *table);
                stepper->setShareGroup(shareGroup);
                return std::unique_ptr<DeviceStepper>(std::move(stepper));
            },
            &GlStepper::refusal);
    b.context = std::move(device);
    return b;
}

ComputeBackend openGl(const BackendHost* host) {
    if (!host) {
        std::string why;
        std::shared_ptr<GlContext> ctx = GlContext::createHeadless(&why);
        if (!ctx) throw BackendError("backend gl is unavailable: " + why);
        const GlFunctions& gl = ctx->gl();
        return glBackend(std::move(ctx), gl, nullptr, false);
    }
    // The caller's context: the table loaded from it lives with the caller's keep-alive, declared after it
    // so that it goes first.
    struct Hosted {
        std::shared_ptr<void> keepAlive;
        GlFunctions gl;
    };
    auto device = std::make_shared<Hosted>();
    device->keepAlive = host->keepAlive;
    std::string why;
    if (!host->getProcAddress || !device->gl.load(host->getProcAddress, GlFunctions::Use::Compute, &why))
        throw BackendError("backend gl is unavailable: " + (why.empty() ? "no OpenGL context" : why));
    const GlFunctions& gl = device->gl;
    return glBackend(std::move(device), gl, host->shareGroup, host->fieldsOnly);
}

#if FLOWSCOPE_HAVE_VULKAN
ComputeBackend openVulkan() {
    std::string why;
    std::shared_ptr<VkContext> ctx = VkContext::create(&why);
    if (!ctx) throw BackendError("backend vulkan is unavailable: " + why);
    ComputeBackend b = named(kEntries[kVulkan]);
    b.device = ctx->describe();
    const VkContext* c = ctx.get();
    b.makeField = [c](const AttentionSpec& spec, int d, Precision) { return makeVkField(spec, d, *c); };
    b.makeStepper = StepperFactory(
        [c](const AttentionSpec& spec, const IntegratorSpec& integrator, int d) {
            return std::unique_ptr<DeviceStepper>(std::make_unique<VkStepper>(spec, integrator, d, *c));
        },
        &VkStepper::refusal);
    if (ctx->cpuDevice())
        b.fieldsRefuse = [device = b.device](const Scene& scene) { return cpuDeviceLimit(scene, device); };
    b.context = std::move(ctx);
    return b;
}
#endif
#endif

} // namespace

std::vector<BackendInfo> listBackends() {
    std::vector<BackendInfo> list;
    for (const Entry& e : kEntries) {
        const std::string why = notBuiltWhy(e);
        list.push_back({e.id, e.label, why.empty(), why, e.deviceSteps, e.takesGlHost});
    }
    return list;
}

std::string backendIdList() {
    std::string ids;
    for (const Entry& e : kEntries) ids += (ids.empty() ? "" : ", ") + std::string(e.id);
    return ids;
}

ComputeBackend cpuBackend() {
    ComputeBackend b = named(kEntries[kCpu]);
    b.device = "CPU, " + std::to_string(threadCount()) + " threads, " + streamKernelIsa();
    b.makeField = makeCpuField;
    return b;
}

ComputeBackend openBackend(const std::string& id, const BackendHost* host) {
    const Entry* entry = nullptr;
    for (const Entry& e : kEntries)
        if (id == e.id) entry = &e;
    if (!entry)
        throw BackendError("unknown backend " + quoteForMessage(id) + " (expected one of " + backendIdList() +
                           ")");
    if (const std::string why = notBuiltWhy(*entry); !why.empty())
        throw BackendError("backend " + id + " is unavailable: " + why);
    if (is(*entry, kCpu)) return cpuBackend();
#if FLOWSCOPE_HAVE_GPU
    if (is(*entry, kGl)) return openGl(host);
#if FLOWSCOPE_HAVE_VULKAN
    if (is(*entry, kVulkan)) return openVulkan();
#endif
#endif
    (void)host;
    throw BackendError("backend " + id + " is unavailable: no opener in this build"); // not reached
}

} // namespace flowscope
