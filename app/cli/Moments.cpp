// flowscope-cli moments / bench moments: the Gaussian (mean/covariance) mode of a scene.
#include "Commands.h"

#include "engine/core/Parallel.h"
#include "engine/core/Text.h"
#include "engine/gaussian/MomentFiles.h"
#include "engine/gaussian/MomentSolver.h"
#include "engine/io/AtomicFile.h"
#include "engine/io/OutputSet.h"
#include "engine/scene/RunBudget.h"
#include "engine/scene/SceneShareString.h"

#include <chrono>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <unistd.h>

namespace flowscope::cli {

namespace {

using Json = nlohmann::json;

Json trajectoryJson(const MomentTrajectory& tr, bool finalOnly) {
    Json times = Json::array(), means = Json::array(), covs = Json::array();
    for (std::size_t k = 0; k < tr.times.size(); ++k) {
        if (finalOnly && k != 0 && k + 1 != tr.times.size()) continue;
        times.push_back(tr.times[k]);
        means.push_back(vectorJson(tr.states[k].mean));
        covs.push_back(matrixJson(tr.states[k].cov));
    }
    Json event = {{"kind", toString(tr.event)}, {"t", tr.eventTime}};
    if (tr.tMax) event["t_max"] = *tr.tMax;
    return {{"times", times},
            {"means", means},
            {"covs", covs},
            {"event", event},
            {"iterations", tr.iterations},
            {"evaluations", tr.evaluations}};
}

// A live progress line on a terminal: "name: done/total".
struct Progress {
    std::string label;
    bool tty = ::isatty(2);
    void operator()(int done, int total) const {
        if (tty) std::cerr << "\r" << label << ": " << done << "/" << total << std::flush;
    }
    void finish() const {
        if (tty) std::cerr << "\n";
    }
};

MomentMethod parseMethod(const std::string& text) {
    if (text == "adaptive") return MomentMethod::Adaptive;
    if (text == "paper" || text == "paper_euler") return MomentMethod::PaperEuler;
    throw UsageError("--method: expected adaptive or paper, got " + quoteForMessage(text));
}

} // namespace

int moments(const Args& raw) {
    ArgParser p(raw);
    const std::string out = p.option("--out");
    const std::string method = p.option("--method");
    const std::string every = p.option("--every");
    const bool finalOnly = p.flag("--final-only");
    const std::vector<std::string> settings = p.options("--set");
    const std::uint64_t maxMemory = maxMemoryOption(p);
    p.rejectUnknown();
    requireSceneAndOut(p, out, "moments", "moments.json");
    const bool npy = out.size() >= 4 && out.compare(out.size() - 4, 4, ".npy") == 0;
    if (npy && finalOnly) throw UsageError("--final-only: only for the JSON output");

    Scene scene = withSetOptions(loadSceneOrShareString(p.positional[0]), settings);
    if (!method.empty()) scene.moments.method = parseMethod(method);
    if (!every.empty()) scene.output.every = int(parseLong(every, "--every", 1, 1L << 30));
    makeMomentField(scene); // refuse non-Gaussian variants before any work
    const MomentSolveOptions options = boundedMomentOptions(scene, maxMemory, !npy, kMaxMemoryHint);
    // The outputs, checked before the work; .npy: the companions first, the covariances (the named file)
    // last.
    OutputSet outputs(npy ? std::vector<std::string>{momentsCompanionPath(out, "times"),
                                                     momentsCompanionPath(out, "means"), out}
                          : std::vector<std::string>{out},
                      sceneInputs(p.positional[0], scene));
    initialGaussians(scene); // and non-Gaussian initial distributions

    Progress progress{"moments " + scene.name};
    const auto start = std::chrono::steady_clock::now();
    const auto trajectories = solveAllMoments(scene, options, std::ref(progress));
    progress.finish();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

    std::map<std::string, int> counts;
    Json list = Json::array();
    for (const MomentTrajectory& tr : trajectories) {
        ++counts[toString(tr.event)];
        list.push_back(trajectoryJson(tr, finalOnly));
    }
    Json j = {{"scene", scene.name},
              {"attention", toString(scene.attention.type)},
              {"method", toString(scene.moments.method)},
              {"d", scene.d},
              {"count", trajectories.size()},
              {"events", counts},
              {"seconds", seconds},
              {"trajectories", list}};
    {
        const OutputSet::Capture capture(outputs);
        if (npy)
            writeMomentsNpy(out, trajectories); // and <stem>_means.npy, <stem>_times.npy
        else
            writeFileAtomically(out, [&](std::ostream& o) { o << j.dump() << "\n"; });
    }
    outputs.commit();

    std::cerr << "wrote " << out << ": " << trajectories.size() << " trajectories ("
              << toString(scene.moments.method) << ", " << std::setprecision(3) << seconds << " s);";
    for (const auto& [kind, n] : counts) std::cerr << " " << kind << " " << n;
    if (trajectories.size() == 1 && trajectories[0].tMax)
        std::cerr << "; blow-up time t_max = " << std::setprecision(10) << *trajectories[0].tMax;
    std::cerr << "\n";
    return 0;
}

// Trajectories per second for the Fig 3(a) grid (P-BLOWUP, 1184 trajectories: softmax, V = I,
// A = K^T Q / sqrt 2) to its stopping rule, with the authors' projected Euler as the baseline.
int benchMoments(bool json, const std::vector<long>& threadCounts) {
    Scene s;
    s.name = "fig3a";
    s.d = 2;
    const Mat Q = (Mat(2, 2) << -0.09678415831, 0.4222016605, -0.2254615634, -0.6379430932).finished();
    const Mat K = (Mat(2, 2) << -0.0162863037, 1.044216778, -1.084880329, -2.205924827).finished();
    s.attention.heads = {{Q / std::sqrt(2.0), K, Mat::Identity(2, 2)}};
    s.moments.grid = {40, 40, -1.0, 1.0, -1.0, 1.0};
    s.moments.step = 0.01;
    s.moments.tolLow = 1e-4;
    s.moments.tolHigh = 1e3;
    s.moments.maxIter = 100000;
    s.integrator.T = 1000.0; // the adaptive runs end at the blow-up, like the paper's
    s.integrator.steps = 1000;
    s.integrator.rtol = 1e-8;

    struct Row {
        MomentMethod method;
        int threads = 1;
        double perSecond = 0.0, seconds = 0.0;
        long evaluations = 0;
        std::map<std::string, int> events;
    };
    // Each method at each thread count; the baseline is paper Euler at the first count.
    const int all = threadCount();
    std::vector<Row> rows;
    for (long t : threadCounts.empty() ? std::vector<long>{all} : threadCounts)
        for (MomentMethod m : {MomentMethod::PaperEuler, MomentMethod::Adaptive})
            rows.push_back(Row{.method = m, .threads = int(t)});
    for (Row& r : rows) {
        setThreadCount(r.threads);
        s.moments.method = r.method;
        MomentSolveOptions o = momentOptions(s);
        o.recordEveryIter = 100;
        const auto start = std::chrono::steady_clock::now();
        const auto all = solveAllMoments(s, o);
        r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        r.perSecond = double(all.size()) / r.seconds;
        for (const auto& tr : all) {
            r.evaluations += tr.evaluations;
            ++r.events[toString(tr.event)];
        }
    }
    setThreadCount(all);
    const double base = rows[0].perSecond;
    for (const Row& r : rows) {
        if (json) {
            std::cout << Json{{"bench", "moments"},
                              {"variant", "softmax"},
                              {"backend", "cpu"},
                              {"method", toString(r.method)},
                              {"grid", "fig3a"},
                              {"trajectories", 1184},
                              {"threads", r.threads},
                              {"trajectories_per_s", r.perSecond},
                              {"baseline_trajectories_per_s", base},
                              {"ratio", r.perSecond / base},
                              {"field_evaluations", r.evaluations},
                              {"events", r.events}}
                             .dump()
                      << "\n";
        } else {
            std::cout << std::left << std::setw(12) << toString(r.method) << std::right << std::setw(3)
                      << r.threads << " threads" << std::setw(12) << std::setprecision(4) << r.perSecond
                      << " traj/s  " << std::setw(8) << r.seconds << " s  " << std::setw(11) << r.evaluations
                      << " evals  ratio " << std::setprecision(3) << r.perSecond / base << "x  ";
            for (const auto& [k, n] : r.events) std::cout << k << " " << n << "  ";
            std::cout << "\n";
        }
    }
    return 0;
}

} // namespace flowscope::cli
