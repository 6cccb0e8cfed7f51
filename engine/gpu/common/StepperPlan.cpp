#include "engine/gpu/common/StepperPlan.h"

#include "engine/attention/SphereProjection.h"

#include <bit>
#include <stdexcept>

namespace flowscope {

namespace {

// Assembly flags (shaders/head_assembly.comp) and combine flags (shaders/stage_combine.comp).
constexpr std::uint32_t kAccumulate = 1, kProject = 2, kClear = 4, kUnitNorm = 8;
constexpr std::uint32_t kToX = 1, kNormalize = 2, kError = 4;

std::uint32_t bits(double v) {
    return std::bit_cast<std::uint32_t>(float(v));
}

} // namespace

StepperPlan::StepperPlan(const AttentionSpec& spec, const IntegratorSpec& integrator, int d, std::string api,
                         StreamKernelDevice device)
    : d_(d), api_(std::move(api)), device_(std::move(device)), spec_(spec),
      reference_(reference(spec, d, api_)), stages_(stagesOf(integrator, api_)),
      control_(controlOf(integrator)), h_(integrator.T / integrator.steps) {
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
    case Method::DormandPrince:
        return std::nullopt;
    }
    return SceneError("/integrator/method", "the " + api + " stepper does not take this method");
}

std::optional<DormandPrinceControl> StepperPlan::controlOf(const IntegratorSpec& is) {
    if (is.method != Method::DormandPrince) return std::nullopt;
    return DormandPrinceControl(is.rtol, is.atol, is.minStep);
}

std::vector<StepperStage> StepperPlan::stagesOf(const IntegratorSpec& is, const std::string& api) {
    if (std::optional<SceneError> refused = integratorRefusal(is, api)) throw *refused;
    const double h = is.T / is.steps;
    switch (is.method) {
    case Method::Euler:
        return {{0.0, false, h, {{0, 1.0}}, true}};
    case Method::Heun:
        return {{0.0, false, h, {{0, 1.0}}, false}, {1.0, true, 0.5 * h, {{0, 1.0}, {1, 1.0}}, true}};
    case Method::DormandPrince: // adaptive: PlannedStepper walks the sub-steps
        return {};
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

double StepperPlan::stageTime(double t0, double t) const {
    if (spec_.keyframes.empty() || spec_.interpolation != Interpolation::Piecewise) return t;
    return std::clamp(t, t0 + 1e-9 * h_, t0 + h_ - 1e-9 * h_);
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
    if (control_) control_->invalidate(); // new tokens: the next sub-step starts at h again
}

bool StepperPlan::setAttention(const AttentionSpec& spec) {
    std::unique_ptr<KernelAttention> ref = reference(spec, d_, api_);
    if (std::optional<SceneError> refused = headsRefusal(*ref, spec, d_, api_)) throw *refused;
    const bool toSphere = spec.sphere && !spec_.sphere;
    reference_ = std::move(ref);
    spec_ = spec;
    headsReady_ = false;
    if (control_) control_->invalidate();
    ++combinesVersion_; // the normalize flag follows spec.sphere
    return toSphere;
}

void StepperPlan::setIntegrator(const IntegratorSpec& integrator) {
    std::vector<StepperStage> stages = stagesOf(integrator, api_);
    t0_ = time();
    steps_ = 0;
    stages_ = std::move(stages);
    control_ = controlOf(integrator);
    h_ = integrator.T / integrator.steps;
    ++combinesVersion_;
}

const std::vector<StepperHead>& StepperPlan::heads(double t) {
    if (headsReady_ && spec_.keyframes.empty()) return heads_;
    const std::vector<HeadParams> heads = spec_.headsAt(t);
    heads_.resize(heads.size());
    for (std::size_t k = 0; k < heads.size(); ++k) {
        const HeadSetup h = reference_->headAt(heads[k], probe_); // with the positional decay's slope
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
        const bool last = k + 1 == heads.size();
        p[3] = (k > 0 ? kAccumulate : 0) | (last && spec_.sphere ? kProject : 0) |
               (last && normalizationOf(spec_) == Normalization::Peri ? kUnitNorm : 0);
        p[4] = bits(1.0 / double(n_));
        const Mat W = h.outScale * h.V;
        for (int r = 0; r < d_; ++r)
            for (int c = 0; c < d_; ++c) p[8 + std::size_t(r) * d_ + c] = bits(W(r, c));
    }
    headsReady_ = true;
    ++headsVersion_;
    return heads_;
}

CombineCall StepperPlan::combineCall(const std::vector<std::pair<int, double>>& terms, double a,
                                     std::uint32_t flags) const {
    if (terms.size() > std::size_t(kCombineSlots)) throw std::logic_error("stage_combine: too many terms");
    CombineCall call;
    call.words.assign(13, 0);
    call.words[0] = std::uint32_t(n_);
    call.words[1] = std::uint32_t(d_);
    call.words[2] = std::uint32_t(terms.size());
    call.words[3] = flags;
    call.words[4] = bits(a);
    for (std::size_t k = 0; k < terms.size(); ++k) call.words[5 + k] = bits(terms[k].second);
    if (control_) {
        call.words[11] = bits(control_->atol());
        call.words[12] = bits(control_->rtol());
    }
    for (int slot = 0; slot < kCombineSlots; ++slot)
        call.k[std::size_t(slot)] =
            terms.empty() ? 0 : terms[std::min(std::size_t(slot), terms.size() - 1)].first;
    return call;
}

CombineCall StepperPlan::combine(std::size_t s) const {
    const StepperStage& stage = stages_[s];
    return combineCall(stage.terms, stage.a,
                       (stage.toX ? kToX : 0) | (stage.toX && spec_.sphere ? kNormalize : 0));
}

CombineCall StepperPlan::dormandPrinceCombine(int s, double h, bool toX, bool landing) const {
    std::vector<std::pair<int, double>> terms;
    for (int j = 0; j < s; ++j)
        if (DormandPrinceTableau::a[s][j] != 0.0) terms.emplace_back(j, DormandPrinceTableau::a[s][j]);
    return combineCall(terms, h, (toX ? kToX : 0) | (toX && landing && spec_.sphere ? kNormalize : 0));
}

CombineCall StepperPlan::dormandPrinceError(double h) const {
    std::vector<std::pair<int, double>> terms;
    for (int j = 0; j < kStageVelocities; ++j)
        if (DormandPrinceTableau::e[j] != 0.0) terms.emplace_back(j, DormandPrinceTableau::e[j]);
    return combineCall(terms, h, kError);
}

std::vector<std::uint32_t> StepperPlan::normalizeWords() const {
    return combineCall({}, 0.0, kToX | kNormalize).words;
}

bool StepperPlan::readsDirections() const {
    const Normalization scheme = normalizationOf(spec_);
    return scheme == Normalization::Pre || scheme == Normalization::Peri;
}

std::vector<std::uint32_t> StepperPlan::directionWords() const {
    return combineCall({}, 0.0, kNormalize).words; // y = x, then scaled to unit norm
}

std::vector<std::uint32_t> StepperPlan::clearWords() const {
    return {std::uint32_t(n_), std::uint32_t(d_), 0, kClear, 0, 0, 0, 0};
}

} // namespace flowscope
