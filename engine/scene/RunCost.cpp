#include "engine/scene/RunCost.h"

#include "engine/core/Text.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace flowscope {

namespace {

// Rates of flowscope-cli simulate at d = 3, N = 2048, RK4, one head, measured on the reference machine (2
// cores; docs/outputs.md): pair interactions times (d + 2) per second, and Sinkhorn's row-and-column passes
// over the pairs per second.
constexpr double kPairDimsPerSecond64 = 2e9;         // float64 softmax: 80 evaluations of 2048^2 in 0.80 s
constexpr double kPairDimsPerSecond32 = 4.5e9;       // float32 softmax: the same in 0.34 s
constexpr double kSinkhornPairsPerSecond64 = 3.5e9;  // float64: 80 x 100 passes of 2048^2 pairs in 9.6 s
constexpr double kSinkhornPairsPerSecond32 = 1.4e10; // float32: the same in 2.3 s
constexpr double kGpuSpeedUp = 100;

int evaluationsPerStep(Method m) {
    switch (m) {
    case Method::Euler:
        return 1;
    case Method::Heun:
        return 2;
    case Method::Rk4:
        return 4;
    case Method::DormandPrince:
        return 6; // per accepted sub-step, at the nominal step (adaptive: a guess)
    }
    return 4;
}

std::string number(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3g", v);
    return buf;
}

} // namespace

RunCost particleRunCost(const Scene& s, bool gpu) {
    const double n = s.n, d = s.d, heads = std::max(1, s.attention.headCount());
    const double evaluations = double(s.integrator.steps) * evaluationsPerStep(s.integrator.method);
    const bool f32 = s.precision == Precision::Float32;
    // The GPU backends compute in float32 whatever the scene's precision.
    const double pairRate = gpu   ? kGpuSpeedUp * kPairDimsPerSecond32
                            : f32 ? kPairDimsPerSecond32
                                  : kPairDimsPerSecond64;
    const double sinkhornRate = gpu   ? kGpuSpeedUp * kSinkhornPairsPerSecond32
                                : f32 ? kSinkhornPairsPerSecond32
                                      : kSinkhornPairsPerSecond64;
    const double pairs = (s.attention.masked ? 0.5 : 1.0) * n * n;
    RunCost c;
    double perEvaluation = 0;
    std::string work;
    if (s.attention.type == AttentionType::Linear) {
        perEvaluation = heads * n * d * d / pairRate;
        work = number(evaluations) + " field evaluations of N d^2 = " + number(n * d * d) + " (/n, /d)";
    } else {
        perEvaluation = heads * pairs * (d + 2) / pairRate;
        work = number(evaluations) + " field evaluations of " + number(heads * pairs) +
               " pair interactions (/n" + (heads > 1 ? ", the heads" : "") + ")";
        if (s.attention.type == AttentionType::Sinkhorn) {
            const double passes = s.attention.sinkhornIterations;
            perEvaluation += heads * passes * pairs / sinkhornRate;
            work += " and up to " + number(passes) + " Sinkhorn passes each (/attention/sinkhorn/iterations)";
        }
    }
    const double records = std::floor(double(s.integrator.steps) / std::max(1, s.output.every)) + 2;
    const double recordCost = s.output.entropy && s.attention.type != AttentionType::Linear
                                  ? records * heads * pairs * (d + 2) / pairRate
                                  : 0;
    c.seconds = evaluations * perEvaluation + recordCost;
    c.explanation =
        work + (recordCost > 0 ? ", and the entropy pass at " + number(records) + " records" : "");
    // The pointer: the factor that drives the cost most.
    if (s.attention.type == AttentionType::Sinkhorn && s.attention.sinkhornIterations > 1000)
        c.pointer = "/attention/sinkhorn/iterations";
    else if (recordCost > evaluations * perEvaluation)
        c.pointer = "/output/every";
    else if (double(s.integrator.steps) > n)
        c.pointer = "/integrator/steps";
    else
        c.pointer = "/n";
    return c;
}

std::string runCostNotice(const RunCost& c) {
    if (c.seconds < 60) return {};
    return "this run will take about " + formatDuration(c.seconds) + " (" + c.explanation +
           "; estimated from this project's two-core reference rates); --max-time refuses such runs";
}

void checkRunCost(const RunCost& c, double maxSeconds) {
    if (maxSeconds <= 0 || c.seconds <= maxSeconds) return;
    throw SceneError(c.pointer, "this run would take about " + formatDuration(c.seconds) + " (" +
                                    c.explanation + "), above --max-time " + formatDuration(maxSeconds));
}

double parseDuration(const std::string& text) {
    const auto [v, number, unit] = splitNumberAndUnit(text);
    const double scale = unit.empty() || unit == "s"    ? 1
                         : unit == "m" || unit == "min" ? 60
                         : unit == "h"                  ? 3600
                         : unit == "d"                  ? 86400
                                                        : 0;
    if (!number || scale == 0 || !std::isfinite(v) || !(v > 0))
        throw std::invalid_argument("expected a positive duration such as 90, 90s, 5m, 1.5h or 2d, got '" +
                                    text + "'");
    return v * scale;
}

std::string formatDuration(double seconds) {
    if (!std::isfinite(seconds)) return "forever";
    char buf[64];
    if (seconds < 10)
        std::snprintf(buf, sizeof buf, "%.1f s", seconds);
    else if (seconds < 60)
        std::snprintf(buf, sizeof buf, "%.0f s", seconds);
    else if (seconds < 3600)
        std::snprintf(buf, sizeof buf, "%d min %d s", int(seconds / 60), int(std::fmod(seconds, 60)));
    else if (seconds < 86400 * 2)
        std::snprintf(buf, sizeof buf, "%d h %d min", int(seconds / 3600),
                      int(std::fmod(seconds, 3600) / 60));
    else if (seconds < 86400 * 365 * 2)
        std::snprintf(buf, sizeof buf, "%.0f days", seconds / 86400);
    else
        std::snprintf(buf, sizeof buf, "%.3g years", seconds / (86400 * 365.25));
    return buf;
}

} // namespace flowscope
