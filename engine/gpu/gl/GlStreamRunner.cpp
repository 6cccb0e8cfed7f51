#include "engine/gpu/gl/GlStreamRunner.h"

#include "engine/gpu/gl/EmbeddedShaders.h"

#include <cstdint>

namespace flowscope {

namespace {

gl::Int integer(const GlFunctions& gl, gl::Enum what, gl::Int fallback) {
    gl::Int v = fallback;
    gl.GetIntegerv(what, &v);
    return v;
}

} // namespace

bool glSoftwareRenderer(const GlFunctions& gl) {
    const unsigned char* r = gl.GetString(gl::RENDERER);
    const std::string renderer = r ? reinterpret_cast<const char*>(r) : "";
    return renderer.find("llvmpipe") != std::string::npos || renderer.find("softpipe") != std::string::npos;
}

GlStreamRunner::GlStreamRunner(const GlFunctions& gl)
    : KernelPassRunner(integer(gl, gl::MAX_COMPUTE_SHARED_MEMORY_SIZE, 32768),
                       integer(gl, gl::MAX_COMPUTE_WORK_GROUP_INVOCATIONS, 1024), glSoftwareRenderer(gl)),
      gl_(&gl), programs_(gl), params_(gl), keys_(gl), bias_(gl), queries_(gl), out_(gl) {}

const GlComputeProgram& GlStreamPrograms::get(const StreamKernelVariant& v) {
    GlDefines defines;
    for (const KernelConstant& c : kernelConstants(v)) defines.emplace_back(c.name, std::to_string(c.value));
    std::string key;
    for (const auto& [name, value] : defines) key += value + ",";
    auto it = programs_.find(key);
    if (it == programs_.end()) {
        const char* body = embeddedShader("stream_kernel.comp");
        if (!body) throw GlError("stream_kernel.comp was not embedded in this build");
        it = programs_.emplace(key, GlComputeProgram(*gl_, glslSource(430, defines, body))).first;
    }
    return it->second;
}

void GlStreamRunner::dispatch(const StreamKernelInputs& in, Eigen::MatrixXf& out) {
    gl::Int maxGroups = 65535;
    gl_->GetIntegeri_v(gl::MAX_COMPUTE_WORK_GROUP_COUNT, 0, &maxGroups);
    if (std::string why = dispatchRefusal(in.variant, in.nq, maxGroups); !why.empty()) throw GlError(why);
    const long groups = streamKernelGroups(in.variant, in.nq);

    params_.upload(in.params.data(), in.params.size() * sizeof(std::uint32_t));
    keys_.upload(in.keys.data(), std::size_t(in.keys.size()) * sizeof(float));
    if (in.variant.hasBias) bias_.upload(in.bias.data(), std::size_t(in.bias.size()) * sizeof(float));
    if (in.variant.explicitQueries)
        queries_.upload(in.queries.data(), std::size_t(in.queries.size()) * sizeof(float));
    out_.reserve(std::size_t(out.size()) * sizeof(float));

    params_.bind(0);
    keys_.bind(1);
    if (in.variant.hasBias) bias_.bind(2);
    if (in.variant.explicitQueries) queries_.bind(3);
    out_.bind(4);
    programs_.get(in.variant).dispatch(gl::Uint(groups));
    glCheck(*gl_, "dispatching the streaming attention kernel");
    out_.download(out.data(), std::size_t(out.size()) * sizeof(float));
}

} // namespace flowscope
