// Flowscope GPU: the GLSL sources of shaders/, compiled into the binary.
//
// The build turns every shaders/*.comp into a string literal (cmake/EmbedShaders.cmake), so a binary runs
// from any directory without shader files beside it.
#pragma once

#include <string_view>

namespace flowscope {

// The text of shaders/<name> (e.g. "stream_kernel.comp") as it was at build time, or null when there is none.
const char* embeddedShader(std::string_view name);

} // namespace flowscope
