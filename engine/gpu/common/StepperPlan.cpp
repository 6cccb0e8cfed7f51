#include "engine/gpu/common/StepperPlan.h"

#include "engine/attention/SphereProjection.h"

#include <bit>
#include <stdexcept>

namespace flowscope {

namespace {

// Assembly flags (shaders/head_assembly.comp) and combine flags (shaders/stage_combine.comp).
constexpr std::uint32_t kAccumulate = 1, kProject = 2, kClear = 4;
constexpr std::uint32_t kToX = 1, kNormalize = 2;

std::uint32_t bits(double v) {
    return std::bit_cast<std::uint32_t>(float(v));
}

} // namespace

StepperPlan::StepperPlan(const AttentionSpec& spec, const IntegratorSpec& integrator, int d, std::string api,
                         StreamKernelDevice device)
    : d_(d), api_(std::move(api)), device_(std::move(device)), spec_(spec),
      reference_(reference(spec, d, api_)), stages_(stagesOf(integrator, api_)),
      h_(integrator.T / integrator.steps) {
    if (std::optional<SceneError> refused = headsRefusal(*reference_, spec, d_, api_)) throw *refused;
}

StreamKernelLayout StepperPlan::layout(int n) const {
    return streamKernelLayout(d_, n, device_.sharedBytes, device_.maxInvocations, !device_.cpuDevice);
}

std::optional<SceneError> StepperPlan::integratorRefusal(const IntegratorSpec& is, const std::string& api) {
    if (!(is.steps > 0) || !(is.T > 0.0))
        return SceneError("/integrator", "the " + api + " stepper needs T > 0 and steps > 0");
    switch (is.method) {
    case Method::Euler:
    case Method::Heun:
    case Method::Rk4:
        return std::nullopt;
    default:
        return SceneError("/integrator/method",
                          "the " + api + " stepper takes fixed steps only (euler, heun, rk4), not " +
                              toString(is.method));
    }
}

std::vector<StepperStage> StepperPlan::stagesOf(const IntegratorSpec& is, const std::string& api) {
    if (std::optional<SceneError> refused = integratorRefusal(is, api)) throw *refused;
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

std::optional<SceneError> StepperPlan::headsRefusal(const KernelAttention& ref, const AttentionSpec& spec,
                                                    int d, const std::string& api) {
    const Tokens one = Tokens::Zero(1, d);
    auto dependent = [&](const std::vector<HeadParams>& heads) {
        for (const HeadParams& head : heads) {
            const HeadSetup h = ref.setupHead(head, one);
            // A quadratic form of the keys (l2) the kernel computes itself (QUAD_BIAS); any other
            // token-dependent bias or query would have to be computed on the host at every stage.
            if ((h.bias.size() && !ref.quadraticKeyBias(head)) || h.queries.size()) return true;
        }
        return false;
    };
    bool refused = dependent(spec.heads);
    for (const Keyframe& kf : spec.keyframes) refused = refused || dependent(kf.heads);
    if (!refused) return std::nullopt;
    return SceneError("/attention/type",
                      "the " + api + " stepper does not implement " + toString(spec.type) +
                          " attention (its key biases or queries depend on the tokens); use the " + api +
                          " field");
}

std::unique_ptr<KernelAttention> StepperPlan::reference(const AttentionSpec& spec, int d,
                                                        const std::string& api) {
    return kernelAverageReference(spec, d, (api + " stepper").c_str());
}

std::optional<std::string> StepperPlan::refusal(const AttentionSpec& spec, const IntegratorSpec& integrator,
                                                int d, const std::string& api) {
    const std::string stepper = api + " stepper";
    if (std::optional<SceneError> e = kernelAverageRefusal(spec.type, stepper.c_str())) return e->what();
    if (std::optional<SceneError> e = integratorRefusal(integrator, api)) return e->what();
    if (std::optional<SceneError> e = headsRefusal(*reference(spec, d, api), spec, d, api)) return e->what();
    return std::nullopt;
}

Eigen::MatrixXf StepperPlan::deviceTokens(const Tokens& X) const {
    if (X.cols() != d_)
        throw std::invalid_argument("the " + api_ + " stepper's upload: tokens have " +
                                    std::to_string(X.cols()) + " coordinates, the stepper " +
                                    std::to_string(d_));
    if (device_.cpuDevice)
        if (std::optional<SceneError> refused = cpuDeviceRefusal(long(X.rows()), device_.name))
            throw *refused;
    Tokens Y = X;
    if (spec_.sphere) SphereProjection::normalize(Y);
    return Y.cast<float>(); // column-major = the shaders' structure-of-arrays layout
}

void StepperPlan::restart(int n, double t) {
    if (n != n_) {
        n_ = n;
        probe_ = Tokens::Zero(n_, d_);
        headsReady_ = false;
        ++combinesVersion_;
    }
    t0_ = t;
    steps_ = 0;
}

bool StepperPlan::setAttention(const AttentionSpec& spec) {
    std::unique_ptr<KernelAttention> ref = reference(spec, d_, api_);
    if (std::optional<SceneError> refused = headsRefusal(*ref, spec, d_, api_)) throw *refused;
    const bool toSphere = spec.sphere && !spec_.sphere;
    reference_ = std::move(ref);
    spec_ = spec;
    headsReady_ = false;
    ++combinesVersion_; // the normalize flag follows spec.sphere
    return toSphere;
}

void StepperPlan::setIntegrator(const IntegratorSpec& integrator) {
    std::vector<StepperStage> stages = stagesOf(integrator, api_);
    t0_ = time();
    steps_ = 0;
    stages_ = std::move(stages);
    h_ = integrator.T / integrator.steps;
    ++combinesVersion_;
}

const std::vector<StepperHead>& StepperPlan::heads(double t) {
    if (headsReady_ && spec_.keyframes.empty()) return heads_;
    const std::vector<HeadParams> heads = spec_.headsAt(t);
    heads_.resize(heads.size());
    for (std::size_t k = 0; k < heads.size(); ++k) {
        const HeadSetup h = reference_->setupHead(heads[k], probe_);
        // Queries formed in the shader, and l2's key biases -x_j^T M x_j from the tokens it reads
        // (QUAD_BIAS): the kernel's Params block is n, n, pads, B (then M).
        const StreamKernelInputs in = streamKernelInputs(probe_, h, spec_.masked, true, layout(n_), true);
        if (in.variant.hasBias || in.variant.explicitQueries)
            throw SceneError("/attention/type", "the " + api_ + " stepper needs token-independent heads");
        heads_[k].variant = in.variant;
        heads_[k].kernelParams = in.params;

        std::vector<std::uint32_t>& p = heads_[k].assemblyParams;
        p.assign(8 + std::size_t(d_) * d_, 0);
        p[0] = std::uint32_t(n_);
        p[1] = std::uint32_t(d_);
        p[2] = std::uint32_t(h.weighting);
        p[3] = (k > 0 ? kAccumulate : 0) | (k + 1 == heads.size() && spec_.sphere ? kProject : 0);
        p[4] = bits(1.0 / double(n_));
        const Mat W = h.outScale * h.V;
        for (int r = 0; r < d_; ++r)
            for (int c = 0; c < d_; ++c) p[8 + std::size_t(r) * d_ + c] = bits(W(r, c));
    }
    headsReady_ = true;
    ++headsVersion_;
    return heads_;
}

std::vector<std::uint32_t> StepperPlan::combineWords(std::size_t s) const {
    const StepperStage& stage = stages_[s];
    std::vector<std::uint32_t> p(9, 0);
    p[0] = std::uint32_t(n_);
    p[1] = std::uint32_t(d_);
    p[2] = std::uint32_t(stage.terms.size());
    p[3] = (stage.toX ? kToX : 0) | (stage.toX && spec_.sphere ? kNormalize : 0);
    p[4] = bits(stage.a);
    for (std::size_t k = 0; k < stage.terms.size(); ++k) p[5 + k] = bits(stage.terms[k].second);
    return p;
}

std::vector<std::uint32_t> StepperPlan::normalizeWords() const {
    return {std::uint32_t(n_), std::uint32_t(d_), 0, kToX | kNormalize, 0, 0, 0, 0, 0};
}

std::vector<std::uint32_t> StepperPlan::clearWords() const {
    return {std::uint32_t(n_), std::uint32_t(d_), 0, kClear, 0, 0, 0, 0};
}

} // namespace flowscope
