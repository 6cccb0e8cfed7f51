// flowscope-cli sweep: run a SWEEP.json on this machine's threads, as one shard of a Slurm job array, or on
// MPI ranks (SweepMpi.cpp); sweep merge, sweep --slurm-script. The sweep itself is engine/sweep/.
#include "Commands.h"
#include "SweepMpi.h"

#include "engine/backend/Registry.h"
#include "engine/core/Parallel.h"
#include "engine/core/Text.h"
#include "engine/io/OutputSet.h"
#include "engine/scene/RunBudget.h"
#include "engine/sweep/SweepRunner.h"

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <sys/utsname.h>
#include <thread>
#include <unistd.h>

namespace flowscope::cli {

namespace {

namespace fs = std::filesystem;

struct Shard {
    int index = 1, count = 1; // 1-based
    bool given = false;
};

// --shard I/N, else SLURM_ARRAY_TASK_ID (offset by SLURM_ARRAY_TASK_MIN) and SLURM_ARRAY_TASK_COUNT.
Shard shardOption(const std::string& text) {
    Shard s;
    if (!text.empty()) {
        const std::size_t slash = text.find('/');
        if (slash == std::string::npos)
            throw UsageError("--shard: expected I/N (e.g. 2/8), got " + quoteForMessage(text));
        s.count = int(parseLong(text.substr(slash + 1), "--shard (N)", 1, 1000000));
        s.index = int(parseLong(text.substr(0, slash), "--shard (I)", 1, s.count));
        s.given = true;
        return s;
    }
    const char* id = std::getenv("SLURM_ARRAY_TASK_ID");
    const char* count = std::getenv("SLURM_ARRAY_TASK_COUNT");
    if (!id || !count) return s;
    const char* min = std::getenv("SLURM_ARRAY_TASK_MIN");
    s.count = int(parseLong(count, "SLURM_ARRAY_TASK_COUNT", 1, 1000000));
    const long first = min ? parseLong(min, "SLURM_ARRAY_TASK_MIN", 0, 1L << 30) : 0;
    s.index = int(parseLong(id, "SLURM_ARRAY_TASK_ID", first, first + s.count - 1) - first + 1);
    s.given = true;
    return s;
}

// A live progress line: runs done, runs per second, the time left. On a terminal it is redrawn in place;
// elsewhere a line is printed at each tenth of the work.
class Progress {
  public:
    Progress(std::string label, long total) : label_(std::move(label)), total_(total) {}
    void ran() {
        ++done_;
        const double s = seconds();
        const int tenth = total_ ? int(10 * done_ / total_) : 10;
        if (!tty_ && tenth == lastTenth_) return;
        if (tty_ && s - lastDraw_ < 0.1 && done_ != total_) return;
        lastTenth_ = tenth;
        lastDraw_ = s;
        const double rate = done_ / std::max(s, 1e-9);
        std::cerr << (tty_ ? "\r" : "") << label_ << ": " << done_ << "/" << total_ << " runs, "
                  << std::setprecision(3) << rate << " runs/s, ETA " << std::fixed << std::setprecision(0)
                  << (total_ - done_) / std::max(rate, 1e-9) << " s" << std::defaultfloat
                  << (tty_ ? "   " : "\n") << std::flush;
    }
    void finish() const {
        if (tty_ && done_) std::cerr << "\n";
    }
    double seconds() const {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    }
    long done() const { return done_; }

  private:
    std::string label_;
    long total_, done_ = 0;
    bool tty_ = ::isatty(2);
    int lastTenth_ = 0;
    double lastDraw_ = -1;
    std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

// Backend `id`'s fields and device stepper, opened on the calling thread and kept alive with the factories
// (none: the CPU).
SweepCompute openCompute(const std::string& id) {
    return sweepComputeOn(std::make_shared<const ComputeBackend>(openCliBackend(id)));
}

nlohmann::json buildAndMachine(const std::string& backend, int workers, const std::string& schedule,
                               double seconds) {
    utsname u{};
    ::uname(&u);
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    return {
        {"build",
         {{"compiler", __VERSION__},
#ifdef NDEBUG
          {"assertions", false},
#else
          {"assertions", true},
#endif
          {"mpi", sweepMpiBuilt()}}},
        {"machine",
         {{"hostname", host},
          {"os", std::string(u.sysname) + " " + u.release},
          {"arch", u.machine},
          {"hardware_threads", std::thread::hardware_concurrency()}}},
        {"execution",
         {{"backend", backend}, {"workers", workers}, {"schedule", schedule}, {"wall_seconds", seconds}}}};
}

// The test hook of the kill-and-resume test: FLOWSCOPE_SWEEP_KILL_AFTER=K sends this process SIGKILL once K
// runs are in its journal. Not for production use.
long killAfter() {
    const char* v = std::getenv("FLOWSCOPE_SWEEP_KILL_AFTER");
    return v ? std::atol(v) : 0;
}

std::string selfPath() {
    std::error_code ec;
    const fs::path p = fs::read_symlink("/proc/self/exe", ec);
    return ec ? "flowscope-cli" : p.string();
}

std::string shellQuote(const std::string& s) {
    std::string q = "'";
    for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
}

// A SWEEP.json, or the name of a shipped sweep (assets/sweeps/NAME.json) when no such file exists.
std::string sweepSpecPath(const std::string& arg) {
    std::error_code ec;
    if (fs::exists(arg, ec) || arg.find('/') != std::string::npos || arg.ends_with(".json")) return arg;
    const fs::path shipped = fs::path(FLOWSCOPE_SWEEP_DIR) / (arg + ".json");
    return fs::exists(shipped, ec) ? shipped.string() : arg;
}

// Prints the array script. DIR is prepared here, before submission: Slurm opens each task's --output file
// in it before the task's first line runs, and a task whose log cannot be opened fails without a word of
// its own (tests/slurm/one-node-slurm.sh, which submits the script to a real one-node Slurm, found this).
int slurmScript(const std::string& specFile, const SweepSpec& spec, const std::string& out, int shards,
                int jobs) {
    const std::string cli = selfPath(), specPath = fs::absolute(specFile).string(),
                      dir = fs::absolute(out).string();
    prepareSweepDir(out, spec);
    std::cout
        << "#!/bin/bash\n"
        << "# flowscope sweep " << spec.name << ": " << spec.runs() << " runs in " << shards
        << " array tasks (generated by flowscope-cli sweep --slurm-script).\n"
        << "# Each task runs one shard (I/N from SLURM_ARRAY_TASK_ID and SLURM_ARRAY_TASK_COUNT) and "
           "journals\n"
        << "# its runs in the output directory; a task run again skips the runs it finished. Then merge:\n"
        << "#   jid=$(sbatch --parsable this.sh)\n"
        << "#   sbatch --dependency=afterok:$jid --wrap " << shellQuote(cli + " sweep merge " + dir) << "\n"
        << "#SBATCH --job-name=flowscope-sweep\n"
        << "#SBATCH --array=1-" << shards << "\n"
        << "#SBATCH --ntasks=1\n"
        << "#SBATCH --cpus-per-task=" << jobs << "\n"
        << "#SBATCH --output=" << dir << "/slurm-%A_%a.out\n"
        << "exec " << shellQuote(cli) << " sweep " << shellQuote(specPath) << " --out " << shellQuote(dir)
        << " --jobs " << jobs << "\n";
    return 0;
}

// The journals' finished runs; a line that fails its checksum is named (up to three) and its run left to do.
std::map<long, SweepJournalEntry> readTrustedJournals(const std::string& dir, const SweepSpec& spec) {
    std::vector<std::string> damaged;
    std::map<long, SweepJournalEntry> entries = readSweepJournals(dir, spec, &damaged);
    for (std::size_t i = 0; i < damaged.size() && i < 3; ++i)
        std::cerr << "flowscope-cli sweep: journal/" << damaged[i]
                  << ": not trusted, its run is to do again\n";
    if (damaged.size() > 3)
        std::cerr << "flowscope-cli sweep: " << damaged.size() - 3 << " more journal lines not trusted\n";
    return entries;
}

int merge(const Args& raw) {
    ArgParser p(raw);
    p.rejectUnknown();
    if (p.positional.size() != 1) throw UsageError("expected one directory (usage: sweep merge DIR)");
    const std::string dir = p.positional[0];
    const SweepSpec spec = loadSweepDir(dir);
    const auto entries = readTrustedJournals(dir, spec);
    if (long(entries.size()) < spec.runs()) {
        std::string missing;
        int shown = 0;
        for (long r = 0; r < spec.runs() && shown < 8; ++r)
            if (!entries.count(r)) missing += (shown++ ? ", " : "") + std::to_string(r);
        std::cerr << "flowscope-cli sweep merge: " << spec.runs() - long(entries.size()) << " of "
                  << spec.runs() << " runs are not finished (runs " << missing
                  << (spec.runs() - long(entries.size()) > 8 ? ", ..." : "")
                  << "); run the missing shards (or the sweep without --shard) again\n";
        return 1;
    }
    writeSweepTable(dir, spec, entries, buildAndMachine("merged", 0, "merge", 0));
    std::cerr << "wrote " << dir << "/results.csv (" << spec.runs() << " runs)\n";
    return 0;
}

} // namespace

int sweepPlot(const Args& args); // SweepPlot.cpp

int sweep(const Args& raw) {
    if (!raw.empty() && raw[0] == "merge") return merge(Args(raw.begin() + 1, raw.end()));
    if (!raw.empty() && raw[0] == "plot") return sweepPlot(Args(raw.begin() + 1, raw.end()));
    SweepMpi mpi; // initialises MPI when mpirun started this process (SweepMpi.h)
    return mpi.guard([&] {
        ArgParser p(raw);
        const std::string out = p.option("--out");
        const std::string jobsText = p.option("--jobs");
        const std::string backendName = p.option("--backend", defaultBackendId());
        const std::string shardText = p.option("--shard");
        const std::string schedule = p.option("--schedule", "dynamic");
        const bool slurm = p.flag("--slurm-script");
        const std::string shardsText = p.option("--shards", "8");
        const std::string printScene = p.option("--print-scene"), printRun = p.option("--print-run");
        const std::uint64_t maxMemory = maxMemoryOption(p);
        const double maxTime = maxTimeOption(p);
        p.rejectUnknown();
        if (p.positional.size() != 1)
            throw UsageError(
                "expected one SWEEP.json (usage: sweep SWEEP.json --out DIR, sweep merge DIR, sweep "
                "plot DIR ...)");
        if (out.empty() && printScene.empty() && printRun.empty()) throw UsageError("--out DIR is required");
        if (schedule != "dynamic" && schedule != "static")
            throw UsageError("--schedule: expected dynamic or static, got " + quoteForMessage(schedule));
        const int jobs = jobsText.empty() ? (mpi.size() > 1 ? 1 : threadCount())
                                          : int(parseLong(jobsText, "--jobs", 1, 4096));
        const Shard shard = shardOption(shardText);

        const SweepSpec spec = loadSweep(sweepSpecPath(p.positional[0]), FLOWSCOPE_PRESET_DIR);
        if (!printScene.empty()) {
            std::cout << sceneToJson(
                sweepSceneToOpen(spec, parseLong(printScene, "--print-scene", 0, spec.runs() - 1)));
            return 0;
        }
        if (!printRun.empty()) { // what run R computes, as its command takes it
            const long run = parseLong(printRun, "--print-run", 0, spec.runs() - 1);
            if (spec.mode == SweepMode::Flow)
                std::cout << trainCommandLine(sweepRunDocument(spec, run)) << "\n";
            else if (spec.mode == SweepMode::Posterior)
                std::cout << sweepRunDocument(spec, run).dump(2) << "\n";
            else
                std::cout << sceneToJson(sweepSceneToOpen(spec, run));
            return 0;
        }
        if (mpi.size() > 1) setThreadCount(jobs); // each rank's runs on its own cores
        if (slurm)
            return slurmScript(sweepSpecPath(p.positional[0]), spec, out,
                               int(parseLong(shardsText, "--shards", 1, 100000)), jobs);
        (void)openCliBackend(backendName); // refuses an unavailable backend before any work
        const SweepCheck check = checkSweep(spec);
        RunBudget budget = check.largest;
        budget.bytes *= jobs; // the runs in flight on this process
        checkRunBudget(budget, maxMemory, kMaxMemoryHint);
        { // the whole sweep's time over the workers of this process and the ranks
            RunCost cost = check.costliest;
            const int workers = jobs + std::max(0, mpi.size() - 1);
            cost.seconds = check.seconds / (shard.given ? shard.count : 1) / std::max(1, workers);
            cost.explanation = std::to_string(spec.runs()) + " runs on " + std::to_string(workers) +
                               " worker" + (workers > 1 ? "s" : "") +
                               "; the costliest: " + check.costliest.explanation;
            if (mpi.rank() == 0)
                announceRunCost(cost, maxTime, "sweep");
            else
                checkRunCost(cost, maxTime); // every rank refuses, so all stop together
        }
        const std::function<SweepCompute()> fields = [&] { return openCompute(backendName); };

        if (mpi.rank() != 0) {
            mpi.work(spec, jobs, fields);
            return 0;
        }
        prepareSweepDir(out, spec);
        SweepJournal journal(out,
                             shard.given ? "shard-" + std::to_string(shard.index) + "-of-" +
                                               std::to_string(shard.count)
                                         : "all",
                             spec);
        std::map<long, SweepJournalEntry> finished = readTrustedJournals(out, spec);
        const std::vector<long> pending = pendingRuns(spec, finished, shard.index, shard.count);
        const long mine = (spec.runs() - shard.index + shard.count) / shard.count; // runs of this shard
        const int workers = jobs + mpi.size() - 1;
        std::ostringstream label;
        label << "sweep " << (spec.name.empty() ? p.positional[0] : spec.name);
        if (shard.given) label << " shard " << shard.index << "/" << shard.count;
        std::cerr << label.str() << ": " << pending.size() << " of " << mine << " runs to do ("
                  << mine - long(pending.size()) << " already in the journal), " << workers << " worker"
                  << (workers > 1 ? "s" : "")
                  << (mpi.size() > 1 ? " on " + std::to_string(mpi.size()) + " MPI ranks" : "") << ", "
                  << schedule << " hand-out\n";
        SweepQueue queue(pending, workers, schedule == "dynamic");
        Progress progress(label.str(), long(pending.size()));
        const long killAt = killAfter();
        // Finished runs: a thread's one, or an MPI rank's chunk (journaled with one fdatasync).
        const auto done = [&](const std::vector<SweepJournalEntry>& entries) {
            journal.append(entries);
            for (const SweepJournalEntry& e : entries) {
                finished.emplace(e.run, e);
                progress.ran();
            }
            if (killAt > 0 && progress.done() >= killAt) std::raise(SIGKILL);
        };
        if (mpi.size() > 1)
            mpi.serve(spec, queue, jobs, fields, done);
        else
            runSweepThreads(spec, queue, jobs, 0, fields,
                            [&](const SweepJournalEntry& e) { done(std::vector<SweepJournalEntry>{e}); });
        progress.finish();
        const double seconds = progress.seconds();
        std::cerr << label.str() << ": " << progress.done() << " runs in " << std::setprecision(3) << seconds
                  << " s (" << progress.done() / std::max(seconds, 1e-9) << " runs/s)\n";

        finished = readSweepJournals(out, spec); // with the other shards' journals
        if (long(finished.size()) < spec.runs()) {
            std::cerr << label.str() << ": " << spec.runs() - long(finished.size())
                      << " runs of other shards still missing; when they are done: flowscope-cli sweep merge "
                      << out << "\n";
            return 0;
        }
        writeSweepTable(out, spec, finished, buildAndMachine(backendName, workers, schedule, seconds));
        std::cerr << "wrote " << out << "/results.csv, results.json and a .npy per column (" << spec.runs()
                  << " runs)\n";
        return 0;
    });
}

} // namespace flowscope::cli
