// Flowscope engine: the Scene <-> JSON layer (schema: docs/scene.md).
//
// Parsing is strict on purpose: a scene is shared as a file or a string and must mean exactly one thing, so
// every malformed input (syntax, type, range, shape, unknown or duplicated key) is rejected with a SceneError
// that names the field by JSON pointer and says what was expected and what was found. Writing is complete:
// every field is written explicitly, so a saved scene does not change meaning if a default changes later.
#include "engine/scene/Scene.h"

#include "engine/core/Text.h"
#include "engine/gaussian/Cone.h"
#include "engine/io/AtomicFile.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <limits>
#include <optional>
#include <set>
#include <sstream>
#include <string_view>

namespace flowscope {

namespace {

// ordered_json keeps the keys in the order written, so a saved scene reads top-down like the schema and the
// GUI-owned "view" object keeps its author's order.
using Json = nlohmann::ordered_json;
namespace fs = std::filesystem;

constexpr int kMaxDim = 1024;
constexpr long long kMaxTokens = 16777216;      // 2^24
constexpr std::size_t kMaxInlinePoints = 65536; // larger token sets belong in a .npy file
constexpr long long kMaxInt = std::numeric_limits<int>::max();
constexpr std::size_t kMaxSceneFileBytes = std::size_t(64) << 20;
// A scene nests about 9 levels (root, attention, keyframes, heads, a matrix's rows); each level costs the
// parser a few hundred bytes, so "[[[[..." would turn a small file into gigabytes.
constexpr std::size_t kMaxJsonDepth = 64;

// The message of a SceneError without its "pointer: " prefix.
std::string messageOf(const SceneError& e) {
    const std::string what = e.what(), prefix = e.pointer + ": ";
    return what.rfind(prefix, 0) == 0 ? what.substr(prefix.size()) : what;
}

[[noreturn]] void fail(const std::string& pointer, const std::string& message) {
    throw SceneError(pointer, message);
}

// ---------------------------------------------------------------------------------------------------------
// JSON pointers and descriptions of what was found

// A key of more than 80 bytes or with control characters (never a field of the schema) is shown as
// quoteForMessage shows it, so that a pointer stays short and on one line.
std::string escapePointerToken(const std::string& key) {
    if (key.size() > 80 ||
        std::any_of(key.begin(), key.end(), [](char c) { return (unsigned char)c < 0x20; }))
        return quoteForMessage(key);
    std::string out;
    for (char c : key) {
        if (c == '~')
            out += "~0";
        else if (c == '/')
            out += "~1";
        else
            out += c;
    }
    return out;
}

std::string at(const std::string& pointer, const std::string& key) {
    return pointer + "/" + escapePointerToken(key);
}
std::string at(const std::string& pointer, std::size_t index) {
    return pointer + "/" + std::to_string(index);
}

// A number as the user would write it: integral values without a trailing ".0".
std::string formatNumber(double v) {
    if (std::isnan(v)) return "NaN";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    if (v == std::floor(v) && std::fabs(v) < 1e15) return std::to_string((long long)v);
    return Json(v).dump();
}

std::string describe(const Json& j) {
    switch (j.type()) {
    case Json::value_t::null:
        return "null";
    case Json::value_t::boolean:
        return j.get<bool>() ? "true" : "false";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
        return j.dump();
    case Json::value_t::number_float: {
        const double v = j.get<double>();
        return std::isfinite(v) ? j.dump() : formatNumber(v);
    }
    case Json::value_t::string:
        return "string " + quoteForMessage(j.get_ref<const std::string&>());
    case Json::value_t::array:
        return "array of " + std::to_string(j.size()) + " element(s)";
    case Json::value_t::object:
        return "object";
    default:
        return "a value of unsupported type";
    }
}

std::string shapeOf(Eigen::Index rows, Eigen::Index cols) {
    return std::to_string(rows) + "x" + std::to_string(cols);
}

// ---------------------------------------------------------------------------------------------------------
// Objects and keys

std::size_t editDistance(std::string_view a, std::string_view b) {
    std::vector<std::size_t> row(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        std::size_t diagonal = row[0];
        row[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            const std::size_t above = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
            diagonal = above;
        }
    }
    return row[b.size()];
}

std::string joinNames(const std::vector<std::string_view>& names) {
    std::string out;
    for (std::size_t i = 0; i < names.size(); ++i) out += (i ? ", " : "") + std::string(names[i]);
    return out;
}

// " (did you mean "x"?)" when `word` is a likely typo of one of `names`, else "".
std::string suggestion(const std::string& word, const std::vector<std::string_view>& names) {
    std::string best;
    std::size_t bestDistance = 3; // at most two edits count as a typo
    for (auto name : names) {
        // Lengths that differ by three or more are three edits apart (and a 5 MB key is not compared).
        if (word.size() > name.size() + 2 || name.size() > word.size() + 2) continue;
        const std::size_t distance = editDistance(word, name);
        if (distance < bestDistance) bestDistance = distance, best = name;
    }
    return best.empty() ? "" : "; did you mean \"" + best + "\"?";
}

void requireObject(const Json& j, const std::string& pointer) {
    if (!j.is_object()) fail(pointer, "expected object, got " + describe(j));
}

// Unknown keys are rejected so that a typo ("stpes") is an error instead of a silently ignored setting.
void checkKeys(const Json& object, const std::string& pointer, const std::vector<std::string_view>& allowed) {
    for (auto it = object.begin(); it != object.end(); ++it) {
        if (std::find(allowed.begin(), allowed.end(), it.key()) != allowed.end()) continue;
        fail(at(pointer, it.key()), "unknown field " + quoteForMessage(it.key()) + " (expected one of " +
                                        joinNames(allowed) + ")" + suggestion(it.key(), allowed));
    }
}

const Json* find(const Json& object, const char* key) {
    auto it = object.find(key);
    return it == object.end() ? nullptr : &*it;
}

const Json& require(const Json& object, const std::string& pointer, const char* key,
                    const std::string& what) {
    const Json* j = find(object, key);
    if (!j) fail(at(pointer, key), "required field is missing (" + what + ")");
    return *j;
}

// ---------------------------------------------------------------------------------------------------------
// Scalars

double number(const Json& j, const std::string& pointer) {
    if (!j.is_number()) fail(pointer, "expected number, got " + describe(j));
    const double v = j.get<double>();
    if (!std::isfinite(v)) fail(pointer, "expected finite number, got " + describe(j));
    return v;
}

double numberAbove(const Json& j, const std::string& pointer, double low) {
    const double v = number(j, pointer);
    if (!(v > low)) fail(pointer, "expected number > " + formatNumber(low) + ", got " + describe(j));
    return v;
}

double numberAtLeast(const Json& j, const std::string& pointer, double low) {
    const double v = number(j, pointer);
    if (!(v >= low)) fail(pointer, "expected number >= " + formatNumber(low) + ", got " + describe(j));
    return v;
}

long long integer(const Json& j, const std::string& pointer, long long low, long long high) {
    if (!j.is_number()) fail(pointer, "expected integer, got " + describe(j));
    long long v = 0;
    if (j.is_number_unsigned()) {
        const auto u = j.get<std::uint64_t>();
        if (u > std::uint64_t(high))
            fail(pointer, "expected integer <= " + std::to_string(high) + ", got " + describe(j));
        v = (long long)u;
    } else if (j.is_number_integer()) {
        v = j.get<long long>();
    } else {
        // 2048.0 is an integer written by a tool that prints every number as a float; 2.5 is not.
        const double x = j.get<double>();
        if (!std::isfinite(x) || x != std::floor(x)) fail(pointer, "expected integer, got " + describe(j));
        if (x < double(low))
            fail(pointer, "expected integer >= " + std::to_string(low) + ", got " + describe(j));
        if (x > double(high))
            fail(pointer, "expected integer <= " + std::to_string(high) + ", got " + describe(j));
        v = (long long)x;
    }
    if (v < low) fail(pointer, "expected integer >= " + std::to_string(low) + ", got " + describe(j));
    if (v > high) fail(pointer, "expected integer <= " + std::to_string(high) + ", got " + describe(j));
    return v;
}

std::uint64_t seedValue(const Json& j, const std::string& pointer) {
    if (j.is_number_unsigned()) return j.get<std::uint64_t>();
    if (j.is_number_integer()) fail(pointer, "expected integer >= 0, got " + describe(j));
    if (j.is_number_float()) {
        const double x = j.get<double>();
        if (std::isfinite(x) && x == std::floor(x) && x >= 0 && x < 18446744073709551616.0)
            return std::uint64_t(x);
    }
    fail(pointer, "expected integer in [0, 2^64 - 1], got " + describe(j));
}

bool boolean(const Json& j, const std::string& pointer) {
    if (!j.is_boolean()) fail(pointer, "expected true or false, got " + describe(j));
    return j.get<bool>();
}

std::string stringValue(const Json& j, const std::string& pointer) {
    if (!j.is_string()) fail(pointer, "expected string, got " + describe(j));
    return j.get<std::string>();
}

// A string naming one of `names` (in enum order); returns its index.
template <std::size_t N>
int choice(const Json& j, const std::string& pointer, const char* what,
           const std::array<std::string_view, N>& names) {
    const std::string s = stringValue(j, pointer);
    for (std::size_t i = 0; i < N; ++i)
        if (s == names[i]) return int(i);
    const std::vector<std::string_view> list(names.begin(), names.end());
    fail(pointer, std::string("unknown ") + what + " " + quoteForMessage(s) + " (expected one of " +
                      joinNames(list) + ")" + suggestion(s, list));
}

// ---------------------------------------------------------------------------------------------------------
// Vectors and matrices

// An array of `size` numbers, or one number s meaning (s, ..., s).
Vec vectorOf(const Json& j, const std::string& pointer, int size) {
    if (j.is_number()) return Vec::Constant(size, number(j, pointer));
    if (!j.is_array() || j.size() != std::size_t(size))
        fail(pointer, "expected array of " + std::to_string(size) + " numbers (or one number for all), got " +
                          describe(j));
    Vec v(size);
    for (int i = 0; i < size; ++i) v(i) = number(j[std::size_t(i)], at(pointer, std::size_t(i)));
    return v;
}

// An array of equally long rows of numbers (any shape, at least 1x1).
Mat matrixOf(const Json& j, const std::string& pointer) {
    if (!j.is_array() || j.empty())
        fail(pointer, "expected matrix (array of rows, or one number s for s*I), got " + describe(j));
    const std::size_t rows = j.size();
    std::size_t cols = 0;
    for (std::size_t r = 0; r < rows; ++r) {
        const Json& row = j[r];
        if (!row.is_array() || row.empty())
            fail(at(pointer, r), "expected matrix row (non-empty array of numbers), got " + describe(row));
        if (r == 0)
            cols = row.size();
        else if (row.size() != cols)
            fail(pointer, "expected matrix with rows of equal length, got row 0 of length " +
                              std::to_string(cols) + " and row " + std::to_string(r) + " of length " +
                              std::to_string(row.size()));
    }
    if (rows > std::size_t(kMaxDim) || cols > std::size_t(kMaxDim))
        fail(pointer, "expected matrix of at most " + std::to_string(kMaxDim) + " rows and columns, got " +
                          shapeOf(Eigen::Index(rows), Eigen::Index(cols)));
    Mat m(rows, cols);
    for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t c = 0; c < cols; ++c)
            m(Eigen::Index(r), Eigen::Index(c)) = number(j[r][c], at(at(pointer, r), c));
    return m;
}

// A d x d matrix, or a number s meaning s * I_d.
Mat squareOf(const Json& j, const std::string& pointer, int d) {
    if (j.is_number()) return number(j, pointer) * Mat::Identity(d, d);
    Mat m = matrixOf(j, pointer);
    if (m.rows() != d || m.cols() != d)
        fail(pointer, "expected " + shapeOf(d, d) + " matrix, got " + shapeOf(m.rows(), m.cols()));
    return m;
}

// Inline points: an array of 0..kMaxInlinePoints rows of exactly d finite numbers each.
Tokens pointsOf(const Json& j, const std::string& pointer, int d) {
    if (!j.is_array())
        fail(pointer, "expected array of points (each an array of " + std::to_string(d) + " numbers), got " +
                          describe(j));
    if (j.size() > kMaxInlinePoints)
        fail(pointer, "expected at most " + std::to_string(kMaxInlinePoints) +
                          " points (use kind \"file\" with a " + ".npy file for more), got " +
                          std::to_string(j.size()));
    Tokens P(Eigen::Index(j.size()), d);
    for (std::size_t r = 0; r < j.size(); ++r) {
        const Json& row = j[r];
        if (!row.is_array() || row.size() != std::size_t(d))
            fail(at(pointer, r), "expected point of " + std::to_string(d) +
                                     " numbers (d of the scene), got " + describe(row));
        for (int c = 0; c < d; ++c)
            P(Eigen::Index(r), c) = number(row[std::size_t(c)], at(at(pointer, r), c));
    }
    return P;
}

// A query/key matrix: k x d with 1 <= k <= d, or a number s meaning s * I_d (k = d).
Mat queryKeyOf(const Json& j, const std::string& pointer, int d) {
    if (j.is_number()) return number(j, pointer) * Mat::Identity(d, d);
    Mat m = matrixOf(j, pointer);
    if (m.cols() != d || m.rows() > d)
        fail(pointer, "expected k x " + std::to_string(d) + " matrix with 1 <= k <= " + std::to_string(d) +
                          ", got " + shapeOf(m.rows(), m.cols()));
    return m;
}

// ---------------------------------------------------------------------------------------------------------
// Attention heads

HeadParams parseHead(const Json& j, const std::string& pointer, int d) {
    requireObject(j, pointer);
    checkKeys(j, pointer, {"Q", "K", "V"});
    HeadParams head;
    head.Q = find(j, "Q") ? queryKeyOf(j["Q"], at(pointer, "Q"), d) : Mat::Identity(d, d);
    head.K = find(j, "K") ? queryKeyOf(j["K"], at(pointer, "K"), d) : Mat::Identity(d, d);
    head.V = find(j, "V") ? squareOf(j["V"], at(pointer, "V"), d) : Mat::Identity(d, d);
    if (head.K.rows() != head.Q.rows())
        fail(at(pointer, "K"), "expected " + shapeOf(head.Q.rows(), d) + " matrix (same shape as Q), got " +
                                   shapeOf(head.K.rows(), head.K.cols()));
    return head;
}

std::vector<HeadParams> parseHeads(const Json& j, const std::string& pointer, int d) {
    if (!j.is_array()) fail(pointer, "expected array of heads, got " + describe(j));
    if (j.size() > std::size_t(kMaxDim))
        fail(pointer,
             "expected at most " + std::to_string(kMaxDim) + " heads, got " + std::to_string(j.size()));
    std::vector<HeadParams> heads;
    for (std::size_t h = 0; h < j.size(); ++h) heads.push_back(parseHead(j[h], at(pointer, h), d));
    return heads;
}

// The stacking convention of the authors' code (docs/math/attention.md#multi-head): head h owns rows block h
// of the stacked Q and K (d/H rows each; rows past the end of a short Q are zero, so that head's scores
// vanish exactly as an empty slice would) and V^(h) = E_h V keeps only the rows of V in block h, so that
// sum_h V^(h) = V.
std::vector<HeadParams> parseStacked(const Json& j, const std::string& pointer, int d) {
    requireObject(j, pointer);
    checkKeys(j, pointer, {"H", "Q", "K", "V"});
    const int H =
        int(integer(require(j, pointer, "H", "the number of heads, dividing d"), at(pointer, "H"), 1, d));
    if (d % H != 0)
        fail(at(pointer, "H"), "expected H dividing d = " + std::to_string(d) + ", got " + std::to_string(H));
    const Mat Q = find(j, "Q") ? queryKeyOf(j["Q"], at(pointer, "Q"), d) : Mat::Identity(d, d);
    const Mat K = find(j, "K") ? queryKeyOf(j["K"], at(pointer, "K"), d) : Mat::Identity(d, d);
    const Mat V = find(j, "V") ? squareOf(j["V"], at(pointer, "V"), d) : Mat::Identity(d, d);
    if (K.rows() != Q.rows())
        fail(at(pointer, "K"), "expected " + shapeOf(Q.rows(), d) + " matrix (same shape as Q), got " +
                                   shapeOf(K.rows(), K.cols()));
    const int block = d / H;
    std::vector<HeadParams> heads(std::size_t(H), HeadParams{});
    for (int h = 0; h < H; ++h) {
        HeadParams& head = heads[std::size_t(h)];
        head.Q = Mat::Zero(block, d);
        head.K = Mat::Zero(block, d);
        const int first = h * block, available = std::clamp(int(Q.rows()) - first, 0, block);
        head.Q.topRows(available) = Q.middleRows(first, available);
        head.K.topRows(available) = K.middleRows(first, available);
        head.V = Mat::Zero(d, d);
        head.V.middleRows(first, block) = V.middleRows(first, block);
    }
    return heads;
}

// "heads" or "stacked" inside `j` (an attention object or a keyframe); nullopt when neither is present.
std::optional<std::vector<HeadParams>> parseHeadsOrStacked(const Json& j, const std::string& pointer, int d) {
    const Json* heads = find(j, "heads");
    const Json* stacked = find(j, "stacked");
    if (heads && stacked) fail(at(pointer, "stacked"), "expected either \"heads\" or \"stacked\", not both");
    if (heads) return parseHeads(*heads, at(pointer, "heads"), d);
    if (stacked) return parseStacked(*stacked, at(pointer, "stacked"), d);
    return std::nullopt;
}

std::vector<Keyframe> parseKeyframes(const Json& j, const std::string& pointer, int d) {
    if (!j.is_array()) fail(pointer, "expected array of keyframes, got " + describe(j));
    std::vector<Keyframe> keyframes;
    for (std::size_t i = 0; i < j.size(); ++i) {
        const std::string p = at(pointer, i);
        requireObject(j[i], p);
        checkKeys(j[i], p, {"t", "heads", "stacked"});
        Keyframe frame;
        frame.t = number(require(j[i], p, "t", "the keyframe time"), at(p, "t"));
        if (i > 0 && !(frame.t > keyframes.back().t))
            fail(at(p, "t"), "expected keyframe times strictly increasing, got t = " + formatNumber(frame.t) +
                                 " after t = " + formatNumber(keyframes.back().t));
        auto heads = parseHeadsOrStacked(j[i], p, d);
        if (!heads || heads->empty())
            fail(at(p, "heads"), "expected at least one head (\"heads\" or \"stacked\")");
        frame.heads = std::move(*heads);
        if (i > 0) {
            const auto& first = keyframes.front().heads;
            const std::string hp = at(p, find(j[i], "heads") ? "heads" : "stacked");
            if (frame.heads.size() != first.size())
                fail(hp, "expected " + std::to_string(first.size()) + " heads like keyframe 0, got " +
                             std::to_string(frame.heads.size()));
            for (std::size_t h = 0; h < first.size(); ++h)
                if (frame.heads[h].Q.rows() != first[h].Q.rows())
                    fail(at(at(hp, h), "Q"), "expected " + shapeOf(first[h].Q.rows(), d) +
                                                 " matrix like keyframe 0, got " +
                                                 shapeOf(frame.heads[h].Q.rows(), d));
        }
        keyframes.push_back(std::move(frame));
    }
    return keyframes;
}

// ---------------------------------------------------------------------------------------------------------
// Sections

constexpr std::array<std::string_view, 9> kAttentionNames{"softmax", "linear",  "l2",   "sinkhorn", "exp",
                                                          "relu",    "sigmoid", "rwpo", "drifting"};
// What "type" accepts: the names above plus "masked", an alias of softmax with masked = true.
constexpr std::array<std::string_view, 10> kAttentionTypeNames{
    "softmax", "linear", "l2", "sinkhorn", "exp", "relu", "sigmoid", "rwpo", "drifting", "masked"};
constexpr std::array<std::string_view, 2> kMomentMethodNames{"adaptive", "paper_euler"};
constexpr std::array<std::string_view, 4> kMethodNames{"euler", "heun", "rk4", "dopri5"};
constexpr std::array<std::string_view, 2> kInterpolationNames{"piecewise", "linear"};
constexpr std::array<std::string_view, 3> kRwpoKernelNames{"corrected", "as_printed", "per_coordinate"};
constexpr std::array<std::string_view, 5> kInitNames{"gaussian", "uniform", "rings", "file", "points"};
constexpr std::array<std::string_view, 2> kPrecisionNames{"float32", "float64"};

void parseSinkhorn(const Json& j, const std::string& pointer, AttentionSpec& a) {
    requireObject(j, pointer);
    checkKeys(j, pointer, {"eps", "iterations", "tol"});
    if (auto* v = find(j, "eps")) a.sinkhornEps = numberAbove(*v, at(pointer, "eps"), 0.0);
    if (auto* v = find(j, "iterations"))
        a.sinkhornIterations = int(integer(*v, at(pointer, "iterations"), 1, 1000000));
    if (auto* v = find(j, "tol")) a.sinkhornTol = numberAtLeast(*v, at(pointer, "tol"), 0.0);
}

void parseRwpo(const Json& j, const std::string& pointer, AttentionSpec& a) {
    requireObject(j, pointer);
    checkKeys(j, pointer, {"lambda", "h", "kernel"});
    if (auto* v = find(j, "lambda")) a.lambda = numberAtLeast(*v, at(pointer, "lambda"), 0.0);
    if (auto* v = find(j, "h")) a.h = numberAbove(*v, at(pointer, "h"), 0.0);
    if (auto* v = find(j, "kernel"))
        a.rwpoKernel = RwpoKernel(choice(*v, at(pointer, "kernel"), "RWPO kernel", kRwpoKernelNames));
}

// Masking restricts the attention of token i to tokens j <= i. Reject combinations without a meaning here.
void checkMasking(const AttentionSpec& a, const std::string& pointer) {
    if (!a.masked) return;
    if (a.type == AttentionType::Linear)
        fail(pointer,
             "masked (causal) attention is not supported for linear attention (supported: softmax, l2, "
             "exp, relu, sigmoid)");
    if (a.type == AttentionType::Sinkhorn)
        fail(pointer, "masked (causal) attention is not supported for sinkhorn attention: the only causal "
                      "doubly-stochastic matrix is the identity");
    if (a.type == AttentionType::Rwpo || a.type == AttentionType::Drifting)
        fail(pointer, std::string("masked (causal) attention is not supported for ") +
                          (a.type == AttentionType::Rwpo ? "rwpo" : "drifting") +
                          " attention (supported: softmax, l2, exp, relu, sigmoid)");
}

void checkCovariance(const Mat& cov, const std::string& pointer);

// A head is a few bytes of JSON ({} or a number stands for a scaled identity) but holds a d x d V (and Q, K
// of at most as many values): capped at what a scene file within kMaxSceneFileBytes could spell out, so that
// a small file or share string cannot make the parser allocate gigabytes. Counted before any head is built.
constexpr long long kMaxHeadValues = 1LL << 25;

void checkHeadValues(const Json& j, const std::string& pointer, int d) {
    auto headsIn = [d](const Json& o) {
        long long n = 0;
        if (const Json* h = find(o, "heads"); h && h->is_array()) n += (long long)h->size();
        if (const Json* s = find(o, "stacked"); s && s->is_object())
            if (const Json* H = find(*s, "H"); H && H->is_number())
                n += std::clamp(H->get<double>(), 0.0, double(d));
        return n;
    };
    long long heads = headsIn(j);
    if (const Json* k = find(j, "keyframes"); k && k->is_array())
        for (const Json& frame : *k) heads += frame.is_object() ? headsIn(frame) : 0;
    if (heads * d * d > kMaxHeadValues)
        fail(pointer, "expected at most " + std::to_string(kMaxHeadValues) + " values in the V matrices of " +
                          "all heads and keyframes, got " + std::to_string(heads) + " heads of " +
                          shapeOf(d, d) + " (" + std::to_string(heads * d * d) + " values)");
}

AttentionSpec parseAttention(const Json& j, const std::string& pointer, int d) {
    requireObject(j, pointer);
    checkKeys(j, pointer,
              {"type", "beta", "scale_by_sqrt_k", "masked", "sphere", "heads", "stacked", "keyframes",
               "interpolation", "linear_eps", "sinkhorn", "rwpo", "target"});
    AttentionSpec a;
    const Json& type = require(j, pointer, "type",
                               "one of softmax, linear, l2, sinkhorn, exp, relu, sigmoid, rwpo, drifting");
    const int typeIndex = choice(type, at(pointer, "type"), "attention type", kAttentionTypeNames);
    const bool maskedType = typeIndex == int(kAttentionNames.size());
    a.type = maskedType ? AttentionType::Softmax : AttentionType(typeIndex);
    a.masked = maskedType;

    if (auto* v = find(j, "beta")) a.beta = numberAbove(*v, at(pointer, "beta"), 0.0);
    if (auto* v = find(j, "scale_by_sqrt_k")) a.scaleByRootK = boolean(*v, at(pointer, "scale_by_sqrt_k"));
    if (auto* v = find(j, "masked")) {
        a.masked = boolean(*v, at(pointer, "masked"));
        if (maskedType && !a.masked)
            fail(at(pointer, "masked"), "expected true (type \"masked\" is masked softmax), got false");
    }
    checkMasking(a, at(pointer, "masked"));
    if (auto* v = find(j, "sphere")) a.sphere = boolean(*v, at(pointer, "sphere"));
    if (a.sphere && d < 2)
        fail(at(pointer, "sphere"),
             "expected d >= 2 for attention on the unit sphere, got d = " + std::to_string(d));

    checkHeadValues(j, pointer, d);
    if (auto* v = find(j, "keyframes")) a.keyframes = parseKeyframes(*v, at(pointer, "keyframes"), d);
    if (auto* v = find(j, "interpolation"))
        a.interpolation =
            Interpolation(choice(*v, at(pointer, "interpolation"), "interpolation", kInterpolationNames));
    if (auto heads = parseHeadsOrStacked(j, pointer, d))
        a.heads = std::move(*heads);
    else if (a.keyframes.empty() && a.type != AttentionType::Rwpo && a.type != AttentionType::Drifting)
        a.heads.push_back({Mat::Identity(d, d), Mat::Identity(d, d), Mat::Identity(d, d)});
    // RWPO has no Q/K/V; keyframes replace the constant heads. Otherwise at least one head must act.
    if (a.heads.empty() && a.keyframes.empty() && a.type != AttentionType::Rwpo &&
        a.type != AttentionType::Drifting)
        fail(at(pointer, find(j, "heads") ? "heads" : "stacked"), "expected at least one head");

    if (auto* v = find(j, "linear_eps"); v && !v->is_null())
        a.linearEps = numberAbove(*v, at(pointer, "linear_eps"), 0.0);
    if (auto* v = find(j, "sinkhorn")) parseSinkhorn(*v, at(pointer, "sinkhorn"), a);
    if (auto* v = find(j, "rwpo")) parseRwpo(*v, at(pointer, "rwpo"), a);
    if (auto* t = find(j, "target")) {
        const std::string tp = at(pointer, "target");
        requireObject(*t, tp);
        checkKeys(*t, tp, {"mean", "cov"});
        if (auto* v = find(*t, "mean")) a.targetMean = vectorOf(*v, at(tp, "mean"), d);
        if (auto* v = find(*t, "cov")) {
            a.targetCov = squareOf(*v, at(tp, "cov"), d);
            checkCovariance(a.targetCov, at(tp, "cov"));
        }
    }
    return a;
}

// Symmetric (up to rounding) with no eigenvalue below -tolerance * scale.
void checkCovariance(const Mat& cov, const std::string& pointer) {
    const int d = int(cov.rows());
    const double scale = std::max(1.0, cov.cwiseAbs().maxCoeff());
    const std::string expected = "expected symmetric positive semi-definite " + shapeOf(d, d) + " matrix";
    for (int r = 0; r < d; ++r)
        for (int c = r + 1; c < d; ++c)
            if (std::fabs(cov(r, c) - cov(c, r)) > 1e-12 * scale)
                fail(pointer, expected + ", got cov[" + std::to_string(r) + "][" + std::to_string(c) +
                                  "] = " + formatNumber(cov(r, c)) + " != cov[" + std::to_string(c) + "][" +
                                  std::to_string(r) + "] = " + formatNumber(cov(c, r)));
    const double smallest =
        Eigen::SelfAdjointEigenSolver<Mat>(cov, Eigen::EigenvaluesOnly).eigenvalues().minCoeff();
    if (smallest < -1e-10 * scale) {
        std::ostringstream value;
        value << std::setprecision(6) << smallest;
        fail(pointer, expected + ", got smallest eigenvalue " + value.str());
    }
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
InitialSpec parseInitial(const Json* j, const std::string& pointer, int d, const std::string& baseDir) {
    InitialSpec s;
    s.mean = Vec::Zero(d);
    s.cov = Mat::Identity(d, d);
    s.low = Vec::Constant(d, -1.0);
    s.high = Vec::Constant(d, 1.0);
    if (!j) return s;
    requireObject(*j, pointer);
    checkKeys(*j, pointer,
              {"kind", "seed", "mean", "cov", "low", "high", "radii", "noise", "path", "points"});
    if (auto* v = find(*j, "kind"))
        s.kind = InitKind(choice(*v, at(pointer, "kind"), "initial kind", kInitNames));
    if (auto* v = find(*j, "seed")) s.seed = seedValue(*v, at(pointer, "seed"));
    if (auto* v = find(*j, "mean")) s.mean = vectorOf(*v, at(pointer, "mean"), d);
    if (auto* v = find(*j, "cov")) {
        s.cov = squareOf(*v, at(pointer, "cov"), d);
        checkCovariance(s.cov, at(pointer, "cov"));
    }
    if (auto* v = find(*j, "low")) s.low = vectorOf(*v, at(pointer, "low"), d);
    if (auto* v = find(*j, "high")) s.high = vectorOf(*v, at(pointer, "high"), d);
    for (int c = 0; c < d; ++c)
        if (!(s.high(c) > s.low(c)))
            fail(at(pointer, "high"), "expected high > low in every coordinate, got high[" +
                                          std::to_string(c) + "] = " + formatNumber(s.high(c)) + " <= low[" +
                                          std::to_string(c) + "] = " + formatNumber(s.low(c)));
    if (auto* v = find(*j, "radii")) {
        const std::string p = at(pointer, "radii");
        if (v->is_number())
            s.radii = {numberAtLeast(*v, p, 0.0)};
        else if (!v->is_array() || v->empty())
            fail(p, "expected non-empty array of radii >= 0, got " + describe(*v));
        else {
            s.radii.clear();
            for (std::size_t i = 0; i < v->size(); ++i)
                s.radii.push_back(numberAtLeast((*v)[i], at(p, i), 0.0));
        }
    }
    if (auto* v = find(*j, "noise")) s.noise = numberAtLeast(*v, at(pointer, "noise"), 0.0);
    if (auto* v = find(*j, "path")) {
        const std::string path = stringValue(*v, at(pointer, "path"));
        if (!path.empty()) s.path = resolvePath(path, baseDir);
    }
    if (auto* v = find(*j, "points")) s.points = pointsOf(*v, at(pointer, "points"), d);
    if (s.kind == InitKind::Points && s.points.rows() == 0)
        fail(at(pointer, "points"), "required for kind \"points\" (an array of points, each of d numbers)");
    if (s.kind == InitKind::Rings && d < 2)
        fail(at(pointer, "kind"),
             "expected d >= 2 for rings (they lie in the first two coordinates), got d = " +
                 std::to_string(d));
    if (s.kind == InitKind::File) {
        const std::string p = at(pointer, "path");
        if (s.path.empty()) fail(p, "required for kind \"file\" (a .npy or .csv file of N x d tokens)");
        const std::string ext = lowerExtension(s.path);
        if (ext != ".npy" && ext != ".csv")
            fail(p, "expected a .npy or .csv file, got " + quoteForMessage(s.path, kMaxQuotedPath));
        checkTokenFile(s.path);
    }
    return s;
}

IntegratorSpec parseIntegrator(const Json* j, const std::string& pointer) {
    IntegratorSpec s;
    if (!j) return s;
    requireObject(*j, pointer);
    checkKeys(*j, pointer, {"method", "T", "steps", "rtol", "atol", "divergence_norm", "min_step"});
    if (auto* v = find(*j, "method"))
        s.method = Method(choice(*v, at(pointer, "method"), "integrator method", kMethodNames));
    if (auto* v = find(*j, "T")) s.T = numberAbove(*v, at(pointer, "T"), 0.0);
    if (auto* v = find(*j, "steps")) s.steps = int(integer(*v, at(pointer, "steps"), 1, kMaxInt));
    if (auto* v = find(*j, "rtol")) s.rtol = numberAbove(*v, at(pointer, "rtol"), 0.0);
    if (auto* v = find(*j, "atol")) s.atol = numberAbove(*v, at(pointer, "atol"), 0.0);
    if (auto* v = find(*j, "divergence_norm"))
        s.divergenceNorm = numberAbove(*v, at(pointer, "divergence_norm"), 0.0);
    if (auto* v = find(*j, "min_step")) s.minStep = numberAbove(*v, at(pointer, "min_step"), 0.0);
    // What float64 time and error control can reach (docs/scene.md): a nominal step T / steps that is not a
    // normal number does not advance t reliably, and a relative tolerance under 100 ulps is never met.
    if (!std::isnormal(s.T / s.steps))
        fail(at(pointer, "T"), "the nominal step T / steps = " + formatNumber(s.T / s.steps) +
                                   " underflows float64; expected T >= steps x 2.3e-308");
    constexpr double kMinRtol = 100 * std::numeric_limits<double>::epsilon();
    if (s.rtol < kMinRtol)
        fail(at(pointer, "rtol"), "expected at least 2.2e-14 (100 ulps of float64; a smaller relative "
                                  "tolerance is never met), got " +
                                      formatNumber(s.rtol));
    return s;
}

OutputSpec parseOutput(const Json* j, const std::string& pointer) {
    OutputSpec s;
    if (!j) return s;
    requireObject(*j, pointer);
    checkKeys(*j, pointer, {"every", "entropy", "cluster_tol", "rank_tol"});
    if (auto* v = find(*j, "every")) s.every = int(integer(*v, at(pointer, "every"), 1, kMaxInt));
    if (auto* v = find(*j, "entropy")) s.entropy = boolean(*v, at(pointer, "entropy"));
    if (auto* v = find(*j, "cluster_tol")) s.clusterTol = numberAbove(*v, at(pointer, "cluster_tol"), 0.0);
    if (auto* v = find(*j, "rank_tol")) {
        s.rankTol = numberAbove(*v, at(pointer, "rank_tol"), 0.0);
        if (s.rankTol >= 1.0) fail(at(pointer, "rank_tol"), "expected number < 1, got " + describe(*v));
    }
    return s;
}

MomentsSpec parseMoments(const Json* j, const std::string& pointer, int d) {
    MomentsSpec s;
    if (!j) return s;
    requireObject(*j, pointer);
    checkKeys(*j, pointer, {"method", "step", "tol_low", "tol_high", "max_iter", "grid"});
    if (auto* v = find(*j, "method"))
        s.method = MomentMethod(choice(*v, at(pointer, "method"), "moment method", kMomentMethodNames));
    if (auto* v = find(*j, "step")) s.step = numberAbove(*v, at(pointer, "step"), 0.0);
    if (auto* v = find(*j, "tol_low")) s.tolLow = numberAtLeast(*v, at(pointer, "tol_low"), 0.0);
    if (auto* v = find(*j, "tol_high")) s.tolHigh = numberAbove(*v, at(pointer, "tol_high"), 0.0);
    if (auto* v = find(*j, "max_iter")) s.maxIter = integer(*v, at(pointer, "max_iter"), 1, 1000000000);
    if (auto* g = find(*j, "grid")) {
        const std::string gp = at(pointer, "grid");
        requireObject(*g, gp);
        checkKeys(*g, gp, {"nu", "nc", "limits"});
        if (d != 2)
            fail(gp, "expected no grid: the trace-1 cone grid needs d = 2, got d = " + std::to_string(d));
        s.grid.nu = int(integer(require(*g, gp, "nu", "grid points along x, an integer in [1, 1000]"),
                                at(gp, "nu"), 1, 1000));
        s.grid.nc = int(integer(require(*g, gp, "nc", "grid points along y, an integer in [1, 1000]"),
                                at(gp, "nc"), 1, 1000));
        if (auto* v = find(*g, "limits")) {
            const Vec lim = vectorOf(*v, at(gp, "limits"), 4);
            if (!(lim[0] <= lim[1]) || !(lim[2] <= lim[3]))
                fail(at(gp, "limits"), "expected [x0, x1, y0, y1] with x0 <= x1 and y0 <= y1, got [" +
                                           formatNumber(lim[0]) + ", " + formatNumber(lim[1]) + ", " +
                                           formatNumber(lim[2]) + ", " + formatNumber(lim[3]) + "]");
            s.grid.x0 = lim[0], s.grid.x1 = lim[1], s.grid.y0 = lim[2], s.grid.y1 = lim[3];
        }
        // Only the points inside the unit disc are kept (initGrid): a grid outside it would run nothing.
        bool any = false;
        for (double x : linspace(s.grid.x0, s.grid.x1, s.grid.nu))
            for (double y : linspace(s.grid.y0, s.grid.y1, s.grid.nc)) any = any || insideTraceOneDisc(x, y);
        if (!any)
            fail(gp, "expected a grid with at least one point inside the unit disc x^2 + y^2 < 1, got " +
                         std::to_string(s.grid.nu) + " x " + std::to_string(s.grid.nc) + " points on [" +
                         formatNumber(s.grid.x0) + ", " + formatNumber(s.grid.x1) + "] x [" +
                         formatNumber(s.grid.y0) + ", " + formatNumber(s.grid.y1) + "], none inside");
    }
    return s;
}

// ---------------------------------------------------------------------------------------------------------
// Text -> JSON, with duplicate keys rejected (nlohmann would silently keep the last one).

// Follows the parser through the document (via nlohmann's parse callback) so that errors the parser cannot
// locate by field, such as duplicate keys and numbers out of the range of a double, get a JSON pointer.
class ParsePosition {
  public:
    bool event(Json::parse_event_t event, Json& parsed) {
        using E = Json::parse_event_t;
        switch (event) {
        case E::object_start:
        case E::array_start:
            if (frames_.size() >= kMaxJsonDepth) // pointer(): the element about to be entered
                fail(pointer(), "expected at most " + std::to_string(kMaxJsonDepth) + " levels of nesting");
            enterElement();
            frames_.push_back({event == E::object_start, {}, -1, {}});
            break;
        case E::object_end:
        case E::array_end:
            frames_.pop_back();
            break;
        case E::key: {
            Frame& top = frames_.back();
            top.key = parsed.get<std::string>();
            if (!top.keys.insert(top.key).second)
                fail(pointer(),
                     "duplicate field " + quoteForMessage(top.key) + " (each field may appear only once)");
            break;
        }
        case E::value:
            enterElement();
            break;
        }
        return true;
    }

    // The pointer of the value being parsed: the current key of an object, the next index of an array.
    std::string pointer() const {
        std::string p;
        for (std::size_t i = 0; i < frames_.size(); ++i) {
            const Frame& f = frames_[i];
            const long index = f.index + (i + 1 == frames_.size() ? 1 : 0);
            p = f.object ? at(p, f.key) : at(p, std::size_t(index));
        }
        return p;
    }

  private:
    struct Frame {
        bool object;
        std::string key;
        long index; // of the element being read; -1 before the first
        std::set<std::string> keys;
    };
    void enterElement() {
        if (!frames_.empty() && !frames_.back().object) ++frames_.back().index;
    }
    std::vector<Frame> frames_;
};

// nlohmann's messages read "[json.exception.parse_error.101] parse error at line 3, column 7: ...": keep the
// part after the bracketed id, which has the position.
std::string withoutExceptionId(const std::string& message) {
    const auto close = message.find("] ");
    return message.rfind("[json.exception", 0) == 0 && close != std::string::npos ? message.substr(close + 2)
                                                                                  : message;
}

// The message without its id, cut short: nlohmann quotes the last token read ("last read: '...'"), which
// may be a string of megabytes.
std::string boundedParseMessage(const std::string& message) {
    const std::string text = withoutExceptionId(message);
    if (text.size() <= 300) return text;
    return text.substr(0, 300) + "…(" + std::to_string(text.size()) + " bytes)";
}

Json parseText(const std::string& text) {
    ParsePosition position;
    try {
        return Json::parse(text, [&](int, Json::parse_event_t event, Json& parsed) {
            return position.event(event, parsed);
        });
    } catch (const nlohmann::json::parse_error& e) {
        fail("", "invalid JSON: " + boundedParseMessage(e.what()));
    } catch (const nlohmann::json::out_of_range& e) {
        // A number literal beyond the range of a double (1e999): valid JSON, but not a finite number.
        fail(position.pointer(), "expected finite number, got " + boundedParseMessage(e.what()));
    }
}

// ---------------------------------------------------------------------------------------------------------
// Scene -> JSON

Json vectorJson(const Vec& v) {
    Json j = Json::array();
    for (Eigen::Index i = 0; i < v.size(); ++i) j.push_back(v(i));
    return j;
}

Json matrixJson(const Mat& m) {
    Json j = Json::array();
    for (Eigen::Index r = 0; r < m.rows(); ++r) {
        Json row = Json::array();
        for (Eigen::Index c = 0; c < m.cols(); ++c) row.push_back(m(r, c));
        j.push_back(std::move(row));
    }
    return j;
}

Json headsJson(const std::vector<HeadParams>& heads) {
    Json j = Json::array();
    for (const HeadParams& h : heads)
        j.push_back(Json{{"Q", matrixJson(h.Q)}, {"K", matrixJson(h.K)}, {"V", matrixJson(h.V)}});
    return j;
}

// A Scene built in code may leave vectors and matrices empty; they mean the documented defaults, which are
// written out so that the file is complete and valid.
Vec orDefault(const Vec& v, int d, double fill) {
    return v.size() ? v : Vec::Constant(d, fill);
}
Mat orIdentity(const Mat& m, int d) {
    return m.size() ? m : Mat::Identity(d, d);
}

Json initialJson(const Scene& s) {
    const InitialSpec& i = s.initial;
    Json j;
    j["kind"] = std::string(kInitNames[std::size_t(i.kind)]);
    j["seed"] = i.seed;
    j["mean"] = vectorJson(orDefault(i.mean, s.d, 0.0));
    j["cov"] = matrixJson(orIdentity(i.cov, s.d));
    j["low"] = vectorJson(orDefault(i.low, s.d, -1.0));
    j["high"] = vectorJson(orDefault(i.high, s.d, 1.0));
    j["radii"] = i.radii.empty() ? Json::array({1.0}) : Json(i.radii);
    j["noise"] = i.noise;
    j["path"] = i.path;
    if (i.points.rows()) j["points"] = matrixJson(i.points);
    return j;
}

Json attentionJson(const Scene& s) {
    const AttentionSpec& a = s.attention;
    Json j;
    j["type"] = std::string(kAttentionNames[std::size_t(a.type)]);
    j["beta"] = a.beta;
    j["scale_by_sqrt_k"] = a.scaleByRootK;
    j["masked"] = a.masked;
    j["sphere"] = a.sphere;
    if (a.heads.empty() && a.keyframes.empty() && a.type != AttentionType::Rwpo &&
        a.type != AttentionType::Drifting)
        j["heads"] = headsJson({{Mat::Identity(s.d, s.d), Mat::Identity(s.d, s.d), Mat::Identity(s.d, s.d)}});
    else
        j["heads"] = headsJson(a.heads);
    j["keyframes"] = Json::array();
    for (const Keyframe& k : a.keyframes)
        j["keyframes"].push_back(Json{{"t", k.t}, {"heads", headsJson(k.heads)}});
    j["interpolation"] = std::string(kInterpolationNames[std::size_t(a.interpolation)]);
    j["linear_eps"] = a.linearEps ? Json(*a.linearEps) : Json(nullptr);
    j["sinkhorn"] =
        Json{{"eps", a.sinkhornEps}, {"iterations", a.sinkhornIterations}, {"tol", a.sinkhornTol}};
    j["rwpo"] = Json{{"lambda", a.lambda},
                     {"h", a.h},
                     {"kernel", std::string(kRwpoKernelNames[std::size_t(a.rwpoKernel)])}};
    j["target"] = Json{{"mean", vectorJson(orDefault(a.targetMean, s.d, 0.0))},
                       {"cov", matrixJson(orIdentity(a.targetCov, s.d))}};
    return j;
}

Json integratorJson(const IntegratorSpec& i) {
    return Json{{"method", std::string(kMethodNames[std::size_t(i.method)])},
                {"T", i.T},
                {"steps", i.steps},
                {"rtol", i.rtol},
                {"atol", i.atol},
                {"divergence_norm", i.divergenceNorm},
                {"min_step", i.minStep}};
}

Json outputJson(const OutputSpec& o) {
    return Json{
        {"every", o.every}, {"entropy", o.entropy}, {"cluster_tol", o.clusterTol}, {"rank_tol", o.rankTol}};
}

Json momentsJson(const Scene& s) {
    const MomentsSpec& m = s.moments;
    Json j{{"method", std::string(kMomentMethodNames[std::size_t(m.method)])},
           {"step", m.step},
           {"tol_low", m.tolLow},
           {"tol_high", m.tolHigh},
           {"max_iter", m.maxIter}};
    if (m.grid.enabled())
        j["grid"] = Json{{"nu", m.grid.nu},
                         {"nc", m.grid.nc},
                         {"limits", Json::array({m.grid.x0, m.grid.x1, m.grid.y0, m.grid.y1})}};
    return j;
}

Json viewJson(const std::string& text) {
    if (text.empty()) return Json::object();
    Json j;
    try {
        j = Json::parse(text);
    } catch (const nlohmann::json::parse_error& e) {
        fail("/view", std::string("expected a JSON object, got invalid JSON: ") + e.what());
    }
    if (!j.is_object()) fail("/view", "expected object, got " + describe(j));
    return j;
}

// A value on one line with a space after each separator: [[1, 0], [0, 1]], {"eps": 1.0, "tol": 1e-09}.
std::string inlineForm(const Json& j) {
    std::string out;
    if (j.is_array()) {
        out = "[";
        for (std::size_t i = 0; i < j.size(); ++i) out += (i ? ", " : "") + inlineForm(j[i]);
        return out + "]";
    }
    if (j.is_object()) {
        out = "{";
        for (auto it = j.begin(); it != j.end(); ++it)
            out += (it == j.begin() ? "" : ", ") + Json(it.key()).dump() + ": " + inlineForm(it.value());
        return out + "}";
    }
    return j.dump(-1, ' ', false);
}

// Pretty printing that keeps short arrays (vectors, small matrices) on one line: nlohmann's indented dump
// puts every number of a matrix on its own line, which makes hand-editing a scene painful.
void writePretty(std::string& out, const Json& j, int indent) {
    constexpr std::size_t kInlineWidth = 100;
    const std::string pad(std::size_t(indent + 2), ' ');
    if (j.is_object() && !j.empty()) {
        const bool flat = std::all_of(j.begin(), j.end(), [](const Json& e) { return e.is_primitive(); });
        if (flat && inlineForm(j).size() <= kInlineWidth) {
            out += inlineForm(j);
            return;
        }
        out += "{\n";
        std::size_t i = 0;
        for (auto it = j.begin(); it != j.end(); ++it, ++i) {
            out += pad + Json(it.key()).dump() + ": ";
            writePretty(out, it.value(), indent + 2);
            out += i + 1 < j.size() ? ",\n" : "\n";
        }
        out += std::string(std::size_t(indent), ' ') + "}";
        return;
    }
    if (j.is_array() && !j.empty()) {
        const std::string line = inlineForm(j);
        const bool hasObject = std::any_of(j.begin(), j.end(), [](const Json& e) { return e.is_object(); });
        if (!hasObject && line.size() <= kInlineWidth) {
            out += line;
            return;
        }
        out += "[\n";
        for (std::size_t i = 0; i < j.size(); ++i) {
            out += pad;
            writePretty(out, j[i], indent + 2);
            out += i + 1 < j.size() ? ",\n" : "\n";
        }
        out += std::string(std::size_t(indent), ' ') + "]";
        return;
    }
    out += j.dump(-1, ' ', false);
}

} // namespace

// -------------------------------------------------------------------------------------------------------------

const char* toString(AttentionType t) {
    return kAttentionNames[std::size_t(t)].data();
}
const char* toString(Method m) {
    return kMethodNames[std::size_t(m)].data();
}
const char* toString(MomentMethod m) {
    return kMomentMethodNames[std::size_t(m)].data();
}

std::vector<HeadParams> AttentionSpec::headsAt(double t) const {
    if (keyframes.empty()) return heads;
    // The last keyframe with time <= t (the first one before the first time).
    auto next = std::upper_bound(keyframes.begin(), keyframes.end(), t,
                                 [](double time, const Keyframe& k) { return time < k.t; });
    if (next == keyframes.begin()) return keyframes.front().heads;
    const Keyframe& before = *std::prev(next);
    if (interpolation == Interpolation::Piecewise || next == keyframes.end()) return before.heads;
    const Keyframe& after = *next;
    // Written as (1 - w) a + w b so that t = before.t reproduces the keyframe exactly.
    const double w = (t - before.t) / (after.t - before.t);
    std::vector<HeadParams> out(before.heads.size());
    for (std::size_t h = 0; h < out.size(); ++h) {
        const HeadParams &a = before.heads[h], &b = after.heads[h];
        out[h].Q = (1.0 - w) * a.Q + w * b.Q;
        out[h].K = (1.0 - w) * a.K + w * b.K;
        out[h].V = (1.0 - w) * a.V + w * b.V;
    }
    return out;
}

Scene sceneFromJson(const std::string& text, const std::string& baseDir) {
    const Json root = parseText(text);
    if (!root.is_object()) fail("", "expected a JSON object (a scene), got " + describe(root));
    checkKeys(root, "",
              {"version", "name", "description", "figure", "d", "n", "precision", "initial", "attention",
               "integrator", "output", "moments", "view"});
    Scene s;
    if (auto* v = find(root, "version")) {
        s.version = int(integer(*v, "/version", 0, kMaxInt));
        if (s.version != 1)
            fail("/version", "unsupported scene version " + describe(*v) + " (this build reads version 1)");
    }
    if (auto* v = find(root, "name")) s.name = stringValue(*v, "/name");
    if (auto* v = find(root, "description")) s.description = stringValue(*v, "/description");
    if (auto* v = find(root, "figure")) s.figure = stringValue(*v, "/figure");
    s.d = int(
        integer(require(root, "", "d", "the token dimension, an integer in [1, 1024]"), "/d", 1, kMaxDim));
    s.n = int(integer(require(root, "", "n", "the number of tokens, an integer in [1, 16777216]"), "/n", 1,
                      kMaxTokens));
    if (auto* v = find(root, "precision"))
        s.precision = Precision(choice(*v, "/precision", "precision", kPrecisionNames));
    s.initial = parseInitial(find(root, "initial"), "/initial", s.d, baseDir);
    if (!find(root, "attention"))
        fail("/attention", "required field is missing (an object with at least \"type\")");
    s.attention = parseAttention(root["attention"], "/attention", s.d);
    s.integrator = parseIntegrator(find(root, "integrator"), "/integrator");
    s.output = parseOutput(find(root, "output"), "/output");
    s.moments = parseMoments(find(root, "moments"), "/moments", s.d);
    if (auto* v = find(root, "view")) {
        requireObject(*v, "/view");
        s.viewJson = v->dump();
    }
    return s;
}

Scene loadScene(const std::string& path) {
    std::error_code ec;
    if (fs::is_directory(path, ec))
        fail("", "cannot read scene file " + quoteForMessage(path, kMaxQuotedPath) + ": it is a directory");
    std::ifstream in(path, std::ios::binary);
    if (!in)
        fail("",
             "cannot read scene file " + quoteForMessage(path, kMaxQuotedPath) + ": " + std::strerror(errno));
    std::string content;
    char buffer[1 << 16];
    while (in.read(buffer, sizeof buffer) || in.gcount() > 0) {
        content.append(buffer, std::size_t(in.gcount()));
        if (content.size() > kMaxSceneFileBytes)
            fail("", "cannot read scene file " + quoteForMessage(path, kMaxQuotedPath) +
                         ": larger than 64 MiB, not a scene");
    }
    if (in.bad())
        fail("", "cannot read scene file " + quoteForMessage(path, kMaxQuotedPath) + ": read error");
    const std::string baseDir = fs::absolute(fs::path(path)).parent_path().string();
    try {
        return sceneFromJson(content, baseDir);
    } catch (const SceneError& e) {
        // Whole-file errors (syntax) get the file name; field errors keep their pointer as the location.
        if (!e.pointer.empty()) throw;
        fail("", "in scene file " + quoteForMessage(path, kMaxQuotedPath) + ": " + messageOf(e));
    }
}

std::string sceneToJson(const Scene& s) {
    Json j;
    j["version"] = s.version;
    j["name"] = s.name;
    j["description"] = s.description;
    j["figure"] = s.figure;
    j["d"] = s.d;
    j["n"] = s.n;
    j["precision"] = std::string(kPrecisionNames[std::size_t(s.precision)]);
    j["initial"] = initialJson(s);
    j["attention"] = attentionJson(s);
    j["integrator"] = integratorJson(s.integrator);
    j["output"] = outputJson(s.output);
    j["moments"] = momentsJson(s);
    j["view"] = viewJson(s.viewJson);
    std::string out;
    writePretty(out, j, 0);
    return out + "\n";
}

void saveScene(const Scene& s, const std::string& path) {
    const std::string text = sceneToJson(s); // serialize first: a bad scene must not leave a partial file
    writeFileAtomically(path, [&](std::ostream& out) { out << text; });
}

} // namespace flowscope
