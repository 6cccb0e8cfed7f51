// flowscope.train_transformer and TransformerModel: the continuous-time Transformers of engine/ottransformer
// on tasks A and B, configured, trained, evaluated and saved as flowscope-cli train-transformer and
// eval-transformer do it (app/cli/TrainTransformer.cpp).
#include "Common.h"
#include "Progress.h"

#include "engine/core/Text.h"
#include "engine/flows/FlowIo.h"
#include "engine/flows/ModelFile.h"
#include "engine/ottransformer/TransformerIo.h"

#include <chrono>
#include <cmath>
#include <limits>

namespace flowscope::py {

// --- Argument checks ---

namespace {

struct TransformerModel {
    std::shared_ptr<const ot::TransformerModel> model;
    nlohmann::json record; // the training record saved beside the model (TransformerIo.h)
    ot::Task task() const { return model->config().head == ot::Head::Mean ? ot::Task::A : ot::Task::B; }
};

// An enum option: the engine's parser, its message under the Python argument's name.
template <class E, class F> E named(const std::string& text, const char* field, F parse) {
    try {
        return parse(text);
    } catch (const std::invalid_argument& e) {
        throw InputError(field, e.what());
    }
}

std::string number(double v) {
    return pb::repr(pb::float_(v)).cast<std::string>();
}

template <class T> T inRange(T value, const char* field, T lo, T hi) {
    if (value < lo || value > hi)
        throw InputError(field, "expected an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                                    "], got " + std::to_string(value));
    return value;
}

double positive(double value, const char* field, bool allowZero = false) {
    if (!std::isfinite(value) || value < 0 || (!allowZero && value == 0))
        throw InputError(field, std::string("expected a finite number ") + (allowZero ? ">= 0" : "> 0") +
                                    ", got " + number(value));
    return value;
}

// --- Options and training ---

// The options of train_transformer, flowscope-cli train-transformer's with `_` for `-`; None: the task's
// default, as the CLI's absent option.
struct Options {
    std::string task, arch, convention, integrator;
    std::optional<int> blocks, steps, width, mlp, batch;
    double horizon, lambdaOt;
    bool increment, layerNorm, padCopy, routingInit;
    std::optional<double> lr, lrFinal;
    int evalSets;
    std::optional<long> averageIters, iters;
    long seed, evalEvery;
    std::optional<std::vector<double>> dropRates;
};

// As trainTransformer in app/cli/TrainTransformer.cpp, option by option.
ot::OtTrainerConfig configure(const Options& o, long& iters, std::vector<double>& dropRates) {
    if (o.task != "A" && o.task != "B" && o.task != "a" && o.task != "b")
        throw InputError("task", "expected \"A\" or \"B\", got " + quoteForMessage(o.task));
    const ot::Task task = ot::taskFromString(o.task);
    ot::OtTrainerConfig c = ot::defaultTrainerConfig(task);
    c.model.architecture = named<ot::Architecture>(o.arch, "arch", ot::architectureFromString);
    if (task == ot::Task::B && c.model.architecture == ot::Architecture::Discrete)
        c.model = ot::taskBBaseline();
    c.model.blocks = inRange(o.blocks.value_or(c.model.blocks), "blocks", 1, 64);
    c.model.steps = inRange(o.steps.value_or(c.model.steps), "steps", 1, 1000);
    c.model.horizon = positive(o.horizon, "horizon");
    c.model.lambdaOt = positive(o.lambdaOt, "lambda_ot", true);
    c.model.convention = named<ot::KineticConvention>(o.convention, "convention", ot::conventionFromString);
    c.model.integrator = named<ot::Integrator>(o.integrator, "integrator", ot::integratorFromString);
    c.model.incrementVelocity = o.increment;
    c.model.layerNorm = o.layerNorm;
    if (task == ot::Task::B) {
        if (o.padCopy) throw InputError("pad_copy", "task A only");
        if (o.routingInit) throw InputError("routing_init", "task A only");
        c.model.width = inRange(o.width.value_or(16), "width", 1, 1024);
        c.model.headDim = c.model.width;
        c.model.mlpHidden = 2 * c.model.width;
    } else {
        // A width above 2 pads the tokens to [x; 0] (pad_copy: [x; x; 0]); the head dimension follows it.
        const int width = inRange(o.width.value_or(c.model.width), "width", 2, 1024);
        if (width != c.model.width) {
            c.model.width = c.model.headDim = width;
            c.model.padEmbed = width > c.model.inputDim;
        }
        c.model.padCopy = o.padCopy;
        c.model.routingInit = o.routingInit;
    }
    c.model.mlpHidden = inRange(o.mlp.value_or(c.model.mlpHidden), "mlp", 0, 4096);
    c.batch = inRange(o.batch.value_or(c.batch), "batch", 1, 100000);
    c.adam.lr = positive(o.lr.value_or(c.adam.lr), "lr");
    c.adam.lrFinal = positive(o.lrFinal.value_or(c.adam.lrFinal), "lr_final", true);
    c.evalSets = inRange(o.evalSets, "eval_sets", 1, 1000000);
    c.averageIterations =
        inRange(o.averageIters.value_or(c.averageIterations), "average_iters", 0L, 100000000L);
    const long seed = inRange(o.seed, "seed", 0L, 1L << 62);
    c.model.seed = std::uint64_t(seed);
    c.dataSeed = std::uint64_t(seed) + 1;
    iters = inRange(o.iters.value_or(task == ot::Task::A ? 2000L : 1000L), "iters", 1L, 100000000L);
    if (c.adam.lrFinal > 0) c.adam.decaySteps = iters; // exponential decay from lr over the whole run
    inRange(o.evalEvery, "eval_every", 0L, 100000000L);
    if (task == ot::Task::B)
        dropRates = o.dropRates.value_or(std::vector<double>{0, 0.01, 0.05, 0.1, 0.2, 0.5});
    else if (o.dropRates && !o.dropRates->empty())
        throw InputError("drop_rates", "task B only");
    for (double r : dropRates)
        if (!(r >= 0 && r < 1))
            throw InputError("drop_rates", "each rate must be in [0, 1), got " + number(r));
    ot::validate(c); // std::invalid_argument naming the engine's field (ValueError)
    return c;
}

pb::object evaluationDict(const ot::OtEvaluation& e) {
    return jsonToPython(ot::toJson(e).dump());
}

TransformerModel trainTransformer(const Options& o, const pb::object& callback,
                                  const pb::object& progressArg) {
    long iters = 0;
    std::vector<double> rates;
    const ot::OtTrainerConfig c = configure(o, iters, rates);
    ot::OtTrainer trainer(c);
    Progress progress(progressArg, "train_transformer", iters, "it");
    bool stop = false;
    Interruptible guard([&] {
        const ot::OtRecord& r = trainer.history().back();
        if (progress) progress(double(r.iteration) / double(iters));
        if (callback.is_none()) return;
        pb::dict info;
        info["iteration"] = r.iteration, info["loss"] = r.terms.loss, info["task"] = r.terms.task;
        info["transport"] = r.terms.transport, info["learning_rate"] = r.learningRate;
        info["gradient_norm"] = r.gradientNorm, info["rejected"] = r.rejected;
        if (c.task == ot::Task::B) info["accuracy"] = r.terms.accuracy;
        if (!trainer.evaluations().empty() && trainer.evaluations().back().iteration == r.iteration)
            info["evaluation"] = evaluationDict(trainer.evaluations().back());
        const pb::object answer = callback(info);
        stop = pb::isinstance<pb::bool_>(answer) && !answer.cast<bool>();
    });
    const auto start = std::chrono::steady_clock::now();
    double seconds = 0;
    std::vector<double> accuracy;
    guard.run([&] {
        // The loop of flowscope-cli's trainLoop (app/cli/Commands.h): an evaluation every eval_every
        // iterations but the last, then the final one.
        for (long k = 0; k < iters && !stop; ++k) {
            const bool running = trainer.step();
            if (running && o.evalEvery > 0 && trainer.iteration() % o.evalEvery == 0 &&
                trainer.iteration() < iters)
                trainer.evaluate();
            if (!guard.poll()) return; // Ctrl+C or the callback raised: no final evaluation
            if (!running) break;
        }
        seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        trainer.evaluate();
        if (!rates.empty()) accuracy = trainer.accuracyAtDropRates(rates);
    });
    nlohmann::json extra = nlohmann::json::object();
    if (!rates.empty()) extra["drop_rates"] = {{"rates", rates}, {"accuracy", accuracy}};
    return {std::make_shared<const ot::TransformerModel>(trainer.evaluatedModel()),
            ot::trainingRecord(c, trainer.iteration(), trainer.stopped(), trainer.history(),
                               trainer.evaluations(), trainer.events(), seconds, extra)};
}

// --- Evaluation and prediction ---

// As flowscope-cli eval-transformer: the task's held-out sets drawn from `seed`.
pb::object evaluate(const TransformerModel& m, int sets, long seed, const std::vector<double>& rates) {
    inRange(sets, "sets", 1, 1000000);
    inRange(seed, "seed", 0L, 1L << 62);
    const ot::Task task = m.task();
    if (!rates.empty() && task == ot::Task::A) throw InputError("drop_rates", "task B models only");
    for (double r : rates)
        if (!(r >= 0 && r < 1))
            throw InputError("drop_rates", "each rate must be in [0, 1), got " + number(r));
    ot::OtTrainerConfig c = ot::defaultTrainerConfig(task);
    c.model = m.model->config();
    c.evalSets = sets;
    c.dataSeed = std::uint64_t(seed);
    nlohmann::json result;
    Interruptible guard;
    guard.run([&] {
        ot::OtTrainer evaluator(c);
        evaluator.model().params() = m.model->params();
        const ot::OtEvaluation e = evaluator.evaluate();
        if (!std::isfinite(e.terms.loss) || !std::isfinite(e.terms.task) || !std::isfinite(e.terms.transport))
            throw std::runtime_error("the model's outputs are not finite (NaN or overflow) on the " +
                                     std::to_string(sets) + " held-out sets");
        result = {
            {"task", ot::toString(task)}, {"sets", sets}, {"seed", seed}, {"evaluation", ot::toJson(e)}};
        if (!rates.empty())
            result["drop_rates"] = {{"rates", rates}, {"accuracy", evaluator.accuracyAtDropRates(rates)}};
    });
    return jsonToPython(result.dump());
}

// The sets of an (n, input_dim) array (one set) or a (B, n, input_dim) array, as the columns of one matrix.
// The shape is checked, and the memory of the copy, before anything is converted.
ot::Matrix toSets(const pb::handle& obj, int inputDim, int& sets, int& setSize, bool& batched) {
    if (const std::vector<long long> shape = shapeOf(obj); shape.size() == 2 || shape.size() == 3) {
        double elements = 1;
        for (long long k : shape) elements *= double(k);
        checkMemory("X", 16.0 * elements, "the token sets converted to float64 and copied");
    }
    pb::array_t<double, pb::array::forcecast> a;
    try {
        a = pb::array_t<double, pb::array::forcecast>::ensure(obj);
    } catch (const pb::error_already_set&) {
    }
    if (!a) {
        PyErr_Clear();
        throw InputError("X", "expected an array of numbers");
    }
    if (a.ndim() != 2 && a.ndim() != 3)
        throw InputError("X", "expected an (n, " + std::to_string(inputDim) + ") set or a (B, n, " +
                                  std::to_string(inputDim) + ") batch of sets, got " +
                                  std::to_string(a.ndim()) + " dimensions");
    const auto u = a.unchecked<>();
    batched = a.ndim() == 3;
    if (a.shape(0) > std::numeric_limits<int>::max() ||
        a.shape(a.ndim() - 2) > std::numeric_limits<int>::max())
        throw InputError("X", "expected fewer than 2^31 sets and tokens per set");
    sets = batched ? int(a.shape(0)) : 1;
    setSize = int(a.shape(a.ndim() - 2));
    if (a.shape(a.ndim() - 1) != inputDim)
        throw InputError("X", "expected tokens of dimension " + std::to_string(inputDim) + ", got " +
                                  std::to_string(a.shape(a.ndim() - 1)));
    if (sets < 1 || setSize < 1) throw InputError("X", "expected at least one set of at least one token");
    ot::Matrix tokens(inputDim, pb::ssize_t(sets) * setSize);
    for (int b = 0; b < sets; ++b)
        for (int j = 0; j < setSize; ++j)
            for (int i = 0; i < inputDim; ++i) {
                const double v = a.ndim() == 3 ? u(b, j, i) : u(j, i);
                if (!std::isfinite(v))
                    throw InputError("X", "set " + std::to_string(b) + ", token " + std::to_string(j) +
                                              " is not finite: the tokens must be finite");
                tokens(i, Eigen::Index(b) * setSize + j) = v;
            }
    return tokens;
}

// The forward pass keeps every intermediate of every step on its tape: the attention's n x n scores per head
// and the O(n (width + mlp)) token values, per block and step (tapeBytesOfOneSet, an upper estimate: 0.95 MB
// a set of 64 tokens for task A's default model, which measures 0.65 MB). predict() runs whole sets in chunks
// of at most kChunkTokens tokens, so that the tape stays that of one chunk however many sets come (2000 sets
// of 64: a peak of 1468 MB in one piece, under 250 MB in chunks), and refuses a set whose tape cannot fit.
constexpr Eigen::Index kChunkTokens = 4096;

double tapeBytesOfOneSet(const ot::TransformerConfig& c, double n) {
    const double perStep =
        double(c.blocks) * (4.0 * c.heads * n * n + n * (12.0 * c.width + 6.0 * c.mlpHidden));
    return 8.0 * perStep * c.steps * (c.integrator == ot::Integrator::Euler ? 1 : 4);
}

pb::object predict(const TransformerModel& m, const pb::handle& X, bool withStates) {
    const ot::TransformerConfig& cfg = m.model->config();
    int sets = 0, setSize = 0;
    bool batched = false;
    const ot::Matrix tokens = toSets(X, cfg.inputDim, sets, setSize, batched);
    const pb::ssize_t B = sets, n = setSize, d = cfg.width;
    const Eigen::Index setsPerChunk = std::clamp<Eigen::Index>(kChunkTokens / setSize, 1, B);
    const double S = withStates ? double(std::max(cfg.steps, cfg.blocks) + 1) : 0.0; // states kept, at most
    checkMemory("X",
                tapeBytesOfOneSet(cfg, double(setSize)) * double(setsPerChunk) +
                    8.0 * double(B) * double(n) * double(d) * S,
                "the forward pass of " + std::to_string(setsPerChunk) + " set" +
                    (setsPerChunk > 1 ? "s" : "") + " of " + std::to_string(setSize) + " tokens" +
                    (withStates ? " and the states" : ""));
    pb::array_t<double> y;
    pb::array_t<double> path;
    double* pathOut = nullptr;
    pb::ssize_t C = 0;
    Interruptible guard;
    for (Eigen::Index b0 = 0; b0 < B; b0 += setsPerChunk) {
        const Eigen::Index count = std::min<Eigen::Index>(setsPerChunk, B - b0);
        ot::Matrix output;
        std::vector<ot::Matrix> states;
        guard.run([&] {
            output = m.model->output(tokens.middleCols(b0 * n, count * n), setSize,
                                     withStates ? &states : nullptr);
        });
        if (b0 == 0) { // the sizes are known after the first chunk
            C = output.rows();
            y = pb::array_t<double>(batched ? std::vector<pb::ssize_t>{B, C} : std::vector<pb::ssize_t>{C});
            if (withStates) {
                const pb::ssize_t steps = pb::ssize_t(states.size());
                path = pb::array_t<double>(batched ? std::vector<pb::ssize_t>{steps, B, n, d}
                                                   : std::vector<pb::ssize_t>{steps, n, d});
                pathOut = path.mutable_data();
            }
        }
        for (Eigen::Index b = 0; b < count; ++b)
            for (pb::ssize_t k = 0; k < C; ++k) y.mutable_data()[(b0 + b) * C + k] = output(k, b);
        for (std::size_t s = 0; s < states.size(); ++s) {
            double* out = pathOut + (pb::ssize_t(s) * B + b0) * n * d;
            for (pb::ssize_t col = 0; col < count * n; ++col)
                for (pb::ssize_t i = 0; i < d; ++i) *out++ = states[s](i, col);
        }
        if (PyErr_CheckSignals() != 0) throw pb::error_already_set(); // Ctrl+C between chunks
    }
    if (!withStates) return y;
    return pb::make_tuple(y, path);
}

pb::dict parameters(const TransformerModel& m) {
    pb::dict out;
    m.model->params().forEach([&](const ot::Matrix& value, const std::string& name) {
        pb::array_t<double> a({pb::ssize_t(value.rows()), pb::ssize_t(value.cols())});
        for (Eigen::Index r = 0; r < value.rows(); ++r)
            for (Eigen::Index c = 0; c < value.cols(); ++c) a.mutable_at(r, c) = value(r, c);
        out[pb::str(name)] = a;
    });
    return out;
}

} // namespace

// --- The bindings ---

void bindTransformers(pb::module_& m) {
    pb::class_<TransformerModel> model(
        m, "TransformerModel",
        R"(A trained continuous-time Transformer (OT-Transformer and its baselines;
docs/math/transformers.md): train_transformer() returns one, TransformerModel.load() reads one that it,
flowscope-cli train-transformer or the app saved. Its files are the CLI's: MODEL.safetensors (float64
tensors "embed.E", "block0.Q", ..., "head.H", the architecture in its metadata) and MODEL.json (the
training record).)");
    defModelFiles(model, ot::loadTransformer, ot::saveTransformer,
                  "Writes MODEL.safetensors and MODEL.json beside it, atomically, as flowscope-cli "
                  "train-transformer does.",
                  "The training record (task, optimizer, seeds, evaluations, curve, drop rates) as a dict.");
    model
        .def("evaluate", &evaluate, pb::kw_only(), pb::arg("sets") = 1000, pb::arg("seed") = 1,
             pb::arg("drop_rates") = std::vector<double>{},
             R"(evaluate(*, sets=1000, seed=1, drop_rates=()) -> dict

The model on `sets` held-out sets of its task drawn from `seed`, as ``flowscope-cli eval-transformer``
(its --out JSON without "model"): {"task", "sets", "seed", "evaluation": {loss, task_loss, transport,
accuracy, straightness, speed_cv, closed_form_error, ..., lipschitz_ratio, lipschitz_bound, threshold}}
with loss = G + λ_OT · transport, G the task loss (A: mean ½‖ỹ - y‖²; B: cross-entropy). Task B models
also take point-dropout rates: "drop_rates": {"rates", "accuracy"}. NaN values are None.)")
        .def("predict", &predict, pb::arg("X"), pb::kw_only(), pb::arg("states") = false,
             R"(predict(X, *, states=False) -> ndarray | (ndarray, ndarray)

The model's output on your token sets: X is one set (n, input_dim) or a batch (B, n, input_dim). The
tokens are embedded, flowed through dX/dt = f(X) on [0, T] (M steps of the integrator; f = the block stack,
u = x + Σ_h W_h V_h X softmax((K_h X)ᵀ Q_h x / √k), x' = u + g(u)) and read by the head: task A the mean
token ỹ = (1/n) Σ_j x_j(T), task B the logits H (1/n) Σ_j x_j(T) + h. Returns (output_dim,) or
(B, output_dim) float64; with states=True also the states X_0 .. X_end, (S, n, width) or (S, B, n, width).)")
        .def_property_readonly(
            "task", [](const TransformerModel& m) { return std::string(ot::toString(m.task())); },
            "\"A\" (mean head) or \"B\" (classification).")
        .def_property_readonly(
            "parameters", parameters,
            "The parameters as a dict of float64 arrays (copies), keyed by their safetensors names.")
        .def("__repr__", [](const TransformerModel& m) {
            const auto& c = m.model->config();
            return std::string("<flowscope.TransformerModel task ") + ot::toString(m.task()) + ", " +
                   ot::toString(c.architecture) + ", width " + std::to_string(c.width) + ", " +
                   std::to_string(m.model->params().count()) + " parameters>";
        });

    m.def(
        "train_transformer",
        [](const std::string& task, const std::string& arch, std::optional<int> blocks,
           std::optional<int> steps, double horizon, double lambdaOt, const std::string& convention,
           const std::string& integrator, bool increment, bool layerNorm, std::optional<int> width,
           bool padCopy, bool routingInit, std::optional<int> mlp, std::optional<int> batch,
           std::optional<double> lr, std::optional<double> lrFinal, int evalSets,
           std::optional<long> averageIters, std::optional<long> iters, long seed, long evalEvery,
           std::optional<std::vector<double>> dropRates, const pb::object& callback,
           const pb::object& progress) {
            const Options o{.task = task,
                            .arch = arch,
                            .convention = convention,
                            .integrator = integrator,
                            .blocks = blocks,
                            .steps = steps,
                            .width = width,
                            .mlp = mlp,
                            .batch = batch,
                            .horizon = horizon,
                            .lambdaOt = lambdaOt,
                            .increment = increment,
                            .layerNorm = layerNorm,
                            .padCopy = padCopy,
                            .routingInit = routingInit,
                            .lr = lr,
                            .lrFinal = lrFinal,
                            .evalSets = evalSets,
                            .averageIters = averageIters,
                            .iters = iters,
                            .seed = seed,
                            .evalEvery = evalEvery,
                            .dropRates = dropRates};
            return trainTransformer(o, callback, progress);
        },
        pb::arg("task") = "A", pb::kw_only(), pb::arg("arch") = "ot", pb::arg("blocks") = pb::none(),
        pb::arg("steps") = pb::none(), pb::arg("horizon") = 1.0, pb::arg("lambda_ot") = 0.0,
        pb::arg("convention") = "element-mean", pb::arg("integrator") = "euler", pb::arg("increment") = false,
        pb::arg("layer_norm") = false, pb::arg("width") = pb::none(), pb::arg("pad_copy") = false,
        pb::arg("routing_init") = false, pb::arg("mlp") = pb::none(), pb::arg("batch") = pb::none(),
        pb::arg("lr") = pb::none(), pb::arg("lr_final") = pb::none(), pb::arg("eval_sets") = 1000,
        pb::arg("average_iters") = pb::none(), pb::arg("iters") = pb::none(), pb::arg("seed") = 0,
        pb::arg("eval_every") = 0, pb::arg("drop_rates") = pb::none(), pb::arg("callback") = pb::none(),
        pb::arg("progress") = pb::none(),
        R"(train_transformer(task="A", *, arch="ot", ..., iters=None, seed=0, callback=None, progress=None) -> TransformerModel

Trains a continuous-time Transformer (Kan et al.'s OT-Transformer, docs/math/transformers.md) on task A
(sets of 6 tokens in R², target g(x̄₀) = (‖x̄₀‖² - 1, sin 3x̄₀₁), the mean head; a closed-form optimum) or
task B (2-D point clouds of four shapes, classified). The tokens flow by dX/dt = f(X) on [0, T] with f the
stack of `blocks` Transformer blocks, and Adam (fresh batches every iteration) minimises objective (8),

    G(ỹ, y) + λ_OT · transport,    transport = Σ_m Δt ‖f(X_m)‖²_F / (B n d)   (convention "element-mean")
                                             or ½ Σ_m Δt ‖f(X_m)‖²_F / B     (convention "paper").

The keyword options are flowscope-cli train-transformer's with `_` for `-`; None is the CLI's default for
the task (A: blocks 1, steps 10, width 2, mlp 16, batch 64, lr 1e-2, iters 2000; B: steps 8, width 16,
mlp 32, batch 32, lr 1e-3, iters 1000, drop_rates (0, 0.01, 0.05, 0.1, 0.2, 0.5)). arch: "ot", "node" or
"discrete"; integrator: "euler" or "rk4"; lr_final > 0 decays the rate exponentially over the run;
average_iters: the iterate average's window (0: off). The same options and seed train the same model as
the CLI, bit for bit on one machine (the batch split follows the thread count).

callback  called after every iteration with a dict (iteration, loss, task, transport, learning_rate,
          gradient_norm, rejected; accuracy for task B; "evaluation" after one, every eval_every
          iterations); returning False stops training
progress  None: a tqdm bar once the call has run 2 s; False: nothing; a callable taking the fraction
          done; True or "auto": a tqdm bar from the start (docs/python.md)

The model's record holds the evaluations (the last: record["metrics"]) and the curve. The GIL is released
between callbacks; Ctrl+C stops training and raises KeyboardInterrupt.)");
}

} // namespace flowscope::py
