// Flowscope engine: JSON -> Scene (schema: docs/scene.md).
//
// Parsing is strict on purpose: a scene is shared as a file or a string and must mean exactly one thing, so
// every malformed input (syntax, type, range, shape, unknown or duplicated key) is rejected with a SceneError
// that names the field by JSON pointer and says what was expected and what was found. The checks of single
// values are engine/io/JsonReader's; what is checked here is what the schema means: which fields exist, the
// shapes that depend on d, and the rules between fields (keyframe times, masking, covariances, the grid).
#include "engine/scene/Scene.h"

#include "engine/core/Linspace.h"
#include "engine/core/Text.h"
#include "engine/io/JsonReader.h"
#include "engine/scene/SceneNames.h"
#include "engine/scene/SceneSchema.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <limits>
#include <optional>
#include <sstream>

namespace flowscope {

namespace {

namespace fs = std::filesystem;
namespace names = scene_names;

constexpr int kMaxDim = kSceneMaxDimension;
static_assert(kMaxDim <= kMaxJsonMatrixSide, "a d x d matrix must be readable");
constexpr long long kMaxInt = std::numeric_limits<int>::max();
constexpr std::size_t kMaxSceneFileBytes = std::size_t(64) << 20;

std::string shapeOf(Eigen::Index rows, Eigen::Index cols) {
    return std::to_string(rows) + "x" + std::to_string(cols);
}

// Inline points: an array of 0..kSceneMaxInlinePoints rows of exactly d finite numbers each.
Tokens pointsOf(const JsonReader& j, int d) {
    if (!j.json().is_array())
        j.fail("expected array of points (each an array of " + std::to_string(d) + " numbers), got " +
               j.describe());
    if (j.size() > std::size_t(kSceneMaxInlinePoints))
        j.fail("expected at most " + std::to_string(kSceneMaxInlinePoints) +
               " points (use kind \"file\" with a " + ".npy file for more), got " + std::to_string(j.size()));
    Tokens P(Eigen::Index(j.size()), d);
    for (std::size_t r = 0; r < j.size(); ++r) {
        const JsonReader row = j[r];
        if (!row.json().is_array() || row.size() != std::size_t(d))
            row.fail("expected point of " + std::to_string(d) + " numbers (d of the scene), got " +
                     row.describe());
        for (int c = 0; c < d; ++c) P(Eigen::Index(r), c) = row[std::size_t(c)].number();
    }
    return P;
}

// A query/key matrix: k x d with 1 <= k <= d, or a number s meaning s * I_d (k = d).
Mat queryKeyOf(const JsonReader& j, int d) {
    if (j.json().is_number()) return j.number() * Mat::Identity(d, d);
    Mat m = j.matrix();
    if (m.cols() != d || m.rows() > d)
        j.fail("expected k x " + std::to_string(d) + " matrix with 1 <= k <= " + std::to_string(d) +
               ", got " + shapeOf(m.rows(), m.cols()));
    return m;
}

// ---------------------------------------------------------------------------------------------------------
// Attention heads

// Q, K and V of a head or of the stacked form; each defaults to I_d, and K must have Q's shape.
HeadParams queryKeyValue(const JsonReader& j, int d) {
    HeadParams head;
    head.Q = j.has("Q") ? queryKeyOf(*j.find("Q"), d) : Mat::Identity(d, d);
    head.K = j.has("K") ? queryKeyOf(*j.find("K"), d) : Mat::Identity(d, d);
    head.V = j.has("V") ? j.find("V")->square(d) : Mat::Identity(d, d);
    if (head.K.rows() != head.Q.rows())
        j.failAt("K", "expected " + shapeOf(head.Q.rows(), d) + " matrix (same shape as Q), got " +
                          shapeOf(head.K.rows(), head.K.cols()));
    return head;
}

HeadParams parseHead(const JsonReader& j, int d) {
    j.expectObject({"Q", "K", "V"});
    return queryKeyValue(j, d);
}

std::vector<HeadParams> parseHeads(const JsonReader& j, int d) {
    if (!j.json().is_array()) j.fail("expected array of heads, got " + j.describe());
    if (j.size() > std::size_t(kMaxDim))
        j.fail("expected at most " + std::to_string(kMaxDim) + " heads, got " + std::to_string(j.size()));
    std::vector<HeadParams> heads;
    for (std::size_t h = 0; h < j.size(); ++h) heads.push_back(parseHead(j[h], d));
    return heads;
}

// The stacking convention of the authors' code (docs/scene.md, "stacked"): head h owns rows block h of the
// stacked Q and K (d/H rows each; rows past the end of a short Q are zero, so that head's scores vanish
// exactly as an empty slice would) and V^(h) = E_h V keeps only the rows of V in block h, so that
// sum_h V^(h) = V.
std::vector<HeadParams> parseStacked(const JsonReader& j, int d) {
    j.expectObject({"H", "Q", "K", "V"});
    const JsonReader h = j.require("H", "the number of heads, dividing d");
    const int H = int(h.integer(1, d));
    if (d % H != 0) h.fail("expected H dividing d = " + std::to_string(d) + ", got " + std::to_string(H));
    const HeadParams stacked = queryKeyValue(j, d);
    const Mat &Q = stacked.Q, &K = stacked.K, &V = stacked.V;
    const int block = d / H;
    std::vector<HeadParams> heads(std::size_t(H), HeadParams{});
    for (int i = 0; i < H; ++i) {
        HeadParams& head = heads[std::size_t(i)];
        head.Q = Mat::Zero(block, d);
        head.K = Mat::Zero(block, d);
        const int first = i * block, available = std::clamp(int(Q.rows()) - first, 0, block);
        head.Q.topRows(available) = Q.middleRows(first, available);
        head.K.topRows(available) = K.middleRows(first, available);
        head.V = Mat::Zero(d, d);
        head.V.middleRows(first, block) = V.middleRows(first, block);
    }
    return heads;
}

// "heads" or "stacked" inside `j` (an attention object or a keyframe); nullopt when neither is present.
std::optional<std::vector<HeadParams>> parseHeadsOrStacked(const JsonReader& j, int d) {
    const auto heads = j.find("heads");
    const auto stacked = j.find("stacked");
    if (heads && stacked) stacked->fail("expected either \"heads\" or \"stacked\", not both");
    if (heads) return parseHeads(*heads, d);
    if (stacked) return parseStacked(*stacked, d);
    return std::nullopt;
}

std::vector<Keyframe> parseKeyframes(const JsonReader& j, int d) {
    if (!j.json().is_array()) j.fail("expected array of keyframes, got " + j.describe());
    std::vector<Keyframe> keyframes;
    for (std::size_t i = 0; i < j.size(); ++i) {
        const JsonReader k = j[i];
        k.expectObject({"t", "heads", "stacked"});
        Keyframe frame;
        const JsonReader t = k.require("t", "the keyframe time");
        frame.t = t.number();
        if (i > 0 && !(frame.t > keyframes.back().t))
            t.fail("expected keyframe times strictly increasing, got t = " + numberText(frame.t) +
                   " after t = " + numberText(keyframes.back().t));
        auto heads = parseHeadsOrStacked(k, d);
        if (!heads || heads->empty())
            k.failAt("heads", "expected at least one head (\"heads\" or \"stacked\")");
        frame.heads = std::move(*heads);
        if (i > 0) {
            const auto& first = keyframes.front().heads;
            const std::string hp = k.pointerTo(k.has("heads") ? "heads" : "stacked");
            if (frame.heads.size() != first.size())
                throw JsonError(hp, "expected " + std::to_string(first.size()) +
                                        " heads like keyframe 0, got " + std::to_string(frame.heads.size()));
            for (std::size_t h = 0; h < first.size(); ++h)
                if (frame.heads[h].Q.rows() != first[h].Q.rows())
                    throw JsonError(jsonPointer(jsonPointer(hp, h), "Q"),
                                    "expected " + shapeOf(first[h].Q.rows(), d) +
                                        " matrix like keyframe 0, got " +
                                        shapeOf(frame.heads[h].Q.rows(), d));
        }
        keyframes.push_back(std::move(frame));
    }
    return keyframes;
}

// ---------------------------------------------------------------------------------------------------------
// Sections

// Masking restricts the attention of token i to tokens j <= i. Reject combinations without a meaning here.
void checkMasking(const AttentionSpec& a, const std::string& pointer) {
    if (!a.masked) return;
    if (a.type == AttentionType::Linear)
        throw JsonError(pointer,
                        "masked (causal) attention is not supported for linear attention (supported: "
                        "softmax, l2, exp, relu, sigmoid)");
    if (a.type == AttentionType::Sinkhorn)
        throw JsonError(pointer,
                        "masked (causal) attention is not supported for sinkhorn attention: the only "
                        "causal doubly-stochastic matrix is the identity");
    if (a.type == AttentionType::Rwpo || a.type == AttentionType::Drifting)
        throw JsonError(pointer, std::string("masked (causal) attention is not supported for ") +
                                     (a.type == AttentionType::Rwpo ? "rwpo" : "drifting") +
                                     " attention (supported: softmax, l2, exp, relu, sigmoid)");
}

// Pre- and peri-LN feed the field the tokens' directions (docs/math/theory.md#normalization): an attention
// layer over tokens. RWPO and drifting are not (a proximal step, a pull toward a target Gaussian in R^d).
void checkNormalization(const AttentionSpec& a, const JsonReader& j) {
    if (a.normalization == Normalization::None) return;
    if (!supportsPreNormalization(a.type))
        j.failAt("normalization",
                 std::string("expected \"none\" or \"post\" for ") + toString(a.type) +
                     " attention (pre and peri normalise the tokens an attention layer reads: "
                     "softmax, l2, sinkhorn, linear, exp, relu, sigmoid), got \"" +
                     toString(a.normalization) + "\"");
}

// Positional decay multiplies exponential weights by exp(-(lambda / N) |i - j|): the variants whose weights
// are exponentials of the scores and that the streaming kernel computes
// (docs/math/theory.md#positional-decay).
void checkPositionalDecay(const AttentionSpec& a, const JsonReader& j) {
    if (a.positionalDecay == 0.0) return;
    if (!supportsPositionalDecay(a.type))
        j.failAt("positional_decay",
                 std::string("expected 0 for ") + toString(a.type) +
                     " attention (positional decay is supported for softmax, l2 and exp), "
                     "got " +
                     numberText(a.positionalDecay));
}

// Symmetric (up to rounding) with no eigenvalue below -tolerance * scale.
Mat covarianceOf(const JsonReader& j, int d) {
    const Mat cov = j.square(d);
    const double scale = std::max(1.0, cov.cwiseAbs().maxCoeff());
    const std::string expected = "expected symmetric positive semi-definite " + shapeOf(d, d) + " matrix";
    for (int r = 0; r < d; ++r)
        for (int c = r + 1; c < d; ++c)
            if (std::fabs(cov(r, c) - cov(c, r)) > 1e-12 * scale)
                j.fail(expected + ", got cov[" + std::to_string(r) + "][" + std::to_string(c) +
                       "] = " + numberText(cov(r, c)) + " != cov[" + std::to_string(c) + "][" +
                       std::to_string(r) + "] = " + numberText(cov(c, r)));
    const double smallest =
        Eigen::SelfAdjointEigenSolver<Mat>(cov, Eigen::EigenvaluesOnly).eigenvalues().minCoeff();
    if (smallest < -1e-10 * scale) {
        std::ostringstream value;
        value << std::setprecision(6) << smallest;
        j.fail(expected + ", got smallest eigenvalue " + value.str());
    }
    return cov;
}

// A head is a few bytes of JSON ({} or a number stands for a scaled identity) but holds a d x d V (and Q, K
// of at most as many values): capped at what a scene file within kMaxSceneFileBytes could spell out, so that
// a small file or share string cannot make the parser allocate gigabytes. Counted before any head is built.
constexpr long long kMaxHeadValues = 1LL << 25;

void checkHeadValues(const JsonReader& j, int d) {
    auto headsIn = [d](const JsonReader& o) {
        long long n = 0;
        if (auto h = o.find("heads"); h && h->json().is_array()) n += (long long)h->size();
        if (auto s = o.find("stacked"))
            if (auto H = s->find("H"); H && H->json().is_number())
                n += std::clamp(H->json().get<double>(), 0.0, double(d));
        return n;
    };
    long long heads = headsIn(j);
    if (auto k = j.find("keyframes"); k && k->json().is_array())
        for (std::size_t i = 0; i < k->size(); ++i) heads += headsIn((*k)[i]);
    if (heads * d * d > kMaxHeadValues)
        j.fail("expected at most " + std::to_string(kMaxHeadValues) + " values in the V matrices of " +
               "all heads and keyframes, got " + std::to_string(heads) + " heads of " + shapeOf(d, d) + " (" +
               std::to_string(heads * d * d) + " values)");
}

// The members of each section that are not scalar parameters (SceneSchema.h): read here.
constexpr std::array<std::string_view, 10> kRootStructure{"version", "name",      "description", "figure",
                                                          "initial", "attention", "integrator",  "output",
                                                          "moments", "view"};
constexpr std::array<std::string_view, 4> kAttentionStructure{"heads", "stacked", "keyframes", "target"};
constexpr std::array<std::string_view, 7> kInitialStructure{"mean",  "cov",  "low",   "high",
                                                            "radii", "path", "points"};
constexpr std::array<std::string_view, 1> kMomentsStructure{"grid"};

// The scalar parameters come from the schema; what is read here is the structure (heads, keyframes, the
// drifting target) and the rules between fields.
void parseAttention(const JsonReader& j, Scene& s) {
    readSceneParams(j, kAttentionStructure, s);
    AttentionSpec& a = s.attention;
    const int d = s.d;
    // Type "masked" is softmax with masked = true: an explicit "masked": false contradicts it.
    if (!a.masked && j.find("type")->json().get<std::string>() == "masked")
        j.failAt("masked", "expected true (type \"masked\" is masked softmax), got false");
    checkMasking(a, j.pointerTo("masked"));
    // "normalization" names the scheme; "sphere" (older scenes) is "post" alone. Both may be present when
    // they agree.
    if (auto v = j.find("normalization"); v && j.has("sphere")) {
        const bool sphere = j.find("sphere")->boolean();
        const Normalization scheme = normalizationOf(a);
        if (sphere != (scheme == Normalization::Post))
            v->fail(std::string("expected a scheme agreeing with \"sphere\": ") +
                    (sphere ? "true" : "false") + " (\"post\" is \"sphere\": true), got \"" +
                    toString(scheme) + "\"");
    }
    if (a.sphere && d < 2)
        j.failAt(j.has("normalization") ? "normalization" : "sphere",
                 "expected d >= 2 for attention on the unit sphere, got d = " + std::to_string(d));

    checkHeadValues(j, d);
    if (auto v = j.find("keyframes")) a.keyframes = parseKeyframes(*v, d);
    if (auto heads = parseHeadsOrStacked(j, d))
        a.heads = std::move(*heads);
    else if (a.keyframes.empty() && a.type != AttentionType::Rwpo && a.type != AttentionType::Drifting)
        a.heads.push_back({Mat::Identity(d, d), Mat::Identity(d, d), Mat::Identity(d, d)});
    // RWPO has no Q/K/V; keyframes replace the constant heads. Otherwise at least one head must act.
    if (a.heads.empty() && a.keyframes.empty() && a.type != AttentionType::Rwpo &&
        a.type != AttentionType::Drifting)
        j.failAt(j.has("heads") ? "heads" : "stacked", "expected at least one head");

    if (auto t = j.find("target")) {
        t->expectObject({"mean", "cov"});
        if (auto v = t->find("mean")) a.targetMean = v->vector(d);
        if (auto v = t->find("cov")) a.targetCov = covarianceOf(*v, d);
    }
    checkNormalization(a, j);
    checkPositionalDecay(a, j);
}

std::string resolvePath(const std::string& path, const std::string& baseDir) {
    fs::path p(path);
    if (p.is_relative()) p = fs::path(baseDir) / p;
    return fs::absolute(p).lexically_normal().string();
}

std::string lowerExtension(const std::string& path) {
    std::string ext = fs::path(path).extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(),
                   [](unsigned char c) { return char(std::tolower(c)); });
    return ext;
}

// Every field of every kind is read and validated (so that a scene written with all fields reads back), but
// only the fields of the chosen kind are used by initialTokens.
void parseInitial(const std::optional<JsonReader>& section, Scene& scene, const std::string& baseDir) {
    const int d = scene.d;
    InitialSpec& s = scene.initial;
    s.mean = Vec::Zero(d);
    s.cov = Mat::Identity(d, d);
    s.low = Vec::Constant(d, -1.0);
    s.high = Vec::Constant(d, 1.0);
    if (!section) return;
    const JsonReader& j = *section;
    readSceneParams(j, kInitialStructure, scene);
    if (auto v = j.find("mean")) s.mean = v->vector(d);
    if (auto v = j.find("cov")) s.cov = covarianceOf(*v, d);
    if (auto v = j.find("low")) s.low = v->vector(d);
    if (auto v = j.find("high")) s.high = v->vector(d);
    for (int c = 0; c < d; ++c)
        if (!(s.high(c) > s.low(c)))
            j.failAt("high", "expected high > low in every coordinate, got high[" + std::to_string(c) +
                                 "] = " + numberText(s.high(c)) + " <= low[" + std::to_string(c) +
                                 "] = " + numberText(s.low(c)));
    if (auto v = j.find("radii")) {
        if (v->json().is_number())
            s.radii = {v->numberAtLeast(0.0)};
        else if (!v->json().is_array() || v->size() == 0)
            v->fail("expected non-empty array of radii >= 0, got " + v->describe());
        else {
            s.radii.clear();
            for (std::size_t i = 0; i < v->size(); ++i) s.radii.push_back((*v)[i].numberAtLeast(0.0));
        }
    }
    if (auto v = j.find("path")) {
        const std::string path = v->string();
        if (!path.empty()) s.path = resolvePath(path, baseDir);
    }
    if (auto v = j.find("points")) s.points = pointsOf(*v, d);
    if (s.kind == InitKind::Points && s.points.rows() == 0)
        j.failAt("points", "required for kind \"points\" (an array of points, each of d numbers)");
    if (s.kind == InitKind::Rings && d < 2)
        j.failAt("kind", "expected d >= 2 for rings (they lie in the first two coordinates), got d = " +
                             std::to_string(d));
    if (s.kind == InitKind::File) {
        if (s.path.empty())
            j.failAt("path", "required for kind \"file\" (a .npy or .csv file of N x d tokens)");
        const std::string ext = lowerExtension(s.path);
        if (ext != ".npy" && ext != ".csv")
            j.failAt("path", "expected a .npy or .csv file, got " + quoteForMessage(s.path, kMaxQuotedPath));
        checkTokenFile(s.path);
    }
}

void parseIntegrator(const std::optional<JsonReader>& section, Scene& scene) {
    if (!section) return;
    const JsonReader& j = *section;
    readSceneParams(j, {}, scene);
    const IntegratorSpec& s = scene.integrator;
    // What float64 time and error control can reach (docs/scene.md): a nominal step T / steps that is not a
    // normal number does not advance t reliably, and a relative tolerance under 100 ulps is never met.
    if (!std::isnormal(s.T / s.steps))
        j.failAt("T", "the nominal step T / steps = " + numberText(s.T / s.steps) +
                          " underflows float64; expected T >= steps x 2.3e-308");
    constexpr double kMinRtol = 100 * std::numeric_limits<double>::epsilon();
    if (s.rtol < kMinRtol)
        j.failAt("rtol", "expected at least " + numberText(kMinRtol) +
                             " (100 ulps of float64; a smaller relative tolerance is never met), got " +
                             numberText(s.rtol));
}

ConeGridSpec parseGrid(const JsonReader& j, int d) {
    j.expectObject({"nu", "nc", "limits"});
    if (d != 2) j.fail("expected no grid: the trace-1 cone grid needs d = 2, got d = " + std::to_string(d));
    ConeGridSpec g;
    g.nu = int(j.require("nu", "grid points along x, an integer in [1, 1000]").integer(1, 1000));
    g.nc = int(j.require("nc", "grid points along y, an integer in [1, 1000]").integer(1, 1000));
    if (auto v = j.find("limits")) {
        const Vec lim = v->vector(4);
        if (!(lim[0] <= lim[1]) || !(lim[2] <= lim[3]))
            v->fail("expected [x0, x1, y0, y1] with x0 <= x1 and y0 <= y1, got [" + numberText(lim[0]) +
                    ", " + numberText(lim[1]) + ", " + numberText(lim[2]) + ", " + numberText(lim[3]) + "]");
        g.x0 = lim[0], g.x1 = lim[1], g.y0 = lim[2], g.y1 = lim[3];
    }
    // Only the points inside the unit disc are kept (initGrid): a grid outside it would run nothing.
    bool any = false;
    for (double x : linspace(g.x0, g.x1, g.nu))
        for (double y : linspace(g.y0, g.y1, g.nc)) any = any || insideTraceOneDisc(x, y);
    if (!any)
        j.fail("expected a grid with at least one point inside the unit disc x^2 + y^2 < 1, got " +
               std::to_string(g.nu) + " x " + std::to_string(g.nc) + " points on [" + numberText(g.x0) +
               ", " + numberText(g.x1) + "] x [" + numberText(g.y0) + ", " + numberText(g.y1) +
               "], none inside");
    return g;
}

void parseMoments(const std::optional<JsonReader>& section, Scene& scene) {
    if (!section) return;
    readSceneParams(*section, kMomentsStructure, scene);
    if (auto g = section->find("grid")) scene.moments.grid = parseGrid(*g, scene.d);
}

Scene parseScene(const JsonReader& root, const std::string& baseDir) {
    if (!root.json().is_object()) root.fail("expected a JSON object (a scene), got " + root.describe());
    Scene s;
    if (auto v = root.find("version")) {
        s.version = int(v->integer(0, kMaxInt));
        if (s.version != 1)
            v->fail("unsupported scene version " + v->describe() + " (this build reads version 1)");
    }
    readSceneParams(root, kRootStructure, s); // d, n, precision
    if (auto v = root.find("name")) s.name = v->string();
    if (auto v = root.find("description")) s.description = v->string();
    if (auto v = root.find("figure")) s.figure = v->string();
    parseInitial(root.find("initial"), s, baseDir);
    parseAttention(root.require("attention", "an object with at least \"type\""), s);
    parseIntegrator(root.find("integrator"), s);
    if (auto v = root.find("output")) readSceneParams(*v, {}, s);
    parseMoments(root.find("moments"), s);
    if (auto v = root.find("view")) {
        v->expectObject();
        s.viewJson = v->json().dump();
    }
    return s;
}

} // namespace

Scene sceneFromJson(const std::string& text, const std::string& baseDir) {
    try {
        const JsonReader::Json root = parseJson(text, kSceneMaxJsonDepth);
        return parseScene(JsonReader(root), baseDir);
    } catch (const SceneError&) {
        throw;
    } catch (const JsonError& e) {
        throw SceneError(e.pointer, e.detail);
    }
}

Scene loadScene(const std::string& path) {
    auto fail = [&](const std::string& why) -> SceneError {
        return SceneError("", "cannot read scene file " + quoteForMessage(path, kMaxQuotedPath) + ": " + why);
    };
    std::error_code ec;
    if (fs::is_directory(path, ec)) throw fail("it is a directory");
    std::ifstream in(path, std::ios::binary);
    if (!in) throw fail(std::strerror(errno));
    std::string content;
    char buffer[1 << 16];
    while (in.read(buffer, sizeof buffer) || in.gcount() > 0) {
        content.append(buffer, std::size_t(in.gcount()));
        if (content.size() > kMaxSceneFileBytes) throw fail("larger than 64 MiB, not a scene");
    }
    if (in.bad()) throw fail("read error");
    const std::string baseDir = fs::absolute(fs::path(path)).parent_path().string();
    try {
        return sceneFromJson(content, baseDir);
    } catch (const SceneError& e) {
        // Whole-file errors (syntax) get the file name; field errors keep their pointer as the location.
        if (!e.pointer.empty()) throw;
        throw SceneError("", "in scene file " + quoteForMessage(path, kMaxQuotedPath) + ": " + e.detail);
    }
}

} // namespace flowscope
