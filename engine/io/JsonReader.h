// Flowscope engine: the one way JSON is read (scenes, flow records, Transformer records; docs/json.md).
//
// A JsonReader is a JSON value together with its place in the document, as a JSON pointer (RFC 6901:
// "/attention/heads/1/Q/0/2"). Its getters check the type, the range and the shape of what they read and
// throw a JsonError naming that pointer, so every reader gives one style of message:
//
//   /attention/beta: expected number > 0, got -1
//   /integrator/stpes: unknown field "stpes" (expected one of method, T, steps, ...); did you mean "steps"?
//   /attention/type: unknown attention type "sofmax" (expected one of softmax, ...); did you mean "softmax"?
//
// Whether unknown keys are errors is each reader's choice: expectObject(allowed) rejects them (scenes: a
// typo must not be silently ignored), expectObject() does not (model records: a file written by a later
// version may carry more).
#pragma once

#include "engine/core/Types.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>

namespace flowscope {

// A JSON document that is not what its reader expects. `pointer` names the value ("" for the whole
// document), `detail` says what was expected and what was found; what() is "pointer: detail".
struct JsonError : std::runtime_error {
    JsonError(std::string pointer, std::string detail)
        : std::runtime_error(pointer.empty() ? detail : pointer + ": " + detail), pointer(std::move(pointer)),
          detail(std::move(detail)) {}
    std::string pointer, detail;
};

// The largest number of rows or columns a matrix may have (a scene's d is at most this).
constexpr int kMaxJsonMatrixSide = 1024;

class JsonReader {
  public:
    // Ordered: a document read and written back keeps its author's key order.
    using Json = nlohmann::ordered_json;

    // `value` must outlive the reader and every reader taken from it.
    explicit JsonReader(const Json& value, std::string pointer = "")
        : value_(&value), pointer_(std::move(pointer)) {}

    const Json& json() const { return *value_; }
    const std::string& pointer() const { return pointer_; }
    // The pointer of member `key` or element `index` of this value (which need not exist).
    std::string pointerTo(std::string_view key) const;
    std::string pointerTo(std::size_t index) const;
    // What this value is, for a message: "-1", "string \"abc\"", "array of 3 element(s)", "object", ...
    std::string describe() const;

    // Throws JsonError(pointer(), detail) / JsonError(pointerTo(key), detail).
    [[noreturn]] void fail(const std::string& detail) const;
    [[noreturn]] void failAt(std::string_view key, const std::string& detail) const;

    // ---- objects
    // This value must be an object ("expected object, got ..."); its other keys are not looked at.
    void expectObject() const;
    // ... and have no key outside `allowed`: "unknown field "stpes" (expected one of ...); did you mean
    // "steps"?".
    void expectObject(std::initializer_list<std::string_view> allowed) const;
    void expectObject(std::span<const std::string_view> allowed) const;
    bool has(std::string_view key) const;
    // Member `key` of this object, or nullopt when it is absent.
    std::optional<JsonReader> find(std::string_view key) const;
    // Member `key`, which must be present: "required field is missing (<what>)", or without `what`,
    // "required field is missing".
    JsonReader require(std::string_view key, const std::string& what = "") const;

    // ---- arrays (and object members by position)
    std::size_t size() const { return value_->size(); }
    // Element `index` of this array, which must exist (check size() first).
    JsonReader operator[](std::size_t index) const;

    // ---- scalars
    double number() const; // finite
    double numberAbove(double low) const;
    double numberAtLeast(double low) const;
    double numberIn(double low, double high) const;
    // An integer in [low, high]; a float with an integral value (2048.0) counts, as some tools write them.
    long long integer(long long low, long long high) const;
    std::uint64_t unsignedInteger() const; // [0, 2^64 - 1], e.g. a seed
    bool boolean() const;
    std::string string() const;
    // A string naming one of `names`; returns its index. `what` names the kind of value in the message
    // ("unknown integrator method "rk45" (expected one of euler, heun, rk4, dopri5)").
    int choice(std::string_view what, std::span<const std::string_view> names) const;

    // ---- vectors and matrices of finite numbers
    // An array of `size` numbers, or one number s meaning (s, ..., s).
    Vec vector(int size) const;
    // An array of equally long non-empty rows of numbers, at most kMaxJsonMatrixSide of each.
    Mat matrix() const;
    // A d x d matrix, or one number s meaning s * I_d.
    Mat square(int d) const;

  private:
    const Json* value_;
    std::string pointer_;
};

// Strict JSON text to a document: a duplicated key (which nlohmann would silently resolve to the last one),
// more than `maxDepth` levels of nesting (each costs the parser memory) and a number beyond the range of a
// double (1e999) are errors at their pointer; a syntax error is a JsonError with pointer "" and the line
// and column: "invalid JSON: parse error at line 3, column 7: ...". `at` is the pointer of the document
// inside a larger one (a record's "/architecture", stored apart), put in front of every error's pointer.
JsonReader::Json parseJson(const std::string& text, std::size_t maxDepth = 64, const std::string& at = "");

// The pointer of member `key` / element `index` under `pointer` ("~" and "/" escaped as RFC 6901 says; a
// key that cannot be a field name, over 80 bytes or with control characters, is shown quoted and cut).
std::string jsonPointer(const std::string& pointer, std::string_view key);
std::string jsonPointer(const std::string& pointer, std::size_t index);
// Whether `pointer` names a field strictly under `base`: "/attention/beta" is under "/attention" and every
// pointer is under the root "", but "/attention" is not under itself and "/attentionx" not under
// "/attention".
bool pointerIsUnder(std::string_view pointer, std::string_view base);

// A number as a person would write it in a message: 2 rather than 2.0, "inf" and "NaN" for what JSON cannot.
std::string numberText(double v);

// "; did you mean "x"?" when `word` is at most two edits away from one of `names` (the nearest), else "".
std::string didYouMean(std::string_view word, std::span<const std::string_view> names);

} // namespace flowscope
