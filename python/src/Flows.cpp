// flowscope.train and FlowModel: generative flows (engine/flows: OT-Flow with the RWPO layer), trained,
// sampled and saved as flowscope-cli train / sample / density do it.
#include "Common.h"
#include "Progress.h"

#include "engine/core/Text.h"
#include "engine/flows/FlowIo.h"
#include "engine/flows/ModelFile.h"
#include "engine/flows/Sampling.h"
#include "engine/flows/Trainer.h"

#include <chrono>

namespace flowscope::py {

namespace {

struct FlowModel {
    std::shared_ptr<const flows::FlowModel<float>> model;
    nlohmann::json record; // the training record saved beside the model (FlowIo.h)
};

flows::RwpoKernel kernelNamed(const std::string& name) {
    if (name == "corrected") return flows::RwpoKernel::Corrected;
    if (name == "as-printed") return flows::RwpoKernel::AsPrinted;
    if (name == "separable") return flows::RwpoKernel::Separable;
    throw InputError("kernel",
                     "expected \"corrected\", \"as-printed\" or \"separable\", got " + quoteForMessage(name));
}

bool exactNamed(const std::string& name, const char* field) {
    if (name == "exact" || name == "first-order") return name == "exact";
    throw InputError(field, "expected \"exact\" or \"first-order\", got " + quoteForMessage(name));
}

struct TrainOptions {
    long iters, evalEvery;
    std::optional<std::string> rwpoLogdet, driftLogdet;
    std::string kernel;
    bool includeSelf;
    std::uint64_t seed;
};

FlowModel train(const pb::handle& data, flows::TrainerConfig c, const TrainOptions& o,
                const pb::object& callback, const pb::object& progressArg) {
    if (pb::isinstance<pb::str>(data)) {
        c.dataset = data.cast<std::string>();
        if (!flows::isDatasetName(c.dataset)) {
            std::string names;
            for (const std::string& n : flows::datasetNames()) names += (names.empty() ? "" : ", ") + n;
            throw InputError("dataset", quoteForMessage(c.dataset) + " is not one of " + names);
        }
    } else {
        c.dataset.clear();
        c.points = toPoints(data, "points");
        if (c.points.rows() < 2) throw InputError("points", "training needs at least 2 points");
        if (c.points.cols() > 64) throw InputError("points", "at most 64 coordinates");
        c.flow.d = int(c.points.cols());
    }
    if (o.iters < 1) throw InputError("iters", "expected an integer >= 1");
    c.adam.decaySteps = o.iters;
    c.flow.seed = o.seed;
    c.dataSeed = o.seed + 1; // as flowscope-cli train --seed
    c.flow.rwpoOptions.kernel = kernelNamed(o.kernel);
    c.flow.rwpoOptions.leaveOneOut = !o.includeSelf;
    // The exact log-dets where this d has them, as flowscope-cli train defaults them.
    const bool vectorKernel = c.flow.rwpoOptions.kernel != flows::RwpoKernel::Separable;
    c.flow.rwpoOptions.exactLogDet =
        o.rwpoLogdet ? exactNamed(*o.rwpoLogdet, "rwpo_logdet") : c.flow.d == 2 || !vectorKernel;
    c.flow.exactDriftLogDet = o.driftLogdet ? exactNamed(*o.driftLogdet, "drift_logdet") : c.flow.d <= 2;

    std::unique_ptr<flows::FlowTrainer> trainer;
    trainer = std::make_unique<flows::FlowTrainer>(c); // validates: std::invalid_argument naming the field
    Progress progress(progressArg, "train", o.iters, "it");
    bool stop = false;
    Interruptible guard([&] {
        const flows::TrainRecord& r = trainer->history().back();
        if (progress) progress(double(r.iteration) / double(o.iters));
        if (callback.is_none()) return;
        pb::dict info;
        info["iteration"] = r.iteration, info["loss"] = r.terms.loss, info["nll"] = r.terms.nll;
        info["transport"] = r.terms.transport, info["lambda"] = r.lambda, info["beta"] = r.beta;
        info["learning_rate"] = r.learningRate, info["rejected"] = r.rejected;
        if (!trainer->evaluations().empty() && trainer->evaluations().back().iteration == r.iteration) {
            const flows::Evaluation& e = trainer->evaluations().back();
            info["heldout_nll"] = e.nll, info["mmd2"] = e.mmd2, info["kl"] = e.kl;
        }
        const pb::object answer = callback(info);
        stop = pb::isinstance<pb::bool_>(answer) && !answer.cast<bool>();
    });
    const auto start = std::chrono::steady_clock::now();
    guard.run([&] {
        for (long k = 0; k < o.iters && !stop; ++k) {
            const bool running = trainer->step();
            if (o.evalEvery > 0 && trainer->iteration() % o.evalEvery == 0 && trainer->iteration() < o.iters)
                trainer->evaluate();
            if (!guard.poll()) return; // Ctrl+C or the callback raised: no final evaluation
            if (!running) break;
        }
        trainer->evaluate();
    });
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return {std::make_shared<const flows::FlowModel<float>>(trainer->evaluatedModel()),
            flows::trainingRecord(trainer->config(), trainer->iteration(), trainer->stopped(),
                                  trainer->history(), trainer->evaluations(), trainer->events(), seconds)};
}

pb::array sample(const FlowModel& m, std::optional<int> n, const pb::object& base, std::uint64_t seed,
                 int batch, bool explicitSampler, const pb::object& progressArg) {
    const int d = m.model->config().d;
    if (batch < 2 || batch > 65536) throw InputError("batch", "expected an integer in [2, 65536]");
    ad::Matrix<float> Z;
    if (!base.is_none()) {
        if (n) throw InputError("base", "base replaces the seeded draws: give base or n, not both");
        Z = flows::toColumns(toPoints(base, "base", d));
    } else {
        if (!n || *n < 1) throw InputError("n", "give the number of samples n >= 1 (or base)");
        checkMemory("n", 20.0 * double(*n) * d, "the draws, the samples and the returned array");
        Z = flows::baseSamples(d, *n, seed);
    }
    Progress progress(progressArg, "sample", long(Z.cols()), "sample");
    double fraction = 0;
    Interruptible guard([&] {
        if (progress) progress(fraction);
    });
    ad::Matrix<float> X;
    guard.run([&] {
        X = flows::sampleFlow(*m.model, Z, batch, explicitSampler, nullptr, nullptr,
                              [&](double f) { return fraction = f, guard.poll(); });
    });
    return fromPoints(flows::toRows(X), true);
}

Vec logDensity(const FlowModel& m, const pb::handle& points, int references, std::uint64_t seed) {
    const ad::Matrix<float> X = flows::toColumns(toPoints(points, "X", m.model->config().d));
    Vec out(X.cols());
    Interruptible guard;
    guard.run([&] {
        const auto keys =
            flows::densityKeys(*m.model, references, seed, [&](double) { return guard.poll(); });
        // In chunks, as the density grid: a point's density depends on it and the keys only, and the
        // solver's working arrays stay a chunk's size however many points are asked for.
        constexpr Eigen::Index kChunk = 4096;
        for (Eigen::Index j = 0; j < X.cols(); j += kChunk) {
            const Eigen::Index count = std::min(kChunk, X.cols() - j);
            Eigen::Matrix<float, 1, Eigen::Dynamic> logRho;
            m.model->encode(X.middleCols(j, count), &logRho, nullptr, keys);
            out.segment(j, count) = logRho.transpose().cast<double>();
            if (!guard.poll()) return;
        }
    });
    return out;
}

} // namespace

void bindFlows(pb::module_& m) {
    pb::class_<FlowModel> model(
        m, "FlowModel",
        R"(A trained generative flow (Han, Osher, Li: OT-Flow with the RWPO sparse layer;
docs/math/flows.md): train() returns one, FlowModel.load() reads one that train(), flowscope-cli train or the
app saved. Its files are the CLI's: MODEL.safetensors (float32 tensors, the architecture in its metadata)
and MODEL.json (the training record).)");
    defModelFiles(
        model, flows::loadFlow, flows::saveFlow,
        "Writes MODEL.safetensors and MODEL.json beside it, atomically, as flowscope-cli train does.",
        "The training record (data, seeds, optimizer, evaluations, curve) as a dict.");
    model
        .def("sample", &sample, pb::arg("n") = pb::none(), pb::kw_only(), pb::arg("base") = pb::none(),
             pb::arg("seed") = 0, pb::arg("batch") = 2000, pb::arg("explicit") = false,
             pb::arg("progress") = pb::none(),
             R"(sample(n=None, *, base=None, seed=0, batch=2000, explicit=False, progress=None) -> ndarray

Samples x = F⁻¹(z) from base normals z ~ N(0, I): the exact inverse of the training map (each implicit
sub-step y = x + h ∇φ(y, t_k), z = y - ½ G(z) solved by fixed-point iteration), in double on the float32
parameters; with the RWPO layer sample j inverts reference draw j mod R's map. ``explicit``: eq. (22) as
printed instead. As ``flowscope-cli sample``: the same n and seed (the column-major fill of
N(0, 1) draws from the seed's stream), or the same ``base`` ((n, d) rows), give the same (n, d) float32
samples.)")
        .def("log_density", &logDensity, pb::arg("X"), pb::kw_only(), pb::arg("references") = 2000,
             pb::arg("seed") = 0,
             R"(log_density(X, *, references=2000, seed=0) -> ndarray

log ρ(x) of the model at each row of X ((n, d) array) by the change of variables along the training map,
log ρ(x) = log N(F(x); 0, I) + Σ_layers log |det J|, (n,) float64. Each point is pushed backward beside
the model's reference draws (the mixture (1/R) Σ_r ρ_r over them); an RWPO model without a reference uses
``references`` of its own samples (seeded) as keys, as ``flowscope-cli density`` does.)")
        .def_property_readonly("d", [](const FlowModel& m) { return m.model->config().d; })
        .def_property_readonly(
            "lambda_", [](const FlowModel& m) { return m.model->params().lambda(); },
            "λ, the L1 prior's weight.")
        .def_property_readonly(
            "beta", [](const FlowModel& m) { return m.model->params().beta(); },
            "β, the inverse temperature.")
        .def("__repr__", [](const FlowModel& m) {
            const auto& c = m.model->config();
            return "<flowscope.FlowModel d=" + std::to_string(c.d) + ", " + std::to_string(c.layers) +
                   " layers, " + (c.rwpo ? "RWPO" : "no RWPO") + ">";
        });

    const flows::TrainerConfig D;
    m.def(
        "train",
        [](const pb::handle& data, long iters, bool rwpo, const std::string& kernel, bool includeSelf,
           std::optional<std::string> rwpoLogdet, std::optional<std::string> driftLogdet, int layers,
           int width, double lambda0, double beta0, bool trainLambda, bool trainBeta, double transportWeight,
           std::optional<double> hjbWeight, int batch, double lr, double lrFinal, long warmup,
           int resampleEvery, int referenceDraws, int referenceSize, double clipMedian, long averageIters,
           std::uint64_t seed, double jitter, long evalEvery, const pb::object& callback,
           const pb::object& progress) {
            flows::TrainerConfig c;
            c.flow.rwpo = rwpo, c.flow.layers = layers, c.flow.width = width, c.flow.lambda0 = lambda0;
            c.flow.beta0 = beta0, c.flow.trainLambda = trainLambda, c.flow.trainBeta = trainBeta;
            c.flow.transportWeight = transportWeight, c.flow.hjbWeight = hjbWeight.value_or(-1);
            c.batch = batch, c.adam.lr = lr, c.adam.lrFinal = lrFinal, c.adam.warmupSteps = warmup;
            c.resampleEvery = resampleEvery, c.referenceDraws = referenceDraws,
            c.referenceSize = referenceSize;
            c.adam.clipToMedian = clipMedian, c.averageIterations = averageIters, c.pointJitter = jitter;
            return train(data, c, {iters, evalEvery, rwpoLogdet, driftLogdet, kernel, includeSelf, seed},
                         callback, progress);
        },
        pb::arg("data"), pb::kw_only(), pb::arg("iters") = D.adam.decaySteps, pb::arg("rwpo") = D.flow.rwpo,
        pb::arg("kernel") = "corrected", pb::arg("include_self") = false, pb::arg("rwpo_logdet") = pb::none(),
        pb::arg("drift_logdet") = pb::none(), pb::arg("layers") = D.flow.layers,
        pb::arg("width") = D.flow.width, pb::arg("lambda0") = D.flow.lambda0, pb::arg("beta0") = D.flow.beta0,
        pb::arg("train_lambda") = D.flow.trainLambda, pb::arg("train_beta") = D.flow.trainBeta,
        pb::arg("transport_weight") = D.flow.transportWeight, pb::arg("hjb_weight") = pb::none(),
        pb::arg("batch") = D.batch, pb::arg("lr") = D.adam.lr, pb::arg("lr_final") = D.adam.lrFinal,
        pb::arg("warmup") = D.adam.warmupSteps, pb::arg("resample_every") = D.resampleEvery,
        pb::arg("reference_draws") = D.referenceDraws, pb::arg("reference_size") = D.referenceSize,
        pb::arg("clip_median") = D.adam.clipToMedian, pb::arg("average_iters") = D.averageIterations,
        pb::arg("seed") = 0, pb::arg("jitter") = 0.0, pb::arg("eval_every") = 0,
        pb::arg("callback") = pb::none(), pb::arg("progress") = pb::none(),
        R"(train(data, *, iters=3000, rwpo=True, ..., seed=0, callback=None, progress=None) -> FlowModel

Fits a generative flow to `data`: a toy dataset's name (8gaussians, checkerboard, moons, circles, pinwheel,
swissroll, 2spirals, rings) or your points, an (n, d) array. The model is OT-Flow's potential φ (M layers
of the drift x → x - h ∇φ(x, t)) with, unless rwpo=False, the RWPO sub-step x → x + ½ (S_{λh}(x) - m(x)) in
each layer; training minimises the loss (16) of Han, Osher, Li,

    E[ -log ρ_T(x) ] + transport_weight · (h/2) Σ_k E|∇φ|² + c · HJB residual

by Adam (lr decaying from `lr` to `lr_final` over `iters` after `warmup` steps, the gradient capped at
clip_median × its running median; non-finite steps are rejected and the rate halved). The keyword options
are flowscope-cli train's (docs/python.md lists them): the same options and seed train the same model, bit
for bit, on one machine.

callback  called after every iteration with a dict (iteration, loss, nll, transport, lambda, beta,
          learning_rate, rejected; heldout_nll, mmd2, kl after an evaluation, every eval_every iterations);
          returning False stops training
progress  None: a tqdm bar once the call has run 2 s (where tqdm is installed); False: nothing; a
          callable taking the fraction done; True or "auto": a bar from the start (without tqdm: True
          prints a line on stderr every tenth, "auto" nothing)

The GIL is released between callbacks; Ctrl+C stops training and raises KeyboardInterrupt.)");
    m.def("datasets", &flows::datasetNames, "The toy datasets train() knows by name.");
    m.def(
        "dataset",
        [](const std::string& name, int n, std::uint64_t seed) {
            if (!flows::isDatasetName(name))
                throw InputError("name", quoteForMessage(name) + " is not a dataset (flowscope.datasets())");
            if (n < 1) throw InputError("n", "expected an integer >= 1");
            return fromPoints(flows::sampleDataset(name, n, seed), false);
        },
        pb::arg("name"), pb::arg("n"), pb::arg("seed") = 0,
        "dataset(name, n, seed=0) -> ndarray\n\nn points (an (n, 2) float64 array) of a toy dataset, the law "
        "train(name) "
        "fits; determined by (name, n, seed).");
}

} // namespace flowscope::py
