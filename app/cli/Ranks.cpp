// flowscope-cli ranks: the rank histograms of Fig 4 (softmax) and Fig 11 (l2),
// docs/math/gaussian.md#rank-histograms.
// The experiment itself is engine/gaussian/RankExperiment.h; this file parses options, prints a table and
// writes the JSON record (atomically).
#include "Commands.h"

#include "engine/core/Parallel.h"
#include "engine/core/Text.h"
#include "engine/gaussian/RankExperiment.h"
#include "engine/io/AtomicFile.h"
#include "engine/io/OutputSet.h"

#include <cmath>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <unistd.h>

namespace flowscope::cli {

namespace {

std::string histogramText(const std::vector<long>& h) {
    std::ostringstream s;
    for (std::size_t r = 0; r < h.size(); ++r) s << (r ? " " : "") << r << ":" << h[r];
    return s.str();
}

nlohmann::json toJson(const RankExperimentResult& res) {
    const RankExperimentConfig& c = res.config;
    nlohmann::json p;
    p["attention"] = c.attention == AttentionType::L2 ? "l2" : "softmax";
    p["v"] = c.randomV ? "random" : "identity";
    p["method"] = toString(c.method);
    p["dims"] = c.dims;
    p["runs"] = c.runs;
    p["q_seed"] = c.qSeed;
    p["sigma_seed"] = c.sigmaSeed;
    p["v_seed"] = c.randomV ? nlohmann::json(*c.vSeed) : nlohmann::json(nullptr);
    p["threshold"] = c.threshold;
    p["exact_rank_tol"] = c.exactRankTol;
    p["include_exceptions"] = c.includeExceptions;
    p["tol_low"] = c.tolLow;
    p["tol_high"] = c.tolHigh;
    p["n_max"] = c.nMax;
    if (c.method == RankMethod::PaperEuler) {
        p["steps"] = c.steps;
        p["max_iter"] = c.maxIter;
    } else {
        p["rtol"] = c.rtol;
        p["atol"] = c.atol;
        p["horizon"] = c.horizon;
        p["max_evaluations"] = c.maxEvaluations;
    }

    nlohmann::json dims = nlohmann::json::array();
    for (const RankDimensionResult& r : res.dimensions) {
        nlohmann::json j;
        j["d"] = r.d;
        if (c.method == RankMethod::PaperEuler) j["step"] = r.step;
        j["rank_bound"] = (r.d + 1) / 2;
        j["histogram"] = r.histogram;
        j["exceptions"] = r.exceptions;
        j["non_converged"] = r.nonConverged;
        nlohmann::json failures = nlohmann::json::object();
        for (std::size_t e = 0; e < r.failures.size(); ++e)
            if (r.failures[e]) // None: the adaptive horizon was reached without converging
                failures[MomentEvent(e) == MomentEvent::None ? "horizon" : toString(MomentEvent(e))] =
                    r.failures[e];
        j["non_converged_by_event"] = failures;
        j["attempts"] = r.attempts;
        j["completed"] = r.completed;
        if (!c.randomV) {
            j["exact_histogram"] = r.exactHistogram;
            j["exact_rank_histogram"] = r.exactRankHistogram;
        }
        j["seconds"] = r.seconds;
        nlohmann::json runs = nlohmann::json::array();
        for (const RankRun& run : r.runs) {
            nlohmann::json o;
            o["run"] = run.run;
            o["attempt"] = run.attempt;
            o["rank"] = run.rank;
            o["exception"] = run.exception;
            o["eigenvalues"] = vectorJson(run.eigenvalues);
            o["iterations"] = run.iterations;
            o["time"] = run.time;
            if (run.exactRank >= 0) {
                o["exact_eigenvalues"] = vectorJson(run.exactEigenvalues);
                o["exact_threshold_rank"] = run.exactThresholdRank;
                o["exact_rank"] = run.exactRank;
                o["distance_to_exact"] = run.distanceToExact;
            }
            runs.push_back(o);
        }
        j["runs"] = runs;
        dims.push_back(j);
    }
    return {{"experiment", "rank-histogram"}, {"parameters", p}, {"dimensions", dims}};
}

} // namespace

int ranks(const Args& raw) {
    ArgParser p(raw);
    const std::string attention = p.option("--attention", "softmax");
    const std::string v = p.option("--v", "identity");
    const std::string method = p.option("--method", "paper");
    const std::string dimsText = p.option("--dims", "3,4,5");
    const std::string runsText = p.option("--runs", "100");
    const std::string seedText = p.option("--seed", "40");
    const std::string thresholdText = p.option("--threshold", "0.1");
    const std::string stepsText = p.option("--steps");
    const std::string tolLowText = p.option("--tol-low");
    const std::string maxIterText = p.option("--max-iter");
    const std::string nMaxText = p.option("--n-max");
    const std::string threadsText = p.option("--threads");
    const std::string out = p.option("--out");
    const bool includeExceptions = p.flag("--include-exceptions");
    p.rejectUnknown();
    if (!p.positional.empty()) throw UsageError("unexpected argument " + quoteForMessage(p.positional[0]));
    std::optional<OutputSet> outputs;
    if (!out.empty()) outputs.emplace(std::vector<std::string>{out});

    if (attention != "softmax" && attention != "l2")
        throw UsageError("--attention must be softmax or l2, got " + quoteForMessage(attention));
    if (v != "identity" && v != "random")
        throw UsageError("--v must be identity or random, got " + quoteForMessage(v));
    if (method != "paper" && method != "adaptive")
        throw UsageError("--method must be paper or adaptive, got " + quoteForMessage(method));
    RankExperimentConfig c =
        paperProtocol(attention == "l2" ? AttentionType::L2 : AttentionType::Softmax, v == "random",
                      method == "paper" ? RankMethod::PaperEuler : RankMethod::Adaptive);
    c.dims.clear();
    for (const std::string& s : splitCommas(dimsText)) c.dims.push_back(int(parseLong(s, "--dims", 2, 64)));
    if (c.dims.empty()) throw UsageError("--dims: expected comma-separated dimensions, e.g. 3,4,5");
    c.runs = int(parseLong(runsText, "--runs", 1, 1000000));
    c.qSeed = std::uint32_t(parseLong(seedText, "--seed", 0, 4294967295L));
    c.threshold = parsePositive(thresholdText, "--threshold", true);
    c.includeExceptions = includeExceptions;
    if (!stepsText.empty()) {
        for (const std::string& s : splitCommas(stepsText)) c.steps.push_back(parsePositive(s, "--steps"));
        if (c.steps.size() != c.dims.size()) throw UsageError("--steps: give one step per entry of --dims");
    }
    if (!tolLowText.empty()) c.tolLow = parsePositive(tolLowText, "--tol-low");
    if (!maxIterText.empty()) // Euler steps, or field evaluations per attempt for the adaptive method
        (method == "paper" ? c.maxIter : c.maxEvaluations) =
            parseLong(maxIterText, "--max-iter", 1, 1L << 40);
    if (!nMaxText.empty()) c.nMax = parseLong(nMaxText, "--n-max", 1, 1L << 40);
    if (!threadsText.empty()) setThreadCount(int(parseLong(threadsText, "--threads", 1, 1024)));

    const bool tty = ::isatty(2);
    RankExperimentResult res;
    try {
        res = runRankExperiment(c, [&](int done, int total) {
            if (tty) std::cerr << "\rranks: " << done << "/" << total << " runs" << std::flush;
        });
    } catch (const std::invalid_argument& e) {
        throw UsageError(e.what());
    }
    if (tty) std::cerr << "\n";

    const RankExperimentConfig& rc = res.config;
    std::printf("%s attention, V = %s, %s method, rank = #eigenvalues > %g, %d runs per dimension%s\n",
                attention.c_str(), v == "random" ? "V0^T V0 (random SPD)" : "I", toString(rc.method),
                rc.threshold, rc.runs, rc.includeExceptions ? " (exceptions included)" : "");
    std::printf("%3s  %-28s %5s %8s %8s  %-28s %8s\n", "d", "histogram (rank:count)", "exc", "non-conv",
                "attempts", rc.randomV ? "" : "exact Sigma* (thresholded)", "seconds");
    for (const RankDimensionResult& r : res.dimensions)
        std::printf("%3d  %-28s %5d %8ld %8ld  %-28s %8.2f\n", r.d, histogramText(r.histogram).c_str(),
                    r.exceptions, r.nonConverged, r.attempts,
                    rc.randomV ? "" : histogramText(r.exactHistogram).c_str(), r.seconds);
    for (const RankDimensionResult& r : res.dimensions)
        if (r.completed < rc.runs)
            std::printf("d = %d: only %d of %d runs converged within %ld attempts\n", r.d, r.completed,
                        rc.runs, rc.nMax);

    if (!out.empty()) {
        const nlohmann::json j = toJson(res);
        const OutputSet::Capture capture(*outputs);
        writeFileAtomically(out, [&](std::ostream& o) { o << j.dump(1) << "\n"; });
        outputs->commit();
        std::cerr << "wrote " << out << "\n";
    }
    return 0;
}

} // namespace flowscope::cli
