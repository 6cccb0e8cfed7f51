// Flowscope GPU: the streaming passes of every attention variant on an OpenGL 4.3 compute shader.
//
// The OpenGL host of shaders/stream_kernel.comp: one program per kernel variant (the knobs are #defines),
// compiled on first use and cached, and the five storage buffers the kernel reads and writes. Everything
// else is KernelPassRunner's (engine/gpu/KernelPass.h, shared with Vulkan).
#pragma once

#include "engine/gpu/GlCompute.h"
#include "engine/gpu/KernelPass.h"

#include <map>
#include <string>

namespace flowscope {

class GlStreamRunner final : public KernelPassRunner {
  public:
    // `gl` must outlive the runner, and its context must be current on the thread of every call (including
    // the destructor, which frees the GPU buffers).
    explicit GlStreamRunner(const GlFunctions& gl);

  private:
    void dispatch(const StreamKernelInputs& in, Eigen::MatrixXf& out) override;
    const GlProgram& program(const StreamKernelVariant& variant);

    const GlFunctions* gl_;
    std::map<std::string, GlProgram> programs_;
    GlBuffer params_, keys_, bias_, queries_, out_;
};

} // namespace flowscope
