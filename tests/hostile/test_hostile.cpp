// The hostile-input suite (docs/outputs.md): bad inputs and faults a new user meets, one table row each, run
// against the real flowscope-cli (and the app's start-up flags). For every case it checks:
//   - the exit code (2 for bad input, 1 for a runtime failure, 0 where the run must end by itself);
//   - the message: one line naming the field, option or file (the expected words are in the row);
//   - the peak memory of the process, under a cap (RLIMIT_AS 3 GiB; the resident peak under 400 MB);
//   - the files afterwards: a failed run leaves the directory byte for byte as it was (no partial file, no
//     changed old file, no staged temporary); a successful one adds exactly its outputs.
// Every process runs under an alarm: a case that hangs fails instead of hanging the suite.
#include "../CliRun.h"
#include "../ModelFiles.h"
#include "engine/io/Npy.h"
#include "engine/io/OutputSet.h"
#include "engine/io/Safetensors.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>
#include <zlib.h>

namespace fs = std::filesystem;

namespace {

// --- Running a process and looking at what it left ---

struct ProcessRun {
    int code = -1;   // exit code; -signal when killed by a signal
    std::string out; // stdout and stderr
    long peakKb = 0; // resident peak (ru_maxrss)
};

constexpr rlim_t kAddressCap = rlim_t(3) << 30;
constexpr long kPeakKbCap = 400 * 1024;

std::vector<std::string> words(const std::string& text) {
    std::vector<std::string> w;
    std::istringstream in(text);
    for (std::string s; in >> s;) w.push_back(s);
    return w;
}

// Runs argv (no shell) with a 120 s alarm and the address-space cap; `whileRunning(pid)` runs in the parent
// before it waits (e.g. to send a signal). `env`: extra NAME=VALUE settings.
ProcessRun runProcess(std::vector<std::string> argv, const std::vector<std::string>& env = {},
                      const std::function<void(pid_t)>& whileRunning = {}) {
    char outName[] = "/tmp/flowscope-hostile-out-XXXXXX";
    const int outFd = mkstemp(outName);
    ProcessRun r;
    if (outFd < 0) return r;
    const pid_t pid = fork();
    if (pid == 0) {
        dup2(outFd, 1);
        dup2(outFd, 2);
        const int devNull = open("/dev/null", O_RDONLY);
        dup2(devNull, 0);
        const rlimit cap{kAddressCap, kAddressCap};
        setrlimit(RLIMIT_AS, &cap);
        for (const std::string& e : env) putenv(strdup(e.c_str()));
        alarm(120);
        std::vector<char*> args;
        for (std::string& a : argv) args.push_back(a.data());
        args.push_back(nullptr);
        execv(args[0], args.data());
        _exit(127);
    }
    if (whileRunning) whileRunning(pid);
    int status = 0;
    rusage usage{};
    wait4(pid, &status, 0, &usage);
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
    r.peakKb = usage.ru_maxrss;
    std::ifstream in(outName, std::ios::binary);
    r.out.assign(std::istreambuf_iterator<char>(in), {});
    close(outFd);
    unlink(outName);
    return r;
}

// Name -> content (a directory: "<dir>" and its entries, one level down) of everything in `dir`.
std::map<std::string, std::string> snapshot(const fs::path& dir) {
    std::map<std::string, std::string> files;
    for (const auto& e : fs::recursive_directory_iterator(dir)) {
        const std::string name = fs::relative(e.path(), dir).string();
        if (e.is_regular_file() && e.file_size() <= (std::uintmax_t(64) << 20)) {
            std::ifstream in(e.path(), std::ios::binary);
            files[name].assign(std::istreambuf_iterator<char>(in), {});
        } else {
            files[name] = e.is_directory() ? "<dir>" : "<" + std::to_string(int(e.status().type())) + ">";
        }
    }
    return files;
}

// What Flowscope stages or journals (engine/io/OutputSet.h), by the exact form of its own names; `name` may
// be a path relative to the case's directory.
bool isTemporary(const std::string& name) {
    const std::string base = fs::path(name).filename().string();
    return flowscope::stagingPid(base) > 0 || base.rfind(".flowscope-commit-", 0) == 0;
}

void writeText(const fs::path& p, const std::string& text) {
    std::ofstream(p, std::ios::binary) << text;
}

// `text` with its first `from` replaced by `to` (the test's own JSON, so `from` is always there).
std::string sub(std::string text, const std::string& from, const std::string& to) {
    const std::size_t at = text.find(from);
    if (at == std::string::npos) throw std::logic_error("sub: no '" + from + "'");
    return text.replace(at, from.size(), to);
}

// --- Files the cases start from ---

std::string scene(const std::string& overrides = "", int n = 50) {
    return R"({"name": "hostile", "d": 2, "n": )" + std::to_string(n) +
           R"(, "initial": {"kind": "gaussian", "seed": 3, "mean": [0, 0], "cov": [[1, 0], [0, 1]]},
  "attention": {"type": "softmax", "heads": [{"Q": [[1, 0], [0, 1]], "K": [[1, 0], [0, 1]], "V": [[-0.5, 0], [0, -0.5]]}]},
  "integrator": {"method": "rk4", "T": 1.0, "steps": 20}, "output": {"every": 2})" +
           overrides + "}";
}

// The scene with the fields at JSON pointers set to values (JSON text; created where missing).
std::string sceneWith(const std::vector<std::pair<std::string, std::string>>& fields) {
    nlohmann::json j = nlohmann::json::parse(scene());
    for (const auto& [pointer, value] : fields)
        j[nlohmann::json::json_pointer(pointer)] = nlohmann::json::parse(value);
    return j.dump();
}
std::string sceneWith(const std::string& pointer, const std::string& value) {
    return sceneWith({{pointer, value}});
}

std::string gaussianMode(const std::string& moments, int steps = 20) {
    return R"({"name": "hostile-moments", "d": 2, "n": 64,
  "initial": {"kind": "gaussian", "mean": [0, 0], "cov": [[1, 0], [0, 1]]},
  "attention": {"type": "softmax", "heads": [{"Q": [[1, 0], [0, 1]], "K": [[1, 0], [0, 1]], "V": [[1, 0], [0, 1]]}]},
  "integrator": {"T": 1.0, "steps": )" +
           std::to_string(steps) + R"(}, "moments": )" + moments + "}";
}

void writeNpyHeader(const fs::path& p, const std::string& dict, std::uint64_t payloadBytes) {
    std::string header = dict;
    std::size_t total = 10 + header.size() + 1;
    header.append((64 - total % 64) % 64, ' ');
    header += '\n';
    {
        std::ofstream out(p, std::ios::binary);
        out.write("\x93NUMPY\x01\x00", 8);
        const char len[2] = {char(header.size() & 0xff), char(header.size() >> 8)};
        out.write(len, 2);
        out << header;
    }
    fs::resize_file(p, 10 + header.size() + payloadBytes); // sparse: costs no disk
}

std::string base64url(const std::string& bytes) {
    static const char* abc = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    std::string out;
    std::uint32_t acc = 0;
    int bits = 0;
    for (unsigned char c : bytes) {
        acc = (acc << 8) | c;
        bits += 8;
        while (bits >= 6) {
            bits -= 6;
            out += abc[(acc >> bits) & 63];
        }
    }
    if (bits > 0) out += abc[(acc << (6 - bits)) & 63];
    return out;
}

std::string deflated(const std::string& text) {
    uLongf size = compressBound(uLong(text.size()));
    std::string out(size, '\0');
    compress2(reinterpret_cast<Bytef*>(out.data()), &size, reinterpret_cast<const Bytef*>(text.data()),
              uLong(text.size()), 9);
    out.resize(size);
    return out;
}

// A trained flow and Transformer (a few seconds to make), shared by the cases that need them: made once for
// this build of the CLI (the folder's name holds the binary's size and time) in a folder of its own, then
// renamed into place, so parallel test processes never see half of it.
const fs::path& models() {
    static const fs::path dir = [] {
        const auto stamp = fs::last_write_time(FLOWSCOPE_CLI).time_since_epoch().count();
        const fs::path d = fs::temp_directory_path() /
                           ("flowscope-hostile-models-" + std::to_string(fs::file_size(FLOWSCOPE_CLI)) + "-" +
                            std::to_string(stamp));
        if (fs::exists(d)) return d;
        const fs::path mine = d.string() + "-" + std::to_string(getpid());
        fs::create_directories(mine);
        runProcess({FLOWSCOPE_CLI, "train", "--dataset", "moons", "--iters", "2", "--batch", "64",
                    "--eval-every", "0", "--quiet", "--out", (mine / "flow.safetensors").string()});
        runProcess({FLOWSCOPE_CLI, "train-transformer", "--task", "A", "--iters", "2", "--quiet", "--out",
                    (mine / "ot.safetensors").string()});
        std::error_code ec;
        fs::rename(mine, d, ec);
        if (ec) fs::remove_all(mine); // another process was first
        return d;
    }();
    return dir;
}

void copyModel(const fs::path& dir, const std::string& name, const std::string& as) {
    fs::copy_file(models() / (name + ".safetensors"), dir / (as + ".safetensors"));
    fs::copy_file(models() / (name + ".json"), dir / (as + ".json"));
}

// --- The table ---

struct Case {
    std::string category, name;
    std::function<void(const fs::path&)> setup; // files in the case's directory
    std::string args;                           // flowscope-cli words; {d} is the directory
    int code = 2;
    std::vector<std::string> message;      // words the last line of output must hold
    std::vector<std::string> created = {}; // files a successful run adds
    std::string program = FLOWSCOPE_CLI;   // or the app
    std::vector<std::string> env = {};     // extra environment
    std::function<void(pid_t, const fs::path&)> whileRunning = {};
    std::function<std::string()> skip = {}; // a reason to skip, or ""
    // Further checks of a successful run: what it left in the case's directory and what it printed.
    std::function<void(const fs::path&, const std::string&)> verify = {};
};

std::function<void(const fs::path&)> file(const std::string& name, const std::string& text) {
    return [=](const fs::path& d) { writeText(d / name, text); };
}

// Copies the trained model `name` (flow or ot) into the case's directory as m.safetensors and m.json.
std::function<void(const fs::path&)> copied(const std::string& name) {
    return [=](const fs::path& d) { copyModel(d, name, "m"); };
}

std::function<void(const fs::path&)> files(std::vector<std::function<void(const fs::path&)>> steps) {
    return [=](const fs::path& d) {
        for (const auto& s : steps)
            if (s) s(d);
    };
}

std::function<void(const fs::path&)> sceneFile(const std::string& text) {
    return file("s.json", text);
}

// Waits until `dir` holds process `pid`'s staged `name`, then sends `sig`.
std::function<void(pid_t, const fs::path&)> signalWhenStaged(int sig, const std::string& name) {
    return [=](pid_t pid, const fs::path& dir) {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
        while (flowscope::test::stagedFileOf((dir / name).string(), pid).empty() &&
               std::chrono::steady_clock::now() < deadline) {
            siginfo_t info{};
            if (waitid(P_PID, id_t(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid)
                return; // ended before writing
            std::this_thread::sleep_for(std::chrono::microseconds(200));
        }
        kill(pid, sig);
    };
}

// A token file sized so that writing the trajectory takes a moment: all tokens equal (one cluster).
std::string bigLinearScene() {
    return R"({"name": "big", "d": 4, "n": 250000,
  "initial": {"kind": "points", "points": [[0.5, 0.25, 0, 1]]},
  "attention": {"type": "linear", "heads": [{"Q": [[1,0,0,0],[0,1,0,0],[0,0,1,0],[0,0,0,1]], "K": [[1,0,0,0],[0,1,0,0],[0,0,1,0],[0,0,0,1]], "V": [[-1,0,0,0],[0,-1,0,0],[0,0,-1,0],[0,0,0,-1]]}]},
  "integrator": {"method": "euler", "T": 0.01, "steps": 8}, "output": {"every": 1, "entropy": false}})";
}

// A sweep of 4 runs of a few milliseconds, its table and journal (tests/cli covers sweeps; these rows are
// the journal's faults).
constexpr const char* kSweep = R"({"name": "hostile-sweep",
  "base": {"d": 2, "n": 8, "initial": {"kind": "gaussian", "mean": [0, 0], "cov": [[1, 0], [0, 1]]},
           "attention": {"type": "softmax", "heads": [{"Q": 1, "K": 1, "V": 1}]},
           "integrator": {"method": "rk4", "T": 1, "steps": 4}, "output": {"every": 2}},
  "axes": [{"name": "beta", "pointer": "/attention/beta", "values": [1, 2, 3, 4]}],
  "measures": ["clusters", "energy"]})";
const std::vector<std::string> kSweepTable = {
    "out/run.npy",  "out/cell.npy",     "out/replicate.npy", "out/seed.npy",    "out/valid.npy",
    "out/beta.npy", "out/clusters.npy", "out/energy.npy",    "out/results.csv", "out/results.json"};

// The sweep run into {d}/ref and {d}/out; then `tamper` changes out's journal, and out's table is removed
// (the rerun writes it again from the journal and the runs it does not trust).
std::function<void(const fs::path&)> sweptThen(std::function<void(std::vector<std::string>&)> tamper) {
    return [=](const fs::path& d) {
        writeText(d / "w.json", kSweep);
        for (const char* out : {"ref", "out"})
            runProcess({FLOWSCOPE_CLI, "sweep", (d / "w.json").string(), "--out", (d / out).string()});
        if (!tamper) return;
        std::vector<std::string> lines;
        std::ifstream in(d / "out/journal/all.jsonl");
        for (std::string line; std::getline(in, line);) lines.push_back(line);
        in.close();
        tamper(lines);
        std::string text;
        for (const std::string& line : lines) text += line + "\n";
        writeText(d / "out/journal/all.jsonl", text);
        for (const std::string& f : kSweepTable) fs::remove(d / f);
    };
}

// out's table is ref's, byte for byte.
void sameTableAsRef(const fs::path& d) {
    for (const std::string& f : kSweepTable) {
        if (f == "out/results.json") continue; // the machine and the run's seconds
        const auto read = [](const fs::path& p) {
            std::ifstream in(p, std::ios::binary);
            return std::string(std::istreambuf_iterator<char>(in), {});
        };
        EXPECT_EQ(read(d / f), read(d / ("ref" + f.substr(3)))) << f;
    }
}

std::string rootSkip() {
    return geteuid() == 0 ? "" : "needs root to mount a small tmpfs";
}

std::vector<Case> cases() {
    const std::string S = "{d}/s.json";
    std::vector<Case> c;
    auto add = [&](Case k) { c.push_back(std::move(k)); };
    auto sceneCase = [&](const std::string& name, const std::string& text, std::vector<std::string> message) {
        add({"scene", name, sceneFile(text), "simulate " + S + " --out {d}/t.npy", 2, std::move(message)});
    };

    // ---- scene: syntax, types, ranges, shapes, unknown fields ----
    sceneCase("syntax-error", "{\"d\": 2,", {"line"});
    sceneCase("not-an-object", "[1, 2, 3]", {"expected a JSON object"});
    sceneCase("empty-file", "", {"s.json"});
    sceneCase("binary-garbage", std::string("\x89PNG\r\n\x1a\n\0\0\0", 11), {"s.json"});
    sceneCase("missing-d", R"({"n": 4, "attention": {"type": "softmax"}})", {"/d"});
    sceneCase("d-zero", sceneWith("/d", "0"), {"/d"});
    sceneCase("d-too-large", sceneWith("/d", "1025"), {"/d"});
    sceneCase("n-zero", sceneWith("/n", "0"), {"/n"});
    sceneCase("n-too-large", sceneWith("/n", "16777217"), {"/n"});
    sceneCase("n-fraction", sceneWith("/n", "2.5"), {"/n"});
    sceneCase("n-string", sceneWith("/n", "\"many\""), {"/n"});
    sceneCase("unknown-top-field", sceneWith("/tokens", "3"), {"tokens"});
    sceneCase("integrator-typo", sceneWith("/integrator/stpes", "3"), {"/integrator/stpes", "steps"});
    sceneCase("steps-zero", sceneWith("/integrator/steps", "0"), {"/integrator/steps"});
    sceneCase("steps-negative", sceneWith("/integrator/steps", "-5"), {"/integrator/steps"});
    sceneCase("T-zero", sceneWith("/integrator/T", "0"), {"/integrator/T"});
    sceneCase("T-negative", sceneWith("/integrator/T", "-1"), {"/integrator/T"});
    sceneCase("T-string-nan", sceneWith("/integrator/T", "\"NaN\""), {"/integrator/T"});
    sceneCase("T-overflow-literal", sub(scene(), "\"T\": 1.0", "\"T\": 1e999"), {"T"});
    sceneCase("T-underflowing-step", sceneWith("/integrator/T", "1e-320"), {"/integrator/T", "underflows"});
    sceneCase("rtol-1e-300", sceneWith("/integrator/rtol", "1e-300"),
              {"/integrator/rtol", "2.220446049250313e-14"});
    // The bound rounded as people write it is below the bound: the message must show the bound itself.
    sceneCase("rtol-2.2e-14", sceneWith("/integrator/rtol", "2.2e-14"),
              {"/integrator/rtol", "at least 2.220446049250313e-14", "got 2.2e-14"});
    sceneCase("rtol-zero", sceneWith("/integrator/rtol", "0"), {"/integrator/rtol"});
    sceneCase("atol-negative", sceneWith("/integrator/atol", "-1"), {"/integrator/atol"});
    sceneCase("method-unknown", sceneWith("/integrator/method", "\"dormand_prince\""),
              {"/integrator/method", "dopri5"});
    sceneCase("every-zero", sub(scene(), "\"every\": 2", "\"every\": 0"), {"/output/every"});
    sceneCase("rank-tol-one", sceneWith("/output/rank_tol", "1"), {"/output/rank_tol"});
    sceneCase("attention-missing", R"({"d": 2, "n": 4})", {"/attention"});
    sceneCase("attention-type-unknown", sceneWith("/attention/type", "\"softermax\""), {"/attention/type"});
    sceneCase("V-wrong-shape", sub(scene(), "\"V\": [[-0.5, 0], [0, -0.5]]", "\"V\": [[1, 0, 0], [0, 1, 0]]"),
              {"/attention/heads/0/V", "2x3"});
    sceneCase("Q-more-rows-than-d",
              sub(scene(), "\"Q\": [[1, 0], [0, 1]]", "\"Q\": [[1, 0], [0, 1], [1, 1]]"),
              {"/attention/heads/0/Q"});
    sceneCase("matrix-with-string", sub(scene(), "\"K\": [[1, 0], [0, 1]]", "\"K\": [[1, \"x\"], [0, 1]]"),
              {"/attention/heads/0/K"});
    sceneCase("precision-unknown", sceneWith("/precision", "\"float16\""), {"/precision"});
    sceneCase("version-2", sceneWith("/version", "2"), {"/version"});
    sceneCase("cov-not-psd", sub(scene(), "\"cov\": [[1, 0], [0, 1]]", "\"cov\": [[1, 0], [0, -1]]"),
              {"/initial/cov"});
    sceneCase("uniform-low-above-high",
              sceneWith("/initial", R"({"kind": "uniform", "low": [1, 1], "high": [0, 2]})"), {"/initial"});
    sceneCase("initial-kind-unknown", sceneWith("/initial", R"({"kind": "sphere"})"), {"/initial/kind"});
    sceneCase("sinkhorn-eps-zero", sceneWith("/attention/eps", "0"), {"/attention/eps"});
    sceneCase("huge-unknown-key", scene(", \"" + std::string(5 << 20, 'k') + "\": 1"), {"bytes)"});
    sceneCase("deep-nesting", scene(", \"view\": " + std::string(100000, '[') + std::string(100000, ']')),
              {"/view"});
    sceneCase("duplicate-key", scene(", \"n\": 7"), {"/n", "duplicate"});
    add({"scene",
         "scene-is-a-directory",
         [](const fs::path& d) { fs::create_directory(d / "s.json"); },
         "simulate " + S + " --out {d}/t.npy",
         2,
         {"directory"}});
    add({"scene", "scene-missing", {}, "simulate {d}/none.json --out {d}/t.npy", 2, {"none.json"}});
    add({"scene",
         "moments-grid-outside-disc",
         sceneFile(gaussianMode(R"({"grid": {"nu": 4, "nc": 4, "x0": 2, "x1": 3, "y0": 2, "y1": 3}})")),
         "moments " + S + " --out {d}/m.json",
         2,
         {"/moments/grid"}});
    add({"scene",
         "moments-of-relu",
         sceneFile(sceneWith("/attention/type", "\"relu\"")),
         "moments " + S + " --out {d}/m.json",
         2,
         {"/attention/type"}});

    // ---- token files ----
    auto tokens = [&](const std::string& name, std::function<void(const fs::path&)> setup,
                      const std::string& path, std::vector<std::string> message) {
        add({"token files", name,
             files({setup, file("s.json",
                                sceneWith("/initial", "{\"kind\": \"file\", \"path\": \"" + path + "\"}"))}),
             "simulate " + S + " --out {d}/t.npy", 2, std::move(message)});
    };
    tokens("missing", {}, "none.npy", {"/initial/path", "none.npy"});
    tokens("directory", [](const fs::path& d) { fs::create_directory(d / "x.npy"); }, "x.npy",
           {"/initial/path", "directory"});
    tokens("fifo", [](const fs::path& d) { mkfifo((d / "x.csv").c_str(), 0600); }, "x.csv",
           {"/initial/path", "not a regular file"});
    tokens("wrong-extension", file("x.txt", "1,2\n"), "x.txt", {"/initial/path", ".npy or .csv"});
    tokens("npy-wrong-shape-1GiB",
           [](const fs::path& d) {
               writeNpyHeader(d / "x.npy",
                              "{'descr': '<f8', 'fortran_order': False, 'shape': (67108864, 2), }",
                              std::uint64_t(1) << 30);
           },
           "x.npy", {"/initial/path", "67108864"});
    tokens("npy-truncated",
           [](const fs::path& d) {
               writeNpyHeader(d / "x.npy", "{'descr': '<f8', 'fortran_order': False, 'shape': (50, 2), }",
                              100);
           },
           "x.npy", {"/initial/path"});
    tokens("npy-bad-magic", file("x.npy", "NOTNUMPY........................"), "x.npy", {"/initial/path"});
    tokens("npy-fortran-order-unknown",
           [](const fs::path& d) {
               writeNpyHeader(d / "x.npy", "{'descr': '<f8', 'fortran_order': 1, 'shape': (50, 2), }", 800);
           },
           "x.npy", {"/initial/path"});
    tokens("npy-int8",
           [](const fs::path& d) {
               writeNpyHeader(d / "x.npy", "{'descr': '|i1', 'fortran_order': False, 'shape': (50, 2), }",
                              100);
           },
           "x.npy", {"/initial/path"});
    tokens("npy-nan",
           [](const fs::path& d) {
               std::vector<double> v(100, std::nan(""));
               flowscope::writeNpy((d / "x.npy").string(), {50, 2}, v.data(), false);
           },
           "x.npy", {"/initial/path"});
    tokens("csv-ragged", file("x.csv", "1,2\n3\n"), "x.csv", {"/initial/path"});
    tokens("csv-nan", file("x.csv", "1,2\nnan,4\n"), "x.csv", {"/initial/path"});
    tokens("csv-overflow-first-row", file("x.csv", "1e999,2\n3,4\n"), "x.csv",
           {"/initial/path", "out of range"});
    tokens("csv-header-only", file("x.csv", "x,y\n"), "x.csv", {"/initial/path"});
    tokens("csv-empty", file("x.csv", ""), "x.csv", {"/initial/path"});
    tokens("csv-wrong-columns", file("x.csv", "1,2,3\n4,5,6\n"), "x.csv", {"/initial/path"});

    // ---- trained models ----
    const std::string M = "{d}/m.safetensors";
    auto model = [&](const std::string& name, std::function<void(const fs::path&)> setup,
                     const std::string& args, int code, std::vector<std::string> message) {
        add({"models", name, setup, args, code, std::move(message)});
    };
    model("sample-missing", {}, "sample " + M + " --out {d}/x.npy", 2, {"m.safetensors"});
    model("sample-directory", [](const fs::path& d) { fs::create_directory(d / "m.safetensors"); },
          "sample " + M + " --out {d}/x.npy", 2, {"m.safetensors"});
    model("sample-empty-file", file("m.safetensors", ""), "sample " + M + " --out {d}/x.npy", 2,
          {"m.safetensors"});
    model("header-length-huge", file("m.safetensors", std::string("\xff\xff\xff\xff\xff\xff\xff\x7f{}", 10)),
          "sample " + M + " --out {d}/x.npy", 2, {"m.safetensors"});
    model("header-not-json", file("m.safetensors", std::string("\x04\0\0\0\0\0\0\0{{{{", 12)),
          "sample " + M + " --out {d}/x.npy", 2, {"m.safetensors"});
    model("not-a-flowscope-model",
          [](const fs::path& d) {
              flowscope::SafeTensors f;
              f.tensors.push_back({"w", true, {2, 2}, {1, 2, 3, 4}});
              flowscope::writeSafetensors((d / "m.safetensors").string(), f);
          },
          "sample " + M + " --out {d}/x.npy", 2, {"not a Flowscope flow"});
    model("truncated-flow",
          [](const fs::path& d) {
              copyModel(d, "flow", "m");
              fs::resize_file(d / "m.safetensors", fs::file_size(d / "m.safetensors") - 100);
          },
          "sample " + M + " --out {d}/x.npy", 2, {"m.safetensors"});
    model("flow-given-to-eval-transformer", copied("flow"), "eval-transformer " + M, 2,
          {"not a Flowscope Transformer"});
    model("transformer-given-to-sample", copied("ot"), "sample " + M + " --out {d}/x.npy", 2,
          {"not a Flowscope flow"});
    model("sample-n-zero", copied("flow"), "sample " + M + " --n 0 --out {d}/x.npy", 2, {"--n"});
    model("sample-base-missing", copied("flow"), "sample " + M + " --base {d}/z.npy --out {d}/x.npy", 2,
          {"--base"});
    model("sample-base-wrong-shape", files({copied("flow"), file("z.csv", "1,2,3\n4,5,6\n")}),
          "sample " + M + " --base {d}/z.csv --out {d}/x.npy", 2, {"--base"});
    model("density-grid-one", copied("flow"), "density " + M + " --grid 1 --out {d}/x.npy", 2, {"--grid"});
    model("eval-huge-weights",
          [](const fs::path& d) {
              copyModel(d, "ot", "m");
              flowscope::SafeTensors f = flowscope::readSafetensors((d / "m.safetensors").string());
              for (auto& t : f.tensors)
                  for (double& v : t.data) v = v * 1e30 + 1e30;
              fs::remove(d / "m.safetensors");
              flowscope::writeSafetensors((d / "m.safetensors").string(), f);
          },
          "eval-transformer " + M, 1, {"not finite"});
    // A flow whose every weight is 3e38: its samples and densities are not finite, a failure, nothing
    // written.
    const auto hugeFlow = [](const fs::path& d) {
        copyModel(d, "flow", "m");
        flowscope::SafeTensors f = flowscope::readSafetensors((d / "m.safetensors").string());
        for (auto& t : f.tensors)
            for (double& v : t.data) v = 3e38;
        fs::remove(d / "m.safetensors");
        flowscope::writeSafetensors((d / "m.safetensors").string(), f);
    };
    model("density-huge-weights", hugeFlow, "density " + M + " --grid 8 --out {d}/x.npy", 1, {"not finite"});
    model("sample-huge-weights", hugeFlow, "sample " + M + " --n 16 --out {d}/x.npy", 1, {"not finite"});
    // Real checkpoints (flowscope-cli model, docs/models.md): a tiny GPT-2 folder at {d}/g, edited.
    const std::string layers = "model layers {d}/g --ids 1,2 --out {d}/h.npy";
    auto checkpoint = [](std::function<void(flowscope::SafeTensors&)> edit) {
        return [=](const fs::path& d) {
            flowscope::test::TinyModel m = flowscope::test::writeTinyGpt2(d / "g");
            edit(m.tensors);
            flowscope::writeSafetensors(m.dir + "/model.safetensors", m.tensors);
        };
    };
    auto rawWeights = [](std::string header, std::string payload) {
        return [=](const fs::path& d) {
            flowscope::test::writeTinyGpt2(d / "g");
            std::string bytes(8, '\0');
            for (int i = 0; i < 8; ++i) bytes[std::size_t(i)] = char(std::uint64_t(header.size()) >> (8 * i));
            writeText(d / "g" / "model.safetensors", bytes + header + payload);
        };
    };
    model("checkpoint-missing-key", checkpoint([](auto& t) { t.tensors.pop_back(); }), layers, 2,
          {"tensor 'ln_f.bias' is missing"});
    model("checkpoint-wrong-shape", checkpoint([](auto& t) {
              t.tensors[1].shape = {12, 16};
          }),
          layers, 2, {"tensor 'wpe.weight' has shape [12, 16], expected [16, 12]"});
    model("checkpoint-header-lies",
          rawWeights(R"({"wte.weight":{"dtype":"F32","shape":[2,2],"data_offsets":[0,1920]}})",
                     std::string(16, '\0')),
          layers, 2, {"tensor 'wte.weight': data_offsets"});
    model("checkpoint-huge-shape",
          rawWeights(R"({"wte.weight":{"dtype":"F16","shape":[2147483648,2147483648],"data_offsets":[0,8]}})",
                     std::string(8, '\0')),
          layers, 2, {"tensor 'wte.weight': shape exceeds the payload"});
    model("checkpoint-truncated",
          [](const fs::path& d) {
              flowscope::test::writeTinyGpt2(d / "g");
              fs::resize_file(d / "g" / "model.safetensors",
                              fs::file_size(d / "g" / "model.safetensors") - 20);
          },
          layers, 2, {"tensor 'ln_f.bias': data_offsets"});
    model("train-data-missing", {}, "train --data {d}/p.csv --iters 1 --out {d}/o.safetensors", 2,
          {"--data"});
    model("train-data-one-point", file("p.csv", "1,2\n"),
          "train --data {d}/p.csv --iters 1 --out {d}/o.safetensors", 2, {"--data"});
    model("train-data-all-zeros", file("p.csv", "0,0\n0,0\n0,0\n0,0\n"),
          "train --data {d}/p.csv --iters 2 --out {d}/o.safetensors", 2, {"--data", "copies of one point"});
    model("train-data-nan", file("p.csv", "1,2\nnan,3\n4,5\n"),
          "train --data {d}/p.csv --iters 1 --out {d}/o.safetensors", 2, {"--data"});
    // A FIFO never blocks a reader: refused by stat() before anything opens it.
    model("train-data-fifo", [](const fs::path& d) { mkfifo((d / "p.csv").c_str(), 0600); },
          "train --data {d}/p.csv --iters 1 --out {d}/o.safetensors", 2, {"--data", "not a regular file"});
    model("sample-base-fifo",
          [](const fs::path& d) {
              copyModel(d, "flow", "m");
              mkfifo((d / "z.npy").c_str(), 0600);
          },
          "sample " + M + " --base {d}/z.npy --out {d}/x.npy", 2, {"--base", "not a regular file"});
    model("sample-model-fifo", [](const fs::path& d) { mkfifo((d / "m.safetensors").c_str(), 0600); },
          "sample " + M + " --out {d}/x.npy", 2, {"not a regular file"});
    model("train-unknown-dataset", {}, "train --dataset spiral9 --iters 1 --out {d}/o.safetensors", 2,
          {"--dataset"});

    // ---- share strings ----
    auto share = [&](const std::string& name, const std::string& text, std::vector<std::string> message) {
        add({"share strings", name, {}, "simulate " + text + " --out {d}/t.npy", 2, std::move(message)});
    };
    share("empty-payload", "fs1.", {"share string"});
    share("bad-characters", "fs1.abc$def", {"share string", "character"});
    share("not-zlib", "fs1." + base64url("this is not a zlib stream"), {"share string"});
    share("truncated", "fs1." + base64url(deflated(scene())).substr(0, 40), {"share string"});
    share("unknown-version", "fs9." + base64url(deflated(scene())), {"share string", "version"});
    share("zlib-bomb", "{bomb}", {"share string", "4 MiB"});
    share("invalid-scene-inside", "fs1." + base64url(deflated(sceneWith("/n", "0"))), {"/n"});
    share("file-tokens-inside",
          "fs1." + base64url(deflated(sceneWith("/initial", R"({"kind": "file", "path": "/etc/passwd"})"))),
          {"share string", "file"});
    add({"share strings", "decode-with-scene-too", {}, "share --decode fs1.abc {d}/x.json", 2, {"--decode"}});

    // ---- outputs: collisions, inputs, directories, old sets ----
    const auto small = sceneFile(scene());
    auto out = [&](const std::string& name, std::function<void(const fs::path&)> setup,
                   const std::string& args, std::vector<std::string> message) {
        add({"outputs", name, setup, args, 2, std::move(message)});
    };
    out("simulate-out-is-its-record", small, "simulate " + S + " --out {d}/t.json", {"--out", "t.json"});
    out("simulate-record-is-the-scene", small, "simulate " + S + " --out {d}/s.npy", {"--out", "input"});
    out("simulate-out-is-the-scene-via-dots", small, "simulate " + S + " --out {d}/./s.json", {"--out"});
    out("simulate-out-is-a-link-to-the-scene",
        files({small, [](const fs::path& d) { fs::create_symlink(d / "s.json", d / "l.json"); }}),
        "simulate " + S + " --out {d}/l.npy", {"--out", "input"});
    out("simulate-out-into-missing-dir", small, "simulate " + S + " --out {d}/none/t.npy",
        {"--out", "does not exist"});
    out("simulate-out-under-a-file", small, "simulate " + S + " --out {d}/s.json/t.npy",
        {"--out", "not a directory"});
    out("simulate-out-is-a-directory",
        files({small, [](const fs::path& d) { fs::create_directory(d / "t.npy"); }}),
        "simulate " + S + " --out {d}/t.npy", {"--out", "directory"});
    out("simulate-record-is-a-directory",
        files({small, file("t.npy", "old trajectory"),
               [](const fs::path& d) { fs::create_directory(d / "t.json"); }}),
        "simulate " + S + " --out {d}/t.npy", {"--out", "directory"});
#ifdef FLOWSCOPE_GUI // a build with the GUI draws render's frames
    // A PNG sequence into a folder that holds files, or onto a file: the user's choice of --out (exit 2).
    out("render-frames-into-a-non-empty-folder",
        files({small,
               [](const fs::path& d) {
                   fs::create_directory(d / "frames");
                   writeText(d / "frames" / "mine.txt", "the user's");
               }}),
        "render " + S + " --frames 2 --size 64x48 --out {d}/frames/", {"--out", "not empty"});
    out("render-frames-onto-a-file", files({small, file("frames", "the user's")}),
        "render " + S + " --frames 2 --size 64x48 --out {d}/frames/", {"--out", "not a directory"});
#endif
    out("simulate-out-is-a-fifo",
        files({small, [](const fs::path& d) { mkfifo((d / "t.npy").c_str(), 0600); }}),
        "simulate " + S + " --out {d}/t.npy", {"--out", "not a regular file"});
    out("simulate-out-is-the-token-file",
        [](const fs::path& d) {
            writeText(d / "x.csv", "0,0\n1,1\n");
            writeText(d / "s.json",
                      sceneWith({{"/initial", R"({"kind": "file", "path": "x.csv"})"}, {"/n", "2"}}));
        },
        "simulate " + S + " --out {d}/x.csv", {"--out"});
    out("moments-companion-is-a-directory",
        files({sceneFile(gaussianMode("{}")),
               [](const fs::path& d) { fs::create_directory(d / "m_means.npy"); }}),
        "moments " + S + " --out {d}/m.npy", {"--out", "m_means.npy"});
    out("moments-out-is-the-scene", sceneFile(gaussianMode("{}")), "moments " + S + " --out " + S,
        {"--out", "input"});
    out("train-out-is-a-directory", [](const fs::path& d) { fs::create_directory(d / "m.safetensors"); },
        "train --dataset moons --iters 1 --out {d}/m.safetensors", {"--out", "directory"});
    out("train-out-is-the-data", file("p.csv", "1,2\n3,4\n5,6\n"),
        "train --data {d}/p.csv --iters 1 --out {d}/p.csv", {"--out"});
    out("train-out-into-missing-dir", {}, "train --dataset moons --iters 1 --out {d}/none/m.safetensors",
        {"--out", "does not exist"});
    out("sample-out-is-the-model", copied("flow"), "sample " + M + " --out " + M, {"--out", "input"});
    out("density-out-is-the-model", copied("flow"), "density " + M + " --out " + M, {"--out", "input"});
    // The model's record beside it is part of the model: sample, density and eval-transformer never write it.
    out("density-out-is-the-models-record", copied("flow"), "density " + M + " --out {d}/m.json",
        {"--out", "input"});
    out("sample-out-is-the-models-record", copied("flow"), "sample " + M + " --out {d}/m.json",
        {"--out", "input"});
    out("eval-out-is-the-models-record", copied("ot"), "eval-transformer " + M + " --out {d}/m.json",
        {"--out", "input"});
    out("eval-out-is-the-model", copied("ot"), "eval-transformer " + M + " --out " + M, {"--out", "input"});
    out("ranks-out-into-missing-dir", {}, "ranks --dims 3 --runs 1 --out {d}/none/r.json",
        {"--out", "does not exist"});
    out("train-transformer-out-into-missing-dir", {},
        "train-transformer --task A --iters 1 --out {d}/none/a.safetensors", {"--out", "does not exist"});
    add({"outputs",
         "simulate-replaces-an-old-set-whole",
         files({small, file("t.npy", "old trajectory"), file("t.json", "old record"),
                file(".flowscope-tmp-999999999-0123456789abcdef-t.npy", "a killed run's staged file")}),
         "simulate " + S + " --out {d}/t.npy",
         0,
         {"wrote"},
         {"t.npy", "t.json"}});

    add({"scene", "presets-with-an-argument", {}, "presets extra", 2, {"presets", "extra"}});
    add({"outputs",
         "out-name-over-255-bytes",
         small,
         "simulate " + S + " --out {d}/" + std::string(300, 'x') + ".npy",
         2,
         {"--out", "255 bytes"}});

    // ---- sweep journals: a line changed or forged is not trusted, a file that is not a journal is named
    // ----
    const std::string W = "sweep {d}/w.json --out {d}/out";
    std::vector<std::string> rerun = kSweepTable;
    rerun.push_back("out/journal/all.jsonl");
    const auto journalCase = [&](const std::string& name,
                                 std::function<void(std::vector<std::string>&)> tamper,
                                 std::vector<std::string> message) {
        Case k{"sweep journals", name, sweptThen(std::move(tamper)), W, 0, {}, rerun};
        k.verify = [message](const fs::path& d, const std::string& out) {
            sameTableAsRef(d);
            for (const std::string& w : message)
                EXPECT_NE(out.find(w), std::string::npos) << w << " in: " << out;
        };
        add(std::move(k));
    };
    journalCase( // one digit of a measure changed
        "changed-digit",
        [](std::vector<std::string>& lines) {
            std::string& line = lines.at(2);
            const std::size_t at = line.find_first_of("123456789", line.find("measures"));
            line[at] = line[at] == '9' ? '8' : char(line[at] + 1);
        },
        {"all.jsonl line 3 fails its checksum", "1 of 4 runs to do"});
    journalCase( // a run's line replaced by a well-formed one with NaN and Inf and no checksum
        "forged-nan-line",
        [](std::vector<std::string>& lines) {
            lines.erase(lines.begin() + 1);
            lines.push_back(R"({"measures":["nan","inf"],"run":0,"seconds":0.1,"valid":1})");
        },
        {"all.jsonl line 5 has no checksum", "1 of 4 runs to do"});
    journalCase( // a forged line with a made-up checksum
        "forged-checksum",
        [](std::vector<std::string>& lines) {
            lines.erase(lines.begin() + 3);
            lines.push_back(
                R"({"check":"0123456789abcdef","measures":[1,2],"run":2,"seconds":0.1,"valid":1})");
        },
        {"all.jsonl line 5 fails its checksum", "1 of 4 runs to do"});
    add({"sweep journals",
         "junk-file-in-journal",
         files({sweptThen({}), file("out/journal/notes.jsonl", "my notes\n")}),
         W,
         2,
         {"notes.jsonl", "is not a sweep journal"}});
    add({"sweep journals",
         "garbage-all-jsonl",
         files({sweptThen({}), file("out/journal/all.jsonl", "garbage\n{\"run\": 1}\n")}),
         W,
         2,
         {"all.jsonl", "is not a sweep journal"}});

    // ---- look-alikes: the user's own files and folders named like staged files survive every writer and
    // every model reader (recovery deleted them, folders with their contents) ----
    const auto lookAlikes = [](const fs::path& d) {
        writeText(d / "thesis.old-2019", "precious");
        writeText(d / "report.pdf.old-31337", "x");
        writeText(d / "t.npy.tmp-999999999", "named like the old staging names");
        writeText(d / "m.json.old-4", "y");
        fs::create_directory(d / "experiment.tmp-2019");
        writeText(d / "experiment.tmp-2019/results.csv", "data");
        fs::create_directory(d / "frames.old-7");
    };
    auto lookAlike = [&](const std::string& name, std::function<void(const fs::path&)> setup,
                         const std::string& args, std::vector<std::string> created) {
        add({"look-alikes", name, files({lookAlikes, std::move(setup)}), args, 0, {}, std::move(created)});
    };
    lookAlike("simulate", small, "simulate " + S + " --out {d}/t.npy", {"t.npy", "t.json"});
    lookAlike("moments", sceneFile(gaussianMode("{}")), "moments " + S + " --out {d}/m.npy",
              {"m.npy", "m_means.npy", "m_times.npy"});
    lookAlike("train", {},
              "train --dataset moons --iters 1 --batch 64 --eval-every 0 --quiet --out {d}/n.safetensors",
              {"n.safetensors", "n.json"});
    lookAlike("train-transformer", {}, "train-transformer --task A --iters 1 --quiet --out {d}/a.safetensors",
              {"a.safetensors", "a.json"});
    lookAlike("sample", copied("flow"), "sample " + M + " --n 16 --out {d}/s.npy", {"s.npy"});
    lookAlike("density", copied("flow"), "density " + M + " --grid 8 --reference 16 --out {d}/g.npy",
              {"g.npy"});
    lookAlike("eval-transformer", copied("ot"), "eval-transformer " + M + " --sets 4", {});
    lookAlike("share-decode", {},
              "share --decode fs1." + base64url(deflated(scene())) + " --out {d}/back.json", {"back.json"});
#ifdef FLOWSCOPE_GUI // a build with the GUI draws render's frames too
    lookAlike("render-gif", small, "render " + S + " --frames 2 --size 64x48 --out {d}/x.gif", {"x.gif"});
#endif

    // ---- signals ----
    for (const int sig : {SIGINT, SIGTERM, SIGHUP})
        add({"signals",
             std::string("simulate-") + strsignal(sig),
             files({sceneFile(bigLinearScene()), file("t.npy", "old trajectory"),
                    file("t.json", "old record")}),
             "simulate " + S + " --out {d}/t.npy",
             -sig,
             {},
             {},
             FLOWSCOPE_CLI,
             {},
             signalWhenStaged(sig, "t.npy")});

    // ---- a full disk (a 2 MiB tmpfs) ----
    for (const bool oldSet : {false, true})
        add({"full disk",
             oldSet ? "simulate-over-an-old-set" : "simulate-fresh",
             [oldSet](const fs::path& d) {
                 fs::create_directory(d / "disk");
                 if (mount("tmpfs", (d / "disk").c_str(), "tmpfs", 0, "size=2m") != 0) return;
                 writeText(d / "disk/s.json", bigLinearScene());
                 if (oldSet) {
                     writeText(d / "disk/t.npy", "old trajectory");
                     writeText(d / "disk/t.json", "old record");
                 }
             },
             "simulate {d}/disk/s.json --out {d}/disk/t.npy",
             1,
             {"t.npy"},
             {},
             FLOWSCOPE_CLI,
             {},
             {},
             rootSkip});
    add({"full disk",
         "train",
         [](const fs::path& d) {
             fs::create_directory(d / "disk");
             mount("tmpfs", (d / "disk").c_str(), "tmpfs", 0, "size=8k");
         },
         "train --dataset moons --iters 1 --batch 64 --eval-every 0 --quiet --out {d}/disk/m.safetensors",
         1,
         {"m.safetensors"},
         {},
         FLOWSCOPE_CLI,
         {},
         {},
         rootSkip});

    // ---- resource limits ----
    auto limit = [&](const std::string& name, const std::string& text, const std::string& cmd,
                     std::vector<std::string> message) {
        add({"resource limits", name, sceneFile(text),
             cmd + " " + S + " --out {d}/t" + (cmd == "moments" ? ".json" : ".npy"), 2, std::move(message)});
    };
    limit("steps-at-maximum", sceneWith("/integrator/steps", "2147483647"), "simulate",
          {"/integrator/steps", "memory limit"});
    limit(
        "n-and-d-at-maximum",
        R"({"d": 1024, "n": 16777216, "initial": {"kind": "gaussian", "mean": 0, "cov": 1}, "attention": {"type": "linear", "heads": [{"Q": 1, "K": 1, "V": 1}]}})",
        "simulate", {"memory limit"});
    limit("paper-max-iter-1e9", gaussianMode(R"({"method": "paper_euler", "max_iter": 1000000000})"),
          "moments", {"/moments/max_iter", "memory limit"});
    limit("grid-1000x1000", gaussianMode(R"({"grid": {"nu": 1000, "nc": 1000}})", 1000), "moments",
          {"/moments/grid", "memory limit"});
    add({"resource limits",
         "max-memory-1K",
         small,
         "simulate " + S + " --out {d}/t.npy --max-memory 1K",
         2,
         {"--max-memory", "memory limit"}});
    // Runs that would take days: refused by --max-time before they start, naming the field.
    const auto slow = [&](const std::string& name, const std::string& text,
                          std::vector<std::string> message) {
        add({"resource limits", name, sceneFile(text), "simulate " + S + " --out {d}/t.npy --max-time 1m", 2,
             std::move(message)});
    };
    slow(
        "n-at-maximum-one-step",
        R"({"d": 2, "n": 16777216, "initial": {"kind": "gaussian", "mean": 0, "cov": 1}, "attention": {"type": "softmax", "heads": [{"Q": 1, "K": 1, "V": -1}]}, "integrator": {"method": "euler", "steps": 1}})",
        {"/n", "above --max-time 1 min 0 s"});
    slow("steps-and-every-at-maximum",
         sceneWith({{"/integrator/steps", "2147483647"}, {"/output/every", "2147483647"}}),
         {"/integrator/steps", "--max-time"});
    slow("sinkhorn-iterations-1e6-tol-0", // 200 tokens: about 15 min estimated, past any machine's noise
         sceneWith({{"/n", "200"},
                    {"/attention/type", "\"sinkhorn\""},
                    {"/attention/sinkhorn", R"({"iterations": 1000000, "tol": 0})"}}),
         {"/attention/sinkhorn/iterations", "--max-time"});
    add({"resource limits",
         "max-time-garbage",
         small,
         "simulate " + S + " --out {d}/t.npy --max-time soon",
         2,
         {"--max-time", "90s, 5m"}});
    add({"resource limits", // above the machine: refused up front, not a std::bad_alloc mid-run
         "max-memory-above-the-machine",
         sceneFile(
             R"({"d": 1024, "n": 16777216, "initial": {"kind": "gaussian", "mean": 0, "cov": 1}, "attention": {"type": "linear", "heads": [{"Q": 1, "K": 1, "V": 1}]}})"),
         "simulate " + S + " --out {d}/t.npy --max-memory 1000T",
         2,
         {"more than this machine has", "cannot grant it"}});
    add({"resource limits",
         "max-memory-garbage",
         small,
         "simulate " + S + " --out {d}/t.npy --max-memory lots",
         2,
         {"--max-memory"}});
    add({"resource limits",
         "max-memory-zero",
         small,
         "simulate " + S + " --out {d}/t.npy --max-memory 0",
         2,
         {"--max-memory"}});
    add({"resource limits",
         "dopri5-atol-and-min-step-1e-300",
         sceneFile(sub(sub(scene(), "\"rk4\"", "\"dopri5\""), "\"T\": 1.0",
                       "\"T\": 1.0, \"rtol\": 1e-13, \"atol\": 1e-300, \"min_step\": 1e-300")),
         "simulate " + S + " --out {d}/t.npy",
         0,
         {"wrote"},
         {"t.npy", "t.json"}});
    add({"resource limits",
         "dopri5-horizon-1e300",
         sceneFile(sub(sub(scene(), "\"rk4\"", "\"dopri5\""), "\"T\": 1.0", "\"T\": 1e300")),
         "simulate " + S + " --out {d}/t.npy",
         0,
         {"sub-steps"},
         {"t.npy", "t.json"}});
    add({"resource limits",
         "every-huge",
         small,
         "simulate " + S + " --out {d}/t.npy --every 99999999999",
         2,
         {"--every"}});

    // A file-size limit (ulimit -f): the write fails with EFBIG, a runtime failure that leaves nothing,
    // instead of SIGXFSZ killing the process with its staged file left behind.
    const auto prlimit = [] { return fs::exists("/usr/bin/prlimit") ? "" : "needs prlimit (util-linux)"; };
    add({"resource limits",
         "simulate-past-the-file-size-limit",
         files({sceneFile(bigLinearScene()), file("t.npy", "old trajectory"), file("t.json", "old record")}),
         "--fsize=1000000 " + std::string(FLOWSCOPE_CLI) + " simulate " + S + " --out {d}/t.npy",
         1,
         {"t.npy"},
         {},
         "/usr/bin/prlimit",
         {},
         {},
         prlimit});
    add({"resource limits",
         "train-past-the-file-size-limit",
         {},
         "--fsize=4000 " + std::string(FLOWSCOPE_CLI) +
             " train --dataset moons --iters 1 --batch 64 --eval-every 0 --quiet --out {d}/m.safetensors",
         1,
         {"m.safetensors"},
         {},
         "/usr/bin/prlimit",
         {},
         {},
         prlimit});

    // ---- the app's start-up flags (before any window: QT_QPA_PLATFORM=offscreen) ----
#ifdef FLOWSCOPE_GUI
    auto gui = [&](const std::string& name, std::function<void(const fs::path&)> setup,
                   const std::string& args, int code, std::vector<std::string> message) {
        // Qt warns on stderr when XDG_RUNTIME_DIR is unset or not private: give it one.
        const fs::path xdg =
            fs::temp_directory_path() / ("flowscope-hostile-xdg-" + std::to_string(getuid()));
        fs::create_directories(xdg);
        fs::permissions(xdg, fs::perms::owner_all);
        add({"GUI startup flags",
             name,
             setup,
             args,
             code,
             std::move(message),
             {},
             FLOWSCOPE_GUI,
             {"QT_QPA_PLATFORM=offscreen", "HOME=" + xdg.string(), "XDG_RUNTIME_DIR=" + xdg.string()}});
    };
    gui("after-steps-negative", {}, "--after-steps -1", 2, {"--after-steps"});
    gui("after-steps-word", {}, "--after-steps many", 2, {"--after-steps"});
    gui("timeout-zero", {}, "--timeout 0", 2, {"--timeout"});
    gui("size-zero", {}, "--size 0x0", 2, {"--size"});
    gui("size-huge", {}, "--size 100000x100000", 2, {"--size"});
    gui("view-unknown", {}, "--view sideways", 2, {"--view"});
    gui("backend-unknown", {}, "--backend cuda", 2, {"--backend"});
    gui("transformer-C", {}, "--transformer C", 2, {"--transformer"});
    gui("side-by-side-alone", {}, "--side-by-side", 2, {"--side-by-side"});
    gui("two-scenes", small, S + " " + S, 2, {"--scene"});
    gui("screenshot-into-missing-dir", small, S + " --screenshot {d}/none/x.png", 2,
        {"--screenshot", "does not exist"});
    gui("screenshot-over-the-scene", small, S + " --screenshot " + S, 2, {"--screenshot", "input"});
    gui("model-with-train", {}, "--model {d}/m.safetensors --train moons", 2, {"--model"});
    // An opened model is paused: --after-steps K must not wait for iteration K (it waited for the 300 s
    // time-out). Drawn for real: under Xvfb.
    add({"GUI startup flags",
         "model-screenshot-ends",
         copied("flow"),
         std::string(FLOWSCOPE_GUI) +
             " --model {d}/m.safetensors --screenshot {d}/shot.png --after-steps 50 --size 800x600 --timeout "
             "60",
         0,
         {},
         {"shot.png"},
         FLOWSCOPE_WITH_XVFB,
         {},
         {},
         [] { return fs::exists("/usr/bin/Xvfb") ? "" : "needs Xvfb"; }});
#endif
    return c;
}

void PrintTo(const Case& k, std::ostream* os) {
    *os << k.category << ": " << k.name;
}

class Hostile : public ::testing::TestWithParam<Case> {};

TEST_P(Hostile, HandledWithoutLossOrRunaway) {
    const Case& k = GetParam();
    if (k.skip && !k.skip().empty()) GTEST_SKIP() << k.skip();
    const fs::path dir =
        fs::temp_directory_path() / ("flowscope-hostile-" + std::to_string(getpid()) + "-" + k.name);
    fs::remove_all(dir);
    fs::create_directories(dir);
    if (k.setup) k.setup(dir);
    const fs::path root = k.category == "full disk" ? dir / "disk" : dir;
    if (k.category == "full disk") {
        struct stat a {
        }, b{};
        stat(dir.c_str(), &a);
        stat(root.c_str(), &b);
        if (a.st_dev == b.st_dev) GTEST_SKIP() << "cannot mount a tmpfs here";
    }
    const auto before = snapshot(root);

    std::string args = k.args;
    for (std::size_t at; (at = args.find("{d}")) != std::string::npos;) args.replace(at, 3, dir.string());
    // A share string of 64 MiB of spaces deflated (~90 KB): made here, for its case only (half a second of
    // zlib that every process of the suite paid when it was made with the table).
    if (const std::size_t at = args.find("{bomb}"); at != std::string::npos)
        args.replace(at, 6, "fs1." + base64url(deflated(std::string(64 << 20, ' '))));
    std::vector<std::string> argv = words(args);
    // FLOWSCOPE_HOSTILE_CLI runs the table against another build of the CLI (e.g. an older one, to see
    // which cases it fails).
    const char* other = std::getenv("FLOWSCOPE_HOSTILE_CLI");
    argv.insert(argv.begin(), other && k.program == FLOWSCOPE_CLI ? std::string(other) : k.program);
    const auto start = std::chrono::steady_clock::now();
    const ProcessRun r = runProcess(argv, k.env,
                                    k.whileRunning ? [&](pid_t pid) { k.whileRunning(pid, dir); }
                                                   : std::function<void(pid_t)>{});
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const std::string shown = r.out.size() > 2000 ? r.out.substr(0, 2000) + "…" : r.out;

    EXPECT_EQ(r.code, k.code) << shown;
    EXPECT_LT(r.peakKb, kPeakKbCap) << "peak memory " << r.peakKb / 1024 << " MB";
    EXPECT_LT(seconds, 100.0);
    if (k.code == 2) { // bad input: one short line
        std::string text = r.out;
        while (!text.empty() && text.back() == '\n') text.pop_back();
        EXPECT_EQ(text.find('\n'), std::string::npos) << "more than one line:\n" << shown;
        EXPECT_LT(r.out.size(), 1200u) << shown;
    }
    std::string last = r.out;
    while (!last.empty() && last.back() == '\n') last.pop_back();
    last = last.substr(last.rfind('\n') == std::string::npos ? 0 : last.rfind('\n') + 1);
    for (const std::string& w : k.message)
        EXPECT_NE(last.find(w), std::string::npos) << "'" << w << "' in: " << shown;

    const auto after = snapshot(root);
    for (const auto& [name, content] : after) EXPECT_FALSE(isTemporary(name)) << "stray " << name;
    if (k.code != 0) { // nothing written, nothing changed
        EXPECT_EQ(after, before) << shown;
    } else {
        for (const auto& [name, content] : before)
            if (!isTemporary(name) &&
                std::find(k.created.begin(), k.created.end(), name) == k.created.end()) {
                ASSERT_TRUE(after.count(name)) << name;
                EXPECT_EQ(after.at(name), content) << name;
            }
        for (const std::string& name : k.created) {
            ASSERT_TRUE(after.count(name)) << name;
            if (before.count(name)) EXPECT_NE(after.at(name), before.at(name)) << name << " was not replaced";
        }
        EXPECT_EQ(after.size(), before.size() + k.created.size() -
                                    std::count_if(k.created.begin(), k.created.end(),
                                                  [&](const std::string& n) { return before.count(n) > 0; }) -
                                    std::count_if(before.begin(), before.end(),
                                                  [](const auto& e) { return isTemporary(e.first); }));
    }
    if (k.verify && r.code == 0) k.verify(dir, r.out);
    if (k.category == "full disk") umount(root.c_str());
    fs::remove_all(dir);
}

std::string caseName(const ::testing::TestParamInfo<Case>& info) {
    std::string n = info.param.category + "_" + info.param.name;
    for (char& ch : n)
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
    return n;
}

INSTANTIATE_TEST_SUITE_P(Suite, Hostile, ::testing::ValuesIn(cases()), caseName);

// The table itself: at least 100 cases, every category present.
TEST(HostileTable, CoversEveryCategoryWithAtLeastAHundredCases) {
    std::map<std::string, int> counts;
    for (const Case& k : cases()) ++counts[k.category];
    std::size_t total = 0;
    for (const auto& [category, n] : counts) total += std::size_t(n);
    EXPECT_GE(total, 100u);
    for (const char* category : {"scene", "token files", "models", "share strings", "outputs", "look-alikes",
                                 "signals", "full disk", "resource limits", "sweep journals"})
        EXPECT_GT(counts[category], 0) << category;
#ifdef FLOWSCOPE_GUI
    EXPECT_GT(counts["GUI startup flags"], 0);
#endif
}

} // namespace
