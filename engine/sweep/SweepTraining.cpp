// Flowscope engine: a sweep's training modes (SweepTraining.h).
#include "engine/sweep/SweepTraining.h"

#include "engine/core/Text.h"
#include "engine/flows/TrainerSettings.h"
#include "engine/inverse/Problem.h"
#include "engine/io/Npy.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <numbers>
#include <sstream>
#include <utility>

namespace flowscope {

namespace {

namespace fs = std::filesystem;
using Json = JsonReader::Json;

// A flow run's training settings; throws TrainerSettingError, or std::invalid_argument (flows::validate).
flows::TrainerConfig flowConfigOf(const Json& doc) {
    const std::vector<std::string_view>& names = flows::trainerSettingNames();
    for (auto it = doc.begin(); it != doc.end(); ++it)
        if (std::find(names.begin(), names.end(), it.key()) == names.end())
            throw flows::TrainerSettingError(it.key(),
                                             "unknown training setting" + didYouMean(it.key(), names));
    flows::TrainerConfig c;
    flows::readTrainerSettings(c, [&](std::string_view name) -> std::optional<std::string> {
        const auto it = doc.find(std::string(name));
        if (it == doc.end()) return std::nullopt;
        return flows::trainerSettingText(name, *it);
    });
    flows::validate(c);
    return c;
}

// Why a run's document cannot be read: the field (a pointer into the document) and the reason.
struct Unreadable {
    std::string field, why;
    std::string text() const { return field.empty() ? why : field + ": " + why; }
};

std::optional<Unreadable> unreadable(const SweepSpec& spec, const Json& doc) {
    try {
        if (spec.mode == SweepMode::Flow)
            (void)flowConfigOf(doc);
        else
            (void)inverse::readProblem(JsonReader(doc));
    } catch (const flows::TrainerSettingError& e) {
        return Unreadable{"/" + e.name, e.why};
    } catch (const JsonError& e) {
        return Unreadable{e.pointer, e.detail};
    } catch (const std::exception& e) {
        return Unreadable{"", e.what()};
    }
    return std::nullopt;
}

std::string readText(const std::string& path, const JsonReader& at) {
    if (const std::string why = notARegularFile(path); !why.empty())
        at.fail("problem " + quoteForMessage(path, kMaxQuotedPath) + ": " + why);
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

// The posterior mode's base: a problem object, a problem file (relative to the spec) or a shipped name.
Json problemBase(const JsonReader& j, const std::string& specDir, const std::string& presetDir) {
    if (j.json().is_object()) return j.json();
    if (!j.json().is_string())
        j.fail("expected a problem object, a problem file or a shipped problem's name, got " + j.describe());
    const std::string text = j.string();
    fs::path path;
    if (text.find('/') != std::string::npos || text.ends_with(".json")) {
        path = fs::path(specDir) / text;
    } else { // assets/problems, beside the presets
        fs::path presets = presetDir;
        if (!presets.has_filename()) presets = presets.parent_path();
        const fs::path dir = presets.parent_path() / "problems";
        path = dir / (text + ".json");
        if (!notARegularFile(path.string()).empty()) {
            const std::vector<std::string> names = inverse::problemNames(dir.string());
            const std::vector<std::string_view> views(names.begin(), names.end());
            j.fail("unknown problem " + quoteForMessage(text) +
                   " (expected a problem file ending in .json or a shipped problem's name)" +
                   didYouMean(text, views));
        }
    }
    try {
        return parseJson(readText(path.string(), j));
    } catch (const JsonError& e) {
        j.fail("problem " + quoteForMessage(path.string(), kMaxQuotedPath) + ": " + e.what());
    }
}

// What a trained flow measured; NaN where the mode has no such value.
struct Trained {
    double kl = kNaN, mmd2 = kNaN, nll = kNaN, lambda = kNaN, beta = kNaN, rejected = kNaN, seconds = kNaN,
           relL1 = kNaN, misfit = kNaN, outside = kNaN, folded = kNaN, mass = kNaN;
};

void measuresOf(const SweepSpec& spec, const Trained& t, std::vector<double>& out) {
    // Each training measure and the field of Trained that holds it.
    static constexpr std::pair<SweepMeasure, double Trained::*> kFields[] = {
        {SweepMeasure::Kl, &Trained::kl},           {SweepMeasure::Mmd2, &Trained::mmd2},
        {SweepMeasure::Nll, &Trained::nll},         {SweepMeasure::Lambda, &Trained::lambda},
        {SweepMeasure::Beta, &Trained::beta},       {SweepMeasure::Rejected, &Trained::rejected},
        {SweepMeasure::Seconds, &Trained::seconds}, {SweepMeasure::RelL1, &Trained::relL1},
        {SweepMeasure::Misfit, &Trained::misfit},   {SweepMeasure::Outside, &Trained::outside},
        {SweepMeasure::Folded, &Trained::folded},   {SweepMeasure::Mass, &Trained::mass}};
    for (const SweepMeasureSpec& m : spec.measures) {
        const auto field = std::find_if(std::begin(kFields), std::end(kFields),
                                        [&](const auto& f) { return f.first == m.kind; });
        out.push_back(field != std::end(kFields) ? t.*field->second : kNaN); // NaN: refused by the parser
    }
}

template <class Records> double rejectedSteps(const Records& history) {
    return double(std::count_if(history.begin(), history.end(), [](const auto& r) { return r.rejected; }));
}

Trained trainFlow(const flows::TrainerConfig& c) {
    flows::FlowTrainer trainer(c);
    for (long k = 0; k < c.adam.decaySteps; ++k)
        if (!trainer.step()) break;
    const flows::Evaluation e = trainer.evaluate();
    Trained t;
    t.kl = e.kl;
    t.mmd2 = e.mmd2;
    t.nll = e.nll;
    t.folded = e.foldedFraction;
    t.mass = e.gridMass;
    if (c.flow.rwpo) {
        t.lambda = trainer.evaluatedModel().params().lambda();
        t.beta = trainer.evaluatedModel().params().beta();
    }
    t.rejected = rejectedSteps(trainer.history());
    return t;
}

// E_q[log q - log p(x | y)] over samples X of q with their log q, where p(x | y) is Gaussian: the Laplace
// frame's N(c, L Lᵀ) is then the posterior itself (a linear model and a Gaussian prior).
double gaussianReverseKl(const inverse::Posterior& post, const inverse::Matrix& X,
                         const Eigen::RowVectorXd& logQ) {
    const inverse::Frame exact = inverse::laplaceFrame(post);
    const inverse::Matrix inverseL = exact.L.inverse();
    const double logNormaliser = exact.logDetL + 0.5 * double(X.rows()) * std::log(2 * std::numbers::pi);
    double sum = 0;
    long n = 0;
    for (Eigen::Index j = 0; j < X.cols(); ++j) {
        const double logP = -0.5 * (inverseL * (X.col(j) - exact.center)).squaredNorm() - logNormaliser;
        if (!std::isfinite(logQ(j) - logP)) continue;
        sum += logQ(j) - logP;
        ++n;
    }
    return n > 0 ? sum / double(n) : kNaN;
}

Trained trainPosterior(const inverse::Problem& problem) {
    const inverse::PosteriorFlowConfig& c = problem.flow;
    inverse::PosteriorFlow flow(problem.posterior, c);
    for (long k = 0; k < c.iterations; ++k)
        if (!flow.step()) break;
    // As flowscope-cli infer's summary: 4096 samples of the averaged parameters.
    Eigen::RowVectorXd logQ;
    const inverse::Matrix X = flow.sample(4096, c.seed ^ 0x5eedULL, &logQ);
    const inverse::PosteriorSummary s = inverse::summarize(*problem.posterior, X);
    Trained t;
    t.relL1 = s.relativeL1Error;
    t.misfit = s.misfit;
    t.outside = double(s.outside);
    if (problem.modelType == "linear" && problem.posterior->prior.kind == inverse::Prior::Kind::Gaussian)
        t.kl = gaussianReverseKl(*problem.posterior, X, logQ);
    if (c.flow.rwpo) {
        t.lambda = flow.averagedParams().lambda();
        t.beta = flow.averagedParams().beta();
    }
    t.rejected = rejectedSteps(flow.history());
    return t;
}

} // namespace

void resolveTrainingBase(const JsonReader& j, const std::string& specDir, const std::string& presetDir,
                         const std::optional<JsonReader>& set, SweepSpec& s) {
    if (s.mode == SweepMode::Flow) {
        if (!j.json().is_object())
            j.fail(
                "expected an object of training settings ({\"dataset\": \"moons\", \"lambda0\": 0.1}), got " +
                j.describe());
        j.expectObject(std::span<const std::string_view>(flows::trainerSettingNames()));
        if (j.has("seed"))
            j.failAt("seed",
                     "a run's seed is the sweep's \"seed\" plus its replicate, the same in every cell: "
                     "give \"seed\" at the top level");
        s.base = j.json();
    } else {
        s.base = problemBase(j, specDir, presetDir);
    }
    s.baseDir = specDir;
    applySweepSet(set, s.base);
    if (const std::optional<Unreadable> bad = unreadable(s, s.base)) {
        if (j.json().is_object() && !set) throw SweepError(j.pointer() + bad->field, bad->why);
        throw SweepError(j.pointer(), std::string(set ? "with \"set\" applied: " : "") + bad->text());
    }
}

SweepCheck checkTrainingSweep(const SweepSpec& spec) {
    SweepCheck check;
    // Each axis value on its own (the other axes at their first value): an error names the value.
    if (!spec.skipInvalid)
        for (const SweepAxis& a : spec.axes)
            for (std::size_t k = 0; k < a.values.size(); ++k) {
                const long cell = sweepCellWith(spec, {{a.name, a.values[k]}});
                if (const std::optional<Unreadable> bad =
                        unreadable(spec, sweepRunDocument(spec, cell * spec.replicates)))
                    throw SweepError(a.at.ends_with("/values") ? jsonPointer(a.at, k) : a.at,
                                     (a.scale ? "scales " : "sets ") + a.pointers[0] + " to " +
                                         numberText(a.values[k]) + ": " + bad->text());
            }
    for (long cell = 0; cell < spec.cells(); ++cell) {
        const long run = cell * spec.replicates;
        if (const std::optional<Unreadable> bad = unreadable(spec, sweepRunDocument(spec, run))) {
            if (!spec.skipInvalid)
                throw SweepError("/axes",
                                 describeSweepCell(spec, sweepPoint(spec, run)) + ": " + bad->text());
            ++check.invalid;
        }
    }
    return check;
}

SweepRunResult runTrainingRun(const SweepSpec& spec, long run) {
    SweepRunResult r;
    const Json doc = sweepRunDocument(spec, run);
    if (const std::optional<Unreadable> bad = unreadable(spec, doc)) {
        if (!spec.skipInvalid)
            throw SweepError("/axes", describeSweepCell(spec, sweepPoint(spec, run)) + ": " + bad->text());
        r.valid = false;
        r.measures.assign(spec.measureColumns().size(), kNaN);
        return r;
    }
    const auto start = std::chrono::steady_clock::now();
    Trained t = spec.mode == SweepMode::Flow ? trainFlow(flowConfigOf(doc))
                                             : trainPosterior(inverse::readProblem(JsonReader(doc)));
    t.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    measuresOf(spec, t, r.measures);
    return r;
}

} // namespace flowscope
