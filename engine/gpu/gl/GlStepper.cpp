#include "engine/gpu/gl/GlStepper.h"

#include "engine/attention/SphereProjection.h"
#include "engine/gpu/gl/EmbeddedShaders.h"
#include "engine/gpu/gl/GlStreamRunner.h"

#include <algorithm>
#include <bit>
#include <cstdint>

namespace flowscope {

namespace {

constexpr int kGroup = 64; // local size of head_assembly and stage_combine

// Assembly flags (shaders/head_assembly.comp) and combine flags (shaders/stage_combine.comp).
constexpr std::uint32_t kAccumulate = 1, kProject = 2, kClear = 4;
constexpr std::uint32_t kToX = 1, kNormalize = 2;

std::uint32_t bits(double v) {
    return std::bit_cast<std::uint32_t>(float(v));
}

GlProgram buildProgram(const GlFunctions& gl, const char* name, const GlDefines& defines) {
    const char* body = embeddedShader(name);
    if (!body) throw GlError(std::string(name) + " was not embedded in this build");
    return GlProgram(gl, glslSource(430, defines, body));
}

void uploadWords(GlBuffer& buffer, const std::vector<std::uint32_t>& words) {
    buffer.upload(words.data(), words.size() * sizeof(std::uint32_t));
}

} // namespace

struct GlStepper::Head {
    explicit Head(const GlFunctions& gl) : kernelParams(gl), assemblyParams(gl) {}
    GlBuffer kernelParams, assemblyParams;
    StreamKernelVariant variant;
};

GlStepper::GlStepper(const AttentionSpec& spec, const IntegratorSpec& integrator, int d,
                     const GlFunctions& gl)
    : gl_(&gl), d_(d), spec_(spec), reference_(kernelAverageReference(spec, d, "OpenGL stepper")),
      stages_(stagesOf(integrator)), h_(integrator.T / integrator.steps), streamPrograms_(gl), x_(gl), y_(gl),
      kernelOut_(gl), clearParams_(gl) {
    checkSupported(*reference_, spec);
    gl::Int shared = 32768, invocations = 1024;
    gl.GetIntegerv(gl::MAX_COMPUTE_SHARED_MEMORY_SIZE, &shared);
    gl.GetIntegerv(gl::MAX_COMPUTE_WORK_GROUP_INVOCATIONS, &invocations);
    sharedBytes_ = shared;
    invocations_ = invocations;
    // The OpenGL field's staging choice for this context (off on Mesa's CPU rasterizers): both paths agree.
    cpuDevice_ = glSoftwareRenderer(gl);
    sharedStaging_ = !cpuDevice_;
    assembly_.emplace(buildProgram(gl, "head_assembly.comp", {}));
    combine_.emplace(buildProgram(gl, "stage_combine.comp", {}));
    for (int s = 0; s < 4; ++s) k_.push_back(std::make_unique<GlBuffer>(gl));
    buildCombines();
}

GlStepper::~GlStepper() {
    for (const auto& copy : shared_) {
        std::lock_guard lock(*copy->mutex);
        *copy->valid = false;
        if (copy->fence) gl_->DeleteSync(copy->fence);
        if (copy->readFence) gl_->DeleteSync(copy->readFence);
        gl_->DeleteBuffers(1, &copy->buffer);
    }
}

std::shared_ptr<const DeviceTokens> GlStepper::share(long step) {
    if (n_ == 0) return nullptr;
    // A copy nobody else holds (use_count 1: only this list) is free; else make another. Readers drop theirs
    // with the snapshot that carried them, so the list stays a handful long.
    std::shared_ptr<DeviceTokens> copy;
    for (const auto& c : shared_)
        if (c.use_count() == 1) copy = c;
    if (!copy) {
        copy = std::make_shared<DeviceTokens>();
        gl_->GenBuffers(1, &copy->buffer);
        shared_.push_back(copy);
    }
    {
        // The last reader's draw from this buffer may still be queued in its context: wait for it on the GPU.
        std::lock_guard lock(*copy->mutex);
        if (copy->readFence) {
            gl_->WaitSync(copy->readFence, 0, gl::TIMEOUT_IGNORED);
            gl_->DeleteSync(copy->readFence);
            copy->readFence = nullptr;
        }
    }
    const gl::Sizeiptr bytes = gl::Sizeiptr(n_) * d_ * gl::Sizeiptr(sizeof(float));
    gl_->MemoryBarrier(gl::BUFFER_UPDATE_BARRIER_BIT); // the copy reads what the shaders wrote
    gl_->BindBuffer(gl::COPY_WRITE_BUFFER, copy->buffer);
    if (copy->n * copy->d != n_ * d_)
        gl_->BufferData(gl::COPY_WRITE_BUFFER, bytes, nullptr, gl::DYNAMIC_COPY);
    gl_->BindBuffer(gl::COPY_READ_BUFFER, x_.id());
    gl_->CopyBufferSubData(gl::COPY_READ_BUFFER, gl::COPY_WRITE_BUFFER, 0, 0, bytes);
    gl_->BindBuffer(gl::COPY_READ_BUFFER, 0);
    gl_->BindBuffer(gl::COPY_WRITE_BUFFER, 0);
    if (copy->fence) gl_->DeleteSync(copy->fence);
    copy->fence = gl_->FenceSync(gl::SYNC_GPU_COMMANDS_COMPLETE, 0);
    gl_->Flush(); // the fence must reach the GPU before another context waits on it
    copy->n = n_;
    copy->d = d_;
    copy->t = time();
    copy->step = step;
    copy->shareGroup = shareGroup_;
    glCheck(*gl_, "sharing the tokens");
    return copy;
}

std::optional<SceneError> GlStepper::integratorRefusal(const IntegratorSpec& is) {
    if (!(is.steps > 0) || !(is.T > 0.0))
        return SceneError("/integrator", "the OpenGL stepper needs T > 0 and steps > 0");
    switch (is.method) {
    case Method::Euler:
    case Method::Heun:
    case Method::Rk4:
        return std::nullopt;
    default:
        return SceneError("/integrator/method",
                          std::string("the OpenGL stepper takes fixed steps only (euler, heun, rk4), not ") +
                              toString(is.method));
    }
}

std::vector<GlStepper::Stage> GlStepper::stagesOf(const IntegratorSpec& is) {
    if (std::optional<SceneError> refused = integratorRefusal(is)) throw *refused;
    const double h = is.T / is.steps;
    switch (is.method) {
    case Method::Euler:
        return {{0.0, false, h, {{0, 1.0}}, true}};
    case Method::Heun:
        return {{0.0, false, h, {{0, 1.0}}, false}, {1.0, true, 0.5 * h, {{0, 1.0}, {1, 1.0}}, true}};
    default: // Rk4: integratorRefusal let no other method through
        return {{0.0, false, 0.5 * h, {{0, 1.0}}, false},
                {0.5, true, 0.5 * h, {{1, 1.0}}, false},
                {0.5, true, h, {{2, 1.0}}, false},
                {1.0, true, h / 6.0, {{0, 1.0}, {1, 2.0}, {2, 2.0}, {3, 1.0}}, true}};
    }
}

std::optional<SceneError> GlStepper::headsRefusal(const KernelAttention& ref, const AttentionSpec& spec,
                                                  int d) {
    const Tokens one = Tokens::Zero(1, d);
    auto dependent = [&](const std::vector<HeadParams>& heads) {
        for (const HeadParams& head : heads) {
            const HeadSetup h = ref.setupHead(head, one);
            if (h.bias.size() || h.queries.size()) return true;
        }
        return false;
    };
    bool refused = dependent(spec.heads);
    for (const Keyframe& kf : spec.keyframes) refused = refused || dependent(kf.heads);
    if (!refused) return std::nullopt;
    return SceneError("/attention/type",
                      std::string("the OpenGL stepper does not implement ") + toString(spec.type) +
                          " attention (its key biases or queries depend on the tokens); use "
                          "the OpenGL field");
}

void GlStepper::checkSupported(const KernelAttention& ref, const AttentionSpec& spec) const {
    if (std::optional<SceneError> refused = headsRefusal(ref, spec, d_)) throw *refused;
}

std::optional<std::string> GlStepper::refusal(const AttentionSpec& spec, const IntegratorSpec& integrator,
                                              int d) {
    if (std::optional<SceneError> e = kernelAverageRefusal(spec.type, "OpenGL stepper")) return e->what();
    if (std::optional<SceneError> e = integratorRefusal(integrator)) return e->what();
    if (std::optional<SceneError> e =
            headsRefusal(*kernelAverageReference(spec, d, "OpenGL stepper"), spec, d))
        return e->what();
    return std::nullopt;
}

void GlStepper::buildCombines() {
    combineParams_.clear();
    for (const Stage& s : stages_) {
        std::vector<std::uint32_t> p(9, 0);
        p[0] = std::uint32_t(n_);
        p[1] = std::uint32_t(d_);
        p[2] = std::uint32_t(s.terms.size());
        p[3] = (s.toX ? kToX : 0) | (s.toX && spec_.sphere ? kNormalize : 0);
        p[4] = bits(s.a);
        for (std::size_t k = 0; k < s.terms.size(); ++k) p[5 + k] = bits(s.terms[k].second);
        combineParams_.push_back(std::make_unique<GlBuffer>(*gl_));
        uploadWords(*combineParams_.back(), p);
    }
    const std::vector<std::uint32_t> clear = {std::uint32_t(n_), std::uint32_t(d_), 0, kClear, 0, 0, 0, 0};
    uploadWords(clearParams_, clear);
}

void GlStepper::upload(const Tokens& X, double t) {
    if (X.cols() != d_)
        throw std::invalid_argument("GlStepper::upload: tokens have " + std::to_string(X.cols()) +
                                    " coordinates, the stepper " + std::to_string(d_));
    gl::Int maxGroups = 65535;
    gl_->GetIntegeri_v(gl::MAX_COMPUTE_WORK_GROUP_COUNT, 0, &maxGroups);
    if (cpuDevice_)
        if (auto refused = cpuDeviceRefusal(long(X.rows()), gl_->describe())) throw *refused;
    if (streamKernelGroups({.tile = layout(int(X.rows())).tile}, X.rows()) > maxGroups)
        throw GlError("too many tokens for one dispatch (" + std::to_string(X.rows()) + ")");

    Tokens Y = X;
    if (spec_.sphere) SphereProjection::normalize(Y);
    const Eigen::MatrixXf Xf = Y.cast<float>(); // column-major = the shaders' structure-of-arrays layout
    const std::size_t bytes = std::size_t(Xf.size()) * sizeof(float);
    x_.upload(Xf.data(), bytes);
    y_.reserve(bytes);
    for (auto& k : k_) k->reserve(bytes);
    kernelOut_.reserve(std::size_t(X.rows()) * (d_ + 2) * sizeof(float));
    if (X.rows() != n_) {
        n_ = int(X.rows());
        probe_ = Tokens::Zero(n_, d_);
        headsReady_ = false;
        buildCombines();
    }
    t0_ = t;
    steps_ = 0;
    glCheck(*gl_, "uploading tokens");
}

void GlStepper::download(Tokens& X) {
    ++downloads_;
    Eigen::MatrixXf Xf(n_, d_);
    x_.download(Xf.data(), std::size_t(Xf.size()) * sizeof(float));
    X = Xf.cast<double>();
}

void GlStepper::setAttention(const AttentionSpec& spec) {
    std::unique_ptr<KernelAttention> reference = kernelAverageReference(spec, d_, "OpenGL stepper");
    checkSupported(*reference, spec);
    const bool toSphere = spec.sphere && !spec_.sphere;
    reference_ = std::move(reference);
    spec_ = spec;
    headsReady_ = false;
    buildCombines();
    if (toSphere) normalizeTokens(); // as Simulation::setAttention does
}

void GlStepper::setIntegrator(const IntegratorSpec& integrator) {
    std::vector<Stage> stages = stagesOf(integrator);
    t0_ = time();
    steps_ = 0;
    stages_ = std::move(stages);
    h_ = integrator.T / integrator.steps;
    buildCombines();
}

StreamKernelLayout GlStepper::layout(int n) const {
    return streamKernelLayout(d_, n, sharedBytes_, invocations_, sharedStaging_);
}

void GlStepper::dispatch(const GlProgram& program, long groups) {
    program.dispatch(gl::Uint(groups));
    // The next dispatch reads what this one wrote, or overwrites what it read.
    gl_->MemoryBarrier(gl::SHADER_STORAGE_BARRIER_BIT);
}

void GlStepper::normalizeTokens() {
    if (n_ == 0) return;
    const std::vector<std::uint32_t> p = {
        std::uint32_t(n_), std::uint32_t(d_), 0, kToX | kNormalize, 0, 0, 0, 0, 0};
    GlBuffer params(*gl_);
    uploadWords(params, p);
    params.bind(0);
    x_.bind(1);
    y_.bind(2);
    for (int s = 0; s < 4; ++s) x_.bind(gl::Uint(3 + s));
    dispatch(*combine_, groups(kGroup));
    glCheck(*gl_, "normalizing tokens");
}

void GlStepper::prepareHeads(double t) {
    if (headsReady_ && spec_.keyframes.empty()) return;
    const std::vector<HeadParams> heads = spec_.headsAt(t);
    while (heads_.size() < heads.size()) heads_.push_back(std::make_unique<Head>(*gl_));
    heads_.resize(heads.size());
    for (std::size_t k = 0; k < heads.size(); ++k) {
        const HeadSetup h = reference_->setupHead(heads[k], probe_);
        // Queries formed in the shader: the kernel's Params block is n, n, pads, B.
        const StreamKernelInputs in = streamKernelInputs(probe_, h, spec_.masked, true, layout(n_));
        if (in.variant.hasBias || in.variant.explicitQueries)
            throw SceneError("/attention/type", "the OpenGL stepper needs token-independent heads");
        heads_[k]->variant = in.variant;
        uploadWords(heads_[k]->kernelParams, in.params);

        std::vector<std::uint32_t> p(8 + std::size_t(d_) * d_, 0);
        p[0] = std::uint32_t(n_);
        p[1] = std::uint32_t(d_);
        p[2] = std::uint32_t(h.weighting);
        p[3] = (k > 0 ? kAccumulate : 0) | (k + 1 == heads.size() && spec_.sphere ? kProject : 0);
        p[4] = bits(1.0 / double(n_));
        const Mat W = h.outScale * h.V;
        for (int r = 0; r < d_; ++r)
            for (int c = 0; c < d_; ++c) p[8 + std::size_t(r) * d_ + c] = bits(W(r, c));
        uploadWords(heads_[k]->assemblyParams, p);
    }
    headsReady_ = true;
}

void GlStepper::evaluate(double t, const GlBuffer& at, const GlBuffer& velocity) {
    prepareHeads(t);
    if (heads_.empty()) {
        clearParams_.bind(0);
        velocity.bind(2);
        at.bind(1); // bound, not read
        at.bind(3);
        dispatch(*assembly_, groups(kGroup));
        return;
    }
    for (const auto& head : heads_) {
        head->kernelParams.bind(0);
        at.bind(1);
        kernelOut_.bind(4);
        dispatch(streamPrograms_.get(head->variant), streamKernelGroups(head->variant, n_));

        head->assemblyParams.bind(0);
        kernelOut_.bind(1);
        velocity.bind(2);
        at.bind(3);
        dispatch(*assembly_, groups(kGroup));
    }
}

void GlStepper::advance(int steps) {
    if (n_ == 0) {
        steps_ += std::max(steps, 0);
        return;
    }
    for (int step = 0; step < steps; ++step) {
        const double t = time();
        for (std::size_t s = 0; s < stages_.size(); ++s) {
            const Stage& stage = stages_[s];
            evaluate(t + stage.offset * h_, stage.atY ? y_ : x_, *k_[s]);

            combineParams_[s]->bind(0);
            x_.bind(1);
            y_.bind(2);
            for (int slot = 0; slot < 4; ++slot) {
                const int k = slot < int(stage.terms.size()) ? stage.terms[slot].first : 0;
                k_[k]->bind(gl::Uint(3 + slot));
            }
            dispatch(*combine_, groups(kGroup));
        }
        ++steps_;
    }
    glCheck(*gl_, "advancing the tokens");
}

} // namespace flowscope
