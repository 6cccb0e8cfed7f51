#include "engine/gpu/GlKernelField.h"

#include "engine/attention/SphereProjection.h"
#include "engine/gpu/EmbeddedShaders.h"

#include <cstdint>

namespace flowscope {

namespace {

// Largest power-of-two workgroup <= 64 whose staged tile fits the shared memory the context offers.
int tileFor(const GlFunctions& gl, int d) {
    gl::Int shared = 32768, invocations = 1024;
    gl.GetIntegerv(gl::MAX_COMPUTE_SHARED_MEMORY_SIZE, &shared);
    gl.GetIntegerv(gl::MAX_COMPUTE_WORK_GROUP_INVOCATIONS, &invocations);
    return streamKernelTile(d, shared, invocations);
}

// Mesa's CPU rasterizers run compute barriers as coroutine switches; reading keys straight from the buffer
// is faster there than staging them.
bool softwareRenderer(const GlFunctions& gl) {
    const unsigned char* r = gl.GetString(gl::RENDERER);
    const std::string renderer = r ? reinterpret_cast<const char*>(r) : "";
    return renderer.find("llvmpipe") != std::string::npos || renderer.find("softpipe") != std::string::npos;
}

} // namespace

GlKernelField::GlKernelField(const AttentionSpec& spec, int d, const GlFunctions& gl)
    : gl_(&gl), d_(d), spec_(spec), cpu_(kernelAverageReference(spec, d, "OpenGL")), params_(gl), keys_(gl),
      bias_(gl), queries_(gl), out_(gl), tile_(tileFor(gl, d)), sharedStaging_(!softwareRenderer(gl)) {}

void GlKernelField::setAttention(const AttentionSpec& spec) {
    cpu_ = kernelAverageReference(spec, d_, "OpenGL");
    spec_ = spec;
}

const GlProgram& GlKernelField::program(const StreamKernelVariant& v) {
    const GlDefines defines = {{"DIM", std::to_string(v.dim)},
                               {"WEIGHTING", std::to_string(int(v.weighting))},
                               {"CAUSAL", v.causal ? "1" : "0"},
                               {"HAS_BIAS", v.hasBias ? "1" : "0"},
                               {"EXPLICIT_QUERIES", v.explicitQueries ? "1" : "0"},
                               {"TILE", std::to_string(v.tile)},
                               {"STAGE_IN_SHARED", v.stageInShared ? "1" : "0"}};
    std::string key;
    for (const auto& [name, value] : defines) key += value + ",";
    auto it = programs_.find(key);
    if (it == programs_.end()) {
        const char* body = embeddedShader("stream_kernel.comp");
        if (!body) throw GlError("stream_kernel.comp was not embedded in this build");
        it = programs_.emplace(key, GlProgram(*gl_, glslSource(430, defines, body))).first;
    }
    return it->second;
}

void GlKernelField::streamPass(const Tokens& X, const HeadSetup& h, bool causal, Eigen::MatrixXf& out,
                               bool keysUploaded) {
    const StreamKernelInputs in = streamKernelInputs(X, h, causal, queriesOnGpu_, tile_, sharedStaging_);
    out.resize(in.nq, X.cols() + 2);
    if (in.nq == 0) return;
    gl::Int maxGroups = 65535;
    gl_->GetIntegeri_v(gl::MAX_COMPUTE_WORK_GROUP_COUNT, 0, &maxGroups);
    const long groups = (long(in.nq) + tile_ - 1) / tile_;
    if (groups > long(maxGroups))
        throw GlError("too many tokens for one dispatch (" + std::to_string(in.nq) + " queries, at most " +
                      std::to_string(long(maxGroups) * tile_) + ")");

    params_.upload(in.params.data(), in.params.size() * sizeof(std::uint32_t));
    if (!keysUploaded) {
        const Eigen::MatrixXf keys = X.cast<float>(); // column-major = the kernel's SoA layout
        keys_.upload(keys.data(), std::size_t(keys.size()) * sizeof(float));
    }
    if (in.variant.hasBias) bias_.upload(in.bias.data(), std::size_t(in.bias.size()) * sizeof(float));
    if (in.variant.explicitQueries)
        queries_.upload(in.queries.data(), std::size_t(in.queries.size()) * sizeof(float));
    out_.reserve(std::size_t(out.size()) * sizeof(float));

    params_.bind(0);
    keys_.bind(1);
    if (in.variant.hasBias) bias_.bind(2);
    if (in.variant.explicitQueries) queries_.bind(3);
    out_.bind(4);
    program(in.variant).dispatch(gl::Uint(groups));
    glCheck(*gl_, "dispatching the streaming attention kernel");
    out_.download(out.data(), std::size_t(out.size()) * sizeof(float));
}

void GlKernelField::velocity(double t, const Tokens& X, Tokens& dX) {
    assembleKernelVelocity(spec_, *cpu_, t, X, dX,
                           [&](const HeadSetup& h, bool firstHead, Eigen::MatrixXf& out) {
                               streamPass(X, h, spec_.masked, out, !firstHead);
                           });
}

std::unique_ptr<VelocityField> makeGlField(const AttentionSpec& spec, int d, const GlFunctions& gl) {
    std::unique_ptr<VelocityField> f = std::make_unique<GlKernelField>(spec, d, gl);
    if (spec.sphere) f = std::make_unique<SphereProjection>(std::move(f));
    return f;
}

} // namespace flowscope
