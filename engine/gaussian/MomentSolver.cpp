#include "engine/gaussian/MomentSolver.h"

#include "engine/core/Parallel.h"
#include "engine/dynamics/Integrator.h"
#include "engine/gaussian/Cone.h"
#include "engine/scene/RunBudget.h"

#include <atomic>
#include <cmath>
#include <iterator>
#include <mutex>

namespace flowscope {

const char* toString(MomentEvent e) {
    static constexpr const char* kNames[] = {"none",       "converged",    "blow-up", "max-iter",
                                             "non-finite", "step-collapse"}; // MomentEvent's order
    static_assert(std::size(kNames) == std::size_t(MomentEvent::StepCollapse) + 1);
    const auto i = std::size_t(e);
    return i < std::size(kNames) ? kNames[i] : "?";
}

namespace {

bool finite(const GaussianState& s) {
    return s.mean.allFinite() && s.cov.allFinite();
}

// The adaptive solver's state: Y = [alpha | R], d x (1 + r), with Sigma = R R^T.
struct Packed {
    static Mat pack(const Vec& mean, const Mat& R) {
        Mat Y(mean.size(), 1 + R.cols());
        Y.col(0) = mean;
        Y.rightCols(R.cols()) = R;
        return Y;
    }
    static GaussianState unpack(const Mat& Y) {
        const auto R = Y.rightCols(Y.cols() - 1);
        return {Y.col(0), R * R.transpose()};
    }
};

// Sigma0 = R0 R0^T with R0 = U_r diag(sqrt(lambda_r)) over the eigenvalues above 1e-13 lambda_max.
Mat squareRootFactor(const Mat& cov) {
    const Eigen::SelfAdjointEigenSolver<Mat> eig(0.5 * (cov + cov.transpose()));
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

MomentTrajectory solveAdaptive(const MomentField& field, const GaussianState& initial, const Scene& scene,
                               const MomentSolveOptions& o) {
    const MomentsSpec& m = scene.moments;
    IntegratorSpec spec = scene.integrator;
    spec.method = Method::DormandPrince;
    auto integrator = makeIntegrator(spec);
    long evaluations = 0;
    const Field f = [&](double t, const Mat& Y, Mat& dY) {
        const int r = int(Y.cols()) - 1;
        const auto R = Y.rightCols(r);
        const Vec mean = Y.col(0);
        const AffineField a = field.affine(t, mean, R * R.transpose());
        dY.resize(Y.rows(), Y.cols());
        dY.col(0) = a.b + a.L * mean;
        dY.rightCols(r) = a.L * R;
        ++evaluations;
    };
    const auto traceRate = [&](double t, const GaussianState& s) { return field.rates(t, s).cov.trace(); };

    MomentTrajectory out;
    Mat Y = Packed::pack(initial.mean, squareRootFactor(initial.cov));
    double t = 0.0;
    out.times.push_back(t);
    out.states.push_back(initial); // exactly as given (R R^T may differ by rounding)
    // Each record interval is covered in chunks of at most half the distance g = tr / tr' to a possible
    // singularity, so a blow-up is caught with tr Sigma at most about twice tol_high.
    const double interval = o.recordEvery > 0.0 ? o.recordEvery : o.T;
    const auto advanceTo = [&](double next) -> StepResult {
        StepResult r;
        while (t < next) {
            const GaussianState s = Packed::unpack(Y);
            const double rate = traceRate(t, s);
            double h = next - t;
            if (rate > 0.0) h = std::min(h, std::max(0.5 * s.cov.trace() / rate, 1e-6 * h));
            r = integrator->advance(f, t, h, Y);
            if (r.ok && !(r.reached > t)) r.ok = false; // no progress in t: stop (StepCollapse)
            t = r.reached;
            if (!r.ok || !Y.allFinite() || Packed::unpack(Y).cov.trace() > m.tolHigh) break;
        }
        return r;
    };
    for (long k = 0; t < o.T; ++k) {
        const StepResult r = advanceTo(std::min(o.T, double(k + 1) * interval));
        out.iterations += 1;
        const GaussianState s = Packed::unpack(Y);
        if (!finite(s)) {
            out.event = MomentEvent::NonFinite;
            break;
        }
        out.times.push_back(t);
        out.states.push_back(s);
        if (s.cov.trace() > m.tolHigh) {
            out.event = MomentEvent::BlowUp;
            break;
        }
        if (!r.ok) {
            out.event = MomentEvent::StepCollapse;
            break;
        }
        if (m.tolLow > 0.0 && field.rates(t, s).cov.norm() < m.tolLow) {
            out.event = MomentEvent::Converged;
            break;
        }
    }
    out.eventTime = out.times.back();

    if (out.event == MomentEvent::BlowUp) {
        // Keep advancing by g/2 (without recording) until tr Sigma > blowupTrace. Near a finite-time
        // singularity tr ~ c / (t_max - t), so g tr stays ~ c while tr grows; under exponential growth g is
        // constant and g tr grows with tr.
        GaussianState s = Packed::unpack(Y);
        double gap = s.cov.trace() / traceRate(t, s);
        const double trace0 = s.cov.trace(), product0 = gap * trace0;
        for (int i = 0; i < 1000 && gap > 0.0 && std::isfinite(gap) && s.cov.trace() < o.blowupTrace; ++i) {
            const StepResult r = integrator->advance(f, t, 0.5 * gap, Y);
            t = r.reached;
            const GaussianState next = Packed::unpack(Y);
            if (!finite(next)) break;
            s = next;
            gap = s.cov.trace() / traceRate(t, s);
            if (!r.ok) break;
        }
        const double growth = s.cov.trace() / trace0;
        if (gap > 0.0 && std::isfinite(gap) && growth > 1e3 && gap * s.cov.trace() < 10.0 * product0)
            out.tMax = t + gap;
    }
    out.evaluations = evaluations;
    return out;
}

// The authors' PSD projection: symmetrize, replace negative eigenvalues by 1e-14.
Mat projectPsd(const Mat& S) {
    const Eigen::SelfAdjointEigenSolver<Mat> eig(0.5 * (S + S.transpose()));
    Vec lambda = eig.eigenvalues();
    if (lambda.minCoeff() >= 0.0) return 0.5 * (S + S.transpose());
    for (Eigen::Index i = 0; i < lambda.size(); ++i)
        if (lambda[i] < 0.0) lambda[i] = 1e-14;
    return eig.eigenvectors() * lambda.asDiagonal() * eig.eigenvectors().transpose();
}

MomentTrajectory solvePaperEuler(const MomentField& field, const GaussianState& initial, const Scene& scene,
                                 const MomentSolveOptions& o) {
    const MomentsSpec& m = scene.moments;
    const double tau = m.step;
    MomentTrajectory out;
    GaussianState s = initial;
    out.times.push_back(0.0);
    out.states.push_back(s);
    const long every = std::max(1L, o.recordEveryIter);
    long k = 0;
    for (;; ++k) {
        if (k >= m.maxIter) {
            out.event = MomentEvent::MaxIter;
            break;
        }
        const GaussianState rate = field.rates(double(k) * tau, s);
        ++out.evaluations;
        if (m.tolLow > 0.0 && rate.cov.norm() < m.tolLow) {
            out.event = MomentEvent::Converged; // tested before the step: the trajectory ends at Sigma_k
            break;
        }
        s.mean += tau * rate.mean;
        s.cov = projectPsd(s.cov + tau * rate.cov);
        ++out.iterations;
        if (!finite(s)) {
            out.event = MomentEvent::NonFinite;
            break;
        }
        const bool exploded = s.cov.trace() > m.tolHigh;
        if (exploded || (k + 1) % every == 0) {
            out.times.push_back(double(k + 1) * tau);
            out.states.push_back(s);
        }
        if (exploded) {
            out.event = MomentEvent::BlowUp;
            break;
        }
    }
    if (out.times.back() != double(k) * tau && out.event != MomentEvent::NonFinite &&
        out.event != MomentEvent::BlowUp) {
        out.times.push_back(double(k) * tau);
        out.states.push_back(s);
    }
    out.eventTime = out.times.back();
    return out;
}

} // namespace

MomentTrajectory solveMoments(const MomentField& field, const GaussianState& initial, const Scene& scene,
                              const MomentSolveOptions& options) {
    return scene.moments.method == MomentMethod::PaperEuler ? solvePaperEuler(field, initial, scene, options)
                                                            : solveAdaptive(field, initial, scene, options);
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
