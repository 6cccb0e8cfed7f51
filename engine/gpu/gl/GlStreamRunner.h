// Flowscope GPU: the streaming passes of every attention variant on an OpenGL 4.3 compute shader.
//
// The OpenGL host of shaders/stream_kernel.comp: one program per kernel variant (the knobs are #defines),
// compiled on first use and cached, and the five storage buffers the kernel reads and writes. Everything
// else is KernelPassRunner's (engine/gpu/common/KernelPass.h, shared with Vulkan).
#pragma once

#include "engine/gpu/common/KernelPass.h"
#include "engine/gpu/gl/GlCompute.h"

#include <map>
#include <string>

namespace flowscope {

// Whether the context is one of Mesa's CPU rasterizers (llvmpipe, softpipe): compute barriers are coroutine
// switches there, so keys are read straight from the buffer rather than staged, and shader loops are
// limited (kCpuDeviceMaxKeys).
bool glSoftwareRenderer(const GlFunctions& gl);

// The programs of shaders/stream_kernel.comp, one per kernel variant (the knobs are #defines), compiled on
// first use and cached. Used by GlStreamRunner and GlStepper.
class GlStreamPrograms {
  public:
    // `gl` must outlive the cache, and its context must be current on the thread of every call.
    explicit GlStreamPrograms(const GlFunctions& gl) : gl_(&gl) {}

    // Throws GlError when the shader was not embedded or does not compile.
    const GlComputeProgram& get(const StreamKernelVariant& variant);

  private:
    const GlFunctions* gl_;
    std::map<std::string, GlComputeProgram> programs_;
};

class GlStreamRunner final : public KernelPassRunner {
  public:
    // `gl` must outlive the runner, and its context must be current on the thread of every call (including
    // the destructor, which frees the GPU buffers).
    explicit GlStreamRunner(const GlFunctions& gl);

  private:
    void dispatch(const StreamKernelInputs& in, Eigen::MatrixXf& out) override;

    const GlFunctions* gl_;
    GlStreamPrograms programs_;
    GlBuffer params_, keys_, bias_, queries_, out_;
};

} // namespace flowscope
