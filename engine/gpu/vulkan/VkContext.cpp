#include "engine/gpu/vulkan/VkContext.h"

#include <cstdlib>
#include <cstring>
#include <vector>

namespace flowscope {

std::string vkResultName(VkResult r) {
    switch (r) {
#define FLOWSCOPE_VK_RESULT(name)                                                                            \
    case name:                                                                                               \
        return #name;
        FLOWSCOPE_VK_RESULT(VK_SUCCESS)
        FLOWSCOPE_VK_RESULT(VK_NOT_READY)
        FLOWSCOPE_VK_RESULT(VK_TIMEOUT)
        FLOWSCOPE_VK_RESULT(VK_EVENT_SET)
        FLOWSCOPE_VK_RESULT(VK_EVENT_RESET)
        FLOWSCOPE_VK_RESULT(VK_INCOMPLETE)
        FLOWSCOPE_VK_RESULT(VK_ERROR_OUT_OF_HOST_MEMORY)
        FLOWSCOPE_VK_RESULT(VK_ERROR_OUT_OF_DEVICE_MEMORY)
        FLOWSCOPE_VK_RESULT(VK_ERROR_INITIALIZATION_FAILED)
        FLOWSCOPE_VK_RESULT(VK_ERROR_DEVICE_LOST)
        FLOWSCOPE_VK_RESULT(VK_ERROR_MEMORY_MAP_FAILED)
        FLOWSCOPE_VK_RESULT(VK_ERROR_LAYER_NOT_PRESENT)
        FLOWSCOPE_VK_RESULT(VK_ERROR_EXTENSION_NOT_PRESENT)
        FLOWSCOPE_VK_RESULT(VK_ERROR_FEATURE_NOT_PRESENT)
        FLOWSCOPE_VK_RESULT(VK_ERROR_INCOMPATIBLE_DRIVER)
        FLOWSCOPE_VK_RESULT(VK_ERROR_TOO_MANY_OBJECTS)
        FLOWSCOPE_VK_RESULT(VK_ERROR_FORMAT_NOT_SUPPORTED)
        FLOWSCOPE_VK_RESULT(VK_ERROR_FRAGMENTED_POOL)
        FLOWSCOPE_VK_RESULT(VK_ERROR_UNKNOWN)
        FLOWSCOPE_VK_RESULT(VK_ERROR_OUT_OF_POOL_MEMORY)
        FLOWSCOPE_VK_RESULT(VK_ERROR_INVALID_EXTERNAL_HANDLE)
        FLOWSCOPE_VK_RESULT(VK_ERROR_FRAGMENTATION)
        FLOWSCOPE_VK_RESULT(VK_ERROR_INVALID_SHADER_NV)
#undef FLOWSCOPE_VK_RESULT
    default:
        return "VkResult " + std::to_string(int(r));
    }
}

void vkCheck(VkResult r, const char* what) {
    if (r != VK_SUCCESS) throw VkError(std::string(what) + " failed: " + vkResultName(r));
}

namespace {

// Lower is better: discrete, integrated, virtual, then CPU and anything else.
int deviceRank(VkPhysicalDeviceType t) {
    switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
        return 0;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
        return 1;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
        return 2;
    default:
        return 3;
    }
}

const char* deviceTypeName(VkPhysicalDeviceType t) {
    switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
        return "discrete GPU";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
        return "integrated GPU";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
        return "virtual GPU";
    case VK_PHYSICAL_DEVICE_TYPE_CPU:
        return "cpu";
    default:
        return "other";
    }
}

// The first queue family of `device` with compute, or -1.
int computeFamily(VkPhysicalDevice device) {
    std::uint32_t count = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(device, &count, nullptr);
    std::vector<VkQueueFamilyProperties> families(count);
    vkGetPhysicalDeviceQueueFamilyProperties(device, &count, families.data());
    for (std::uint32_t k = 0; k < count; ++k)
        if (families[k].queueFlags & VK_QUEUE_COMPUTE_BIT) return int(k);
    return -1;
}

bool validationRequested() {
    const char* v = std::getenv("FLOWSCOPE_VK_VALIDATION");
    return v && *v && std::strcmp(v, "0") != 0;
}

bool layerInstalled(const char* name) {
    std::uint32_t count = 0;
    if (vkEnumerateInstanceLayerProperties(&count, nullptr) != VK_SUCCESS) return false;
    std::vector<VkLayerProperties> layers(count);
    if (vkEnumerateInstanceLayerProperties(&count, layers.data()) != VK_SUCCESS) return false;
    for (const VkLayerProperties& l : layers)
        if (std::strcmp(l.layerName, name) == 0) return true;
    return false;
}

} // namespace

std::unique_ptr<VkContext> VkContext::create(std::string* whyNot) {
    auto fail = [&](const std::string& why) {
        if (whyNot) *whyNot = why;
        return std::unique_ptr<VkContext>();
    };
    std::unique_ptr<VkContext> ctx(new VkContext);

    VkApplicationInfo app{};
    app.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO;
    app.pApplicationName = "Flowscope";
    app.pEngineName = "Flowscope";
    app.apiVersion = VK_API_VERSION_1_0; // all the kernel needs: storage buffers, specialization constants
    const char* validation = "VK_LAYER_KHRONOS_validation";
    const bool validate = validationRequested() && layerInstalled(validation);
    VkInstanceCreateInfo ici{};
    ici.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO;
    ici.pApplicationInfo = &app;
    ici.enabledLayerCount = validate ? 1 : 0;
    ici.ppEnabledLayerNames = validate ? &validation : nullptr;
    VkResult r = vkCreateInstance(&ici, nullptr, &ctx->instance_);
    if (r != VK_SUCCESS) return fail("vkCreateInstance failed: " + vkResultName(r) + " (no Vulkan driver?)");

    std::uint32_t count = 0;
    vkEnumeratePhysicalDevices(ctx->instance_, &count, nullptr);
    std::vector<VkPhysicalDevice> devices(count);
    r = vkEnumeratePhysicalDevices(ctx->instance_, &count, devices.data());
    if (r != VK_SUCCESS && r != VK_INCOMPLETE)
        return fail("vkEnumeratePhysicalDevices failed: " + vkResultName(r));
    int best = -1, bestFamily = -1, bestRank = 99;
    for (std::uint32_t k = 0; k < count; ++k) {
        VkPhysicalDeviceProperties p;
        vkGetPhysicalDeviceProperties(devices[k], &p);
        const int family = computeFamily(devices[k]);
        if (family >= 0 && deviceRank(p.deviceType) < bestRank) {
            best = int(k);
            bestFamily = family;
            bestRank = deviceRank(p.deviceType);
        }
    }
    if (best < 0)
        return fail(count ? "no Vulkan device has a compute queue" : "the Vulkan loader found no device");
    ctx->physical_ = devices[std::size_t(best)];
    ctx->family_ = std::uint32_t(bestFamily);
    vkGetPhysicalDeviceProperties(ctx->physical_, &ctx->properties_);
    vkGetPhysicalDeviceMemoryProperties(ctx->physical_, &ctx->memory_);
    ctx->name_ = ctx->properties_.deviceName;

    const float priority = 1.0f;
    VkDeviceQueueCreateInfo qci{};
    qci.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO;
    qci.queueFamilyIndex = ctx->family_;
    qci.queueCount = 1;
    qci.pQueuePriorities = &priority;
    VkDeviceCreateInfo dci{};
    dci.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO;
    dci.queueCreateInfoCount = 1;
    dci.pQueueCreateInfos = &qci;
    r = vkCreateDevice(ctx->physical_, &dci, nullptr, &ctx->device_);
    if (r != VK_SUCCESS) return fail("vkCreateDevice(" + ctx->name_ + ") failed: " + vkResultName(r));
    vkGetDeviceQueue(ctx->device_, ctx->family_, 0, &ctx->queue_);
    return ctx;
}

VkContext::~VkContext() {
    if (device_) {
        vkDeviceWaitIdle(device_);
        vkDestroyDevice(device_, nullptr);
    }
    if (instance_) vkDestroyInstance(instance_, nullptr);
}

std::string VkContext::describe() const {
    const std::uint32_t v = properties_.apiVersion;
    return "Vulkan " + std::to_string(VK_VERSION_MAJOR(v)) + "." + std::to_string(VK_VERSION_MINOR(v)) +
           ", " + name_ + " (" + deviceTypeName(properties_.deviceType) + ")";
}

std::uint32_t VkContext::memoryType(std::uint32_t typeBits, VkMemoryPropertyFlags flags) const {
    for (std::uint32_t k = 0; k < memory_.memoryTypeCount; ++k)
        if ((typeBits & (1u << k)) && (memory_.memoryTypes[k].propertyFlags & flags) == flags) return k;
    throw VkError("no Vulkan memory type with the properties a buffer needs on " + name_);
}

} // namespace flowscope
