// flowscope-cli train / sample / density / bench train: generative flows (engine/flows) from the command
// line.
#include "Commands.h"

#include "engine/core/Text.h"
#include "engine/flows/FlowIo.h"
#include "engine/flows/Sampling.h"
#include "engine/flows/Trainer.h"
#include "engine/flows/TrainerSettings.h"
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

// A training setting's option (engine/flows/TrainerSettings.h): "--" and its name with dashes (lr_final ->
// --lr-final), but iterations -> --iters.
std::string settingOption(std::string_view name) {
    if (name == "iterations") return "--iters";
    std::string o = "--" + std::string(name);
    std::replace(o.begin(), o.end(), '_', '-');
    return o;
}

} // namespace

std::string trainCommandLine(const nlohmann::json& settings) {
    std::string line = "flowscope-cli train";
    for (std::string_view name : flows::trainerSettingNames()) {
        const auto it = settings.find(std::string(name));
        if (it == settings.end()) continue;
        const std::string text = flows::trainerSettingText(name, *it);
        const bool on = text == "true" || text == "1";
        if (name == "rwpo")
            line += on ? "" : " --no-rwpo";
        else if (name == "include_self")
            line += on ? " --include-self" : " --leave-one-out";
        else if (name == "train_lambda")
            line += on ? " --train-lambda" : " --freeze-lambda";
        else if (name == "train_beta")
            line += on ? "" : " --freeze-beta";
        else
            line += " " + settingOption(name) + " " + text;
    }
    return line;
}

flows::TrainerConfig parseTrainerConfig(ArgParser& p, bool iterations) {
    flows::TrainerConfig c;
    const std::string data = p.option("--data");
    const std::optional<std::string> dataset = p.given("--dataset");
    if (!data.empty() && dataset) throw UsageError("give --dataset or --data, not both");
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
        c.dataset = "";
        c.flow.d = int(c.points.cols());
        c.pointJitter = parsePositive(p.option("--jitter", "0"), "--jitter", true);
    }
    // The switches of the settings: --no-rwpo, --include-self (the paper's softmax over l = j too) or
    // --leave-one-out (the default, an earlier switch), --train-lambda or --freeze-lambda, --freeze-beta, and
    // --exact-logdet, the earlier spelling of --rwpo-logdet exact.
    const bool includeSelf = p.flag("--include-self"), leaveOneOut = p.flag("--leave-one-out");
    if (includeSelf && leaveOneOut)
        throw UsageError("--include-self and --leave-one-out contradict each other");
    const bool freezeLambda = p.flag("--freeze-lambda"), trainLambda = p.flag("--train-lambda");
    if (freezeLambda && trainLambda)
        throw UsageError("--freeze-lambda and --train-lambda contradict each other");
    const bool noRwpo = p.flag("--no-rwpo"), freezeBeta = p.flag("--freeze-beta"),
               exactLogDet = p.flag("--exact-logdet");
    const auto given = [&](std::string_view name) -> std::optional<std::string> {
        const auto either = [](bool yes, bool no) -> std::optional<std::string> {
            if (yes || no) return yes ? "true" : "false";
            return std::nullopt;
        };
        if (name == "dataset") return dataset;
        if (name == "rwpo") return either(false, noRwpo);
        if (name == "include_self") return either(includeSelf, leaveOneOut);
        if (name == "train_lambda") return either(trainLambda, freezeLambda);
        if (name == "train_beta") return either(false, freezeBeta);
        if (name == "rwpo_logdet" && exactLogDet) return "exact";
        if (name == "iterations" && !iterations) return std::nullopt; // bench train's --iters is its own
        return p.given(settingOption(name));
    };
    try {
        flows::readTrainerSettings(c, given);
    } catch (const flows::TrainerSettingError& e) {
        throw UsageError(settingOption(e.name) + ": " + e.why);
    }
    return c;
}

int train(const Args& args) {
    ArgParser p(args);
    flows::TrainerConfig c = parseTrainerConfig(p, true);
    const long iters = c.adam.decaySteps; // --iters, the schedule's length
    const long evalEvery = parseLong(p.option("--eval-every", "500"), "--eval-every", 0, 100000000);
    const std::string out = p.option("--out");
    const bool quiet = p.flag("--quiet");
    p.rejectUnknown();
    if (out.empty()) throw UsageError("--out model.safetensors is required");
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
    // --no-rwpo: the plain model alone (to profile it).
    const std::vector<bool> models = c.flow.rwpo ? std::vector<bool>{false, true} : std::vector<bool>{false};
    for (bool rwpo : models) {
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
