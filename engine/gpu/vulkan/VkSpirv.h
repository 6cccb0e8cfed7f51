// Flowscope GPU: the compute shaders of shaders/ as SPIR-V, compiled by glslc at build time and embedded.
//
// Vulkan takes SPIR-V, not GLSL. The build compiles every shaders/*.comp once with glslc (-std=450, which
// predefines VULKAN so the shader declares its knobs as specialization constants) and turns the modules into
// word arrays (cmake/EmbedSpirv.cmake), so a binary runs without shader files or a GLSL compiler beside it.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace flowscope {

// The SPIR-V words of shaders/<name> (e.g. "stream_kernel.comp"), or an empty span when there is none.
std::span<const std::uint32_t> embeddedSpirv(std::string_view name);

} // namespace flowscope
