#include "engine/scene/RunBudget.h"

#include "engine/core/Text.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <sys/sysinfo.h>
#include <unistd.h>

namespace flowscope {

namespace {

constexpr double kDouble = 8;
constexpr double kJsonNumber = 48; // a number in an nlohmann::json array (16) and its text when dumped (~32)

std::string count(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, v < 1e7 ? "%.0f" : "%.3g", v);
    return buf;
}

} // namespace

RunBudget particleRunBudget(const Scene& s, bool withOutput) {
    const double n = s.n, d = s.d, heads = std::max(1, s.attention.headCount());
    const double frames = std::floor(double(s.integrator.steps) / s.output.every) + 2; // t = 0, the end
    const double perFrame = kDouble * (n * d + (s.output.entropy ? n : 0) + d * d + d + 16);
    // The integrator's stages and the field's buffers (Dormand-Prince keeps ten N x d arrays), the Sinkhorn
    // potentials, the initial tokens.
    const double working = kDouble * (16 * n * d + 2 * heads * n);
    RunBudget b;
    b.records = frames;
    b.bytes = frames * perFrame + working;
    if (withOutput) b.bytes += frames * (kDouble * n * d + kJsonNumber * (d * d + d + 8));
    b.pointer = frames > n ? "/integrator/steps" : "/n";
    b.explanation = count(frames) + " recorded frames (/integrator/steps " +
                    std::to_string(s.integrator.steps) + " / /output/every " +
                    std::to_string(s.output.every) + ", plus t = 0 and the end) of " + std::to_string(s.n) +
                    " x " + std::to_string(s.d) + " tokens (/n, /d)";
    return b;
}

RunBudget liveRunBudget(const Scene& s, std::uint64_t historyBytes) {
    RunBudget b = particleRunBudget(s, false);
    const double frameBytes = kDouble * double(s.n) * (s.d + (s.output.entropy ? 1 : 0));
    const double kept = std::min(b.records, std::floor(double(historyBytes) / frameBytes) + 2);
    b.bytes -= (b.records - kept) * frameBytes;
    b.records = kept;
    b.pointer = "/n";
    return b;
}

double momentStateBytes(const Scene& s, bool jsonOutput) {
    const double d = s.d, numbers = d * d + d + 1; // covariance, mean, time
    return numbers * (kDouble + (jsonOutput ? kJsonNumber : kDouble));
}

RunBudget momentsRunBudget(const Scene& s, bool jsonOutput) {
    const ConeGridSpec& g = s.moments.grid;
    const double trajectories = g.enabled() && s.d == 2 ? double(g.nu) * double(g.nc) : 1.0;
    const bool paper = s.moments.method == MomentMethod::PaperEuler;
    const double perTrajectory =
        paper ? std::floor(double(s.moments.maxIter) / s.output.every) + 2 : double(s.integrator.steps) + 2;
    RunBudget b;
    // Adaptive trajectories record up to T unless an event stops them: the worst case is the usual case.
    // Paper Euler ones stop at blow-up or convergence, most long before max_iter (Fig 3(a): 1184 runs, all
    // blown up within a few hundred steps of 100000): one trajectory's worst case is checked here, the
    // total while the run goes (MomentSolveOptions::maxRecordedStates).
    b.records = paper ? perTrajectory + 2 * (trajectories - 1) : trajectories * perTrajectory;
    b.bytes = b.records * momentStateBytes(s, jsonOutput);
    b.pointer = paper                          ? "/moments/max_iter"
                : trajectories > perTrajectory ? "/moments/grid"
                                               : "/integrator/steps";
    b.explanation = paper ? "one trajectory of up to " + count(perTrajectory) +
                                " recorded states (/moments/max_iter " + std::to_string(s.moments.maxIter) +
                                " / /output/every " + std::to_string(s.output.every) + ")"
                          : count(trajectories) + " trajectories (/moments/grid " + std::to_string(g.nu) +
                                " x " + std::to_string(g.nc) + ") of up to " + count(perTrajectory) +
                                " recorded states (/integrator/steps " + std::to_string(s.integrator.steps) +
                                ")";
    b.explanation += " of a " + std::to_string(s.d) + " x " + std::to_string(s.d) + " covariance";
    return b;
}

std::uint64_t defaultMemoryLimit() {
    const long pages = ::sysconf(_SC_PHYS_PAGES), size = ::sysconf(_SC_PAGE_SIZE);
    if (pages <= 0 || size <= 0) return std::uint64_t(8) << 30;
    return std::uint64_t(pages) * std::uint64_t(size) / 2;
}

std::uint64_t machineMemory() {
    struct sysinfo info {};
    if (::sysinfo(&info) != 0) return 0;
    return (std::uint64_t(info.totalram) + std::uint64_t(info.totalswap)) * std::uint64_t(info.mem_unit);
}

void checkRunBudget(const RunBudget& b, std::uint64_t limit, const std::string& hint) {
    const double machine = double(machineMemory());
    if (machine > 0 && b.bytes > machine && double(limit) >= machine)
        throw SceneError(b.pointer, "this run would need about " + formatBytes(b.bytes) + " for " +
                                        b.explanation + ", more than this machine has (" +
                                        formatBytes(machine) + " of memory and swap; a memory limit of " +
                                        formatBytes(double(limit)) + " cannot grant it)");
    if (b.bytes <= double(limit)) return;
    throw SceneError(b.pointer, "this run would need about " + formatBytes(b.bytes) + " for " +
                                    b.explanation + ", above the memory limit of " +
                                    formatBytes(double(limit)) + " (" + hint + ")");
}

std::uint64_t parseByteSize(const std::string& text) {
    auto [v, ok, unit] = splitNumberAndUnit(text);
    if (!unit.empty() && (unit.back() == 'B' || unit.back() == 'b')) unit.pop_back();
    if (unit.size() == 2 && (unit[1] == 'i' || unit[1] == 'I')) unit.pop_back();
    double scale = 1;
    if (unit == "K" || unit == "k")
        scale = 1024.0;
    else if (unit == "M" || unit == "m")
        scale = 1024.0 * 1024;
    else if (unit == "G" || unit == "g")
        scale = 1024.0 * 1024 * 1024;
    else if (unit == "T" || unit == "t")
        scale = 1024.0 * 1024 * 1024 * 1024;
    else if (!unit.empty())
        ok = false;
    const double bytes = v * scale;
    if (!ok || !std::isfinite(bytes) || bytes < 1 || bytes > 1.8e19)
        throw std::invalid_argument("expected a size such as 512M, 8G or 1.5GiB (K, M, G, T: powers of "
                                    "1024; a bare number is bytes), got '" +
                                    text.substr(0, 40) + "'");
    return std::uint64_t(bytes);
}

std::string formatBytes(double bytes) {
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    int u = 0;
    while (bytes >= 1024 && u < 6) {
        bytes /= 1024;
        ++u;
    }
    char buf[32];
    std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", bytes, units[u]);
    return buf;
}

} // namespace flowscope
