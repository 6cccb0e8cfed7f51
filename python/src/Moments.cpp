// flowscope.moments: the Gaussian mode of a scene (engine/gaussian), as flowscope-cli moments solves it.
#include "Common.h"
#include "Progress.h"

#include "engine/gaussian/MomentFiles.h"
#include "engine/gaussian/MomentSolver.h"
#include "engine/scene/RunBudget.h"

namespace flowscope::py {

namespace {

struct MomentsResult {
    Scene scene;
    pb::array covs, means, times;
    pb::list events;
};

pb::array_t<double> arrayOf(std::vector<double>&& values, std::vector<pb::ssize_t> shape) {
    auto* owned = new std::vector<double>(std::move(values));
    pb::capsule owner(owned, [](void* p) { delete static_cast<std::vector<double>*>(p); });
    return pb::array_t<double>(shape, owned->data(), owner);
}

MomentsResult moments(const pb::handle& sceneArg, const std::optional<std::string>& method,
                      std::optional<long> every) {
    Scene scene = toScene(sceneArg);
    if (method) {
        if (*method == "adaptive")
            scene.moments.method = MomentMethod::Adaptive;
        else if (*method == "paper" || *method == "paper_euler")
            scene.moments.method = MomentMethod::PaperEuler;
        else
            throw InputError("method", "expected \"adaptive\" or \"paper\", got \"" + *method + "\"");
    }
    if (every) {
        if (*every < 1 || *every > (1L << 30)) throw InputError("every", "expected an integer in [1, 2^30]");
        scene.output.every = int(*every);
    }
    makeMomentField(scene); // refuses the variants without moment equations
    const MomentSolveOptions options =
        boundedMomentOptions(scene, defaultMemoryLimit(), false, "the limit is half this machine's memory");
    initialGaussians(scene); // and non-Gaussian initial distributions
    std::vector<MomentTrajectory> trajectories;
    Interruptible guard;
    guard.run([&] { trajectories = solveAllMoments(scene, options); });
    MomentArrays a = momentArrays(trajectories);
    MomentsResult r;
    r.scene = scene;
    const pb::ssize_t R = a.trajectories, K = a.records, d = a.d;
    r.covs = arrayOf(std::move(a.covs), {R, K, d, d});
    r.means = arrayOf(std::move(a.means), {R, K, d});
    r.times = arrayOf(std::move(a.times), {R, K});
    for (const MomentTrajectory& tr : trajectories) {
        pb::dict e;
        e["kind"] = toString(tr.event), e["t"] = tr.eventTime;
        e["t_max"] = tr.tMax ? pb::object(pb::float_(*tr.tMax)) : pb::object(pb::none());
        e["records"] = tr.times.size(), e["iterations"] = tr.iterations, e["evaluations"] = tr.evaluations;
        r.events.append(e);
    }
    return r;
}

} // namespace

void bindMoments(pb::module_& m) {
    pb::class_<MomentsResult>(m, "MomentsResult",
                              R"(What moments() returns: R trajectories (one per initial Gaussian;
the trace-1 grid of a cone scene, or the scene's one Gaussian), each padded with NaN after its last record,
the arrays of ``flowscope-cli moments --out x.npy``.)")
        .def_readonly("scene", &MomentsResult::scene)
        .def_readonly("covs", &MomentsResult::covs, "(R, K, d, d) the covariances Σ(t).")
        .def_readonly("means", &MomentsResult::means, "(R, K, d) the means α(t).")
        .def_readonly("times", &MomentsResult::times,
                      "(R, K) the record times (NaN past a trajectory's end).")
        .def_readonly(
            "events", &MomentsResult::events,
            "One dict per trajectory: kind ('none' = reached T, 'converged', 'blow-up', 'max-iter', "
            "'non-finite', 'step-collapse'), t (its time), t_max (a finite blow-up's estimated time, "
            "or None), records, iterations, evaluations.")
        .def("__repr__", [](const MomentsResult& r) {
            return "<flowscope.MomentsResult " + std::to_string(r.covs.shape(0)) + " trajectories, up to " +
                   std::to_string(r.covs.shape(1)) + " records>";
        });
    m.def("moments", &moments, pb::arg("scene"), pb::arg("method") = pb::none(),
          pb::arg("every") = pb::none(),
          R"(moments(scene, method=None, every=None) -> MomentsResult

The Gaussian mode: the cloud is the Gaussian N(α, Σ) itself, and on it every Gaussian-preserving attention
field is affine, Γ(x) = b + L x, so (docs/math/gaussian.md)

    α' = b + L α,     Σ' = L Σ + Σ Lᵀ      (softmax: b = V α, L = V Σ A, summed over heads)

integrated from the scene's initial Gaussian, or from each covariance of its trace-1 grid (moments.grid),
until the horizon, convergence (|Σ'|_F < tol_low), blow-up (tr Σ > tol_high; t_max estimated for a
finite-time blow-up) or max_iter. As ``flowscope-cli moments``: the same arrays.

method  "adaptive" (Dormand–Prince on a square-root factor of Σ: exact rank, no clipping) or "paper"
        (the authors' projected Euler, their figures as drawn); None: the scene's moments.method
every   record every K-th step (overrides output.every)

Softmax, multi-head, linear, l2, Sinkhorn and drifting have moment equations; the other variants raise
ValueError at /attention/type.)");
}

} // namespace flowscope::py
