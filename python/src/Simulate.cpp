// flowscope.simulate: one scene's particle run (engine/dynamics/Simulation), as flowscope-cli simulate runs
// it, with the trajectory and the observables as arrays.
#include "Common.h"
#include "Progress.h"

#include "engine/backend/Registry.h"
#include "engine/dynamics/Simulation.h"
#include "engine/scene/RunBudget.h"

namespace flowscope::py {

namespace {

struct SimulationResult {
    Scene scene;
    std::string backend;
    pb::array tokens, times, mean, cov, kineticEnergy, attentionEntropy, energy, clusters, rank, maxNorm;
    pb::object event = pb::none();
    bool deviceSteps = false;
    pb::dict integrator;
};

template <class T> pb::array_t<T> array(std::vector<pb::ssize_t> shape) {
    return pb::array_t<T>(shape);
}

SimulationResult simulate(const pb::handle& sceneArg, const std::string& backendId, std::optional<long> every,
                          const pb::object& progressArg) {
    Scene scene = toScene(sceneArg);
    if (every) {
        if (*every < 1 || *every > (1L << 30)) throw InputError("every", "expected an integer in [1, 2^30]");
        scene.output.every = int(*every);
    }
    ComputeBackend backend;
    try {
        backend = openBackend(backendId);
    } catch (const BackendError& e) {
        throw InputError("backend", e.what());
    }
    checkRunBudget(particleRunBudget(scene, true), defaultMemoryLimit(),
                   "the limit is half this machine's memory: record fewer frames (every=)");

    Progress progress(progressArg, "simulate " + scene.name);
    double fraction = 0;
    Interruptible guard([&] {
        if (progress) progress(fraction);
    });
    guard.cancelWithinPasses(); // Ctrl+C within one evaluation: the run's state is thrown away
    std::vector<Frame> history;
    std::optional<RunEvent> event;
    bool deviceSteps = false;
    RunTimings work;
    guard.run([&] {
        Simulation sim(scene, backend.makeField);
        // As the CLI: whole steps on the device where the backend's stepper takes the scene.
        if (backend.makeStepper) sim.setStepper(backend.makeStepper);
        deviceSteps = sim.onDevice();
        sim.run([&](double f) { return fraction = f, guard.poll(); });
        history = sim.takeHistory();
        event = sim.event();
        work = sim.timings();
    });
    const pb::ssize_t T = pb::ssize_t(history.size()), N = scene.n, d = scene.d;
    SimulationResult r;
    r.scene = scene, r.backend = backend.id, r.deviceSteps = deviceSteps;
    r.integrator["method"] = toString(scene.integrator.method);
    r.integrator["steps"] = work.steps;
    r.integrator["field_evaluations"] = work.evaluations;
    r.integrator["sub_steps"] = work.subSteps;
    r.integrator["rejected_sub_steps"] = work.rejected;
    // A float32 scene's tokens come back in float32 (half the memory; flowscope-cli simulate --float32 writes
    // the same values), a float64 scene's in float64.
    const bool f32 = scene.precision == Precision::Float32;
    pb::array tokens = f32 ? pb::array(array<float>({T, N, d})) : pb::array(array<double>({T, N, d}));
    auto times = array<double>({T}), mean = array<double>({T, d}), cov = array<double>({T, d, d}),
         kinetic = array<double>({T}), entropy = array<double>({T}), energy = array<double>({T}),
         maxNorm = array<double>({T});
    auto clusters = array<int>({T}), rank = array<int>({T});
    for (pb::ssize_t k = 0; k < T; ++k) {
        Frame& f = history[std::size_t(k)];
        using RowMajor = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
        using RowMajorF = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
        if (f32)
            Eigen::Map<RowMajorF>(static_cast<float*>(tokens.mutable_data(k)), N, d) = f.tokens.cast<float>();
        else
            Eigen::Map<RowMajor>(static_cast<double*>(tokens.mutable_data(k)), N, d) = f.tokens;
        f.tokens = Tokens(); // the frame's copy goes as the array fills
        times.mutable_at(k) = f.t;
        Eigen::Map<Vec>(mean.mutable_data(k), d) = f.obs.mean;
        Eigen::Map<RowMajor>(cov.mutable_data(k), d, d) = f.obs.cov;
        kinetic.mutable_at(k) = f.obs.kinetic;
        entropy.mutable_at(k) = f.obs.entropy;
        energy.mutable_at(k) = f.obs.energy;
        maxNorm.mutable_at(k) = f.obs.maxNorm;
        clusters.mutable_at(k) = f.obs.clusters;
        rank.mutable_at(k) = f.obs.rank;
    }
    r.tokens = tokens, r.times = times, r.mean = mean, r.cov = cov, r.kineticEnergy = kinetic;
    r.attentionEntropy = entropy, r.energy = energy, r.clusters = clusters, r.rank = rank,
    r.maxNorm = maxNorm;
    r.event = eventObject(event);
    return r;
}

} // namespace

pb::object eventObject(const std::optional<RunEvent>& event) {
    if (!event) return pb::none();
    pb::dict e;
    e["kind"] = toString(event->kind), e["t"] = event->t, e["message"] = event->message;
    return e;
}

void bindSimulate(pb::module_& m) {
    pb::class_<SimulationResult>(m, "SimulationResult",
                                 R"(What simulate() returns: the recorded frames (t = 0, every
``output.every`` steps, the last step, and the state where an event stopped the run) and their
observables, the arrays of ``flowscope-cli simulate``'s .npy and .json (docs/observables.md).)")
        .def_readonly("scene", &SimulationResult::scene, "The scene that ran (with `every` applied).")
        .def_readonly("backend", &SimulationResult::backend, "The backend's id: cpu, gl or vulkan.")
        .def_readonly("device_steps", &SimulationResult::deviceSteps,
                      "Whether the tokens stayed on the device between steps (the backend's stepper took the "
                      "scene), as the CLI record's backend.device_steps.")
        .def_readonly("integrator", &SimulationResult::integrator,
                      "The integrator's work, as the CLI record's 'integrator': method, steps, "
                      "field_evaluations, sub_steps, rejected_sub_steps.")
        .def_readonly("tokens", &SimulationResult::tokens,
                      "(T, N, d): the tokens of each frame, float32 for a float32 scene, else float64.")
        .def_readonly("times", &SimulationResult::times, "(T,) the frames' times t.")
        .def_readonly("mean", &SimulationResult::mean, "(T, d) the mean (1/N) Σ_i x_i.")
        .def_readonly("cov", &SimulationResult::cov,
                      "(T, d, d) the covariance (1/N) Σ_i (x_i - m)(x_i - m)ᵀ.")
        .def_readonly("kinetic_energy", &SimulationResult::kineticEnergy, "(T,) (1/N) Σ_i |dx_i/dt|² / 2.")
        .def_readonly(
            "attention_entropy", &SimulationResult::attentionEntropy,
            "(T,) the mean over queries of H_i = -Σ_j P_ij log P_ij (nats; NaN for unnormalised variants).")
        .def_readonly("energy", &SimulationResult::energy,
                      "(T,) softmax, one head: E = (1/(2N²)) Σ_ij exp(s_ij); NaN otherwise.")
        .def_readonly("clusters", &SimulationResult::clusters, "(T,) int: groups within output.cluster_tol.")
        .def_readonly("rank", &SimulationResult::rank, "(T,) int: the numerical rank of the covariance.")
        .def_readonly("max_norm", &SimulationResult::maxNorm, "(T,) max_i |x_i|.")
        .def_readonly("event", &SimulationResult::event,
                      "None when the run reached its horizon, else {'kind': 'diverged' | 'non_finite' | "
                      "'step_collapse', 't': time, 'message': text}.")
        .def("__repr__", [](const SimulationResult& r) {
            return "<flowscope.SimulationResult " + std::to_string(r.tokens.shape(0)) + " frames of " +
                   std::to_string(r.scene.n) + " x " + std::to_string(r.scene.d) +
                   (r.event.is_none() ? "" : ", stopped early") + ">";
        });

    m.def("simulate", &simulate, pb::arg("scene"), pb::arg("backend") = "cpu", pb::arg("every") = pb::none(),
          pb::arg("progress") = pb::none(),
          R"(simulate(scene, backend="cpu", every=None, progress=None) -> SimulationResult

Integrates the particle system of a scene,

    dx_i/dt = Σ_h V_h Σ_j P^h_ij x_j      (softmax: P_ij = exp(s_ij) / Σ_l exp(s_il), s_ij = x_jᵀ A x_i)

from its initial tokens to its horizon T (or an event: divergence, a non-finite state), exactly as
``flowscope-cli simulate`` does: the same scene gives the same arrays bit for bit.

scene     a Scene, or what Scene() takes (dict, file, share string, preset name)
backend   "cpu" (the scene's precision: float64 reference or float32 SIMD), "gl" or "vulkan" (float32
          compute shaders, where this build has them)
every     record every K-th step (overrides output.every)
progress  a callable taking the fraction done; True or "auto" for a tqdm bar where tqdm is installed
          (without it: True prints a line on stderr every tenth, "auto" nothing)

The GIL is released while it runs; Ctrl+C (or an exception raised by `progress`) stops it between two
steps and raises, leaving the module usable.)");
}

} // namespace flowscope::py
