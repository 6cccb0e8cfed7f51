// Flowscope engine: SWEEP.json -> SweepSpec, a run's scene, and a run's measures (docs/sweeps.md).
#include "engine/sweep/Sweep.h"
#include "engine/sweep/SweepTraining.h"

#include "engine/backend/PrepareRun.h"
#include "engine/core/Text.h"
#include "engine/dynamics/Simulation.h"
#include "engine/dynamics/Staircase.h"
#include "engine/gaussian/Cone.h"
#include "engine/gaussian/MomentSolver.h"
#include "engine/gaussian/NumpyRandom.h"
#include "engine/gaussian/Regime.h"
#include "engine/io/Npy.h"
#include "engine/io/ShareString.h"
#include "engine/scene/SceneSetting.h"
#include "engine/scene/SceneShareString.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

namespace flowscope {

// --- Reading a sweep spec ---

namespace {

namespace fs = std::filesystem;
using Json = JsonReader::Json;

constexpr std::size_t kMaxAxes = 16;
constexpr long kMaxValues = 100000;
constexpr long kMaxCells = 1000000;  // every cell's scene is validated before the work starts
constexpr long kMaxRuns = 100000000; // 10^8 rows
constexpr std::size_t kMaxSpecBytes = std::size_t(64) << 20;

constexpr std::array<std::string_view, 4> kModes = {"particles", "moments", "flow", "posterior"};
// SweepMeasure's order.
constexpr std::array<std::string_view, 24> kMeasures = {
    "clusters", "rank",  "time_to_clusters", "divergence_time", "energy", "entropy", "kinetic",
    "outcomes", "t_max", "prop2_t_max",      "prop2_blow_up",   "kl",     "mmd2",    "nll",
    "lambda",   "beta",  "rejected",         "seconds",         "rel_l1", "misfit",  "outside",
    "folded",   "mass",  "plateaus"};
constexpr std::array<const char*, 4> kOutcomeColumns = {"converged", "blow_up", "max_iter", "other_outcome"};
constexpr std::array<const char*, 5> kFixedColumns = {"run", "cell", "replicate", "seed", "valid"};

// The modes a measure is for, as a message names them; empty when it is for `mode`.
std::string otherModes(SweepMeasure m, SweepMode mode) {
    using M = SweepMeasure;
    const auto in = [&](std::initializer_list<SweepMode> modes, const char* name) {
        return std::find(modes.begin(), modes.end(), mode) != modes.end() ? std::string() : std::string(name);
    };
    switch (m) {
    case M::Clusters:
    case M::TimeToClusters:
    case M::Plateaus:
    case M::Energy:
    case M::Entropy:
    case M::Kinetic:
        return in({SweepMode::Particles}, "particle runs (\"mode\": \"particles\")");
    case M::Rank:
    case M::DivergenceTime:
        return in({SweepMode::Particles, SweepMode::Moments},
                  "particle runs and the Gaussian mode (\"mode\": \"particles\" or \"moments\")");
    case M::Outcomes:
    case M::TMax:
    case M::Prop2TMax:
    case M::Prop2BlowUp:
        return in({SweepMode::Moments}, "the Gaussian mode (\"mode\": \"moments\")");
    case M::Mmd2:
    case M::Nll:
    case M::Folded:
    case M::Mass:
        return in({SweepMode::Flow}, "generative flows (\"mode\": \"flow\")");
    case M::RelL1:
    case M::Misfit:
    case M::Outside:
        return in({SweepMode::Posterior}, "posterior flows (\"mode\": \"posterior\")");
    default: // kl, lambda, beta, rejected, seconds
        return in({SweepMode::Flow, SweepMode::Posterior},
                  "trained flows (\"mode\": \"flow\" or \"posterior\")");
    }
}

std::uint64_t splitMix64(std::uint64_t x) {
    x += 0x9E3779B97F4A7C15ULL;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
    return x ^ (x >> 31);
}

std::string readSpecFile(const std::string& path, const std::string& pointer, const std::string& what) {
    if (const std::string why = notARegularFile(path); !why.empty())
        throw SweepError(pointer, what + " " + quoteForMessage(path, kMaxQuotedPath) + ": " + why);
    std::error_code ec;
    if (fs::file_size(path, ec) > kMaxSpecBytes)
        throw SweepError(pointer,
                         what + " " + quoteForMessage(path, kMaxQuotedPath) + " is larger than 64 MiB");
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    if (!in && !in.eof())
        throw SweepError(pointer, "cannot read " + what + " " + quoteForMessage(path, kMaxQuotedPath));
    return s.str();
}

// A scene's JSON text as a document, its errors at `at` (e.g. "/base").
Json sceneDocument(const std::string& text, const std::string& at) {
    try {
        return parseJson(text, 64, at);
    } catch (const JsonError& e) {
        throw SweepError(e.pointer, e.detail);
    }
}

// The base scene: an inline object, a share string, a scene file (relative to the spec) or a preset name.
void resolveBase(const JsonReader& j, const std::string& specDir, const std::string& presetDir,
                 const std::optional<JsonReader>& set, SweepSpec& s) {
    if (j.json().is_object()) {
        s.base = j.json();
        s.baseDir = specDir;
    } else if (j.json().is_string()) {
        const std::string text = j.string();
        if (looksLikeShareString(text)) {
            try {
                s.base = parseJson(sceneToJson(decodeShareString(text)));
            } catch (const ShareStringError& e) {
                j.fail(e.what());
            }
        } else if (text.find('/') != std::string::npos || text.ends_with(".json")) {
            const fs::path path = fs::path(specDir) / text;
            s.base = sceneDocument(readSpecFile(path.string(), j.pointer(), "base scene"), j.pointer());
            s.baseDir = path.parent_path().string();
        } else {
            const fs::path path = fs::path(presetDir) / (text + ".json");
            if (!notARegularFile(path.string()).empty()) {
                std::vector<std::string> names;
                std::error_code ec;
                for (const auto& e : fs::directory_iterator(presetDir, ec))
                    if (e.path().extension() == ".json") names.push_back(e.path().stem().string());
                std::sort(names.begin(), names.end());
                const std::vector<std::string_view> views(names.begin(), names.end());
                j.fail("unknown preset " + quoteForMessage(text) +
                       " (expected a preset name, a scene file ending in .json, a share string or a scene "
                       "object)" +
                       didYouMean(text, views));
            }
            s.base = sceneDocument(readSpecFile(path.string(), j.pointer(), "preset"), j.pointer());
            s.baseDir = presetDir;
        }
    } else {
        j.fail("expected a scene object, a preset name, a scene file or a share string, got " + j.describe());
    }
    applySweepSet(set, s.base);
    try {
        (void)sceneFromJson(s.base.dump(), s.baseDir);
    } catch (const SceneError& e) {
        if (set) throw SweepError(j.pointer(), "with \"set\" applied: " + std::string(e.what()));
        if (j.json().is_object()) throw SweepError(j.pointer() + e.pointer, e.detail);
        throw SweepError(j.pointer(), e.what());
    }
}

std::string checkedPointer(const JsonReader& j) {
    const std::string p = j.string();
    try {
        (void)Json::json_pointer(p);
    } catch (const std::exception&) {
        j.fail("expected a JSON pointer into the scene (\"/attention/beta\"), got " + quoteForMessage(p));
    }
    if (p.empty())
        j.fail("expected a JSON pointer into the scene (\"/attention/beta\"), got the whole scene \"\"");
    return p;
}

bool columnNameOk(const std::string& n) {
    if (n.empty() || n.size() > 64 || std::isdigit(static_cast<unsigned char>(n[0]))) return false;
    return std::all_of(n.begin(), n.end(),
                       [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

std::vector<double> rangeValues(const JsonReader& r) {
    r.expectObject({"lin", "log"});
    const bool lin = r.has("lin"), log = r.has("log");
    if (lin == log) r.fail("expected {\"lin\": [from, to, count]} or {\"log\": [from, to, count]}");
    const JsonReader a = *r.find(lin ? "lin" : "log");
    if (!a.json().is_array() || a.size() != 3) a.fail("expected [from, to, count], got " + a.describe());
    const double from = a[0].number(), to = a[1].number();
    const int count = int(a[2].integer(1, kMaxValues));
    if (log && (from <= 0 || to <= 0)) a.fail("expected from > 0 and to > 0 for a log range");
    if (lin) return linspace(from, to, count);
    // from * (to/from)^(i/(count-1)), to 15 significant digits: 4, not 3.9999999999999991.
    std::vector<double> v;
    for (double e : linspace(0, 1, count)) {
        char text[32];
        std::snprintf(text, sizeof text, "%.15g", from * std::pow(to / from, e));
        v.push_back(std::strtod(text, nullptr));
    }
    return v;
}

SweepAxis parseAxis(const JsonReader& j) {
    j.expectObject({"name", "pointer", "scale", "integer", "values", "range"});
    SweepAxis a;
    const JsonReader p = j.require("pointer", "the scene field, a JSON pointer such as \"/attention/beta\"");
    if (p.json().is_array()) {
        if (p.size() == 0 || p.size() > 16) p.fail("expected 1 to 16 pointers, got " + p.describe());
        for (std::size_t i = 0; i < p.size(); ++i) a.pointers.push_back(checkedPointer(p[i]));
    } else {
        a.pointers.push_back(checkedPointer(p));
    }
    if (auto v = j.find("scale")) a.scale = v->boolean();
    if (auto v = j.find("integer")) a.integer = v->boolean();
    const bool values = j.has("values"), range = j.has("range");
    if (values == range)
        j.fail("expected either \"values\" (a list) or \"range\" ({\"lin\": [from, to, count]})");
    if (values) {
        const JsonReader v = *j.find("values");
        if (!v.json().is_array() || v.size() == 0 || v.size() > std::size_t(kMaxValues))
            v.fail("expected a non-empty array of at most " + std::to_string(kMaxValues) + " numbers, got " +
                   v.describe());
        for (std::size_t i = 0; i < v.size(); ++i) a.values.push_back(v[i].number());
        a.at = v.pointer();
    } else {
        a.values = rangeValues(*j.find("range"));
        a.at = j.pointerTo("range");
    }
    if (a.integer)
        for (double& x : a.values) x = std::round(x);
    const std::string last = a.pointers[0].substr(a.pointers[0].rfind('/') + 1);
    a.name = j.has("name") ? j.find("name")->string() : last + (a.scale ? "_scale" : "");
    if (!columnNameOk(a.name))
        (j.has("name") ? *j.find("name") : j)
            .fail("expected a column name of letters, digits and _ (not starting with a digit), got " +
                  quoteForMessage(a.name) + (j.has("name") ? "" : " (from the pointer; give \"name\")"));
    return a;
}

SweepDraw parseDraw(const JsonReader& j) {
    j.expectObject({"kind", "rows", "targets"});
    SweepDraw d;
    static constexpr std::array<std::string_view, 2> kinds = {"normal", "gram"};
    d.kind = SweepDraw::Kind(j.require("kind", "normal or gram").choice("draw kind", kinds));
    if (auto r = j.find("rows")) {
        if (d.kind == SweepDraw::Kind::Gram) r->fail("a gram draw is d x d: expected no \"rows\"");
        if (r->json().is_string()) {
            const std::string t = r->string();
            if (t == "d")
                d.rowsKind = SweepDraw::Rows::D;
            else if (t == "d/2")
                d.rowsKind = SweepDraw::Rows::HalfD;
            else
                r->fail("expected an integer, \"d\" or \"d/2\" (floor), got " + quoteForMessage(t));
        } else {
            d.rowsKind = SweepDraw::Rows::Fixed;
            d.rows = int(r->integer(1, kMaxJsonMatrixSide));
        }
    }
    const JsonReader t = j.require("targets", "[{\"pointer\": \"/attention/heads/0/Q\", \"scale\": 1}]");
    if (!t.json().is_array() || t.size() == 0 || t.size() > 16)
        t.fail("expected 1 to 16 targets, got " + t.describe());
    for (std::size_t i = 0; i < t.size(); ++i) {
        const JsonReader e = t[i];
        e.expectObject({"pointer", "scale", "over_sqrt_d"});
        SweepDraw::Target target;
        target.pointer = checkedPointer(e.require("pointer", "the scene field the matrix is written to"));
        if (auto v = e.find("scale")) target.scale = v->number();
        if (auto v = e.find("over_sqrt_d")) target.overSqrtD = v->boolean();
        d.targets.push_back(target);
    }
    return d;
}

void parseMeasures(const JsonReader& j, SweepSpec& s) {
    if (!j.json().is_array() || j.size() == 0 || j.size() > kMeasures.size())
        j.fail("expected a non-empty array of measures (" + std::to_string(kMeasures.size()) +
               " at most), got " + j.describe());
    for (std::size_t i = 0; i < j.size(); ++i) {
        const JsonReader m = j[i];
        SweepMeasureSpec spec;
        if (m.json().is_object()) {
            m.expectObject({"time_to_clusters"});
            if (m.size() != 1) m.fail("expected {\"time_to_clusters\": k}");
            spec.kind = SweepMeasure::TimeToClusters;
            spec.k = int(m.find("time_to_clusters")->integer(1, 1 << 24));
        } else {
            spec.kind = SweepMeasure(m.choice("measure", kMeasures));
            if (spec.kind == SweepMeasure::TimeToClusters)
                m.fail("expected {\"time_to_clusters\": k}: the cluster count k to reach");
        }
        if (const std::string modes = otherModes(spec.kind, s.mode); !modes.empty())
            m.fail("measure " + std::string(kMeasures[std::size_t(spec.kind)]) + " is for " + modes);
        for (const SweepMeasureSpec& o : s.measures)
            if (o.kind == spec.kind && o.k == spec.k)
                m.fail("measure " + std::string(kMeasures[std::size_t(spec.kind)]) + " is listed twice");
        s.measures.push_back(spec);
    }
}

// --- A run's scene: values applied by JSON pointer ---

// Whether `v` is or holds a number (what an axis with "scale" can multiply).
bool holdsNumbers(const Json& v) {
    if (v.is_number()) return true;
    if (v.is_array() || v.is_object())
        for (const Json& e : v)
            if (holdsNumbers(e)) return true;
    return false;
}

// Multiplies every number under `v` by `f`.
void scaleNumbers(Json& v, double f) {
    if (v.is_number())
        v = v.get<double>() * f;
    else if (v.is_array() || v.is_object())
        for (Json& e : v) scaleNumbers(e, f);
}

Json numberJson(double x) {
    if (x == std::round(x) && std::fabs(x) < 9007199254740992.0) return Json(static_cast<long long>(x));
    return Json(x);
}

// Sets (or scales) `pointer` of scene document j; throws std::runtime_error with the reason.
void applyValue(Json& j, const std::string& pointer, double value, bool scale) {
    const Json::json_pointer ptr(pointer);
    if (scale) {
        if (!j.contains(ptr))
            throw std::runtime_error("scales " + pointer + ", which the scene does not have");
        if (!holdsNumbers(j.at(ptr)))
            throw std::runtime_error("scales " + pointer + ", which holds no number (" +
                                     quoteForMessage(j.at(ptr).dump()) + "); scale multiplies numbers");
        scaleNumbers(j.at(ptr), value);
        return;
    }
    if (const std::string why = placeAtPointer(j, pointer, numberJson(value)); !why.empty())
        throw std::runtime_error("sets " + pointer + ": " + why);
}

Mat drawMatrix(const SweepDraw& d, int dim, NumpyRandom& rng) {
    if (d.kind == SweepDraw::Kind::Gram) {
        const Mat S = rng.randn(dim, dim);
        const Mat G = S * S.transpose();
        return (G + G.transpose()) / 2; // exactly symmetric
    }
    const int rows = d.rowsKind == SweepDraw::Rows::Fixed ? d.rows
                     : d.rowsKind == SweepDraw::Rows::D   ? dim
                                                          : std::max(1, dim / 2);
    return rng.randn(rows, dim);
}

Json matrixDocument(const Mat& m) {
    Json rows = Json::array();
    for (Eigen::Index r = 0; r < m.rows(); ++r) {
        Json row = Json::array();
        for (Eigen::Index c = 0; c < m.cols(); ++c) row.push_back(m(r, c));
        rows.push_back(row);
    }
    return rows;
}

// The document of a run (not validated). Throws SweepError naming the cell or the axis.
Json runDocumentOf(const SweepSpec& spec, const SweepPoint& p) {
    Json j = spec.base;
    for (std::size_t a = 0; a < spec.axes.size(); ++a)
        for (const std::string& ptr : spec.axes[a].pointers) try {
                applyValue(j, ptr, p.values[a], spec.axes[a].scale);
            } catch (const std::exception& e) {
                throw SweepError(spec.axes[a].at, e.what());
            }
    if (!spec.draws.empty()) {
        const int dim = j.contains("d") && j["d"].is_number_integer() ? j["d"].get<int>() : 2;
        if (dim < 1 || dim > kMaxJsonMatrixSide) throw SweepError("/draws", "the scene's d is out of range");
        NumpyRandom rng(std::uint32_t(p.seed ^ (p.seed >> 32)));
        for (std::size_t i = 0; i < spec.draws.size(); ++i) {
            const SweepDraw& d = spec.draws[i];
            const Mat m = drawMatrix(d, dim, rng);
            for (const SweepDraw::Target& t : d.targets) try {
                    const double f = t.scale / (t.overSqrtD ? std::sqrt(double(dim)) : 1.0);
                    applyValue(j, t.pointer, 0, false);
                    j[Json::json_pointer(t.pointer)] = matrixDocument(m * f);
                } catch (const std::exception& e) {
                    throw SweepError(jsonPointer("/draws", i), e.what());
                }
        }
    }
    if (spec.mode == SweepMode::Flow) {
        j["seed"] = p.seed;
    } else if (spec.mode == SweepMode::Posterior) {
        j["flow"]["seed"] = p.seed;
        j["flow"]["base_seed"] = p.seed;
    } else if (spec.seedInitial) {
        j["initial"]["seed"] = p.seed;
    }
    return j;
}

} // namespace

void applySweepSet(const std::optional<JsonReader>& set, Json& base) {
    if (!set) return; // "set": {"/pointer": value, ...}: fields of the base replaced before the axes
    set->expectObject();
    for (auto it = set->json().begin(); it != set->json().end(); ++it) {
        const JsonReader field = *set->find(it.key());
        if (const std::string why = placeAtPointer(base, it.key(), it.value()); !why.empty()) field.fail(why);
    }
}

std::string describeSweepCell(const SweepSpec& spec, const SweepPoint& p) {
    std::string s = "cell " + std::to_string(p.cell) + " (";
    for (std::size_t a = 0; a < spec.axes.size(); ++a)
        s += (a ? ", " : "") + spec.axes[a].name + " = " + numberText(p.values[a]);
    return s + ")";
}

// --- SweepSpec and its runs ---

long SweepSpec::cells() const {
    long n = 1;
    for (const SweepAxis& a : axes) n *= long(a.values.size());
    return n;
}

std::vector<std::string> SweepSpec::measureColumns() const {
    std::vector<std::string> c;
    for (const SweepMeasureSpec& m : measures) {
        if (m.kind == SweepMeasure::Outcomes)
            c.insert(c.end(), kOutcomeColumns.begin(), kOutcomeColumns.end());
        else if (m.kind == SweepMeasure::TimeToClusters)
            c.push_back("time_to_clusters_" + std::to_string(m.k));
        else
            c.emplace_back(kMeasures[std::size_t(m.kind)]);
    }
    return c;
}

std::vector<std::string> SweepSpec::columns() const {
    std::vector<std::string> c(kFixedColumns.begin(), kFixedColumns.end());
    for (const SweepAxis& a : axes) c.push_back(a.name);
    for (const std::string& m : measureColumns()) c.push_back(m);
    return c;
}

std::string SweepSpec::hash() const {
    return fnv1a64Hex(canonical.dump());
}

SweepSpec sweepFromJson(const std::string& text, const std::string& specDir, const std::string& presetDir) {
    Json doc;
    try {
        doc = parseJson(text);
    } catch (const JsonError& e) {
        throw SweepError(e.pointer, e.detail);
    }
    const JsonReader root(doc);
    SweepSpec s;
    try {
        if (!doc.is_object()) root.fail("expected a JSON object (a sweep), got " + root.describe());
        root.expectObject({"version", "name", "description", "base", "base_dir", "set", "mode", "axes",
                           "draws", "measures", "replicates", "seed", "seed_initial", "skip_invalid",
                           "rank_threshold"});
    } catch (const JsonError& e) {
        throw SweepError(e.pointer, e.detail);
    }
    try {
        if (auto v = root.find("version"); v && v->integer(1, 1 << 30) != 1)
            v->fail("unsupported sweep version " + v->describe() + " (this build reads version 1)");
        if (auto v = root.find("name")) s.name = v->string();
        if (auto v = root.find("description")) s.description = v->string();
        if (auto v = root.find("mode")) s.mode = SweepMode(v->choice("mode", kModes));
        std::string dir = specDir;
        if (auto v = root.find("base_dir")) dir = v->string();
        if (isTrainingMode(s.mode))
            resolveTrainingBase(root.require("base", s.mode == SweepMode::Flow
                                                         ? "an object of training settings"
                                                         : "a problem object, a problem file or a name"),
                                dir, presetDir, root.find("set"), s);
        else
            resolveBase(root.require("base", "a scene object, a preset name, a scene file or a share string"),
                        dir, presetDir, root.find("set"), s);
        if (auto v = root.find("axes")) {
            if (!v->json().is_array() || v->size() > kMaxAxes)
                v->fail("expected an array of at most " + std::to_string(kMaxAxes) + " axes, got " +
                        v->describe());
            long cells = 1;
            for (std::size_t i = 0; i < v->size(); ++i) {
                s.axes.push_back(parseAxis((*v)[i]));
                cells *= long(s.axes.back().values.size());
                if (cells > kMaxCells)
                    (*v)[i].fail("the axes make more than " + std::to_string(kMaxCells) + " cells");
                // A training run's seed is the sweep's seed plus its replicate, the same in every cell (the
                // pairing): an axis on it would be overwritten.
                if (isTrainingMode(s.mode))
                    for (const std::string& p : s.axes.back().pointers)
                        if (p == "/seed" || p == "/flow/seed" || p == "/flow/base_seed")
                            (*v)[i].fail("a training run's seed is the sweep's \"seed\" plus its replicate, "
                                         "the same in every cell: vary \"replicates\" instead of " +
                                         p);
            }
        }
        if (auto v = root.find("draws")) {
            if (isTrainingMode(s.mode)) v->fail("draws are for scenes: a training mode's runs have none");
            if (!v->json().is_array() || v->size() > 16)
                v->fail("expected an array of at most 16 draws, got " + v->describe());
            for (std::size_t i = 0; i < v->size(); ++i) s.draws.push_back(parseDraw((*v)[i]));
        }
        parseMeasures(root.require("measures", "e.g. [\"clusters\", \"rank\"]"), s);
        if (auto v = root.find("replicates")) s.replicates = int(v->integer(1, 1000000));
        if (s.runs() > kMaxRuns)
            root.failAt("replicates", "cells x replicates = " + std::to_string(s.runs()) +
                                          " runs, more than " + std::to_string(kMaxRuns));
        if (auto v = root.find("seed")) s.seed = v->unsignedInteger();
        if (auto v = root.find("seed_initial")) {
            if (isTrainingMode(s.mode))
                v->fail("seed_initial is for scenes: a training run has no initial tokens");
            s.seedInitial = v->boolean();
        }
        if (auto v = root.find("skip_invalid")) s.skipInvalid = v->boolean();
        if (auto v = root.find("rank_threshold")) s.rankThreshold = v->numberAtLeast(0.0);
        std::vector<std::string> names = s.columns();
        std::sort(names.begin(), names.end());
        if (auto dup = std::adjacent_find(names.begin(), names.end()); dup != names.end())
            root.failAt("axes",
                        "two columns are named " + quoteForMessage(*dup) + " (give the axes a \"name\")");
    } catch (const SweepError&) {
        throw;
    } catch (const JsonError& e) {
        throw SweepError(e.pointer, e.detail);
    }
    s.canonical = doc;
    s.canonical["base"] = s.base;
    const bool readsFile = s.base.contains("initial") && s.base["initial"].is_object() &&
                           s.base["initial"].value("kind", "") == "file";
    if (readsFile)
        s.canonical["base_dir"] = fs::absolute(s.baseDir).lexically_normal().string();
    else
        s.canonical.erase("base_dir");
    return s;
}

SweepSpec loadSweep(const std::string& path, const std::string& presetDir) {
    const std::string text = readSpecFile(path, "", "sweep spec");
    return sweepFromJson(
        text, fs::path(path).parent_path().string().empty() ? "." : fs::path(path).parent_path().string(),
        presetDir);
}

SweepPoint sweepPoint(const SweepSpec& spec, long run) {
    SweepPoint p;
    p.run = run;
    p.cell = run / spec.replicates;
    p.replicate = int(run % spec.replicates);
    p.values.resize(spec.axes.size());
    long rest = p.cell;
    for (std::size_t a = spec.axes.size(); a-- > 0;) {
        const long n = long(spec.axes[a].values.size());
        p.values[a] = spec.axes[a].values[std::size_t(rest % n)];
        rest /= n;
    }
    if (isTrainingMode(spec.mode)) { // paired: replicate r has the same seed in every cell
        p.seed = (spec.seed + std::uint64_t(p.replicate)) & ((std::uint64_t(1) << 53) - 1);
        return p;
    }
    std::uint64_t x = splitMix64(spec.seed);
    x = splitMix64(x ^ splitMix64(std::uint64_t(p.cell)));
    x = splitMix64(x ^ splitMix64(0x5eedULL + std::uint64_t(p.replicate)));
    p.seed = x >> 11; // < 2^53: exact as a double in the table
    return p;
}

long sweepCellWith(const SweepSpec& spec, const std::vector<std::pair<std::string, double>>& values) {
    std::vector<long> index(spec.axes.size(), 0);
    for (const auto& [name, value] : values) {
        const auto axis = std::find_if(spec.axes.begin(), spec.axes.end(),
                                       [&name = name](const SweepAxis& a) { return a.name == name; });
        if (axis == spec.axes.end()) return -1;
        const auto at = std::find(axis->values.begin(), axis->values.end(), value);
        if (at == axis->values.end()) return -1;
        index[std::size_t(axis - spec.axes.begin())] = long(at - axis->values.begin());
    }
    long cell = 0;
    for (std::size_t a = 0; a < spec.axes.size(); ++a)
        cell = cell * long(spec.axes[a].values.size()) + index[a];
    return cell;
}

Scene sweepScene(const SweepSpec& spec, long run) {
    if (isTrainingMode(spec.mode))
        throw SweepError("/mode",
                         "the runs of a " + std::string(kModes[std::size_t(spec.mode)]) +
                             " sweep train flows and have no scene (flowscope-cli sweep --print-run R "
                             "prints what run R trains)");
    const SweepPoint p = sweepPoint(spec, run);
    const Json j = runDocumentOf(spec, p);
    try {
        return sceneFromJson(j.dump(), spec.baseDir);
    } catch (const SceneError& e) {
        throw SweepError("/axes", describeSweepCell(spec, p) + ": " + e.what());
    }
}

JsonReader::Json sweepRunDocument(const SweepSpec& spec, long run) {
    return runDocumentOf(spec, sweepPoint(spec, run));
}

Scene sweepSceneToOpen(const SweepSpec& spec, long run) {
    Scene scene = sweepScene(spec, run);
    if (const std::vector<Mat> grid = coneGrid(scene.moments.grid); grid.size() == 1 && scene.d == 2) {
        scene.initial.cov = grid[0];
        scene.moments.grid = {};
    }
    return scene;
}

// --- Checking a sweep ---

namespace {

// The cell with value k on axis a and the first value on every other axis.
long cellWith(const SweepSpec& spec, std::size_t axis, long k) {
    long cell = 0;
    for (std::size_t a = 0; a < spec.axes.size(); ++a)
        cell = cell * long(spec.axes[a].values.size()) + (a == axis ? k : 0);
    return cell;
}

// The mode's own checks of a valid scene; throws SceneError.
void checkMode(const SweepSpec& spec, const Scene& scene) {
    if (spec.mode != SweepMode::Moments) return;
    (void)makeMomentField(scene);
    const auto gaussians = initialGaussians(scene);
    for (std::size_t i = 0; i < spec.measures.size(); ++i)
        if (spec.measures[i].kind == SweepMeasure::Rank && gaussians.size() != 1)
            throw SweepError(jsonPointer("/measures", i),
                             "rank needs one initial Gaussian per run; the scene has a grid of " +
                                 std::to_string(gaussians.size()) + " (/moments/grid)");
}

} // namespace

SweepCheck checkSweep(const SweepSpec& spec) {
    if (isTrainingMode(spec.mode)) return checkTrainingSweep(spec);
    SweepCheck check;
    // Each axis value on its own (the other axes at their first value): an error names the value.
    if (!spec.skipInvalid)
        for (std::size_t a = 0; a < spec.axes.size(); ++a)
            for (std::size_t k = 0; k < spec.axes[a].values.size(); ++k) {
                const SweepPoint p = sweepPoint(spec, cellWith(spec, a, long(k)) * spec.replicates);
                const Json j = runDocumentOf(spec, p);
                try {
                    checkMode(spec, sceneFromJson(j.dump(), spec.baseDir));
                } catch (const SceneError& e) {
                    const std::string at = spec.axes[a].at.ends_with("/values")
                                               ? jsonPointer(spec.axes[a].at, k)
                                               : spec.axes[a].at;
                    throw SweepError(at, (spec.axes[a].scale ? "scales " : "sets ") +
                                             spec.axes[a].pointers[0] + " to " +
                                             numberText(spec.axes[a].values[k]) + ": " + e.what());
                }
            }
    for (long cell = 0; cell < spec.cells(); ++cell) {
        Scene scene;
        try {
            scene = sweepScene(spec, cell * spec.replicates);
            checkMode(spec, scene);
        } catch (const SweepError& e) {
            if (!spec.skipInvalid || e.pointer != "/axes") throw;
            ++check.invalid;
            continue;
        } catch (const SceneError& e) {
            if (!spec.skipInvalid)
                throw SweepError("/axes", describeSweepCell(spec, sweepPoint(spec, cell * spec.replicates)) +
                                              ": " + e.what());
            ++check.invalid;
            continue;
        }
        const RunBudget b = spec.mode == SweepMode::Moments ? momentsRunBudget(scene, false)
                                                            : particleRunBudget(scene, false);
        if (b.bytes > check.largest.bytes) check.largest = b;
        if (spec.mode == SweepMode::Particles) {
            const RunCost c = particleRunCost(scene, false);
            check.seconds += c.seconds * spec.replicates;
            if (c.seconds > check.costliest.seconds) check.costliest = c;
        }
    }
    return check;
}

// --- Running a sweep's runs and their measures ---

namespace {

// The plateaus of log E_beta against log t over a run's records after t = 0 (as the metastability preset's
// test reads them; NaN or non-positive energies end the curve there).
std::vector<Plateau> energyPlateaus(const std::vector<Frame>& history) {
    std::vector<double> t, y;
    for (const Frame& f : history) {
        if (f.t <= 0.0) continue;
        if (!(f.obs.energyBeta > 0.0) || !std::isfinite(f.obs.energyBeta)) break;
        t.push_back(f.t);
        y.push_back(std::log(f.obs.energyBeta));
    }
    return t.empty() ? std::vector<Plateau>{} : plateaus(t, y);
}

void particleMeasures(const SweepSpec& spec, const Scene& scene, const PreparedRun& prepared,
                      std::vector<double>& out) {
    const std::unique_ptr<Simulation> run = prepared.start(scene);
    Simulation& sim = *run;
    sim.run();
    const Observables& last = sim.lastObservables();
    for (const SweepMeasureSpec& m : spec.measures) {
        switch (m.kind) {
        case SweepMeasure::Clusters:
            out.push_back(last.clusters);
            break;
        case SweepMeasure::Rank:
            out.push_back(last.rank);
            break;
        case SweepMeasure::TimeToClusters: {
            double t = kNaN;
            for (const Frame& f : sim.history())
                if (f.obs.clusters <= m.k) {
                    t = f.t;
                    break;
                }
            out.push_back(t);
            break;
        }
        case SweepMeasure::DivergenceTime:
            out.push_back(sim.event() ? sim.event()->t : kNaN);
            break;
        case SweepMeasure::Energy:
            out.push_back(last.energy);
            break;
        case SweepMeasure::Entropy:
            out.push_back(last.entropy);
            break;
        case SweepMeasure::Kinetic:
            out.push_back(last.kinetic);
            break;
        case SweepMeasure::Plateaus:
            out.push_back(double(energyPlateaus(sim.history()).size()));
            break;
        default:
            out.push_back(kNaN); // refused by the parser
        }
    }
}

void momentMeasures(const SweepSpec& spec, const Scene& scene, std::vector<double>& out) {
    const std::vector<MomentTrajectory> all = solveAllMoments(scene, momentOptions(scene));
    // The smallest time of(tr) over the trajectories that have one; NaN when none has.
    const auto smallest = [&](const auto& of) {
        double t = kNaN;
        for (const MomentTrajectory& tr : all)
            if (const std::optional<double> v = of(tr); v && !(*v >= t)) t = *v;
        return t;
    };
    for (const SweepMeasureSpec& m : spec.measures) {
        switch (m.kind) {
        case SweepMeasure::Outcomes: {
            std::array<double, 4> n{};
            for (const MomentTrajectory& t : all)
                ++n[t.event == MomentEvent::Converged ? 0
                    : t.event == MomentEvent::BlowUp  ? 1
                    : t.event == MomentEvent::MaxIter ? 2
                                                      : 3];
            out.insert(out.end(), n.begin(), n.end());
            break;
        }
        case SweepMeasure::TMax:
            out.push_back(smallest([](const MomentTrajectory& tr) { return tr.tMax; }));
            break;
        case SweepMeasure::DivergenceTime:
            out.push_back(smallest([](const MomentTrajectory& tr) {
                return tr.event == MomentEvent::BlowUp ? std::optional<double>(tr.eventTime) : std::nullopt;
            }));
            break;
        case SweepMeasure::Rank: {
            const MomentTrajectory& tr = all.front();
            const bool settled = tr.event == MomentEvent::Converged || tr.event == MomentEvent::None;
            out.push_back(
                settled ? thresholdRank(tr.states.back().cov, spec.rankThreshold, RankThreshold::Absolute)
                        : kNaN);
            break;
        }
        case SweepMeasure::Prop2TMax:
        case SweepMeasure::Prop2BlowUp: {
            const RegimePrediction r = predictRegime(scene, all.front().states.front().cov);
            if (m.kind == SweepMeasure::Prop2BlowUp)
                out.push_back(r.blowUp ? 1.0 : 0.0);
            else
                out.push_back(r.tMax ? *r.tMax : kNaN);
            break;
        }
        default:
            out.push_back(kNaN); // refused by the parser
        }
    }
}

} // namespace

SweepCompute sweepComputeOn(std::shared_ptr<const ComputeBackend> backend) {
    return {std::move(backend)};
}

SweepRunResult runSweepRun(const SweepSpec& spec, long run, const SweepCompute& compute) {
    if (isTrainingMode(spec.mode)) return runTrainingRun(spec, run);
    SweepRunResult r;
    Scene scene;
    try {
        scene = sweepScene(spec, run);
        checkMode(spec, scene);
    } catch (const JsonError& e) { // the cell's scene (SweepError at /axes) or its mode (SceneError)
        if (!spec.skipInvalid || (dynamic_cast<const SweepError*>(&e) && e.pointer != "/axes")) throw;
        r.valid = false;
        r.measures.assign(spec.measureColumns().size(), kNaN);
        return r;
    }
    if (spec.mode == SweepMode::Moments)
        momentMeasures(spec, scene, r.measures);
    else // the backend asked before the run: a valid scene it cannot run stops the sweep, naming the field
        particleMeasures(spec, scene,
                         prepareRun(compute.backend ? *compute.backend : ComputeBackend{}, scene),
                         r.measures);
    return r;
}

std::vector<double> sweepRow(const SweepSpec& spec, long run, const SweepRunResult& r) {
    const SweepPoint p = sweepPoint(spec, run);
    std::vector<double> row = {double(p.run), double(p.cell), double(p.replicate), double(p.seed),
                               r.valid ? 1.0 : 0.0};
    row.insert(row.end(), p.values.begin(), p.values.end());
    row.insert(row.end(), r.measures.begin(), r.measures.end());
    return row;
}

} // namespace flowscope
