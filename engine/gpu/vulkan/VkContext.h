// Flowscope GPU: a headless Vulkan compute device (no window, no surface, no instance extensions).
//
// The CLI, tests and benchmarks run the compute kernels through Vulkan where it is the better (or the only)
// path: an instance, the first physical device with a compute queue (a discrete GPU first, then an
// integrated or virtual one, then any, such as Mesa's lavapipe CPU device), one logical device and one
// compute queue. Validation layers are off; FLOWSCOPE_VK_VALIDATION=1 turns on VK_LAYER_KHRONOS_validation
// when it is installed. Failures throw VkError naming the VkResult, because "-4" says nothing to a user.
#pragma once

#include <vulkan/vulkan.h>

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

namespace flowscope {

struct VkError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// "VK_ERROR_OUT_OF_DEVICE_MEMORY" etc.; the number for codes this build does not name.
std::string vkResultName(VkResult r);
// Throws VkError "<what> failed: <result name>" unless r is VK_SUCCESS.
void vkCheck(VkResult r, const char* what);

class VkContext {
  public:
    // A new device; null when no Vulkan loader, driver or compute-capable device is usable, with the reason
    // in *whyNot.
    static std::unique_ptr<VkContext> create(std::string* whyNot);
    ~VkContext();
    VkContext(const VkContext&) = delete;
    VkContext& operator=(const VkContext&) = delete;

    VkPhysicalDevice physicalDevice() const { return physical_; }
    VkDevice device() const { return device_; }
    VkQueue queue() const { return queue_; }
    std::uint32_t queueFamily() const { return family_; }
    const VkPhysicalDeviceProperties& properties() const { return properties_; }
    const VkPhysicalDeviceLimits& limits() const { return properties_.limits; }

    const std::string& deviceName() const { return name_; }
    // "Vulkan 1.3, llvmpipe (LLVM 15.0.6, 256 bits) (cpu)": for logs and test output.
    std::string describe() const;
    // A CPU implementation (lavapipe, SwiftShader): barriers are costly there, as on llvmpipe.
    bool cpuDevice() const { return properties_.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU; }

    // The index of a memory type allowed by `typeBits` with all of `flags`; throws VkError when none.
    std::uint32_t memoryType(std::uint32_t typeBits, VkMemoryPropertyFlags flags) const;

  private:
    VkContext() = default;
    VkInstance instance_ = VK_NULL_HANDLE;
    VkPhysicalDevice physical_ = VK_NULL_HANDLE;
    VkDevice device_ = VK_NULL_HANDLE;
    VkQueue queue_ = VK_NULL_HANDLE;
    std::uint32_t family_ = 0;
    VkPhysicalDeviceProperties properties_{};
    VkPhysicalDeviceMemoryProperties memory_{};
    std::string name_;
};

} // namespace flowscope
