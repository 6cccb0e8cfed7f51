#include "engine/io/JsonReader.h"

#include "engine/core/Text.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <vector>

namespace flowscope {

namespace {

using Json = JsonReader::Json;

// A key of more than 80 bytes or with control characters (never a field of a schema) is shown as
// quoteForMessage shows it, so that a pointer stays short and on one line.
std::string escapePointerToken(std::string_view key) {
    if (key.size() > 80 ||
        std::any_of(key.begin(), key.end(), [](char c) { return (unsigned char)c < 0x20; }))
        return quoteForMessage(key);
    return escapeChars(key, {{'~', "~0"}, {'/', "~1"}});
}

std::string describeJson(const Json& j) {
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
        return std::isfinite(v) ? j.dump() : numberText(v);
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

std::string joinNames(std::span<const std::string_view> names) {
    std::string out;
    for (std::size_t i = 0; i < names.size(); ++i) out += (i ? ", " : "") + std::string(names[i]);
    return out;
}

} // namespace

std::string jsonPointer(const std::string& pointer, std::string_view key) {
    return pointer + "/" + escapePointerToken(key);
}

std::string jsonPointer(const std::string& pointer, std::size_t index) {
    return pointer + "/" + std::to_string(index);
}

bool pointerIsUnder(std::string_view pointer, std::string_view base) {
    return pointer.size() > base.size() && pointer.starts_with(base) && pointer[base.size()] == '/';
}

std::string numberText(double v) {
    if (std::isnan(v)) return "NaN";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    if (v == std::floor(v) && std::fabs(v) < 1e15) return std::to_string((long long)v);
    return Json(v).dump();
}

std::string didYouMean(std::string_view word, std::span<const std::string_view> names) {
    const std::string_view best = closestName(word, names, 2); // at most two edits count as a typo
    return best.empty() ? "" : "; did you mean \"" + std::string(best) + "\"?";
}

// -------------------------------------------------------------------------------------------------------------
// JsonReader

std::string JsonReader::pointerTo(std::string_view key) const {
    return jsonPointer(pointer_, key);
}

std::string JsonReader::pointerTo(std::size_t index) const {
    return jsonPointer(pointer_, index);
}

std::string JsonReader::describe() const {
    return describeJson(*value_);
}

void JsonReader::fail(const std::string& detail) const {
    throw JsonError(pointer_, detail);
}

void JsonReader::failAt(std::string_view key, const std::string& detail) const {
    throw JsonError(pointerTo(key), detail);
}

void JsonReader::expectObject() const {
    if (!value_->is_object()) fail("expected object, got " + describe());
}

// Unknown keys are rejected so that a typo ("stpes") is an error instead of a silently ignored setting.
void JsonReader::expectObject(std::initializer_list<std::string_view> allowed) const {
    expectObject(std::span<const std::string_view>(allowed.begin(), allowed.size()));
}

void JsonReader::expectObject(std::span<const std::string_view> names) const {
    expectObject();
    for (auto it = value_->begin(); it != value_->end(); ++it) {
        if (std::find(names.begin(), names.end(), it.key()) != names.end()) continue;
        failAt(it.key(), "unknown field " + quoteForMessage(it.key()) + " (expected one of " +
                             joinNames(names) + ")" + didYouMean(it.key(), names));
    }
}

bool JsonReader::has(std::string_view key) const {
    return value_->is_object() && value_->contains(key);
}

std::optional<JsonReader> JsonReader::find(std::string_view key) const {
    if (!value_->is_object()) return std::nullopt;
    const auto it = value_->find(key);
    if (it == value_->end()) return std::nullopt;
    return JsonReader(*it, pointerTo(key));
}

JsonReader JsonReader::require(std::string_view key, const std::string& what) const {
    auto member = find(key);
    if (!member) failAt(key, "required field is missing" + (what.empty() ? "" : " (" + what + ")"));
    return *member;
}

JsonReader JsonReader::operator[](std::size_t index) const {
    return JsonReader((*value_)[index], pointerTo(index));
}

double JsonReader::number() const {
    if (!value_->is_number()) fail("expected number, got " + describe());
    const double v = value_->get<double>();
    if (!std::isfinite(v)) fail("expected finite number, got " + describe());
    return v;
}

double JsonReader::numberAbove(double low) const {
    const double v = number();
    if (!(v > low)) fail("expected number > " + numberText(low) + ", got " + describe());
    return v;
}

double JsonReader::numberAtLeast(double low) const {
    const double v = number();
    if (!(v >= low)) fail("expected number >= " + numberText(low) + ", got " + describe());
    return v;
}

double JsonReader::numberIn(double low, double high) const {
    const double v = number();
    if (!(v >= low && v <= high))
        fail("expected number in [" + numberText(low) + ", " + numberText(high) + "], got " + describe());
    return v;
}

long long JsonReader::integer(long long low, long long high) const {
    const Json& j = *value_;
    auto outside = [&](const char* relation, long long bound) {
        fail(std::string("expected integer ") + relation + " " + std::to_string(bound) + ", got " +
             describe());
    };
    if (!j.is_number()) fail("expected integer, got " + describe());
    long long v = 0;
    if (j.is_number_unsigned()) {
        const auto u = j.get<std::uint64_t>();
        if (u > std::uint64_t(high)) outside("<=", high);
        v = (long long)u;
    } else if (j.is_number_integer()) {
        v = j.get<long long>();
    } else {
        // 2048.0 is an integer written by a tool that prints every number as a float; 2.5 is not.
        const double x = j.get<double>();
        if (!std::isfinite(x) || x != std::floor(x)) fail("expected integer, got " + describe());
        if (x < double(low)) outside(">=", low);
        if (x > double(high)) outside("<=", high);
        v = (long long)x;
    }
    if (v < low) outside(">=", low);
    if (v > high) outside("<=", high);
    return v;
}

std::uint64_t JsonReader::unsignedInteger() const {
    const Json& j = *value_;
    if (j.is_number_unsigned()) return j.get<std::uint64_t>();
    if (j.is_number_integer()) fail("expected integer >= 0, got " + describe());
    if (j.is_number_float()) {
        const double x = j.get<double>();
        if (std::isfinite(x) && x == std::floor(x) && x >= 0 && x < 18446744073709551616.0)
            return std::uint64_t(x);
    }
    fail("expected integer in [0, 2^64 - 1], got " + describe());
}

bool JsonReader::boolean() const {
    if (!value_->is_boolean()) fail("expected true or false, got " + describe());
    return value_->get<bool>();
}

std::string JsonReader::string() const {
    if (!value_->is_string()) fail("expected string, got " + describe());
    return value_->get<std::string>();
}

int JsonReader::choice(std::string_view what, std::span<const std::string_view> names) const {
    const std::string s = string();
    for (std::size_t i = 0; i < names.size(); ++i)
        if (s == names[i]) return int(i);
    fail("unknown " + std::string(what) + " " + quoteForMessage(s) + " (expected one of " + joinNames(names) +
         ")" + didYouMean(s, names));
}

Vec JsonReader::vector(int size) const {
    if (value_->is_number()) return Vec::Constant(size, number());
    if (!value_->is_array() || value_->size() != std::size_t(size))
        fail("expected array of " + std::to_string(size) + " numbers (or one number for all), got " +
             describe());
    Vec v(size);
    for (int i = 0; i < size; ++i) v(i) = (*this)[std::size_t(i)].number();
    return v;
}

Mat JsonReader::matrix() const {
    const Json& j = *value_;
    if (!j.is_array() || j.empty())
        fail("expected matrix (array of rows, or one number s for s*I), got " + describe());
    const std::size_t rows = j.size();
    std::size_t cols = 0;
    for (std::size_t r = 0; r < rows; ++r) {
        const JsonReader row = (*this)[r];
        if (!row.json().is_array() || row.json().empty())
            row.fail("expected matrix row (non-empty array of numbers), got " + row.describe());
        if (r == 0)
            cols = row.size();
        else if (row.size() != cols)
            fail("expected matrix with rows of equal length, got row 0 of length " + std::to_string(cols) +
                 " and row " + std::to_string(r) + " of length " + std::to_string(row.size()));
    }
    constexpr auto kMaxSide = std::size_t(kMaxJsonMatrixSide);
    if (rows > kMaxSide || cols > kMaxSide)
        fail("expected matrix of at most " + std::to_string(kMaxSide) + " rows and columns, got " +
             shapeOf(Eigen::Index(rows), Eigen::Index(cols)));
    Mat m(rows, cols);
    for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t c = 0; c < cols; ++c) m(Eigen::Index(r), Eigen::Index(c)) = (*this)[r][c].number();
    return m;
}

Mat JsonReader::square(int d) const {
    if (value_->is_number()) return number() * Mat::Identity(d, d);
    Mat m = matrix();
    if (m.rows() != d || m.cols() != d)
        fail("expected " + shapeOf(d, d) + " matrix, got " + shapeOf(m.rows(), m.cols()));
    return m;
}

// -------------------------------------------------------------------------------------------------------------
// Text -> JSON

namespace {

// Follows the parser through the document (via nlohmann's parse callback) so that errors the parser cannot
// locate by field, such as duplicate keys and numbers out of the range of a double, get a JSON pointer.
class ParsePosition {
  public:
    ParsePosition(std::size_t maxDepth, std::string root) : maxDepth_(maxDepth), root_(std::move(root)) {}

    bool event(Json::parse_event_t event, Json& parsed) {
        using E = Json::parse_event_t;
        switch (event) {
        case E::object_start:
        case E::array_start:
            if (frames_.size() >= maxDepth_) // pointer(): the element about to be entered
                throw JsonError(pointer(),
                                "expected at most " + std::to_string(maxDepth_) + " levels of nesting");
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
                throw JsonError(pointer(), "duplicate field " + quoteForMessage(top.key) +
                                               " (each field may appear only once)");
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
        std::string p = root_;
        for (std::size_t i = 0; i < frames_.size(); ++i) {
            const Frame& f = frames_[i];
            const long index = f.index + (i + 1 == frames_.size() ? 1 : 0);
            p = f.object ? jsonPointer(p, f.key) : jsonPointer(p, std::size_t(index));
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
    std::size_t maxDepth_;
    std::string root_;
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

} // namespace

Json parseJson(const std::string& text, std::size_t maxDepth, const std::string& at) {
    ParsePosition position(maxDepth, at);
    try {
        return Json::parse(text, [&](int, Json::parse_event_t event, Json& parsed) {
            return position.event(event, parsed);
        });
    } catch (const nlohmann::json::parse_error& e) {
        throw JsonError(at, "invalid JSON: " + boundedParseMessage(e.what()));
    } catch (const nlohmann::json::out_of_range& e) {
        // A number literal beyond the range of a double (1e999): valid JSON, but not a finite number.
        throw JsonError(position.pointer(), "expected finite number, got " + boundedParseMessage(e.what()));
    }
}

} // namespace flowscope
