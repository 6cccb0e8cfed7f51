// flowscope-cli train / sample / density / bench train: generative flows (engine/flows) from the command
// line.
#include "Commands.h"

#include "engine/core/Text.h"
#include "engine/flows/FlowIo.h"
#include "engine/flows/Sampling.h"
#include "engine/flows/Trainer.h"
#include "engine/inverse/PosteriorIo.h"
#include "engine/io/Npy.h"
#include "engine/io/OutputSet.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>

namespace flowscope::cli {

namespace {

flows::RwpoKernel parseKernel(const std::string& text) {
    if (text == "corrected") return flows::RwpoKernel::Corrected;
    if (text == "as-printed") return flows::RwpoKernel::AsPrinted;
    if (text == "separable") return flows::RwpoKernel::Separable;
    throw UsageError("--kernel: expected corrected, as-printed or separable, got " + quoteForMessage(text));
}

} // namespace

flows::TrainerConfig parseTrainerConfig(ArgParser& p) {
    flows::TrainerConfig c;
    const std::string data = p.option("--data");
    c.dataset = p.option("--dataset", data.empty() ? "8gaussians" : "");
    if (!data.empty() && !c.dataset.empty()) throw UsageError("give --dataset or --data, not both");
    if (!c.dataset.empty() && !flows::isDatasetName(c.dataset)) {
        std::string names;
        for (const std::string& n : flows::datasetNames()) names += (names.empty() ? "" : ", ") + n;
        throw UsageError("--dataset: " + quoteForMessage(c.dataset) + " is not one of " + names);
    }
    if (!data.empty()) {
        try {
            c.points = flows::loadPoints(data);
        } catch (const std::exception& e) {
            throw UsageError(std::string("--data: ") + e.what());
        }
        // What the trainer would refuse (flows::validate) is the data file's fault: say so here.
        if (c.points.rows() < 2)
            throw UsageError("--data: " + quoteForMessage(data, kMaxQuotedPath) + " holds " +
                             std::to_string(c.points.rows()) + " point; training needs at least 2");
        if (flows::allOnePoint(c.points))
            throw UsageError("--data: " + quoteForMessage(data, kMaxQuotedPath) + " holds " +
                             std::to_string(c.points.rows()) +
                             " copies of one point; a density needs points that differ");
        if (c.points.cols() > 64)
            throw UsageError("--data: " + quoteForMessage(data, kMaxQuotedPath) + " has points of " +
                             std::to_string(c.points.cols()) + " coordinates; at most 64");
        c.flow.d = int(c.points.cols());
        c.pointJitter = parsePositive(p.option("--jitter", "0"), "--jitter", true);
    }
    c.flow.rwpo = !p.flag("--no-rwpo");
    c.flow.rwpoOptions.kernel = parseKernel(p.option("--kernel", "corrected"));
    // Leave-one-out is the default (FlowConfig); --include-self is the paper's softmax over l = j too.
    // --leave-one-out, its earlier switch, is still accepted.
    const bool includeSelf = p.flag("--include-self"), leaveOneOut = p.flag("--leave-one-out");
    if (includeSelf && leaveOneOut)
        throw UsageError("--include-self and --leave-one-out contradict each other");
    c.flow.rwpoOptions.leaveOneOut = !includeSelf;
    // Exact needs d = 2 for a vector kernel (d <= 2 for the drift); points of other dimensions default to
    // first order. --exact-logdet is the earlier spelling of --rwpo-logdet exact.
    const bool vectorKernel = c.flow.rwpoOptions.kernel != flows::RwpoKernel::Separable;
    const std::string rwpoLogDet =
        p.flag("--exact-logdet")
            ? std::string("exact")
            : p.option("--rwpo-logdet",
                       c.flow.rwpoOptions.exactLogDet && (c.flow.d == 2 || c.flow.d == 3 || !vectorKernel)
                           ? "exact"
                           : "first-order");
    if (rwpoLogDet != "exact" && rwpoLogDet != "first-order")
        throw UsageError("--rwpo-logdet: " + quoteForMessage(rwpoLogDet) + " is not exact or first-order");
    c.flow.rwpoOptions.exactLogDet = rwpoLogDet == "exact";
    if (c.flow.rwpoOptions.exactLogDet && vectorKernel && c.flow.d != 2 && c.flow.d != 3)
        throw UsageError("--rwpo-logdet: exact needs points of dimension 2 or 3 (or --kernel separable)");
    const std::string driftLogDet =
        p.option("--drift-logdet", c.flow.exactDriftLogDet && c.flow.d <= 3 ? "exact" : "first-order");
    if (driftLogDet != "exact" && driftLogDet != "first-order")
        throw UsageError("--drift-logdet: " + quoteForMessage(driftLogDet) + " is not exact or first-order");
    c.flow.exactDriftLogDet = driftLogDet == "exact";
    if (c.flow.exactDriftLogDet && c.flow.d > 3)
        throw UsageError("--drift-logdet: exact needs points of dimension <= 3");
    c.flow.layers = int(parseLong(p.option("--layers", std::to_string(c.flow.layers)), "--layers", 1, 256));
    c.flow.width = int(parseLong(p.option("--width", std::to_string(c.flow.width)), "--width", 1, 1024));
    c.flow.lambda0 = parsePositive(p.option("--lambda0", std::to_string(c.flow.lambda0)), "--lambda0");
    c.flow.beta0 = parsePositive(p.option("--beta0", std::to_string(c.flow.beta0)), "--beta0");
    const bool freezeLambda = p.flag("--freeze-lambda"), trainLambda = p.flag("--train-lambda");
    if (freezeLambda && trainLambda)
        throw UsageError("--freeze-lambda and --train-lambda contradict each other");
    c.flow.trainLambda = trainLambda; // frozen by default (FlowConfig); --freeze-lambda says so explicitly
    c.flow.trainBeta = !p.flag("--freeze-beta");
    // Only when given: std::to_string would round the default 1/30 to 0.033333 (the app and the Python
    // module train with 1/30).
    if (const std::string w = p.option("--transport-weight", ""); !w.empty())
        c.flow.transportWeight = parsePositive(w, "--transport-weight", true);
    if (const std::string w = p.option("--hjb-weight", ""); !w.empty())
        c.flow.hjbWeight = parsePositive(w, "--hjb-weight", true);
    c.batch = int(parseLong(p.option("--batch", std::to_string(c.batch)), "--batch", 2, 65536));
    c.adam.lr = parsePositive(p.option("--lr", std::to_string(c.adam.lr)), "--lr");
    c.adam.lrFinal =
        parsePositive(p.option("--lr-final", std::to_string(c.adam.lrFinal)), "--lr-final", true);
    c.adam.warmupSteps =
        parseLong(p.option("--warmup", std::to_string(c.adam.warmupSteps)), "--warmup", 0, 100000000);
    c.resampleEvery = int(parseLong(p.option("--resample-every", std::to_string(c.resampleEvery)),
                                    "--resample-every", 0, 1000000));
    c.referenceDraws = int(parseLong(p.option("--reference-draws", std::to_string(c.referenceDraws)),
                                     "--reference-draws", 1, 256));
    c.referenceSize = int(parseLong(p.option("--reference-size", std::to_string(c.referenceSize)),
                                    "--reference-size", 0, 65536));
    if (c.referenceSize == 1)
        throw UsageError("--reference-size: expected 0 (the batch size) or >= 2, got 1");
    c.adam.clipToMedian =
        parsePositive(p.option("--clip-median", std::to_string(c.adam.clipToMedian)), "--clip-median", true);
    c.averageIterations = parseLong(p.option("--average-iters", std::to_string(c.averageIterations)),
                                    "--average-iters", 0, 100000000);
    const long seed = parseLong(p.option("--seed", "0"), "--seed", 0, 1L << 62);
    c.flow.seed = std::uint64_t(seed);
    c.dataSeed = std::uint64_t(seed) + 1;
    return c;
}

int train(const Args& args) {
    ArgParser p(args);
    flows::TrainerConfig c = parseTrainerConfig(p);
    const long iters =
        parseLong(p.option("--iters", std::to_string(c.adam.decaySteps)), "--iters", 1, 100000000);
    const long evalEvery = parseLong(p.option("--eval-every", "500"), "--eval-every", 0, 100000000);
    const std::string out = p.option("--out");
    const bool quiet = p.flag("--quiet");
    p.rejectUnknown();
    if (out.empty()) throw UsageError("--out model.safetensors is required");
    c.adam.decaySteps = iters;
    OutputSet outputs({out, flows::configPathFor(out)}, {optionValue(args, "--data")}); // the record last

    flows::FlowTrainer trainer(c);
    const auto start = std::chrono::steady_clock::now();
    auto report = [&](const flows::Evaluation& e) {
        if (quiet) return;
        const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        std::printf("iter %6ld  %6.1f s  loss %8.4f  NLL(held-out) %7.4f  KL %7.4f  MMD2 %9.2e  lambda %.4f  "
                    "beta %.4f"
                    "  lr %.2e  round-trip %.1e  fixed-point %.1e  folded %.3f  mass %.3f\n",
                    e.iteration, wall, trainer.history().empty() ? NAN : trainer.history().back().terms.loss,
                    e.nll, e.kl, e.mmd2, trainer.evaluatedModel().params().lambda(),
                    trainer.evaluatedModel().params().beta(), trainer.learningRate(), e.roundTrip,
                    e.samplerResidual, e.foldedFraction, e.gridMass);
        std::fflush(stdout);
    };
    trainLoop(trainer, iters, evalEvery, [&](flows::FlowTrainer& t) { report(t.evaluate()); });
    const double trainSeconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const flows::Evaluation final = trainer.evaluate();
    report(final);
    {
        const OutputSet::Capture capture(outputs);
        flows::saveFlow(out, trainer, trainSeconds);
    }
    outputs.commit();
    if (!quiet) {
        const auto clipped = std::count_if(trainer.history().begin(), trainer.history().end(),
                                           [](const flows::TrainRecord& r) { return r.clipped; });
        std::printf(
            "trained %ld iterations in %.1f s (%.1f ms/iteration; %ld gradients clipped); wrote %s and %s\n",
            trainer.iteration(), trainSeconds, 1e3 * trainSeconds / double(std::max(1L, trainer.iteration())),
            long(clipped), out.c_str(), flows::configPathFor(out).c_str());
    }
    return trainer.stopped() ? 1 : 0;
}

} // namespace flowscope::cli

namespace flowscope::cli {

namespace {

flows::FlowModel<float> loadModelArgument(const ArgParser& p) {
    if (p.positional.size() != 1) throw UsageError("expected exactly one MODEL.safetensors argument");
    try {
        return flows::loadFlow(p.positional[0]);
    } catch (const std::exception& e) {
        throw UsageError(e.what());
    }
}

// A model's outputs must be finite to be written: values that are not (weights that overflow, a flow pushed
// out of its domain) fail the command with exit code 1 and leave nothing behind.
void requireFinite(const std::string& model, long bad, long total, const char* what) {
    if (bad > 0)
        throw std::runtime_error(quoteForMessage(model, kMaxQuotedPath) + ": " + std::to_string(bad) +
                                 " of " + std::to_string(total) + " " + what +
                                 " are not finite (NaN or infinite); nothing written");
}

// sample on a posterior flow (flowscope-cli infer): n draws pushed forward, written as n x d float64.
int samplePosterior(const std::string& path, const std::string& out, int n, std::uint64_t seed,
                    OutputSet& outputs) {
    inverse::LoadedPosterior loaded;
    try {
        loaded = inverse::loadPosterior(path);
    } catch (const std::exception& e) {
        throw UsageError(e.what());
    }
    const auto start = std::chrono::steady_clock::now();
    const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> rows =
        loaded.flow->sample(n, seed).transpose();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    requireFinite(path, long((!rows.array().isFinite()).count()), long(rows.size()), "sample values");
    {
        const OutputSet::Capture capture(outputs);
        writeNpy(out, {rows.rows(), rows.cols()}, rows.data(), false);
    }
    outputs.commit();
    std::printf("wrote %s: %d x %d posterior samples of %s in %.2f s\n", out.c_str(), int(rows.rows()),
                int(rows.cols()), loaded.problem.name.c_str(), seconds);
    return 0;
}

} // namespace

int sample(const Args& args) {
    ArgParser p(args);
    const std::string nText = p.option("--n"), seedText = p.option("--seed");
    const int batch = int(parseLong(p.option("--batch", "2000"), "--batch", 2, 65536));
    const std::string basePath = p.option("--base");
    const std::string out = p.option("--out");
    const bool explicitSampler = p.flag("--explicit");
    p.rejectUnknown();
    if (out.empty()) throw UsageError("--out samples.npy is required");
    if (!basePath.empty() && (!nText.empty() || !seedText.empty()))
        throw UsageError("--base replaces the seeded draws: give --base or --n/--seed, not both");
    const int n = int(parseLong(nText.empty() ? "10000" : nText, "--n", 1, 1 << 26));
    std::vector<std::string> inputs = flows::modelFiles(p.positional.empty() ? "" : p.positional[0]);
    inputs.push_back(basePath);
    OutputSet outputs({out}, inputs);
    const std::uint64_t seed =
        std::uint64_t(parseLong(seedText.empty() ? "0" : seedText, "--seed", 0, 1L << 62));
    if (p.positional.size() == 1 && inverse::isPosteriorFile(p.positional[0])) {
        if (!basePath.empty() || explicitSampler)
            throw UsageError(
                "--base and --explicit are for generative flows; a posterior flow samples --n draws");
        return samplePosterior(p.positional[0], out, n, seed, outputs);
    }
    flows::FlowModel<float> loaded = loadModelArgument(p);
    flows::FlowConfig config = loaded.config();
    // The base samples: the file's rows (n x d, finite; the same z for every implementation that reads it),
    // or seeded normals.
    ad::Matrix<float> Z;
    if (!basePath.empty()) {
        Mat rows;
        try {
            rows = flows::loadPoints(basePath);
        } catch (const std::exception& e) {
            throw UsageError(std::string("--base: ") + e.what());
        }
        if (rows.cols() != config.d)
            throw UsageError("--base: " + basePath + " holds " + std::to_string(rows.rows()) + " x " +
                             std::to_string(rows.cols()) + " values; the model needs n x " +
                             std::to_string(config.d) + " base samples");
        Z = flows::toColumns(rows);
    } else {
        Z = flows::baseSamples(config.d, n, seed);
    }
    // The sampler runs in double on the float32 parameters (engine/flows/Sampling.h), as the app's export.
    double residual = 0;
    int iterations = 0;
    const auto start = std::chrono::steady_clock::now();
    const ad::Matrix<float> X = flows::sampleFlow(loaded, Z, batch, explicitSampler, &residual, &iterations);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    requireFinite(p.positional[0], long((!X.array().isFinite()).count()), long(X.size()), "sample values");
    {
        const OutputSet::Capture capture(outputs);
        flows::writeSamplesNpy(out, X);
    }
    outputs.commit();
    std::printf("wrote %s: %d x %d samples in %.2f s (sampler: fixed-point residual %.1e, at most %d "
                "iterations per sub-step)\n",
                out.c_str(), int(Z.cols()), config.d, seconds, residual, iterations);
    return 0;
}

int density(const Args& args) {
    ArgParser p(args);
    const int grid = int(parseLong(p.option("--grid", "200"), "--grid", 2, 4096));
    const double half = parsePositive(p.option("--half-width", "4"), "--half-width");
    const int refs = int(parseLong(p.option("--reference", "2000"), "--reference", 2, 65536));
    const std::uint64_t seed = std::uint64_t(parseLong(p.option("--seed", "0"), "--seed", 0, 1L << 62));
    const std::string out = p.option("--out");
    p.rejectUnknown();
    if (out.empty()) throw UsageError("--out density.npy is required");
    OutputSet outputs({out}, flows::modelFiles(p.positional.empty() ? "" : p.positional[0]));
    const flows::FlowModel<float> model = loadModelArgument(p);
    if (model.config().d != 2) throw UsageError("density grids are for d = 2 models");
    const flows::DensityGrid rho = flows::densityGrid(model, grid, half, refs, seed);
    requireFinite(
        p.positional[0],
        long(std::count_if(rho.rho.begin(), rho.rho.end(), [](double v) { return !std::isfinite(v); })),
        long(rho.rho.size()), "grid densities");
    {
        const OutputSet::Capture capture(outputs);
        flows::writeDensityNpy(out, rho);
    }
    outputs.commit();
    std::printf("wrote %s: %d x %d density on [-%g, %g]^2 (row = y, column = x); mass on the grid %.4f\n",
                out.c_str(), grid, grid, half, half, rho.mass);
    return 0;
}

int benchTrain(const Args& args) {
    ArgParser p(args);
    const int iters = int(parseLong(p.option("--iters", "20"), "--iters", 1, 100000));
    const bool json = p.flag("--json");
    flows::TrainerConfig c = parseTrainerConfig(p);
    p.rejectUnknown();
    nlohmann::json rows = nlohmann::json::array();
    if (!json)
        std::printf(
            "one training iteration (loss (16) + gradient + Adam), float32, batch %d, M = %d, width %d\n",
            c.batch, c.flow.layers, c.flow.width);
    double plainMs = 0;
    for (bool rwpo : {false, true}) {
        c.flow.rwpo = rwpo;
        flows::FlowTrainer trainer(c);
        for (int k = 0; k < 3; ++k) trainer.step(); // warm-up: the tape's buffers reach their size
        std::vector<double> ms;
        for (int k = 0; k < iters; ++k) {
            trainer.step();
            ms.push_back(1e3 * trainer.history().back().seconds);
        }
        std::sort(ms.begin(), ms.end());
        const double median = ms[ms.size() / 2], best = ms.front();
        if (!rwpo) plainMs = median;
        rows.push_back({{"model", rwpo ? "ot-flow + rwpo" : "ot-flow"},
                        {"median_ms", median},
                        {"best_ms", best},
                        {"iterations_per_second", 1e3 / median},
                        {"ratio_to_plain", median / plainMs}});
        if (!json)
            std::printf("  %-16s median %7.2f ms  best %7.2f ms  (%5.1f it/s, %.2fx the plain model)\n",
                        rwpo ? "OT-Flow + RWPO" : "OT-Flow", median, best, 1e3 / median, median / plainMs);
    }
    if (json) std::cout << rows.dump(2) << "\n";
    return 0;
}

} // namespace flowscope::cli
