#include "Commands.h"
#include "Help.h"

#include "engine/backend/PrepareRun.h"
#include "engine/backend/Registry.h"
#include "engine/core/Text.h"
#include "engine/dynamics/Simulation.h"
#include "engine/io/AtomicFile.h"
#include "engine/io/Npy.h"
#include "engine/io/OutputSet.h"
#include "engine/io/Trajectory.h"
#include "engine/scene/RunBudget.h"
#include "engine/scene/Scene.h"
#include "engine/scene/SceneSetting.h"
#include "engine/scene/SceneShareString.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unistd.h>

namespace flowscope::cli {

// --- ArgParser ---

ArgParser::ArgParser(const Args& args) : args_(args), used_(args.size(), false) {
    collect();
}

bool ArgParser::flag(const std::string& name) {
    known_.push_back(name);
    for (std::size_t i = 0; i < args_.size(); ++i)
        if (!used_[i] && args_[i] == name) {
            used_[i] = true;
            collect();
            return true;
        }
    collect();
    return false;
}

std::string ArgParser::option(const std::string& name, const std::string& fallback) {
    return given(name).value_or(fallback);
}

std::optional<std::string> ArgParser::given(const std::string& name) {
    known_.push_back(name);
    for (std::size_t i = 0; i < args_.size(); ++i)
        if (!used_[i] && args_[i] == name) {
            if (i + 1 >= args_.size()) throw UsageError(name + " needs a value");
            used_[i] = used_[i + 1] = true;
            collect();
            return args_[i + 1];
        }
    collect();
    return std::nullopt;
}

std::vector<std::string> ArgParser::options(const std::string& name) {
    known_.push_back(name);
    std::vector<std::string> values;
    for (std::size_t i = 0; i < args_.size(); ++i)
        if (!used_[i] && args_[i] == name) {
            if (i + 1 >= args_.size()) throw UsageError(name + " needs a value");
            used_[i] = used_[i + 1] = true;
            values.push_back(args_[++i]);
        }
    collect();
    return values;
}

void ArgParser::collect() {
    positional.clear();
    for (std::size_t i = 0; i < args_.size(); ++i)
        if (!used_[i] && args_[i].rfind("--", 0) != 0) positional.push_back(args_[i]);
}

std::string ArgParser::unknown() const {
    for (std::size_t i = 0; i < args_.size(); ++i)
        if (!used_[i] && args_[i].rfind("--", 0) == 0) return args_[i];
    return "";
}

void ArgParser::rejectUnknown() const {
    // For the test that every option a command takes is in its help (tests/cli: EveryOptionIsInItsHelp).
    if (const char* log = std::getenv("FLOWSCOPE_CLI_OPTIONS_LOG"); log && *log) {
        std::ofstream out(log, std::ios::app);
        for (const std::string& name : known_) out << name << "\n";
    }
    const std::string u = unknown();
    if (u.empty()) return;
    const std::string near = nearestWord(u.substr(0, u.find('=')), known_);
    throw UsageError("unknown option " + quoteForMessage(u) +
                     (near.empty() ? "" : " (did you mean " + near + "?)"));
}

// --- Shared options: --set, --max-time, numbers, backends ---

Scene withSetOptions(Scene scene, const std::vector<std::string>& settings) {
    try {
        return withSettings(std::move(scene), settings);
    } catch (const SceneError& e) {
        throw SceneError("", "--set " + std::string(e.what()));
    }
}

void requireSceneAndOut(const ArgParser& p, const std::string& out, const std::string& command,
                        const std::string& example) {
    if (p.positional.size() != 1)
        throw UsageError("expected one SCENE.json or share string (usage: " + command + " SCENE.json --out " +
                         example + ")");
    if (out.empty()) throw UsageError("--out " + example + " is required");
}

std::uint64_t maxMemoryOption(ArgParser& p) {
    const std::string text = p.option("--max-memory");
    if (text.empty()) return defaultMemoryLimit();
    try {
        return parseByteSize(text);
    } catch (const std::invalid_argument& e) {
        throw UsageError(std::string("--max-memory: ") + e.what());
    }
}

double maxTimeOption(ArgParser& p) {
    const std::string text = p.option("--max-time");
    if (text.empty()) return 0;
    try {
        return parseDuration(text);
    } catch (const std::invalid_argument& e) {
        throw UsageError(std::string("--max-time: ") + e.what());
    }
}

void announceRunCost(const RunCost& cost, double maxSeconds, const std::string& command) {
    checkRunCost(cost, maxSeconds);
    if (const std::string notice = runCostNotice(cost); !notice.empty())
        std::cerr << "flowscope-cli " << command << ": " << notice << "\n";
}

std::string optionValue(const Args& args, const std::string& name) {
    for (std::size_t i = 0; i + 1 < args.size(); ++i)
        if (args[i] == name) return args[i + 1];
    return "";
}

std::vector<std::string> splitCommas(const std::string& text) {
    std::vector<std::string> parts;
    std::stringstream ss(text);
    std::string item;
    while (std::getline(ss, item, ',')) parts.push_back(item);
    if (!text.empty() && text.back() == ',') parts.push_back("");
    return parts;
}

long parseLong(const std::string& text, const std::string& option, long lo, long hi) {
    try {
        std::size_t used = 0;
        const long v = std::stol(text, &used);
        if (used == text.size() && v >= lo && v <= hi) return v;
    } catch (...) {
    }
    throw UsageError(option + ": expected an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                     "], got " + quoteForMessage(text));
}

double parsePositive(const std::string& text, const std::string& option, bool allowZero) {
    // A subnormal value (4e-320) is a number: std::stod would throw for it (strtod's ERANGE on underflow).
    double v = 0;
    if (parseDouble(text, v) == NumberText::Number && std::isfinite(v) && (v > 0 || (allowZero && v == 0)))
        return v;
    throw UsageError(option + ": expected a " + (allowZero ? "non-negative" : "positive") + " number, got " +
                     quoteForMessage(text));
}

std::vector<std::string> sceneInputs(const std::string& arg, const Scene& scene) {
    std::vector<std::string> inputs;
    std::error_code ec;
    if (std::filesystem::exists(arg, ec)) inputs.push_back(arg);
    if (scene.initial.kind == InitKind::File) inputs.push_back(scene.initial.path);
    return inputs;
}

ComputeBackend openCliBackend(const std::string& name) {
    try {
        return openBackend(name);
    } catch (const BackendError& e) {
        throw UsageError(std::string("--backend: ") + e.what());
    }
}

std::string defaultBackendId() {
    return listBackends().front().id;
}

std::string deviceStepBackends() {
    std::string ids;
    for (const BackendInfo& b : listBackends())
        if (b.deviceSteps) ids += (ids.empty() ? "" : " or ") + b.id;
    return ids;
}

std::string withBackendChoices(std::string usage) {
    std::string choices;
    for (const BackendInfo& b : listBackends()) choices += (choices.empty() ? "" : "|") + b.id;
    const std::string placeholder = "{backends}";
    for (std::size_t at = usage.find(placeholder); at != std::string::npos;
         at = usage.find(placeholder, at + choices.size()))
        usage.replace(at, placeholder.size(), choices);
    return usage;
}

// --- simulate ---

int simulate(const Args& raw) {
    ArgParser p(raw);
    const std::string out = p.option("--out");
    const std::string backendName = p.option("--backend", defaultBackendId());
    const bool f32 = p.flag("--float32");
    const std::string every = p.option("--every");
    const std::vector<std::string> settings = p.options("--set");
    const std::uint64_t maxMemory = maxMemoryOption(p);
    const double maxTime = maxTimeOption(p);
    p.rejectUnknown();
    requireSceneAndOut(p, out, "simulate", "traj.npy");

    const ComputeBackend backend = openCliBackend(backendName);
    Scene scene = withSetOptions(loadSceneOrShareString(p.positional[0]),
                                 settings); // validates everything before any output
    if (!every.empty()) scene.output.every = int(parseLong(every, "--every", 1, 1L << 30));
    // The backend is asked before any work: a scene it cannot run is one message naming the field (exit 2).
    const PreparedRun prepared = prepareRun(backend, scene);
    checkRunBudget(particleRunBudget(scene, true), maxMemory, kMaxMemoryHint);
    const RunCost cost = particleRunCost(scene, backend.id != "cpu");
    announceRunCost(cost, maxTime, "simulate");
    // The outputs, checked before the run: the trajectory, then its record (renamed last).
    const std::string jsonPath = std::filesystem::path(out).replace_extension(".json").string();
    if (jsonPath == out)
        throw UsageError("--out: '" + out +
                         "' is where the run's record <stem>.json goes; name "
                         "the trajectory .npy");
    OutputSet outputs = [&] {
        try {
            return OutputSet({out, jsonPath}, sceneInputs(p.positional[0], scene));
        } catch (const OutputError& e) {
            throw OutputError(e.field, e.detail +
                                           " (simulate writes the trajectory to --out and its record to "
                                           "<stem>.json beside it)");
        }
    }();

    // On a GPU backend the tokens stay on the device between the recorded frames, when it can run the scene
    // (else the fields run every stage, and the record says why).
    const std::unique_ptr<Simulation> run = prepared.start(scene);
    Simulation& sim = *run;
    // Progress: on a terminal the percentage and, once a second has passed, the time left at the speed so
    // far; elsewhere, for a run estimated above a minute, a line at each tenth.
    const bool tty = ::isatty(2), lines = !tty && cost.seconds >= 60;
    const auto start = std::chrono::steady_clock::now();
    int lastPct = -1;
    sim.run([&](double f) {
        const int pct = int(f * 100);
        if (pct == lastPct || (!tty && (!lines || pct % 10 != 0))) return true;
        lastPct = pct;
        const double seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        std::cerr << (tty ? "\r" : "") << "simulating " << scene.name << ": " << pct << "%";
        if (seconds > 1 && f > 0) std::cerr << ", " << formatDuration(seconds * (1 - f) / f) << " left   ";
        std::cerr << (tty ? "" : "\n") << std::flush;
        return true;
    });
    if (tty) std::cerr << "\n";

    const auto& hist = sim.history();
    const std::int64_t T = std::int64_t(hist.size()), N = scene.n, d = scene.d;
    std::vector<const Tokens*> frames;
    for (const Frame& f : hist) frames.push_back(&f.tokens);
    const OutputSet::Capture capture(outputs);
    writeTrajectoryNpy(out, frames, f32);

    nlohmann::json j;
    j["scene"] = scene.name;
    j["shape"] = {T, N, d};
    j["dtype"] = f32 ? "float32" : "float64";
    j["backend"] = {{"kind", backend.id}, {"device", backend.device}, {"device_steps", sim.onDevice()}};
    if (!sim.stepperNote().empty()) j["backend"]["device_steps_note"] = sim.stepperNote();
    j["integrator"] = {{"method", toString(scene.integrator.method)},
                       {"steps", sim.timings().steps},
                       {"field_evaluations", sim.timings().evaluations},
                       {"sub_steps", sim.timings().subSteps},
                       {"rejected_sub_steps", sim.timings().rejected}};
    nlohmann::json times = nlohmann::json::array(), mean = nlohmann::json::array(),
                   cov = nlohmann::json::array(), kinetic = nlohmann::json::array(),
                   entropy = nlohmann::json::array(), clusters = nlohmann::json::array(),
                   rank = nlohmann::json::array(), maxNorm = nlohmann::json::array(),
                   cosine = nlohmann::json::array(), energy = nlohmann::json::array(),
                   energyBeta = nlohmann::json::array();
    for (const Frame& f : hist) {
        times.push_back(f.t);
        mean.push_back(vectorJson(f.obs.mean));
        cov.push_back(matrixJson(f.obs.cov));
        kinetic.push_back(numberJson(f.obs.kinetic));
        entropy.push_back(numberJson(f.obs.entropy));
        clusters.push_back(f.obs.clusters);
        rank.push_back(f.obs.rank);
        maxNorm.push_back(numberJson(f.obs.maxNorm));
        cosine.push_back(numberJson(f.obs.meanCosine));
        energy.push_back(numberJson(f.obs.energy));
        energyBeta.push_back(numberJson(f.obs.energyBeta));
    }
    j["times"] = times;
    j["observables"] = {{"mean", mean},
                        {"cov", cov},
                        {"kinetic_energy", kinetic},
                        {"attention_entropy", entropy},
                        {"clusters", clusters},
                        {"rank", rank},
                        {"max_norm", maxNorm},
                        {"mean_cosine", cosine},
                        {"interaction_energy", energy},
                        {"energy_beta", energyBeta}};
    if (sim.event())
        j["event"] = {
            {"kind", toString(sim.event()->kind)}, {"t", sim.event()->t}, {"message", sim.event()->message}};
    else
        j["event"] = nullptr;
    const FieldDiagnostics diag = sim.field().diagnostics();
    if (!std::isnan(diag.sinkhornMarginalError))
        j["sinkhorn"] = {{"marginal_error", diag.sinkhornMarginalError},
                         {"iterations", diag.sinkhornIterations}};
    writeFileAtomically(jsonPath, [&](std::ostream& o) { o << j.dump(1) << "\n"; });
    outputs.commit();

    std::cerr << "wrote " << out << " (" << T << " x " << N << " x " << d << ") and " << jsonPath;
    if (sim.event()) std::cerr << "; stopped at t = " << sim.event()->t << ": " << sim.event()->message;
    std::cerr << "\n";
    return 0;
}

// --- presets and share ---

int presets(const Args& raw) {
    ArgParser p(raw);
    const std::string dir = p.option("--dir", FLOWSCOPE_PRESET_DIR);
    p.rejectUnknown();
    if (!p.positional.empty())
        throw UsageError("unexpected argument " + quoteForMessage(p.positional[0]) +
                         " (presets takes no arguments; flowscope-cli presets lists them all)");
    std::vector<std::filesystem::path> files;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir, ec))
        if (e.path().extension() == ".json") files.push_back(e.path());
    if (ec) throw std::runtime_error("cannot read preset directory " + dir);
    std::sort(files.begin(), files.end());
    int bad = 0;
    for (const auto& f : files) {
        try {
            const Scene s = loadScene(f.string());
            std::string line = s.description.substr(0, s.description.find('.'));
            std::cout << f.stem().string() << "  [" << toString(s.attention.type) << ", d=" << s.d
                      << ", N=" << s.n << "]  " << line << "\n";
        } catch (const std::exception& e) {
            std::cout << f.stem().string() << "  INVALID: " << e.what() << "\n";
            ++bad;
        }
    }
    return bad ? 1 : 0;
}

// share SCENE.json prints the string; share --decode STRING [--out scene.json] writes the scene (atomically)
// or prints it.
int share(const Args& raw) {
    ArgParser p(raw);
    const std::string decode = p.option("--decode");
    const std::string out = p.option("--out");
    const std::vector<std::string> settings = p.options("--set");
    p.rejectUnknown();
    if (!decode.empty()) {
        if (!p.positional.empty())
            throw UsageError("--decode takes the string itself, no SCENE.json with it");
        const Scene scene = withSetOptions(decodeShareString(decode), settings);
        if (out.empty()) {
            std::cout << sceneToJson(scene);
        } else {
            saveScene(scene, out);
            std::cerr << "wrote " << out << "\n";
        }
        return 0;
    }
    if (!out.empty()) throw UsageError("--out goes with --decode (share SCENE.json prints the string)");
    if (p.positional.size() != 1)
        throw UsageError("expected one SCENE.json (usage: share SCENE.json, or share --decode STRING --out "
                         "scene.json)");
    std::cout << encodeShareString(withSetOptions(loadSceneOrShareString(p.positional[0]), settings)) << "\n";
    return 0;
}

#if FLOWSCOPE_HAVE_HEADLESS_DRAWING
std::unique_ptr<GlContext> openDrawingContext(const std::string& command, GlApi& gl) {
    std::string why;
    std::unique_ptr<GlContext> context = GlContext::createHeadless(&why);
    if (!context) {
        std::cerr << "flowscope-cli " << command
                  << ": no OpenGL for headless drawing (EGL surfaceless): " << why << "\n";
        return nullptr;
    }
    if (!gl.load(GlContext::procLoader(), &why)) {
        std::cerr << "flowscope-cli " << command << ": " << why << "\n";
        return nullptr;
    }
    return context;
}
#endif

} // namespace flowscope::cli
