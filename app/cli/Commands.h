// flowscope-cli commands. Each returns the process exit code: 0 success, 1 runtime failure, 2 bad input
// (usage, malformed scene or file); errors are printed to stderr as one line naming the field or file.
#pragma once

#include "engine/backend/ComputeBackend.h"
#include "engine/core/Types.h"
#include "engine/io/JsonWrite.h" // numberJson, vectorJson, matrixJson for the commands' JSON output
#include "engine/scene/RunCost.h"
#include "engine/scene/Scene.h"
#if FLOWSCOPE_HAVE_HEADLESS_DRAWING
#include "engine/gpu/gl/GlContext.h"
#include "render/GlApi.h"
#endif

#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace flowscope::flows {
struct TrainerConfig;
} // namespace flowscope::flows

namespace flowscope::cli {

using Args = std::vector<std::string>;

int simulate(const Args& args);
int presets(const Args& args);
int bench(const Args& args);
int ranks(const Args& args);
int moments(const Args& args);
int benchMoments(bool json, const std::vector<long>& threads); // bench moments (threads: empty = all cores)
int train(const Args& args);
int sample(const Args& args);
int density(const Args& args);
int benchTrain(const Args& args); // bench train
int benchSweep(const Args& args); // bench sweep (BenchSweep.cpp)
int benchModel(const Args& args); // bench model (BenchModel.cpp)
int trainTransformer(const Args& args);
int evalTransformer(const Args& args);
int share(const Args& args);
int infer(const Args& args);  // infer PROBLEM.json (Infer.cpp)
int model(const Args& args);  // model layers|gram|scene MODEL_DIR (Model.cpp)
int sweep(const Args& args);  // sweep SWEEP.json, sweep merge, sweep plot (Sweep.cpp, SweepPlot.cpp)
int theory(const Args& args); // theory influence SCENE.json (Theory.cpp)

// Inside a catch block: prints the current exception as main does and returns its exit code (2: bad input,
// 1: runtime failure).
int reportFailure(const std::string& cmd);

// The --backend option: an id of the backend registry (engine/backend/Registry.h); throws UsageError naming
// why the backend is unavailable (an unknown id lists the registry's ids).
ComputeBackend openCliBackend(const std::string& name);
// The --backend option's value when it is not given: the registry's first backend, the CPU.
std::string defaultBackendId();
// The ids of the backends that keep the tokens on the device between steps, as "gl" (or "gl or x").
std::string deviceStepBackends();
// `usage` with every "{backends}" replaced by the registry's ids, as "cpu|gl|vulkan".
std::string withBackendChoices(std::string usage);

// The files a scene's run reads (the scene file when `arg` names one, a token file), for OutputSet's check
// that no output replaces an input.
std::vector<std::string> sceneInputs(const std::string& arg, const Scene& scene);

// Small argument helpers: "--name value" options and positional arguments.
struct ArgParser {
    explicit ArgParser(const Args& args);
    bool flag(const std::string& name);                                            // consumes --name
    std::string option(const std::string& name, const std::string& fallback = ""); // consumes --name value
    std::optional<std::string> given(const std::string& name); // consumes --name value; nullopt: absent
    std::vector<std::string> options(const std::string& name); // consumes every --name value, in order
    std::vector<std::string> positional;                       // what is left after options are consumed
    std::string unknown() const;                               // first unconsumed --option, if any
    // Throws UsageError "unknown option ..." when unknown() is not empty, naming the closest option this
    // command asked for ("did you mean --every?").
    void rejectUnknown() const;

  private:
    Args args_;
    std::vector<bool> used_;
    std::vector<std::string> known_; // every name flag() and option() were asked for
    void collect();
};

// The scene with each --set POINTER=VALUE applied in turn (engine/scene/SceneSetting.h). Throws SceneError
// whose message starts "--set "POINTER=VALUE": ".
Scene withSetOptions(Scene scene, const std::vector<std::string>& settings);

// --max-memory SIZE (512M, 8G, ...; default: half this machine's memory), consumed from p. Throws UsageError.
std::uint64_t maxMemoryOption(ArgParser& p);

// --max-time DURATION (90, 90s, 5m, 1.5h, 2d; default 0: off), consumed from p. Throws UsageError.
double maxTimeOption(ArgParser& p);

// Before a run: refuses it (SceneError at the field that drives the cost) when its estimate exceeds
// maxSeconds > 0, and prints "<command>: this run will take about ..." when the estimate passes a minute.
void announceRunCost(const RunCost& cost, double maxSeconds, const std::string& command);

// A command that runs one scene into --out (simulate, moments) was given one SCENE.json or share string and
// `out`; else throws UsageError showing its usage, "<command> SCENE.json --out <example>".
void requireSceneAndOut(const ArgParser& p, const std::string& out, const std::string& command,
                        const std::string& example);

// The value of option `name` in raw arguments ("" when absent), without consuming it.
std::string optionValue(const Args& args, const std::string& name);

// "a,b,,c" -> {"a", "b", "", "c"} (a trailing comma gives a last empty item, which the parsers reject).
std::vector<std::string> splitCommas(const std::string& text);

// --n of the benchmarks: comma-separated token counts, each in [1, 2^24]; throws UsageError naming --n.
std::vector<long> parseTokenCounts(const std::string& text);
// --method of bench run and bench view: euler, heun, rk4 or dopri5; throws UsageError naming --method.
Method parseRunMethod(const std::string& text);
// The benchmarks' whole-run scene: softmax with Q = K = I, V = -I/2, beta 1, N(0, I) tokens in dimension d,
// float32, `steps` steps of h = 0.01 with `method`.
Scene benchScene(int d, int n, Method method, int steps);

int benchView(const Args& args); // bench view (BenchView.cpp)

#if FLOWSCOPE_HAVE_HEADLESS_DRAWING
// A headless EGL context for drawing, current on this thread, with its GL table loaded into `gl` (bench view,
// render). Null when there is none, after printing why as "flowscope-cli COMMAND: ..." (the command then
// exits with 1).
std::unique_ptr<GlContext> openDrawingContext(const std::string& command, GlApi& gl);
#endif

// Numbers from option text; throw UsageError naming the option and the accepted range.
long parseLong(const std::string& text, const std::string& option, long lo, long hi);
double parsePositive(const std::string& text, const std::string& option, bool allowZero = false);

// The training options of train, bench train and render --view training (--dataset NAME | --data FILE,
// --no-rwpo, --batch, --layers, --lr, ..., --seed; see flowscope-cli --help), consumed from p and applied
// over flows::TrainerConfig's defaults by engine/flows/TrainerSettings.h (what a flow sweep's base reads
// too); `iterations`: --iters too (into adam.decaySteps). Throws UsageError naming the option (Train.cpp).
flows::TrainerConfig parseTrainerConfig(ArgParser& p, bool iterations = false);
// The train command line of training settings by name (a flow sweep's run, sweep --print-run): "flowscope-cli
// train --dataset moons --lambda0 0.1 ... --iters 300", --out left to add.
std::string trainCommandLine(const nlohmann::json& settings);

// The training loop of train and train-transformer: `iters` steps (fewer when the trainer stops), its events
// printed to stderr as they come, and evaluate(trainer) every evalEvery iterations but the last (0: never).
template <class Trainer, class Evaluate>
void trainLoop(Trainer& trainer, long iters, long evalEvery, Evaluate evaluate) {
    std::size_t eventsShown = 0;
    for (long k = 0; k < iters; ++k) {
        const bool running = trainer.step();
        for (; eventsShown < trainer.events().size(); ++eventsShown)
            std::cerr << "iter " << trainer.events()[eventsShown].iteration << ": "
                      << trainer.events()[eventsShown].message << "\n";
        if (!running) break;
        if (evalEvery > 0 && trainer.iteration() % evalEvery == 0 && trainer.iteration() < iters)
            evaluate(trainer);
    }
}

struct UsageError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

} // namespace flowscope::cli
