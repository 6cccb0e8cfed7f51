// Flowscope engine: training settings by name (TrainerSettings.h).
#include "engine/flows/TrainerSettings.h"

#include "engine/core/Text.h"

#include <cmath>

namespace flowscope::flows {

namespace {

using Given = std::function<std::optional<std::string>(std::string_view)>;

[[noreturn]] void fail(std::string_view name, const std::string& why) {
    throw TrainerSettingError(std::string(name), why);
}

long integerSetting(std::string_view name, const std::string& text, long lo, long hi) {
    try {
        std::size_t used = 0;
        const long v = std::stol(text, &used);
        if (used == text.size() && v >= lo && v <= hi) return v;
    } catch (...) {
    }
    fail(name, "expected an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " +
                   quoteForMessage(text));
}

double positiveSetting(std::string_view name, const std::string& text, bool allowZero = false) {
    double v = 0; // parseDouble: a subnormal value is a number (std::stod would throw)
    if (parseDouble(text, v) == NumberText::Number && std::isfinite(v) && (v > 0 || (allowZero && v == 0)))
        return v;
    fail(name, std::string("expected a ") + (allowZero ? "non-negative" : "positive") + " number, got " +
                   quoteForMessage(text));
}

bool switchSetting(std::string_view name, const std::string& text) {
    if (text == "true" || text == "1") return true;
    if (text == "false" || text == "0") return false;
    fail(name, "expected true or false (or 1 or 0), got " + quoteForMessage(text));
}

RwpoKernel kernelSetting(std::string_view name, const std::string& text) {
    if (text == "corrected" || text == "0") return RwpoKernel::Corrected;
    if (text == "as-printed" || text == "1") return RwpoKernel::AsPrinted;
    if (text == "separable" || text == "2") return RwpoKernel::Separable;
    fail(name, "expected corrected, as-printed or separable (or 0, 1, 2), got " + quoteForMessage(text));
}

// A long setting read into `out` where given.
template <class T> void integer(const Given& given, std::string_view name, T& out, long lo, long hi) {
    if (const auto v = given(name)) out = T(integerSetting(name, *v, lo, hi));
}
void positive(const Given& given, std::string_view name, double& out, bool allowZero = false) {
    if (const auto v = given(name)) out = positiveSetting(name, *v, allowZero);
}
void onOff(const Given& given, std::string_view name, bool& out) {
    if (const auto v = given(name)) out = switchSetting(name, *v);
}

} // namespace

TrainerSettingError::TrainerSettingError(std::string n, std::string w)
    : std::invalid_argument(n + ": " + w), name(std::move(n)), why(std::move(w)) {}

const std::vector<std::string_view>& trainerSettingNames() {
    static const std::vector<std::string_view> names = {
        "dataset",          "rwpo",         "kernel",         "include_self",
        "rwpo_logdet",      "drift_logdet", "layers",         "width",
        "lambda0",          "beta0",        "train_lambda",   "train_beta",
        "transport_weight", "hjb_weight",   "batch",          "lr",
        "lr_final",         "warmup",       "resample_every", "reference_draws",
        "reference_size",   "clip_median",  "average_iters",  "seed",
        "iterations"};
    return names;
}

std::string trainerSettingText(std::string_view name, const nlohmann::json& v) {
    if (v.is_string()) return v.get<std::string>();
    if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
    if (v.is_number()) {
        const double x = v.get<double>();
        if (x == std::round(x) && std::fabs(x) < 9007199254740992.0) return std::to_string((long long)x);
        return v.dump();
    }
    fail(name, "expected a number, a string or true/false, got " + quoteForMessage(v.dump()));
}

void readTrainerSettings(TrainerConfig& c, const Given& given) {
    if (const auto v = given("dataset")) {
        if (!isDatasetName(*v)) {
            std::string names;
            for (const std::string& n : datasetNames()) names += (names.empty() ? "" : ", ") + n;
            fail("dataset", quoteForMessage(*v) + " is not one of " + names);
        }
        c.dataset = *v;
    }
    FlowConfig& f = c.flow;
    onOff(given, "rwpo", f.rwpo);
    if (const auto v = given("kernel")) f.rwpoOptions.kernel = kernelSetting("kernel", *v);
    // Leave-one-out is the default (FlowConfig); include_self is the paper's softmax over l = j too.
    bool includeSelf = !f.rwpoOptions.leaveOneOut;
    onOff(given, "include_self", includeSelf);
    f.rwpoOptions.leaveOneOut = !includeSelf;
    // Exact needs d = 2 or 3 for a vector kernel (d <= 3 for the drift): points of other dimensions
    // default to first order.
    const bool vectorKernel = f.rwpoOptions.kernel != RwpoKernel::Separable;
    const std::string rwpoLogDet =
        given("rwpo_logdet")
            .value_or(f.rwpoOptions.exactLogDet && (f.d == 2 || f.d == 3 || !vectorKernel) ? "exact"
                                                                                           : "first-order");
    if (rwpoLogDet != "exact" && rwpoLogDet != "first-order")
        fail("rwpo_logdet", quoteForMessage(rwpoLogDet) + " is not exact or first-order");
    f.rwpoOptions.exactLogDet = rwpoLogDet == "exact";
    if (f.rwpoOptions.exactLogDet && vectorKernel && f.d != 2 && f.d != 3)
        fail("rwpo_logdet", "exact needs points of dimension 2 or 3 (or the separable kernel)");
    const std::string driftLogDet =
        given("drift_logdet").value_or(f.exactDriftLogDet && f.d <= 3 ? "exact" : "first-order");
    if (driftLogDet != "exact" && driftLogDet != "first-order")
        fail("drift_logdet", quoteForMessage(driftLogDet) + " is not exact or first-order");
    f.exactDriftLogDet = driftLogDet == "exact";
    if (f.exactDriftLogDet && f.d > 3) fail("drift_logdet", "exact needs points of dimension <= 3");
    integer(given, "layers", f.layers, 1, 256);
    integer(given, "width", f.width, 1, 1024);
    positive(given, "lambda0", f.lambda0);
    positive(given, "beta0", f.beta0);
    onOff(given, "train_lambda", f.trainLambda); // frozen by default (FlowConfig)
    onOff(given, "train_beta", f.trainBeta);
    positive(given, "transport_weight", f.transportWeight, true);
    positive(given, "hjb_weight", f.hjbWeight, true);
    integer(given, "batch", c.batch, 2, 65536);
    positive(given, "lr", c.adam.lr);
    positive(given, "lr_final", c.adam.lrFinal, true);
    integer(given, "warmup", c.adam.warmupSteps, 0, 100000000);
    integer(given, "resample_every", c.resampleEvery, 0, 1000000);
    integer(given, "reference_draws", c.referenceDraws, 1, 256);
    integer(given, "reference_size", c.referenceSize, 0, 65536);
    if (c.referenceSize == 1) fail("reference_size", "expected 0 (the batch size) or >= 2, got 1");
    positive(given, "clip_median", c.adam.clipToMedian, true);
    integer(given, "average_iters", c.averageIterations, 0, 100000000);
    long seed = 0;
    integer(given, "seed", seed, 0, 1L << 62);
    f.seed = std::uint64_t(seed);
    c.dataSeed = std::uint64_t(seed) + 1;
    integer(given, "iterations", c.adam.decaySteps, 1, 100000000);
}

} // namespace flowscope::flows
