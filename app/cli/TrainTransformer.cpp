// flowscope-cli train-transformer / eval-transformer: continuous-time Transformers (engine/ottransformer) on
// tasks A and B (docs/math/transformers.md#tasks) from the command line.
#include "Commands.h"

#include "engine/core/Text.h"
#include "engine/flows/FlowIo.h"
#include "engine/io/AtomicFile.h"
#include "engine/io/OutputSet.h"
#include "engine/ottransformer/TransformerIo.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <optional>

namespace flowscope::cli {

namespace {

template <class E, class F> E parseEnum(const std::string& text, const std::string& option, F parse) {
    try {
        return parse(text);
    } catch (const std::invalid_argument& e) {
        throw UsageError(option + ": " + e.what());
    }
}

std::vector<double> dropRates(const std::string& text) {
    std::vector<double> rates;
    for (const std::string& s : splitCommas(text)) {
        const double r = parsePositive(s, "--drop-rates", true);
        if (r >= 1) throw UsageError("--drop-rates: each rate must be in [0, 1), got " + s);
        rates.push_back(r);
    }
    if (rates.empty()) throw UsageError("--drop-rates: expected comma-separated rates in [0, 1)");
    return rates;
}

void printEvaluation(const ot::OtEvaluation& e, const ot::OtTrainerConfig& c, double wall) {
    std::printf("iter %6ld  %5.1f s  loss %.5f  task %.5f  transport %.5f", e.iteration, wall, e.terms.loss,
                e.terms.task, e.terms.transport);
    if (c.task == ot::Task::B) std::printf("  accuracy %.4f", e.terms.accuracy);
    std::printf("  straightness %.5f  speed-cv %.4f", e.straightness, e.speedCv);
    if (c.task == ot::Task::A)
        std::printf("  closed-form %.4f  displacement %.4f  optimal loss %.5f", e.closedFormError,
                    e.displacementError, e.optimalLoss);
    std::printf("  lipschitz %.4f (bound %.4g, threshold %.4g)  non-finite %ld\n", e.lipschitzRatio,
                e.lipschitzBound, e.threshold, e.nonFiniteSteps);
    std::fflush(stdout);
}

void printDropTable(const std::vector<double>& rates, const std::vector<double>& acc) {
    std::printf("drop rate ");
    for (double r : rates) std::printf(" %7.2f", r);
    std::printf("\naccuracy  ");
    for (double a : acc) std::printf(" %7.4f", a);
    std::printf("\n");
}

nlohmann::json dropJson(const std::vector<double>& rates, const std::vector<double>& acc) {
    return {{"rates", rates}, {"accuracy", acc}};
}

} // namespace

int trainTransformer(const Args& args) {
    ArgParser p(args);
    const ot::Task task = parseEnum<ot::Task>(p.option("--task", "A"), "--task", ot::taskFromString);
    ot::OtTrainerConfig c = ot::defaultTrainerConfig(task);
    const std::string arch = p.option("--arch", "ot");
    c.model.architecture = parseEnum<ot::Architecture>(arch, "--arch", ot::architectureFromString);
    if (task == ot::Task::B && c.model.architecture == ot::Architecture::Discrete)
        c.model = ot::taskBBaseline();
    c.model.blocks = int(parseLong(p.option("--blocks", std::to_string(c.model.blocks)), "--blocks", 1, 64));
    c.model.steps = int(parseLong(p.option("--steps", std::to_string(c.model.steps)), "--steps", 1, 1000));
    c.model.horizon = parsePositive(p.option("--horizon", "1"), "--horizon");
    c.model.lambdaOt = parsePositive(p.option("--lambda-ot", "0"), "--lambda-ot", true);
    c.model.convention = parseEnum<ot::KineticConvention>(p.option("--convention", "element-mean"),
                                                          "--convention", ot::conventionFromString);
    c.model.integrator = parseEnum<ot::Integrator>(p.option("--integrator", "euler"), "--integrator",
                                                   ot::integratorFromString);
    c.model.incrementVelocity = p.flag("--increment");
    c.model.layerNorm = p.flag("--layer-norm");
    if (task == ot::Task::B) {
        c.model.width = int(parseLong(p.option("--width", "16"), "--width", 1, 1024));
        c.model.headDim = c.model.width;
        c.model.mlpHidden = 2 * c.model.width;
    } else {
        // Task A: a width above 2 pads the tokens to [x; 0] (--pad-copy: [x; x; 0]), a fixed embedding; the
        // mean head reads the first two coordinates. The head dimension follows the width.
        const int width =
            int(parseLong(p.option("--width", std::to_string(c.model.width)), "--width", 2, 1024));
        if (width != c.model.width) {
            c.model.width = c.model.headDim = width;
            c.model.padEmbed = width > c.model.inputDim;
        }
        c.model.padCopy = p.flag("--pad-copy");
        c.model.routingInit = p.flag("--routing-init");
    }
    c.model.mlpHidden =
        int(parseLong(p.option("--mlp", std::to_string(c.model.mlpHidden)), "--mlp", 0, 4096));
    c.batch = int(parseLong(p.option("--batch", std::to_string(c.batch)), "--batch", 1, 100000));
    c.adam.lr = parsePositive(p.option("--lr", std::to_string(c.adam.lr)), "--lr");
    c.adam.lrFinal =
        parsePositive(p.option("--lr-final", std::to_string(c.adam.lrFinal)), "--lr-final", true);
    c.evalSets = int(parseLong(p.option("--eval-sets", "1000"), "--eval-sets", 1, 1000000));
    c.averageIterations = parseLong(p.option("--average-iters", std::to_string(c.averageIterations)),
                                    "--average-iters", 0, 100000000);
    const long seed = parseLong(p.option("--seed", "0"), "--seed", 0, 1L << 62);
    c.model.seed = std::uint64_t(seed);
    c.dataSeed = std::uint64_t(seed) + 1;
    const long iters =
        parseLong(p.option("--iters", task == ot::Task::A ? "2000" : "1000"), "--iters", 1, 100000000);
    if (c.adam.lrFinal > 0) c.adam.decaySteps = iters; // exponential decay from --lr over the whole run
    const long evalEvery = parseLong(p.option("--eval-every", "0"), "--eval-every", 0, 100000000);
    const std::string dropText =
        p.option("--drop-rates", task == ot::Task::B ? "0,0.01,0.05,0.1,0.2,0.5" : "");
    const std::string out = p.option("--out");
    const bool quiet = p.flag("--quiet");
    p.rejectUnknown();
    if (!p.positional.empty()) throw UsageError("unexpected argument " + quoteForMessage(p.positional[0]));
    if (out.empty()) throw UsageError("--out model.safetensors is required");
    OutputSet outputs({out, flows::configPathFor(out)}); // the record last
    if (!dropText.empty() && task == ot::Task::A) throw UsageError("--drop-rates: task B only");
    try {
        ot::validate(c);
    } catch (const std::invalid_argument& e) {
        throw UsageError(e.what());
    }

    ot::OtTrainer trainer(c);
    const auto start = std::chrono::steady_clock::now();
    auto wall = [&] {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    };
    const int setSize = task == ot::Task::A ? ot::kTaskASetSize : ot::kTaskBSetSize;
    const ot::TransformerModel& model = trainer.model();
    if (!quiet)
        std::printf(
            "task %s, %s, %ld parameters, lambda_ot %g (%s; paper-convention %.4g), stability threshold "
            "T L^2 = %.4g (Frobenius %.4g)\n",
            ot::toString(task), arch.c_str(), model.params().count(), c.model.lambdaOt,
            ot::toString(c.model.convention), model.paperLambda(setSize), model.stabilityThreshold(setSize),
            model.stabilityThreshold(setSize, true));
    trainLoop(trainer, iters, evalEvery, [&](ot::OtTrainer& t) {
        if (!quiet) printEvaluation(t.evaluate(), c, wall());
    });
    const double trainSeconds = wall();
    const ot::OtEvaluation final = trainer.evaluate();
    if (!quiet) printEvaluation(final, c, wall());
    nlohmann::json extra = nlohmann::json::object();
    if (!dropText.empty()) {
        const std::vector<double> rates = dropRates(dropText);
        const std::vector<double> acc = trainer.accuracyAtDropRates(rates);
        if (!quiet) printDropTable(rates, acc);
        extra["drop_rates"] = dropJson(rates, acc);
    }
    {
        const OutputSet::Capture capture(outputs);
        ot::saveTransformer(out, trainer, trainSeconds, extra);
    }
    outputs.commit();
    if (!quiet)
        std::printf("trained %ld iterations in %.1f s (%.2f ms/iteration); wrote %s and %s\n",
                    trainer.iteration(), trainSeconds,
                    1e3 * trainSeconds / double(std::max(1L, trainer.iteration())), out.c_str(),
                    flows::configPathFor(out).c_str());
    return trainer.stopped() ? 1 : 0;
}

int evalTransformer(const Args& args) {
    ArgParser p(args);
    const std::string dropText = p.option("--drop-rates");
    const int sets = int(parseLong(p.option("--sets", "1000"), "--sets", 1, 1000000));
    const long seed = parseLong(p.option("--seed", "1"), "--seed", 0, 1L << 62);
    const std::string out = p.option("--out");
    p.rejectUnknown();
    if (p.positional.size() != 1) throw UsageError("expected exactly one MODEL.safetensors argument");
    std::optional<OutputSet> outputs;
    if (!out.empty()) outputs.emplace(std::vector<std::string>{out}, flows::modelFiles(p.positional[0]));
    ot::TransformerModel model = [&] {
        try {
            return ot::loadTransformer(p.positional[0]);
        } catch (const std::exception& e) {
            throw UsageError(e.what());
        }
    }();
    const ot::Task task = model.config().head == ot::Head::Mean ? ot::Task::A : ot::Task::B;
    if (!dropText.empty() && task == ot::Task::A) throw UsageError("--drop-rates: task B models only");
    ot::OtTrainerConfig c = ot::defaultTrainerConfig(task);
    c.model = model.config();
    c.evalSets = sets;
    c.dataSeed = std::uint64_t(seed);
    ot::OtTrainer evaluator(c);
    evaluator.model().params() = model.params();
    const ot::OtEvaluation e = evaluator.evaluate();
    // Weights that are finite but huge overflow in the forward pass: a state of the model, not a number.
    if (!std::isfinite(e.terms.loss) || !std::isfinite(e.terms.task) || !std::isfinite(e.terms.transport))
        throw std::runtime_error(quoteForMessage(p.positional[0], kMaxQuotedPath) +
                                 ": the model's outputs are not finite (NaN or overflow) on the " +
                                 std::to_string(sets) + " held-out sets; nothing evaluated");
    printEvaluation(e, c, 0.0);
    nlohmann::json result = {{"model", p.positional[0]},
                             {"task", ot::toString(task)},
                             {"sets", sets},
                             {"seed", seed},
                             {"evaluation", ot::toJson(e)}};
    if (!dropText.empty()) {
        const std::vector<double> rates = dropRates(dropText);
        const std::vector<double> acc = evaluator.accuracyAtDropRates(rates);
        printDropTable(rates, acc);
        result["drop_rates"] = dropJson(rates, acc);
    }
    if (outputs) {
        const OutputSet::Capture capture(*outputs);
        writeFileAtomically(out, [&](std::ostream& o) { o << result.dump(1) << "\n"; });
        outputs->commit();
    }
    return 0;
}

} // namespace flowscope::cli
