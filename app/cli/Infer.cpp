// flowscope-cli infer: posterior flows for Bayesian inverse problems (engine/inverse, docs/inverse.md).
#include "Commands.h"
#include "engine/scene/RunCost.h"

#include "engine/core/Parallel.h"
#include "engine/core/Text.h"
#include "engine/flows/FlowIo.h"
#include "engine/inverse/PosteriorIo.h"
#include "engine/io/Npy.h"
#include "engine/io/OutputSet.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>

namespace flowscope::cli {

namespace {

// "[1.23, 4.56, ...]" with at most `shown` entries.
std::string vectorText(const inverse::Vector& v, int shown = 6) {
    std::string s = "[";
    char buf[32];
    for (Eigen::Index i = 0; i < v.size() && i < shown; ++i) {
        std::snprintf(buf, sizeof buf, "%s%.4g", i ? ", " : "", v(i));
        s += buf;
    }
    if (v.size() > shown) s += ", ... (" + std::to_string(v.size()) + ")";
    return s + "]";
}

nlohmann::json summaryJson(const inverse::PosteriorSummary& s) {
    return {{"mean", vectorJson(s.mean)},
            {"sd", vectorJson(s.sd)},
            {"misfit", numberJson(s.misfit)},
            {"relative_l1_error", numberJson(s.relativeL1Error)},
            {"outside", s.outside}};
}

} // namespace

int infer(const Args& args) {
    ArgParser p(args);
    const std::string out = p.option("--out"), samplesOut = p.option("--samples");
    const bool noRwpo = p.flag("--no-rwpo"), rwpo = p.flag("--rwpo"), trainLambda = p.flag("--train-lambda");
    if (noRwpo && rwpo) throw UsageError("--rwpo and --no-rwpo contradict each other");
    const std::string itersText = p.option("--iters"), batchText = p.option("--batch"),
                      seedText = p.option("--seed"), frameText = p.option("--frame");
    const long every = parseLong(p.option("--every", "0"), "--every", 0, 1L << 40);
    const int summaryCount =
        int(parseLong(p.option("--summary-samples", "4096"), "--summary-samples", 2, 1 << 24));
    const std::string threadsText = p.option("--threads");
    const double maxTime = maxTimeOption(p);
    p.rejectUnknown();
    if (p.positional.size() != 1)
        throw UsageError("expected one PROBLEM.json (or the name of a shipped problem)");
    if (out.empty()) throw UsageError("--out posterior.safetensors is required");
    if (!threadsText.empty()) setThreadCount(int(parseLong(threadsText, "--threads", 1, 1024)));

    inverse::Problem problem;
    try {
        problem = inverse::loadProblem(p.positional[0], FLOWSCOPE_PROBLEM_DIR);
    } catch (const JsonError& e) {
        throw UsageError(p.positional[0] + ": " + e.what());
    } catch (const std::invalid_argument& e) {
        throw UsageError(p.positional[0] + ": " + e.what());
    } catch (const std::runtime_error& e) {
        throw UsageError(e.what());
    }
    inverse::PosteriorFlowConfig c = problem.flow;
    if (noRwpo || rwpo) c.flow.rwpo = rwpo;
    if (trainLambda && !c.flow.rwpo) throw UsageError("--train-lambda needs the RWPO layer (--rwpo)");
    if (trainLambda) c.flow.trainLambda = true;
    if (!itersText.empty()) c.iterations = parseLong(itersText, "--iters", 1, 100000000);
    c.adam.decaySteps = c.iterations;
    if (!batchText.empty()) c.batch = int(parseLong(batchText, "--batch", 2, 65536));
    if (!seedText.empty()) {
        c.flow.seed = std::uint64_t(parseLong(seedText, "--seed", 0, 1L << 62));
        c.seed = c.flow.seed;
    }
    if (!frameText.empty()) {
        if (frameText != "prior" && frameText != "laplace")
            throw UsageError("--frame: expected prior or laplace, got " + quoteForMessage(frameText));
        c.frame = frameText == "prior" ? inverse::FrameKind::Prior : inverse::FrameKind::Laplace;
    }
    std::vector<std::string> outputs{out, flows::configPathFor(out)};
    if (!samplesOut.empty()) outputs.insert(outputs.begin(), samplesOut);
    OutputSet set(outputs, {p.positional[0]});

    const auto start = std::chrono::steady_clock::now();
    auto seconds = [&] {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    };
    const inverse::Posterior& post = *problem.posterior;
    // The start can take a while on a large problem (the Laplace frame solves for the MAP point and its
    // Hessian): say so before it, and how long the iterations will take after the first.
    std::fprintf(stderr, "%s: setting up (%d unknowns, %s frame)...\n", problem.name.c_str(), post.dim(),
                 c.frame == inverse::FrameKind::Laplace ? "Laplace" : "prior");
    inverse::PosteriorFlow flow(problem.posterior, c);
    std::printf("%s: d = %d unknowns, m = %d observations, noise %g, %s prior; flow %s, %d layers, width %d, "
                "batch %d, %s frame (%.2f s)\n",
                problem.name.c_str(), post.dim(), post.model->observations(), post.noise,
                post.prior.kind == inverse::Prior::Kind::Gaussian ? "Gaussian" : "Laplace",
                c.flow.rwpo ? "with the RWPO layer" : "without the RWPO layer", c.flow.layers, c.flow.width,
                c.batch, c.frame == inverse::FrameKind::Laplace ? "Laplace" : "prior", seconds());
    const double setUp = seconds();
    const long printEvery = every > 0 ? every : std::max(1L, c.iterations / 10);
    std::size_t eventsShown = 0;
    double lossSum = 0, misfitSum = 0;
    long summed = 0;
    for (long k = 0; k < c.iterations; ++k) {
        const bool running = flow.step();
        for (; eventsShown < flow.events().size(); ++eventsShown)
            std::cerr << "iter " << flow.events()[eventsShown].iteration << ": "
                      << flow.events()[eventsShown].message << "\n";
        if (!running) break;
        if (k == 0) { // the first iteration's time, for all of them (the held-out summaries add to it)
            const double first = seconds() - setUp, all = first * double(c.iterations);
            if (maxTime > 0 && all > maxTime)
                throw UsageError("--iters: " + std::to_string(c.iterations) +
                                 " iterations would take about " + formatDuration(all) + " (" +
                                 formatDuration(first) + " the first), above --max-time " +
                                 formatDuration(maxTime));
            if (all > 60)
                std::fprintf(
                    stderr,
                    "%s: about %s for %ld iterations (%s the first); Ctrl+C stops and writes nothing\n",
                    problem.name.c_str(), formatDuration(all).c_str(), c.iterations,
                    formatDuration(first).c_str());
        }
        const inverse::PosteriorRecord& r = flow.history().back();
        if (!r.rejected) {
            lossSum += r.terms.loss;
            misfitSum += r.terms.misfit;
            ++summed;
        }
        if (flow.iteration() % printEvery == 0 || flow.iteration() == c.iterations) {
            // The averaged parameters' samples (1024 draws): what the saved model would give now.
            const inverse::PosteriorSummary now =
                inverse::summarize(post, flow.sample(1024, c.seed ^ 0x5eedULL));
            std::printf("iter %6ld  %6.1f s  loss %9.4g  misfit %9.4g  mean %s  sd %s", flow.iteration(),
                        seconds(), summed ? lossSum / double(summed) : NAN,
                        summed ? misfitSum / double(summed) : NAN, vectorText(now.mean, 3).c_str(),
                        vectorText(now.sd, 3).c_str());
            if (post.truth) std::printf("  rel L1 %.3e", now.relativeL1Error);
            std::printf("\n");
            std::fflush(stdout);
            lossSum = misfitSum = 0;
            summed = 0;
        }
    }
    nlohmann::json curve = nlohmann::json::array();
    const double trainSeconds = seconds();
    long outsideSamples = 0, stepsWithOutside = 0, rejectedSteps = 0;
    for (const inverse::PosteriorRecord& r : flow.history()) {
        curve.push_back(
            {r.iteration, numberJson(r.terms.loss), numberJson(r.terms.misfit), numberJson(r.seconds)});
        outsideSamples += r.terms.outside;
        stepsWithOutside += r.terms.outside > 0;
        rejectedSteps += r.rejected;
    }
    if (outsideSamples > 0)
        std::printf(
            "training: %ld samples in %ld of %ld steps left the forward model's domain (EIT: kappa <= 0 "
            "somewhere): those steps were rejected\n",
            outsideSamples, stepsWithOutside, flow.iteration());
    if (rejectedSteps > 0) std::printf("training: %ld steps rejected\n", rejectedSteps);
    if (c.flow.rwpo)
        std::printf("RWPO layer: lambda %.5g%s, beta %.5g\n", flow.averagedParams().lambda(),
                    c.flow.trainLambda ? " (trained)" : " (frozen)", flow.averagedParams().beta());

    const inverse::Matrix X = flow.sample(summaryCount, c.seed ^ 0x5eedULL);
    const inverse::PosteriorSummary s = inverse::summarize(post, X);
    const inverse::PosteriorTerms t = flow.evaluate(summaryCount, c.seed ^ 0xe7a1ULL);
    std::printf("final (%d samples): loss %.5g (log rho %.5g, misfit %.5g, log prior %.5g)\n", summaryCount,
                t.loss, t.logRho, t.misfit, t.logPrior);
    if (t.outside > 0)
        std::printf("  %ld of the %d samples have no finite misfit (outside the forward model's domain; EIT: "
                    "kappa <= 0 somewhere): left out of these means\n",
                    t.outside, summaryCount);
    std::printf("posterior mean %s\nposterior sd   %s\n", vectorText(s.mean).c_str(),
                vectorText(s.sd).c_str());
    if (post.truth)
        std::printf("truth          %s\nrelative L1 error of the mean: %.4g\n",
                    vectorText(*post.truth).c_str(), s.relativeL1Error);
    nlohmann::json record;
    record["training"] = {{"iterations", flow.iteration()},
                          {"stopped", flow.stopped()},
                          {"seconds", trainSeconds},
                          {"frame", c.frame == inverse::FrameKind::Laplace ? "laplace" : "prior"},
                          {"outside_samples", outsideSamples},
                          {"steps_with_outside_samples", stepsWithOutside},
                          {"rejected_steps", rejectedSteps},
                          {"curve_columns", {"iteration", "loss", "misfit", "seconds"}},
                          {"curve", curve}};
    nlohmann::json events = nlohmann::json::array();
    for (const flows::TrainEvent& e : flow.events())
        events.push_back({{"iteration", e.iteration}, {"message", e.message}});
    record["events"] = events;
    record["summary"] = summaryJson(s);
    record["summary"]["samples"] = summaryCount;
    record["summary"]["loss"] = numberJson(t.loss);
    record["summary"]["loss_outside"] = t.outside; // samples left out of the loss's means
    if (c.flow.rwpo) {
        record["summary"]["lambda"] = flow.averagedParams().lambda();
        record["summary"]["beta"] = flow.averagedParams().beta();
    }
    {
        const OutputSet::Capture capture(set);
        if (!samplesOut.empty()) {
            const inverse::Matrix rows = X.transpose();
            Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> r = rows;
            writeNpy(samplesOut, {r.rows(), r.cols()}, r.data(), false);
        }
        inverse::savePosterior(out, flow, problem, record);
    }
    set.commit();
    std::printf("wrote %s and %s%s%s in %.1f s (training %.1f s)\n", out.c_str(),
                flows::configPathFor(out).c_str(), samplesOut.empty() ? "" : " and ", samplesOut.c_str(),
                seconds(), trainSeconds);
    if (!X.allFinite()) std::cerr << "warning: some samples are not finite\n";
    return flow.stopped() ? 1 : 0;
}

} // namespace flowscope::cli
