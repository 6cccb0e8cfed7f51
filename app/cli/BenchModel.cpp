// flowscope-cli bench model: the speed of a real checkpoint's forward pass (engine/models) and of the ODE of
// one head beside its layers, at the reference size by default: a random checkpoint of GPT-2 small's
// shape (engine/models/RandomCheckpoint.h; random weights cost what trained ones of the same shape cost) and
// 512 tokens, written to a temporary folder unless --model gives one.
//
// Each precision's row: the medians over --repeats of reading the weights (the mapped file converted to the
// precision) and of the forward pass, the forward pass on one thread in the same process as the baseline
// (ratio_to_one_thread: how many times faster the thread pool is), float64 against float32, and the nominal
// flops of the pass against the measured FP32 peak. The ODE rows time modelDynamics (ModelAnalysis.h) at each
// --ode-steps, against the float32 forward pass; with several, each cloud's distance to the finest run's
// (a convergence study of the steps per layer). The checksums (the sum of |x| over every hidden state and
// over the ODE's recorded clouds) let a test compare the work with a direct run, not a speed.
#include "Commands.h"

#include "engine/attention/StreamKernel.h"
#include "engine/core/Parallel.h"
#include "engine/models/Model.h"
#include "engine/models/ModelAnalysis.h"
#include "engine/models/RandomCheckpoint.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <unistd.h>

namespace flowscope::cli {

namespace {

namespace fs = std::filesystem;
using models::RowMat;
using Clock = std::chrono::steady_clock;

double msSince(Clock::time_point start) {
    return 1e3 * std::chrono::duration<double>(Clock::now() - start).count();
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

// The sum of |x| over every matrix: a checksum of the work that no sign or cancellation hides.
template <class M> double absoluteSum(const std::vector<M>& xs) {
    double s = 0.0;
    for (const M& x : xs) s += x.template cast<double>().cwiseAbs().sum();
    return s;
}

// The nominal flops of one forward pass of n tokens through `layers` layers: per layer the Q, K, V and output
// maps (2 n D (3D + D)), the feed-forward layer (4 n D F) and the attention (4 D flops a query-key pair:
// scores and the weighted sum; n (n + 1) / 2 pairs when causal, n^2 else); ALBERT's mapping in (2 n E D).
double forwardFlops(const models::ModelConfig& c, int n, int layers) {
    const double N = n, D = c.hidden, F = c.intermediate;
    const double pairs = c.causal() ? N * (N + 1) / 2 : N * N;
    const double layer = 2 * N * D * 4 * D + 4 * N * D * F + 4 * D * pairs;
    return layers * layer + (c.family == models::Family::Albert ? 2 * N * c.embedding * D : 0.0);
}

// The random checkpoint's folder, removed when the bench ends (also by an error).
struct ScratchDir {
    fs::path path;
    ~ScratchDir() {
        std::error_code ec;
        if (!path.empty()) fs::remove_all(path, ec);
    }
};

// The timings of one precision.
template <class T> struct Timed {
    std::vector<double> weightsMs, forwardMs, oneThreadMs;
    std::vector<RowMat<T>> states;
};

template <class T>
Timed<T> timeForward(const models::Checkpoint& checkpoint, const std::vector<int>& ids, int layers,
                     int repeats, bool baseline) {
    Timed<T> t;
    for (int r = 0; r < repeats; ++r) {
        auto start = Clock::now();
        const models::Weights<T> weights = checkpoint.weights<T>();
        t.weightsMs.push_back(msSince(start));
        start = Clock::now();
        t.states = models::hiddenStates(checkpoint.config(), weights, ids, layers);
        t.forwardMs.push_back(msSince(start));
        if (!baseline) continue;
        const int saved = threadCount();
        setThreadCount(1);
        start = Clock::now();
        const std::vector<RowMat<T>> alone = models::hiddenStates(checkpoint.config(), weights, ids, layers);
        t.oneThreadMs.push_back(msSince(start));
        setThreadCount(saved);
    }
    return t;
}

} // namespace

int benchModel(const Args& raw) {
    ArgParser p(raw);
    const bool json = p.flag("--json");
    const std::string modelDir = p.option("--model");
    const auto width = p.given("--width"), heads = p.given("--heads");
    const auto layersText = p.given("--layers");
    const int tokens = int(parseLong(p.option("--tokens", "512"), "--tokens", 2, 1 << 20));
    const std::string precisionText = p.option("--precision", "float32,float64");
    const int repeats = int(parseLong(p.option("--repeats", "3"), "--repeats", 1, 1000));
    const std::string odeText = p.option("--ode-steps", "");
    const std::string odeLayerText = p.option("--ode-layer", "0"), odeHeadText = p.option("--ode-head", "0");
    const bool noOde = p.flag("--no-ode");
    const bool noBaseline = p.flag("--no-baseline");
    const long seed = parseLong(p.option("--seed", "1"), "--seed", 0, (1L << 62));
    p.rejectUnknown();
    if (!p.positional.empty()) throw UsageError("unexpected argument " + quoteForMessage(p.positional[0]));
    if (!modelDir.empty() && (width || heads))
        throw UsageError("--width and --heads shape the random checkpoint; --model " + modelDir +
                         " has its own");
    bool float32 = false, float64 = false;
    for (const std::string& item : splitCommas(precisionText)) {
        if (item != "float32" && item != "float64")
            throw UsageError("--precision: expected float32, float64 or float32,float64, got " +
                             quoteForMessage(precisionText));
        (item == "float32" ? float32 : float64) = true;
    }
    std::vector<int> odeSteps;
    if (!noOde && !odeText.empty())
        for (const std::string& s : splitCommas(odeText))
            odeSteps.push_back(int(parseLong(s, "--ode-steps", 1, 100000)));

    // The checkpoint: the folder given, or GPT-2 small's shape (or --width, --heads, --layers) at random.
    ScratchDir scratch;
    std::string dir = modelDir, name = fs::path(modelDir).filename().string();
    if (modelDir.empty()) {
        models::Gpt2Shape shape = models::gpt2SmallShape();
        if (width) shape.width = int(parseLong(*width, "--width", 1, 8192));
        if (heads) shape.heads = int(parseLong(*heads, "--heads", 1, shape.width));
        if (shape.width % shape.heads != 0)
            throw UsageError("--heads: expected a divisor of the width " + std::to_string(shape.width) +
                             ", got " + std::to_string(shape.heads));
        if (layersText) shape.layers = int(parseLong(*layersText, "--layers", 1, 4096));
        if (tokens > shape.positions)
            throw UsageError("--tokens: GPT-2's context holds " + std::to_string(shape.positions) +
                             " positions, got " + std::to_string(tokens));
        // Resources before the work: the writer holds the tensors in memory while it writes them, so the
        // checkpoint needs its size in memory and on the temporary folder's disk.
        const double d = shape.width, params = (double(shape.vocab) + shape.positions) * d +
                                               shape.layers * (12.0 * d * d + 13.0 * d) + 2.0 * d;
        const double bytes = 4.0 * params, limit = 4.0 * double(1L << 30);
        const auto formatCount = [](double x) {
            char text[32];
            std::snprintf(text, sizeof text, "%.3g", x);
            return std::string(text);
        };
        if (bytes > limit)
            throw UsageError("--width/--layers: the random checkpoint would hold " + formatCount(params) +
                             " parameters (" + formatCount(bytes / double(1L << 30)) +
                             " GiB), above the bench's 4 GiB; use a smaller --width or --layers");
        std::string pattern = (fs::temp_directory_path() / "flowscope-bench-model-XXXXXX").string();
        if (!::mkdtemp(pattern.data())) throw std::runtime_error("cannot make a folder in " + pattern);
        scratch.path = pattern;
        std::error_code spaceError;
        const fs::space_info space = fs::space(scratch.path, spaceError);
        if (!spaceError && double(space.available) < bytes * 1.1)
            throw UsageError("--width/--layers: the random checkpoint needs " +
                             formatCount(bytes / double(1L << 20)) + " MiB in " +
                             scratch.path.parent_path().string() + ", which has " +
                             formatCount(double(space.available) / double(1L << 20)) + " MiB free");
        if (!json)
            std::printf("writing a random GPT-2 checkpoint (D = %d, %d heads, %d layers, %d tokens in the "
                        "vocabulary, F32, seed %ld) to %s\n",
                        shape.width, shape.heads, shape.layers, shape.vocab, seed, scratch.path.c_str());
        models::writeRandomGpt2(scratch.path, shape, true, std::uint64_t(seed));
        dir = scratch.path.string();
        name = "random-gpt2";
    }
    const auto openStart = Clock::now();
    const models::Checkpoint checkpoint(dir);
    const double openMs = msSince(openStart);
    const models::ModelConfig& c = checkpoint.config();
    const int layers = modelDir.empty() || !layersText
                           ? c.layers
                           : int(parseLong(*layersText, "--layers", 1, c.sharedLayer() ? 4096 : c.layers));
    if (tokens > c.positions)
        throw UsageError("--tokens: the model's context holds " + std::to_string(c.positions) +
                         " positions, got " + std::to_string(tokens));
    // The tokens: id_i = 7919 i mod V, spread over the vocabulary and the same on every run.
    std::vector<int> ids;
    for (int i = 0; i < tokens; ++i) ids.push_back(int((7919L * i) % c.vocab));

    const double peak = measuredFp32Peak();
    const double flops = forwardFlops(c, tokens, layers);
    if (!json)
        std::printf(
            "bench model: %s (%s, D = %d, %d heads), %d layers, %d tokens; medians of %d; baseline: the "
            "forward pass on one thread; FP32 peak %.1f Gflop/s; %.3g nominal flops a pass\n",
            name.c_str(), models::toString(c.family), c.hidden, c.heads, layers, tokens, repeats, peak / 1e9,
            flops);
    double float32ForwardMs = NAN;
    std::vector<RowMat<double>> odeStates; // the states the ODE is set beside: float32's, as the Models tab
    auto report = [&](const char* precision, const auto& t) {
        const double weightsMs = median(t.weightsMs), forwardMs = median(t.forwardMs);
        const double oneThreadMs = t.oneThreadMs.empty() ? NAN : median(t.oneThreadMs);
        nlohmann::json row = {{"bench", "model"},
                              {"model", name},
                              {"family", models::toString(c.family)},
                              {"width", c.hidden},
                              {"heads", c.heads},
                              {"layers", layers},
                              {"tokens", tokens},
                              {"precision", precision},
                              {"threads", threadCount()},
                              {"repeats", repeats},
                              {"open_ms", openMs},
                              {"weights_ms", weightsMs},
                              {"forward_ms", forwardMs},
                              {"total_ms", weightsMs + forwardMs},
                              {"flops", flops},
                              {"gflops_per_s", flops / forwardMs / 1e6},
                              {"fp32_peak_flops", peak},
                              {"fraction_of_peak", flops / (forwardMs / 1e3) / peak},
                              {"checksum", absoluteSum(t.states)}};
        row["one_thread_ms"] = numberJson(oneThreadMs);
        row["ratio_to_one_thread"] = numberJson(oneThreadMs / forwardMs);
        if (std::string(precision) == "float64" && std::isfinite(float32ForwardMs))
            row["ratio_to_float32"] = forwardMs / float32ForwardMs;
        if (json) {
            std::cout << row.dump() << std::endl;
            return;
        }
        std::printf("  %-8s weights %8.1f ms  forward %8.1f ms  (total %8.1f ms; %6.1f Gflop/s, %4.1f%% of "
                    "peak)",
                    precision, weightsMs, forwardMs, weightsMs + forwardMs, flops / forwardMs / 1e6,
                    100.0 * flops / (forwardMs / 1e3) / peak);
        if (std::isfinite(oneThreadMs))
            std::printf("  one thread %8.1f ms: %.2fx", oneThreadMs, oneThreadMs / forwardMs);
        if (row.contains("ratio_to_float32"))
            std::printf("  %.2fx float32's time", row["ratio_to_float32"].get<double>());
        std::printf("\n");
        std::fflush(stdout);
    };
    if (float32) {
        const Timed<float> t = timeForward<float>(checkpoint, ids, layers, repeats, !noBaseline);
        report("float32", t);
        float32ForwardMs = median(t.forwardMs);
        for (const RowMat<float>& x : t.states) odeStates.push_back(x.cast<double>());
    }
    if (float64) {
        Timed<double> t = timeForward<double>(checkpoint, ids, layers, repeats, !noBaseline);
        report("float64", t);
        if (odeStates.empty()) odeStates = std::move(t.states);
    }

    // The ODE of one head beside the layers (what Build ODE runs), at each --ode-steps.
    if (noOde) return 0;
    const int odeLayer = int(parseLong(odeLayerText, "--ode-layer", 0, layers - 1));
    const int odeHead = int(parseLong(odeHeadText, "--ode-head", 0, c.heads - 1));
    if (c.hidden > 1024) {
        if (!json) std::printf("  ODE skipped: a scene holds d <= 1024, the model's width is %d\n", c.hidden);
        return 0;
    }
    if (odeSteps.empty()) odeSteps = {models::defaultStepsPerLayer(c)};
    const models::Weights<double> weights = checkpoint.weights<double>();
    std::vector<models::ModelDynamics> runs;
    std::vector<double> odeMs;
    for (const int steps : odeSteps) {
        const auto start = Clock::now();
        runs.push_back(models::modelDynamics(checkpoint, weights, odeStates, odeLayer, odeHead, steps));
        odeMs.push_back(msSince(start));
    }
    // The finest run (the most steps) is the reference of the others.
    const std::size_t finest =
        std::size_t(std::max_element(odeSteps.begin(), odeSteps.end()) - odeSteps.begin());
    const double n = double(tokens);
    for (std::size_t r = 0; r < runs.size(); ++r) {
        const models::ModelDynamics& m = runs[r];
        const long steps = long(layers) * odeSteps[r];
        // Per recorded layer: the RMS distance between this run's cloud and the finest run's, token by token,
        // and the RMS norm of the finest run's tokens (the scale).
        double toFinest = 0.0, scale = 0.0;
        const std::size_t common = std::min(m.ode.size(), runs[finest].ode.size());
        for (std::size_t k = 0; k < common; ++k) {
            toFinest = std::max(toFinest, std::sqrt((m.ode[k] - runs[finest].ode[k]).squaredNorm() / n));
            scale = std::max(scale, std::sqrt(runs[finest].ode[k].squaredNorm() / n));
        }
        nlohmann::json row = {{"bench", "model-ode"},
                              {"model", name},
                              {"width", c.hidden},
                              {"layers", layers},
                              {"tokens", tokens},
                              {"layer", odeLayer},
                              {"head", odeHead},
                              {"steps_per_layer", odeSteps[r]},
                              {"steps", steps},
                              {"ode_ms", odeMs[r]},
                              {"step_ms", odeMs[r] / double(steps)},
                              {"recorded_layers", long(m.ode.size()) - 1},
                              {"checksum", absoluteSum(m.ode)}};
        row["distance_last_layer"] = numberJson(m.distance.back());
        row["ratio_to_forward"] = numberJson(odeMs[r] / float32ForwardMs);
        if (runs.size() > 1) {
            row["finest_steps_per_layer"] = odeSteps[finest];
            row["max_distance_to_finest"] = toFinest;
            row["relative_distance_to_finest"] = toFinest / scale;
        }
        if (json) {
            std::cout << row.dump() << std::endl;
            continue;
        }
        std::printf("  ODE of head %d of layer %d, %4d RK4 steps a layer: %9.1f ms (%.2f ms a step", odeHead,
                    odeLayer, odeSteps[r], odeMs[r], odeMs[r] / double(steps));
        if (std::isfinite(float32ForwardMs))
            std::printf(", %.2fx the float32 forward pass", odeMs[r] / float32ForwardMs);
        std::printf(")");
        if (runs.size() > 1 && r != finest)
            std::printf("; distance to %d steps: %.3e (%.3e of the clouds' size)", odeSteps[finest], toFinest,
                        toFinest / scale);
        std::printf("\n");
    }
    return 0;
}

} // namespace flowscope::cli
