// flowscope.simulate: one scene's particle run (engine/dynamics/Simulation), as flowscope-cli simulate runs
// it, with the trajectory and the observables as arrays.
#include "Common.h"
#include "Progress.h"

#include "engine/backend/PrepareRun.h"
#include "engine/backend/Registry.h"
#include "engine/core/Text.h"
#include "engine/dynamics/Simulation.h"
#include "engine/io/JsonReader.h"
#include "engine/scene/RunBudget.h"
#include "engine/scene/SceneSchema.h"
#include "engine/scene/SceneSetting.h"

#include <cstring>
#include <iterator>
#include <string_view>

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

// simulate()'s keywords: `attention`, the scene's "/attention" object, and every scene parameter by its
// schema keyword (T, steps, method, beta, masked, rwpo_lambda, ...: flowscope.parameters()).
//
// A keyword's field is set as flowscope-cli's --set sets it (SceneSetting: the reader's checks and words), an
// error at the field or under it named by the keyword: "/integrator/T: ..." is "T: ...",
// "/attention/heads/0/Q: ..." is "attention/heads/0/Q: ..." (withKeywords).

// The `attention` keyword as the scene's "attention" object: an attention dict as it is; a Scene, a scene
// dict, file, share string or preset name gives its attention (its d must be the tokens').
nlohmann::ordered_json attentionJson(const pb::handle& attention) {
    if (pb::isinstance<pb::dict>(attention) && !attention.contains("attention"))
        return pythonToJson(attention, "attention");
    Scene scene;
    try {
        scene = toScene(attention);
    } catch (const InputError& e) { // toScene's "scene: ..." is this argument's
        const std::string_view what = e.what();
        if (!what.starts_with("scene: ")) throw;
        throw InputError("attention", std::string(what.substr(std::strlen("scene: "))));
    } catch (pb::error_already_set& e) { // FileNotFoundError("scene: no such file: ...")
        const std::string what = pb::str(e.value());
        if (!e.matches(PyExc_FileNotFoundError) || !what.starts_with("scene: ")) throw;
        PyErr_SetString(PyExc_FileNotFoundError, ("attention" + what.substr(std::strlen("scene"))).c_str());
        throw pb::error_already_set();
    }
    return nlohmann::ordered_json::parse(sceneToJson(scene))["attention"];
}

// The values of simulate()'s keywords; None leaves a field as it is.
struct Keywords {
    pb::object attention;
    pb::dict parameters; // schema keyword -> value
};

// The scene parameter of a keyword, or a TypeError as Python words it for an unknown keyword argument. d is
// no keyword: every matrix and vector of a scene has d entries, so a new d is a new scene.
const SceneParam& keywordParam(const std::string& keyword) {
    if (keyword == "d")
        throw InputError("d",
                         "cannot be set by keyword (every matrix and vector of the scene has d entries): "
                         "pass a scene, or tokens X0, of that dimension");
    std::vector<std::string_view> keywords{"attention"};
    for (const SceneParam& p : sceneParams()) {
        if (p.keyword == keyword) return p;
        keywords.push_back(p.keyword);
    }
    const std::string_view near = closestName(keyword, keywords, 2);
    throw pb::type_error("simulate() got an unexpected keyword argument '" + keyword + "'" +
                         (near.empty() ? "" : " (did you mean '" + std::string(near) + "'?)") +
                         "; flowscope.parameters() lists the scene's");
}

// The scene with the keywords set: the attention first, then the parameters (beta=4 on top of it). An error
// at the field of any keyword given is named by that keyword (T=1e-300 with steps=10**9: "T: the nominal
// step ...", although steps was set after T).
Scene withKeywords(Scene scene, const Keywords& k) {
    std::vector<std::pair<std::string, std::string>> given{{"attention", "/attention"}}; // keyword, pointer
    try {
        if (!k.attention.is_none()) scene = withSetting(scene, {"/attention", attentionJson(k.attention)});
        for (const auto& [key, value] : k.parameters) {
            const std::string keyword = pb::str(key);
            const SceneParam& p = keywordParam(keyword);
            if (value.is_none()) continue;
            given.emplace_back(keyword, std::string(p.pointer));
            scene = withSetting(scene, {std::string(p.pointer), pythonToJson(value, keyword)});
        }
    } catch (const SceneError& e) { // named by the keyword of the most specific field holding the error
        const std::pair<std::string, std::string>* best = nullptr;
        for (const auto& entry : given) {
            const std::string_view at = e.pointer, pointer = entry.second;
            if ((at == pointer || pointerIsUnder(at, pointer)) &&
                (!best || pointer.size() > best->second.size()))
                best = &entry;
        }
        if (best) throw InputError(best->first + e.pointer.substr(best->second.size()), e.detail);
        throw;
    }
    return scene;
}

// The scene of the array form: X0's tokens as given (initial kind "points", N = their number), in X0's
// precision, the keywords set on the scene schema's defaults (attention: softmax with Q = K = V = I). The
// tokens are attached last, never through JSON: N is bounded by the scene's /n and the memory, not by the
// 65536 points a scene file may inline.
Scene arrayScene(const pb::handle& X0, const Keywords& k) {
    for (const char* keyword : {"n", "init"})
        if (k.parameters.contains(keyword) && !k.parameters[keyword].is_none())
            throw InputError(keyword, "is X0's in the array form (its rows are the tokens): leave it out");
    bool f32 = false;
    Mat X = toPoints(X0, "X0", 0, kSceneMaxTokens, 0.0, {}, &f32);
    const auto scene = [&](Eigen::Index d, Eigen::Index n) {
        const nlohmann::ordered_json doc = {{"name", "X0"},
                                            {"d", d},
                                            {"n", n},
                                            {"precision", f32 ? "float32" : "float64"},
                                            {"attention", {{"type", "softmax"}}}};
        Scene base;
        try {
            base = sceneFromJson(doc.dump());
        } catch (const SceneError& e) { // /d, /n: X0's shape
            throw InputError("X0", "shape (" + std::to_string(X.rows()) + ", " + std::to_string(X.cols()) +
                                       ") does not fit a scene: " + e.what());
        }
        return withKeywords(std::move(base), k);
    };
    Scene s;
    try {
        s = scene(X.cols(), X.rows());
    } catch (const InputError& e) {
        // The attention's matrices fix d: when they fit X0's rows and not its columns, X0 is transposed.
        const Eigen::Index n = X.rows(), d = X.cols();
        bool fitsRows = false;
        if (std::string_view(e.what()).starts_with("attention") && n != d && n <= kMaxJsonMatrixSide) try {
                scene(n, d), fitsRows = true;
            } catch (const std::exception&) {
            }
        if (fitsRows)
            throw InputError("X0", "expected (N, " + std::to_string(n) +
                                       ") tokens (the attention's matrices have d = " + std::to_string(n) +
                                       "), got shape (" + std::to_string(n) + ", " + std::to_string(d) +
                                       ") (tokens are rows: was a (d, N) array passed? X0.T is (N, d))");
        throw;
    }
    // The keywords' seed and noise stay (noise jitters the points); N, d and the kind are X0's.
    const InitialSpec keywords = s.initial;
    s.initial = InitialSpec{};
    s.initial.seed = keywords.seed;
    s.initial.noise = keywords.noise;
    s.initial.kind = InitKind::Points;
    s.initial.points = std::move(X);
    return s;
}

// A NumPy array, a PyTorch tensor or a list of points: the array form's X0. Anything else is a scene source.
bool isTokenArray(const pb::handle& source) {
    if (pb::isinstance<Scene>(source) || pb::isinstance<pb::dict>(source) ||
        pb::isinstance<pb::str>(source) || pb::hasattr(source, "__fspath__"))
        return false;
    return pb::hasattr(source, "shape") || pb::isinstance<pb::list>(source) ||
           pb::isinstance<pb::tuple>(source);
}

SimulationResult simulate(const pb::handle& source, const std::string& backendId, std::optional<long> every,
                          const pb::object& progressArg, const Keywords& keywords) {
    const bool fromTokens = isTokenArray(source);
    Scene scene = fromTokens ? arrayScene(source, keywords) : withKeywords(toScene(source), keywords);
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
    try {
        checkRunBudget(particleRunBudget(scene, true), defaultMemoryLimit(),
                       "the limit is half this machine's memory: record fewer frames (every=)");
    } catch (const SceneError& e) { // the array form's N is X0's, its steps the keyword's
        if (!fromTokens) throw;
        throw InputError(e.pointer == "/n" ? "X0" : "steps", e.detail);
    }

    Progress progress(progressArg, "simulate " + scene.name, scene.integrator.steps, "step");
    double fraction = 0;
    Interruptible guard([&] {
        if (progress) progress(fraction);
    });
    guard.cancelWithinPasses(); // Ctrl+C within one evaluation: the run's state is thrown away
    std::vector<Frame> history;
    std::optional<RunEvent> event;
    bool deviceSteps = false;
    RunTimings work;
    // As the CLI: the backend asked first (a refusal is a ValueError naming the field), then whole steps on
    // the device where its stepper takes the scene.
    const PreparedRun prepared = prepareRun(backend, scene);
    guard.run([&] {
        const std::unique_ptr<Simulation> run = prepared.start(scene);
        Simulation& sim = *run;
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

    m.def(
        "simulate",
        [](const pb::handle& source, const std::string& backend, std::optional<long> every,
           const pb::object& progress, const pb::object& attention, const pb::object& T,
           const pb::object& steps, const pb::object& method, const pb::kwargs& parameters) {
            Keywords k{attention, pb::dict()};
            // T, steps and method are the schema's keywords too; named here for the signature.
            const std::pair<const char*, pb::object> named[] = {
                {"T", T}, {"steps", steps}, {"method", method}};
            for (const auto& [name, value] : named)
                if (!value.is_none()) k.parameters[name] = value;
            for (const auto& [name, value] : parameters) k.parameters[name] = value;
            return simulate(source, backend, every, progress, k);
        },
        pb::arg("scene"), pb::arg("backend") = "cpu", pb::arg("every") = pb::none(),
        pb::arg("progress") = pb::none(), pb::kw_only(), pb::arg("attention") = pb::none(),
        pb::arg("T") = pb::none(), pb::arg("steps") = pb::none(), pb::arg("method") = pb::none(),
        R"(simulate(scene, backend="cpu", every=None, progress=None, *, attention=None, T=None, steps=None,
         method=None, **parameters) -> SimulationResult
simulate(X0, *, attention=None, T=None, steps=None, method=None, backend="cpu", every=None,
         progress=None, **parameters) -> SimulationResult

Integrates the particle system

    dx_i/dt = Σ_h V_h Σ_j P^h_ij x_j      (softmax: P_ij = exp(s_ij) / Σ_l exp(s_il), s_ij = x_jᵀ A x_i)

from the initial tokens to the horizon T (or an event: divergence, a non-finite state), exactly as
``flowscope-cli simulate`` does: the same scene gives the same arrays bit for bit.

scene     a Scene, or what Scene() takes (dict, file, share string, preset name), or
X0        the initial tokens: an (N, d) array (NumPy, PyTorch, a list of rows), any N (no 65536-point
          limit, only the memory's). float32 runs in float32 and returns float32 tokens, float64 in float64;
          float16 and bfloat16 run in float32 (with a warning); other dtypes are a TypeError.
          The run is the scene {"d": d, "n": N, "precision": X0's, "initial": {"kind": "points",
          "points": X0}, ...} with the keywords below; run.scene is it.
attention the scene's "attention" object as a dict ({"type": "l2", "beta": 2, "heads": [...]}), or a Scene,
          scene dict, file, share string or preset name whose attention is taken (only its attention);
          left out with X0: softmax, Q = K = V = I, beta = 1
T, steps, method  /integrator/T, /integrator/steps, /integrator/method ("euler", "heun", "rk4",
          "dopri5"); left out with X0: 1, 100, "rk4". With a scene they replace its fields.
**parameters  any other scene parameter by its keyword: beta=4, masked=True, normalization="pre",
          sinkhorn_eps=0.5, rwpo_lambda=0.1, seed=7, ... (flowscope.parameters() lists them with their
          pointers, ranges and defaults); applied after `attention`.
backend   "cpu" (the scene's precision: float64 reference or float32 SIMD), "gl" or "vulkan" (float32
          compute shaders, where this build has them)
every     record every K-th step (overrides output.every)
progress  None: a tqdm bar once the call has run 2 s (where tqdm is installed); False: nothing; a
          callable taking the fraction done; True or "auto": a bar from the start (without tqdm: True
          prints a line on stderr every tenth, "auto" nothing)

Each keyword is checked as the scene file's field is, and a bad value names the keyword:
``T: expected number > 0, got -1``, ``attention/heads/0/V: expected 2x2 matrix, got 3x3``.

The GIL is released while it runs; Ctrl+C (or an exception raised by `progress`) stops it between two
steps and raises, leaving the module usable.)");
}

} // namespace flowscope::py
