// Flowscope GPU: every attention variant on OpenGL 4.3 compute.
//
// A GpuField (engine/gpu/common/GpuField.h: the variant's own CPU class, its streaming passes on the GPU)
// with a GlStreamRunner. The passes (shaders/stream_kernel.comp) run in float32 and meet the StreamArgs
// contract, so the field is tested against the CPU float64 reference.
#pragma once

#include "engine/gpu/common/GpuField.h"
#include "engine/gpu/gl/GlStreamRunner.h"

namespace flowscope {

class GlKernelField : public GpuField {
  public:
    // `gl` must outlive the field, and its context must be current on the thread of every call (including
    // the destructor, which frees the GPU buffers). Throws SceneError as makeCpuField does.
    GlKernelField(const AttentionSpec& spec, int d, const GlFunctions& gl)
        : GpuField(spec, d, std::make_shared<GlStreamRunner>(gl), "OpenGL") {}
};

// The OpenGL field for a spec: GlKernelField, wrapped in the CPU's SphereProjection when spec.sphere is set.
std::unique_ptr<VelocityField> makeGlField(const AttentionSpec& spec, int d, const GlFunctions& gl);

} // namespace flowscope
