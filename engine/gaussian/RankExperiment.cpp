#include "engine/gaussian/RankExperiment.h"

#include "engine/core/Parallel.h"
#include "engine/gaussian/ClosedForms.h"
#include "engine/gaussian/MomentField.h"
#include "engine/gaussian/NumpyRandom.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>

namespace flowscope {

const char* toString(RankMethod m) {
    return m == RankMethod::PaperEuler ? "paper" : "adaptive";
}

double paperEulerStep(AttentionType attention, bool randomV, int d) {
    // Columns d = 3, 4, 5 of the authors' step table (docs/math/gaussian.md#rank-histograms).
    static const double softmaxI[] = {0.09, 0.05, 0.02}, softmaxV[] = {0.09, 0.06, 0.02};
    static const double l2I[] = {0.09, 0.06, 0.02}, l2V[] = {0.15, 0.15, 0.15};
    const double* row =
        attention == AttentionType::L2 ? (randomV ? l2V : l2I) : (randomV ? softmaxV : softmaxI);
    return row[std::clamp(d, 3, 5) - 3];
}

RankExperimentConfig paperProtocol(AttentionType attention, bool randomV, RankMethod method) {
    RankExperimentConfig c;
    c.attention = attention;
    c.randomV = randomV;
    c.method = method;
    const bool l2 = attention == AttentionType::L2;
    c.tolLow = randomV ? 5e-5 : 1e-4;
    c.maxIter = !randomV ? 60000 : (l2 ? 50000 : 90000);
    c.nMax = randomV && !l2 ? 10000 : 1000;
    c.tolHigh = 1e3;
    return c;
}

namespace {

struct Outcome {
    MomentEvent event = MomentEvent::None;
    Mat sigma;
    long iterations = 0;
    double time = 0.0;
};

void require(bool ok, const std::string& field, const std::string& what) {
    if (!ok) throw std::invalid_argument(field + ": " + what);
}

void validate(const RankExperimentConfig& c) {
    require(c.attention == AttentionType::Softmax || c.attention == AttentionType::L2, "attention",
            "the rank experiment supports softmax and l2");
    require(!c.dims.empty(), "dims", "at least one dimension");
    for (int d : c.dims) require(d >= 2 && d <= 64, "dims", "each dimension must be in 2..64");
    require(c.runs >= 1, "runs", "must be >= 1");
    require(std::isfinite(c.threshold) && c.threshold >= 0, "threshold", "must be a finite number >= 0");
    require(std::isfinite(c.exactRankTol) && c.exactRankTol > 0, "exactRankTol", "must be > 0");
    require(c.steps.empty() || c.steps.size() == c.dims.size(), "steps", "one step per dimension");
    for (double s : c.steps) require(std::isfinite(s) && s > 0, "steps", "each step must be > 0");
    require(std::isfinite(c.tolLow) && c.tolLow > 0, "tolLow", "must be > 0");
    require(std::isfinite(c.tolHigh) && c.tolHigh > 0, "tolHigh", "must be > 0");
    require(c.maxIter >= 1, "maxIter", "must be >= 1");
    require(c.nMax >= 1, "nMax", "must be >= 1");
    require(std::isfinite(c.rtol) && c.rtol > 0, "rtol", "must be > 0");
    require(std::isfinite(c.atol) && c.atol > 0, "atol", "must be > 0");
    require(std::isfinite(c.horizon) && c.horizon > 0, "horizon", "must be > 0");
    require(c.maxEvaluations >= 1, "maxEvaluations", "must be >= 1");
}

// The scene of one run: head Q / sqrt(d), K = -Q (A = -Q^T Q / sqrt(d); l2's K^T K = Q^T Q unscaled).
Scene runScene(const RankExperimentConfig& c, int d, double step, const Mat& Q, const Mat& V) {
    Scene s;
    s.name = "rank-experiment";
    s.d = d;
    s.attention.type = c.attention;
    s.attention.beta = 1.0;
    s.attention.scaleByRootK = false;
    s.attention.heads = {HeadParams{Q / std::sqrt(double(d)), -Q, V}};
    s.initial.kind = InitKind::Gaussian;
    s.initial.mean = Vec::Zero(d);
    s.initial.cov = Mat::Identity(d, d);
    s.moments.method = c.method == RankMethod::PaperEuler ? MomentMethod::PaperEuler : MomentMethod::Adaptive;
    s.moments.step = step;
    s.moments.tolLow = c.tolLow;
    s.moments.tolHigh = c.tolHigh;
    s.moments.maxIter = c.maxIter;
    s.integrator.method = Method::DormandPrince;
    s.integrator.rtol = c.rtol;
    s.integrator.atol = c.atol;
    s.integrator.T = c.method == RankMethod::PaperEuler ? 2.0 * double(c.maxIter + 1) * step : c.horizon;
    s.integrator.steps = 1;
    return s;
}

// The authors' projected Euler: one solveMoments call (records only the first and last states).
Outcome integrateEuler(const Scene& scene, const MomentField& field, const Mat& sigma0) {
    MomentSolveOptions opt;
    opt.T = scene.integrator.T;
    opt.recordEveryIter = scene.moments.maxIter;
    const MomentTrajectory tr = solveMoments(field, GaussianState{Vec::Zero(scene.d), sigma0}, scene, opt);
    return {tr.event, tr.states.back().cov, tr.iterations, tr.times.back()};
}

// Adaptive: solveMoments tests tol_low at the end of each recording interval, and the convergence time spans
// many orders of magnitude (||Sigma'|| ~ 1/t^2 near the limit), so the horizon is covered by chained solves
// over geometrically growing intervals, h = max(h0, t / 10), h0 = ||Sigma0||_F / (10 ||Sigma0'||_F): the
// convergence test is passed at most 10% later in time than at the first accepted step that passes it. The
// field is autonomous, so each piece restarts at t = 0 from the previous end state. Pieces are also shortened
// to what the remaining evaluation budget buys at the last piece's cost per unit time.
Outcome integrateAdaptive(const Scene& scene, const MomentField& field, const Mat& sigma0, long budget) {
    const double horizon = scene.integrator.T;
    GaussianState s{Vec::Zero(scene.d), sigma0};
    const double rate0 = field.rates(0.0, s).cov.norm();
    Outcome o{MomentEvent::None, sigma0, 1, 0.0};
    if (rate0 < scene.moments.tolLow) {
        o.event = MomentEvent::Converged;
        return o;
    }
    const double h0 = std::max(1e-300, 0.1 * sigma0.norm() / rate0);
    double t = 0.0, costRate = 0.0; // field evaluations per unit time in the last piece
    while (t < horizon) {
        if (o.iterations >= budget) {
            o.event = MomentEvent::MaxIter;
            break;
        }
        MomentSolveOptions opt;
        opt.T = std::min(horizon - t, std::max(h0, 0.1 * t));
        if (costRate > 0.0) opt.T = std::min(opt.T, std::max(h0, double(budget - o.iterations) / costRate));
        opt.recordEvery = opt.T;
        opt.blowupTrace = scene.moments.tolHigh; // no t_max estimate needed
        const MomentTrajectory tr = solveMoments(field, s, scene, opt);
        o.iterations += tr.evaluations;
        t += tr.times.back();
        s = tr.states.back();
        if (tr.event != MomentEvent::None) {
            o.event = tr.event;
            break;
        }
        if (tr.times.back() > 0.0) costRate = double(tr.evaluations) / tr.times.back();
    }
    o.sigma = s.cov;
    o.time = t;
    return o;
}

Outcome integrate(const RankExperimentConfig& c, const Scene& scene, const Mat& sigma0) {
    const std::unique_ptr<MomentField> field = makeMomentField(scene);
    return c.method == RankMethod::PaperEuler ? integrateEuler(scene, *field, sigma0)
                                              : integrateAdaptive(scene, *field, sigma0, c.maxEvaluations);
}

int countAbove(const Vec& ev, double threshold) {
    return int((ev.array() > threshold).count());
}

Vec eigenvaluesOf(const Mat& S) {
    return Eigen::SelfAdjointEigenSolver<Mat>(Mat(0.5 * (S + S.transpose())), Eigen::EigenvaluesOnly)
        .eigenvalues();
}

// The (attempt offset b, run offset s) pairs of one round, most likely first: attempt k + b integrates run
// i + s with probability C(b, s) p^s (1 - p)^(b - s) when attempts converge independently with probability p.
std::vector<std::pair<int, int>> speculate(int width, double p, int runsLeft, long attemptsLeft) {
    struct Cand {
        double logP;
        int b, s;
    };
    std::vector<Cand> cands;
    const double lp = std::log(p), lq = std::log1p(-p);
    for (int b = 0; b < width && b < attemptsLeft; ++b)
        for (int s = 0; s <= b && s < runsLeft; ++s) {
            const double logC = std::lgamma(b + 1.0) - std::lgamma(s + 1.0) - std::lgamma(b - s + 1.0);
            cands.push_back({logC + s * lp + (b - s) * lq, b, s});
        }
    std::stable_sort(cands.begin(), cands.end(),
                     [](const Cand& x, const Cand& y) { return x.logP > y.logP; });
    std::vector<std::pair<int, int>> pairs;
    for (std::size_t j = 0; j < cands.size() && int(j) < width; ++j)
        pairs.push_back({cands[j].b, cands[j].s});
    return pairs;
}

} // namespace

RankExperimentResult runRankExperiment(const RankExperimentConfig& config,
                                       const std::function<void(int, int)>& progress) {
    validate(config);
    RankExperimentResult result;
    result.config = config;
    RankExperimentConfig& c = result.config;
    if (!c.vSeed) c.vSeed = c.attention == AttentionType::L2 ? 27u : 26u;
    if (c.steps.empty())
        for (int d : c.dims) c.steps.push_back(paperEulerStep(c.attention, c.randomV, d));

    // All (Q, V) pairs, drawn serially in numpy's order: Qs[j][r], Vs[j][r] for dimension j, run r.
    const std::size_t nd = c.dims.size(), runs = std::size_t(c.runs);
    std::vector<std::vector<Mat>> Qs(nd), Vs(nd);
    NumpyRandom rng(c.qSeed);
    for (std::size_t j = 0; j < nd; ++j)
        for (std::size_t r = 0; r < runs; ++r) Qs[j].push_back(rng.randn(c.dims[j] / 2, c.dims[j]));
    if (c.randomV) {
        rng.seed(*c.vSeed);
        for (std::size_t j = 0; j < nd; ++j)
            for (std::size_t r = 0; r < runs; ++r) {
                const Mat V0 = rng.randn(c.dims[j], c.dims[j]);
                Vs[j].push_back(V0.transpose() * V0);
            }
    }

    const int total = int(nd) * c.runs;
    int doneBefore = 0;
    const int width = std::max(2, 2 * threadCount());
    for (std::size_t j = 0; j < nd; ++j) {
        const auto start = std::chrono::steady_clock::now();
        const int d = c.dims[j];
        const double step = c.steps[j];
        const int bound = (d + 1) / 2;
        RankDimensionResult dim;
        dim.d = d;
        dim.step = step;
        dim.histogram.assign(std::size_t(d + 1), 0);
        dim.failures.assign(6, 0);
        if (!c.randomV) {
            dim.exactHistogram.assign(std::size_t(d + 1), 0);
            dim.exactRankHistogram.assign(std::size_t(d + 1), 0);
        }
        std::vector<Scene> scenes;
        for (std::size_t r = 0; r < runs; ++r)
            scenes.push_back(runScene(c, d, step, Qs[j][r], c.randomV ? Vs[j][r] : Mat(Mat::Identity(d, d))));

        rng.seed(c.sigmaSeed);
        std::vector<Mat> sigma0; // attempt k's initial covariance, drawn in order as needed
        int i = 0;               // runs completed = the run the next attempt integrates
        long k = 0;              // attempts made
        while (i < c.runs && k < c.nMax) {
            const double p = (dim.completed + 1.0) / (double(k) + 2.0);
            const auto pairs = speculate(width, std::clamp(p, 1e-3, 1.0 - 1e-3), c.runs - i, c.nMax - k);
            long need = 0;
            for (const auto& [b, s] : pairs) need = std::max(need, k + b + 1);
            while (long(sigma0.size()) < need) {
                const Mat S = rng.randn(d, d);
                sigma0.push_back(S * S.transpose());
            }
            std::vector<Outcome> outcomes(pairs.size());
            std::vector<std::exception_ptr> errors(pairs.size());
            parallelFor(pairs.size(), 1, [&](std::size_t lo, std::size_t hi) {
                for (std::size_t e = lo; e < hi; ++e) try {
                        const auto [b, s] = pairs[e];
                        outcomes[e] = integrate(c, scenes[std::size_t(i + s)], sigma0[std::size_t(k + b)]);
                    } catch (...) {
                        errors[e] = std::current_exception();
                    }
            });
            std::map<std::pair<int, int>, std::size_t> index;
            for (std::size_t e = 0; e < pairs.size(); ++e) index[pairs[e]] = e;
            // Walk the realised path through the evaluated pairs.
            for (int b = 0, s = 0;; ++b) {
                const auto it = index.find({b, s});
                if (it == index.end() || i >= c.runs || k >= c.nMax) break;
                if (errors[it->second]) std::rethrow_exception(errors[it->second]);
                const Outcome& o = outcomes[it->second];
                ++dim.attempts;
                if (o.event != MomentEvent::Converged) {
                    ++dim.nonConverged;
                    ++dim.failures[std::size_t(o.event)];
                    ++k;
                    continue;
                }
                RankRun run;
                run.run = i;
                run.attempt = k;
                run.eigenvalues = eigenvaluesOf(o.sigma);
                run.rank = countAbove(run.eigenvalues, c.threshold);
                run.exception = run.rank > bound;
                run.iterations = o.iterations;
                run.time = o.time;
                if (run.exception) ++dim.exceptions;
                if (!run.exception || c.includeExceptions) ++dim.histogram[std::size_t(run.rank)];
                if (!c.randomV) {
                    const Mat A = scenes[std::size_t(i)].attention.heads[0].K.transpose() *
                                  scenes[std::size_t(i)].attention.heads[0].Q;
                    if (const auto limit = commutingLimit(A + A.transpose(), sigma0[std::size_t(k)])) {
                        run.exactEigenvalues = eigenvaluesOf(*limit);
                        const double top = std::max(run.exactEigenvalues.maxCoeff(), 0.0);
                        run.exactThresholdRank = countAbove(run.exactEigenvalues, c.threshold);
                        run.exactRank = top > 0 ? countAbove(run.exactEigenvalues, c.exactRankTol * top) : 0;
                        run.distanceToExact = (o.sigma - *limit).norm();
                        ++dim.exactHistogram[std::size_t(run.exactThresholdRank)];
                        ++dim.exactRankHistogram[std::size_t(run.exactRank)];
                    }
                }
                dim.runs.push_back(std::move(run));
                ++dim.completed;
                ++i;
                ++k;
                ++s;
            }
            if (progress) progress(doneBefore + dim.completed, total);
        }
        doneBefore += c.runs;
        if (progress) progress(doneBefore, total);
        dim.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        result.dimensions.push_back(std::move(dim));
    }
    return result;
}

} // namespace flowscope
