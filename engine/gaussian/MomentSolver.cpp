#include "engine/gaussian/MomentSolver.h"

#include "engine/core/Parallel.h"
#include "engine/gaussian/Cone.h"
#include "engine/gaussian/MomentStepper.inc"
#include "engine/scene/RunBudget.h"

#include <atomic>
#include <cmath>
#include <iterator>
#include <mutex>
#include <type_traits>
#include <variant>

namespace flowscope {

// The steppers of the three fields the solvers run (declared extern in MomentStepper.h).
template class MomentStepper<FixedMomentField<2>>;
template class MomentStepper<SmallMomentField>;
template class MomentStepper<DynamicMomentField>;

const char* toString(MomentEvent e) {
    static constexpr const char* kNames[] = {"none",       "converged",    "blow-up", "max-iter",
                                             "non-finite", "step-collapse"}; // MomentEvent's order
    static_assert(std::size(kNames) == std::size_t(MomentEvent::StepCollapse) + 1);
    const auto i = std::size_t(e);
    return i < std::size(kNames) ? kNames[i] : "?";
}

namespace {

// Sigma0 = R0 R0^T with R0 = U_r diag(sqrt(lambda_r)) over the eigenvalues above 1e-13 lambda_max.
Mat squareRootFactor(const Mat& cov) {
    const Eigen::SelfAdjointEigenSolver<Mat> eig(Mat(0.5 * (cov + cov.transpose())));
    const Vec& lambda = eig.eigenvalues(); // ascending
    const double top = lambda.size() ? lambda.maxCoeff() : 0.0;
    int r = 0;
    while (r < lambda.size() && lambda[lambda.size() - 1 - r] > 1e-13 * top && top > 0.0) ++r;
    Mat R(cov.rows(), r);
    for (int k = 0; k < r; ++k) {
        const int i = int(lambda.size()) - 1 - k;
        R.col(k) = eig.eigenvectors().col(i) * std::sqrt(lambda[i]);
    }
    return R;
}

// A recorded state (on the dynamic types; only at record times, not in a step).
template <class V, class M> GaussianState record(const V& mean, const M& cov) {
    return {Vec(mean), Mat(cov)};
}

// The two solvers on any field of MomentStepper's interface: a FixedMomentField (no heap inside a step)
// or DynamicMomentField.
template <class Field>
MomentTrajectory solveAdaptive(const Field& field, const GaussianState& initial, const Scene& scene,
                               const MomentSolveOptions& o) {
    using Stepper = MomentStepper<Field>;
    const MomentsSpec& m = scene.moments;
    Stepper st(field, scene.integrator);
    typename Stepper::Vector mean;
    typename Stepper::Matrix cov;

    MomentTrajectory out;
    // The state Y = [alpha | R], d x (1 + r), with Sigma = R R^T.
    const Mat R0 = squareRootFactor(initial.cov);
    typename Stepper::Packed Y(initial.mean.size(), 1 + R0.cols());
    Y.col(0) = initial.mean;
    Y.rightCols(R0.cols()) = R0;
    double t = 0.0;
    out.times.push_back(t);
    out.states.push_back(initial); // exactly as given (R R^T may differ by rounding)
    // Each record interval is covered in chunks of at most half the distance g = tr / tr' to a possible
    // singularity, so a blow-up is caught with tr Sigma at most about twice tol_high.
    const double interval = o.recordEvery > 0.0 ? o.recordEvery : o.T;
    const auto advanceTo = [&](double next) -> StepResult {
        StepResult r;
        while (t < next) {
            r = st.chunk(t, next, Y);
            if (!r.ok || !Y.allFinite()) break;
            Stepper::unpack(Y, mean, cov);
            if (cov.trace() > m.tolHigh) break;
        }
        return r;
    };
    for (long k = 0; t < o.T; ++k) {
        const StepResult r = advanceTo(std::min(o.T, double(k + 1) * interval));
        out.iterations += 1;
        Stepper::unpack(Y, mean, cov);
        if (!mean.allFinite() || !cov.allFinite()) {
            out.event = MomentEvent::NonFinite;
            break;
        }
        out.times.push_back(t);
        out.states.push_back(record(mean, cov));
        if (cov.trace() > m.tolHigh) {
            out.event = MomentEvent::BlowUp;
            break;
        }
        if (!r.ok) {
            out.event = MomentEvent::StepCollapse;
            break;
        }
        if (m.tolLow > 0.0) {
            typename Stepper::Vector rateMean;
            typename Stepper::Matrix rateCov;
            st.rates(t, mean, cov, rateMean, rateCov);
            if (rateCov.norm() < m.tolLow) {
                out.event = MomentEvent::Converged;
                break;
            }
        }
    }
    out.eventTime = out.times.back();

    if (out.event == MomentEvent::BlowUp) {
        // Keep advancing by g/2 (without recording) until tr Sigma > blowupTrace. Near a finite-time
        // singularity tr ~ c / (t_max - t), so g tr stays ~ c while tr grows; under exponential growth g is
        // constant and g tr grows with tr.
        Stepper::unpack(Y, mean, cov);
        double gap = cov.trace() / st.traceRate(t, mean, cov);
        double trace = cov.trace();
        const double trace0 = trace, product0 = gap * trace0;
        for (int i = 0; i < 1000 && gap > 0.0 && std::isfinite(gap) && trace < o.blowupTrace; ++i) {
            const StepResult r = st.advance(t, 0.5 * gap, Y);
            t = r.reached;
            Stepper::unpack(Y, mean, cov);
            if (!mean.allFinite() || !cov.allFinite()) break;
            trace = cov.trace();
            gap = trace / st.traceRate(t, mean, cov);
            if (!r.ok) break;
        }
        const double growth = trace / trace0;
        if (gap > 0.0 && std::isfinite(gap) && growth > 1e3 && gap * trace < 10.0 * product0)
            out.tMax = t + gap;
    }
    out.evaluations = st.evaluations;
    return out;
}

template <class Field>
MomentTrajectory solvePaperEuler(const Field& field, const GaussianState& initial, const Scene& scene,
                                 const MomentSolveOptions& o) {
    using Stepper = MomentStepper<Field>;
    const MomentsSpec& m = scene.moments;
    const double tau = m.step;
    Stepper st(field, scene.integrator);
    typename Stepper::Vector mean = initial.mean, rateMean;
    typename Stepper::Matrix cov = initial.cov, rateCov;
    MomentTrajectory out;
    out.times.push_back(0.0);
    out.states.push_back(initial);
    const long every = std::max(1L, o.recordEveryIter);
    long k = 0;
    for (;; ++k) {
        if (k >= m.maxIter) {
            out.event = MomentEvent::MaxIter;
            break;
        }
        st.rates(double(k) * tau, mean, cov, rateMean, rateCov);
        ++out.evaluations;
        if (m.tolLow > 0.0 && rateCov.norm() < m.tolLow) {
            out.event = MomentEvent::Converged; // tested before the step: the trajectory ends at Sigma_k
            break;
        }
        mean += tau * rateMean;
        cov += tau * rateCov;
        st.projectPsd(cov);
        ++out.iterations;
        if (!mean.allFinite() || !cov.allFinite()) {
            out.event = MomentEvent::NonFinite;
            break;
        }
        const bool exploded = cov.trace() > m.tolHigh;
        if (exploded || (k + 1) % every == 0) {
            out.times.push_back(double(k + 1) * tau);
            out.states.push_back(record(mean, cov));
        }
        if (exploded) {
            out.event = MomentEvent::BlowUp;
            break;
        }
    }
    if (out.times.back() != double(k) * tau && out.event != MomentEvent::NonFinite &&
        out.event != MomentEvent::BlowUp) {
        out.times.push_back(double(k) * tau);
        out.states.push_back(record(mean, cov));
    }
    out.eventTime = out.times.back();
    return out;
}

template <class Field>
MomentTrajectory solveWith(const Field& field, const GaussianState& initial, const Scene& scene,
                           const MomentSolveOptions& options) {
    return scene.moments.method == MomentMethod::PaperEuler ? solvePaperEuler(field, initial, scene, options)
                                                            : solveAdaptive(field, initial, scene, options);
}

} // namespace

MomentTrajectory solveMoments(const MomentField& field, const GaussianState& initial, const Scene& scene,
                              const MomentSolveOptions& options) {
    // The fixed-size path when the field has one (d <= 4), else the dynamic one: the same arithmetic.
    return std::visit(
        [&](const auto& fixed) {
            if constexpr (std::is_same_v<std::decay_t<decltype(fixed)>, std::monostate>)
                return solveWith(DynamicMomentField(field), initial, scene, options);
            else
                return solveWith(fixed, initial, scene, options);
        },
        field.fixedSize());
}

std::vector<MomentTrajectory> solveAllMoments(const Scene& scene, const MomentSolveOptions& options,
                                              const std::function<void(int, int)>& progress) {
    const std::vector<GaussianState> initial = initialGaussians(scene);
    const auto field = makeMomentField(scene);
    std::vector<MomentTrajectory> out(initial.size());
    std::atomic<int> done{0};
    std::atomic<double> recorded{0.0};
    std::mutex report;
    parallelFor(initial.size(), 1, [&](std::size_t begin, std::size_t end) {
        for (std::size_t i = begin; i < end; ++i) {
            if (recorded.load() > options.maxRecordedStates) return; // over the limit: stop, say so below
            out[i] = solveMoments(*field, initial[i], scene, options);
            for (double r = recorded.load();
                 !recorded.compare_exchange_weak(r, r + double(out[i].states.size()));) {
            }
            const int n = ++done;
            if (progress) {
                const std::lock_guard<std::mutex> lock(report);
                progress(n, int(initial.size()));
            }
        }
    });
    if (recorded.load() > options.maxRecordedStates)
        throw SceneError("/moments/max_iter",
                         "the trajectories recorded more than " +
                             std::to_string(long(options.maxRecordedStates)) +
                             " states, the memory limit: stopped before running out of memory (raise "
                             "/output/every, lower /moments/max_iter or the grid, or raise the limit)");
    return out;
}

MomentSolveOptions momentOptions(const Scene& scene) {
    MomentSolveOptions o;
    o.T = scene.integrator.T;
    o.recordEvery = scene.integrator.T / double(std::max(1, scene.integrator.steps));
    o.recordEveryIter = std::max(1, scene.output.every);
    return o;
}

MomentSolveOptions boundedMomentOptions(const Scene& scene, std::uint64_t memoryLimit, bool jsonOutput,
                                        const std::string& hint) {
    checkRunBudget(momentsRunBudget(scene, jsonOutput), memoryLimit, hint);
    MomentSolveOptions o = momentOptions(scene);
    o.maxRecordedStates = double(memoryLimit) / momentStateBytes(scene, jsonOutput);
    return o;
}

std::vector<GaussianState> initialGaussians(const Scene& scene) {
    const int d = scene.d;
    if (scene.initial.kind != InitKind::Gaussian)
        throw SceneError("/initial/kind", "Gaussian mode needs a Gaussian initial distribution (kind "
                                          "\"gaussian\"), got another kind");
    const Vec mean = scene.initial.mean.size() ? scene.initial.mean : Vec(Vec::Zero(d));
    if (!scene.moments.grid.enabled())
        return {{mean, scene.initial.cov.size() ? scene.initial.cov : Mat(Mat::Identity(d, d))}};
    std::vector<GaussianState> out;
    for (const Mat& cov : coneGrid(scene.moments.grid)) out.push_back({mean, cov});
    return out;
}

} // namespace flowscope
