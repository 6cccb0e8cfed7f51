// Tests of the JSON reader (engine/io/JsonReader): every error names its field by JSON pointer, in one style,
// and suggests the nearest name for a typo; and of the records that read through it (flows, Transformers).
#include "engine/flows/FlowIo.h"
#include "engine/io/JsonReader.h"
#include "engine/io/JsonWrite.h"
#include "engine/ottransformer/TransformerIo.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <functional>
#include <limits>

namespace flowscope {
namespace {

using ::testing::HasSubstr;
using Json = JsonReader::Json;

// The JsonError a call throws ("" with a failure when it throws none).
JsonError errorOf(const std::function<void()>& f) {
    try {
        f();
    } catch (const JsonError& e) {
        return e;
    }
    ADD_FAILURE() << "no JsonError";
    return JsonError("", "");
}

// what() is always "pointer: detail", the one style of every reader.
void expectStyle(const JsonError& e) {
    EXPECT_EQ(std::string(e.what()), e.pointer + ": " + e.detail);
}

constexpr std::array<std::string_view, 4> kTypes{"softmax", "linear", "sinkhorn", "relu"};

TEST(JsonReader, NestedArraysAreNamedByIndex) {
    const Json doc = parseJson(R"({"heads": [{"Q": [[1, 0, 0]]}, {"Q": [[1, 0, "x"]]}]})");
    const JsonReader heads = JsonReader(doc).require("heads");
    EXPECT_EQ(heads[0].require("Q").matrix(), Mat::Identity(1, 3));
    const JsonError e = errorOf([&] { heads[1].require("Q").matrix(); });
    EXPECT_EQ(e.pointer, "/heads/1/Q/0/2");
    EXPECT_EQ(e.detail, "expected number, got string \"x\"");
    expectStyle(e);
    // A reader placed inside a larger document carries its place into the pointers.
    const JsonReader placed(doc, "/attention");
    EXPECT_EQ(errorOf([&] { placed.require("heads")[1].require("Q").matrix(); }).pointer,
              "/attention/heads/1/Q/0/2");
}

TEST(JsonReader, UnknownKeysOfAStrictObjectSuggestTheNearestField) {
    const Json doc = parseJson(R"({"attention": {"type": "softmax", "bta": 2}})");
    const JsonReader attention = JsonReader(doc).require("attention");
    const JsonError e = errorOf([&] { attention.expectObject({"type", "beta", "masked"}); });
    EXPECT_EQ(e.pointer, "/attention/bta");
    EXPECT_EQ(e.detail, "unknown field \"bta\" (expected one of type, beta, masked); did you mean \"beta\"?");
    expectStyle(e);
    // Nothing within two edits: no guess.
    const Json far = parseJson(R"({"zzzzzz": 1})");
    EXPECT_THAT(errorOf([&] {
                    JsonReader(far).expectObject({"type", "beta"});
                }).detail,
                ::testing::Not(HasSubstr("did you mean")));
    // A lenient object takes unknown keys.
    EXPECT_NO_THROW(attention.expectObject());
}

TEST(JsonReader, UnknownEnumNamesSuggestTheNearestName) {
    const Json doc = parseJson(R"({"type": "sofmax", "other": "sinkhron", "far": "gaussian", "ok": "relu"})");
    const JsonReader r(doc, "/attention");
    const JsonError e = errorOf([&] { r.require("type").choice("attention type", kTypes); });
    EXPECT_EQ(e.pointer, "/attention/type");
    EXPECT_EQ(e.detail,
              "unknown attention type \"sofmax\" (expected one of softmax, linear, sinkhorn, relu); "
              "did you mean \"softmax\"?");
    EXPECT_THAT(errorOf([&] { r.require("other").choice("type", kTypes); }).detail,
                HasSubstr("did you mean \"sinkhorn\"?"));
    EXPECT_THAT(errorOf([&] { r.require("far").choice("type", kTypes); }).detail,
                ::testing::Not(HasSubstr("did you mean")));
    EXPECT_EQ(r.require("ok").choice("type", kTypes), 3);
}

TEST(JsonReader, DidYouMeanPicksTheNearestNameWithinTwoEdits) {
    const std::array<std::string_view, 3> names{"steps", "step", "stop"};
    EXPECT_EQ(didYouMean("stpes", names), "; did you mean \"steps\"?"); // a transposition: two edits
    EXPECT_EQ(didYouMean("stepp", names), "; did you mean \"steps\"?"); // one edit from steps and from step
    EXPECT_EQ(didYouMean("sto", names), "; did you mean \"stop\"?");
    EXPECT_EQ(didYouMean("method", names), "");
    EXPECT_EQ(didYouMean(std::string(5000, 's'), names), ""); // not compared: lengths far apart
}

TEST(JsonReader, RangesAndFiniteness) {
    const Json doc = parseJson(R"({"zero": 0, "neg": -1, "half": 0.5, "big": 2000, "f": 2048.0, "frac": 2.5,
                                  "huge": 18446744073709551615, "negint": -3})");
    const JsonReader r(doc);
    EXPECT_EQ(errorOf([&] { r.require("zero").numberAbove(0); }).detail, "expected number > 0, got 0");
    EXPECT_EQ(r.require("zero").numberAtLeast(0), 0.0);
    EXPECT_EQ(errorOf([&] { r.require("neg").numberAtLeast(0); }).detail, "expected number >= 0, got -1");
    EXPECT_EQ(errorOf([&] { r.require("big").numberIn(1e-9, 1e3); }).detail,
              "expected number in [1e-09, 1000], got 2000");
    EXPECT_EQ(r.require("half").numberIn(0, 1), 0.5);
    EXPECT_EQ(errorOf([&] { r.require("big").integer(1, 1024); }).detail,
              "expected integer <= 1024, got 2000");
    EXPECT_EQ(errorOf([&] { r.require("zero").integer(1, 1024); }).detail, "expected integer >= 1, got 0");
    EXPECT_EQ(r.require("f").integer(1, 4096), 2048); // written by a tool that prints every number as a float
    EXPECT_EQ(errorOf([&] { r.require("frac").integer(1, 4096); }).detail, "expected integer, got 2.5");
    EXPECT_EQ(errorOf([&] { r.require("huge").integer(0, 10); }).detail,
              "expected integer <= 10, got 18446744073709551615");
    EXPECT_EQ(r.require("huge").unsignedInteger(), std::numeric_limits<std::uint64_t>::max());
    EXPECT_EQ(errorOf([&] { r.require("negint").unsignedInteger(); }).detail,
              "expected integer >= 0, got -3");
    // Numbers beyond a double are refused where they stand, not turned into inf.
    const JsonError e = errorOf([] { parseJson(R"({"a": [1, 1e999]})"); });
    EXPECT_EQ(e.pointer, "/a/1");
    EXPECT_THAT(e.detail, HasSubstr("expected finite number"));
}

TEST(JsonReader, WrongTypesSayWhatWasFound) {
    const Json doc = parseJson(R"({"s": "abc", "b": true, "n": null, "a": [1, 2, 3], "o": {}, "x": 1})");
    const JsonReader r(doc, "/root");
    EXPECT_EQ(errorOf([&] { r.require("s").number(); }).detail, "expected number, got string \"abc\"");
    EXPECT_EQ(errorOf([&] { r.require("b").integer(0, 1); }).detail, "expected integer, got true");
    EXPECT_EQ(errorOf([&] { r.require("n").string(); }).detail, "expected string, got null");
    EXPECT_EQ(errorOf([&] { r.require("a").boolean(); }).detail,
              "expected true or false, got array of 3 element(s)");
    EXPECT_EQ(errorOf([&] { r.require("x").expectObject(); }).detail, "expected object, got 1");
    EXPECT_EQ(errorOf([&] { r.require("o").vector(2); }).detail,
              "expected array of 2 numbers (or one number for all), got object");
    EXPECT_EQ(r.require("x").vector(3), Vec::Ones(3)); // one number for all
    EXPECT_EQ(r.require("x").square(2), Mat::Identity(2, 2));
    EXPECT_EQ(errorOf([&] { r.require("a").square(2); }).detail,
              "expected matrix row (non-empty array of numbers), got 1");
    EXPECT_EQ(errorOf([&] { r.require("a").square(2); }).pointer, "/root/a/0");
}

TEST(JsonReader, RequiredFieldsAndPointerEscapes) {
    const Json doc = parseJson(R"({"a/b": {"c~d": 1}})");
    const JsonReader r(doc);
    EXPECT_EQ(errorOf([&] { r.require("d", "the token dimension"); }).detail,
              "required field is missing (the token dimension)");
    EXPECT_EQ(errorOf([&] { r.require("d"); }).detail, "required field is missing");
    EXPECT_EQ(errorOf([&] { r.require("a/b").require("c~d").string(); }).pointer, "/a~1b/c~0d");
    EXPECT_FALSE(r.find("missing"));
    EXPECT_FALSE(r.require("a/b").require("c~d").find("x")); // not an object: nothing to find
}

TEST(JsonReader, ParseErrorsHaveAPointerOrAPosition) {
    const JsonError dup = errorOf([] { parseJson(R"({"a": {"b": 1, "b": 2}})"); });
    EXPECT_EQ(dup.pointer, "/a/b");
    EXPECT_EQ(dup.detail, "duplicate field \"b\" (each field may appear only once)");
    const JsonError syntax = errorOf([] { parseJson("{\n  \"a\": 1,,\n}"); });
    EXPECT_EQ(syntax.pointer, "");
    EXPECT_THAT(syntax.detail, HasSubstr("invalid JSON: parse error at line 2"));
    EXPECT_EQ(errorOf([] { parseJson("[[[[1]]]]", 3); }).pointer, "/0/0/0");
    // A document stored apart from its record is named where it belongs in the record.
    EXPECT_EQ(errorOf([] { parseJson("{not json", 64, "/architecture"); }).pointer, "/architecture");
    EXPECT_EQ(errorOf([] { parseJson(R"({"d": 1, "d": 2})", 64, "/architecture"); }).pointer,
              "/architecture/d");
}

TEST(JsonWrite, NonFiniteNumbersAreNull) {
    EXPECT_TRUE(numberJson(std::nan("")).is_null());
    EXPECT_TRUE(numberJson(INFINITY).is_null());
    EXPECT_EQ(numberJson(1.5), 1.5);
    Mat m(2, 2);
    m << 1, 2, 3, INFINITY;
    EXPECT_EQ(matrixJson(m).dump(), "[[1.0,2.0],[3.0,null]]");
    // What prettyJson writes reads back to the same document.
    const Json doc =
        parseJson(R"({"a": [[1, 0], [0, 1]], "b": {"eps": 1.0, "tol": 1e-09}, "c": [{"x": 1}]})");
    EXPECT_EQ(parseJson(prettyJson(doc)), doc);
    EXPECT_THAT(prettyJson(doc), HasSubstr("\"a\": [[1, 0], [0, 1]]"));
}

// The model records read through the same reader: the same style, with the record's pointer.
TEST(JsonReader, ModelRecordsNameTheirFieldsInTheSameStyle) {
    nlohmann::json flow = flows::toJson(flows::FlowConfig{});
    flow["kernel"] = "separabel";
    try {
        flows::flowConfigFromJson(flow);
        ADD_FAILURE() << "no error";
    } catch (const JsonError& e) {
        EXPECT_EQ(e.pointer, "/architecture/kernel");
        EXPECT_THAT(e.detail, HasSubstr("did you mean \"separable\"?"));
    }
    flow = flows::toJson(flows::FlowConfig{});
    flow["future_field"] = 1; // records are lenient about keys a later version may add
    EXPECT_NO_THROW(flows::flowConfigFromJson(flow));
    flow.erase("width");
    EXPECT_EQ(errorOf([&] { flows::flowConfigFromJson(flow); }).pointer, "/architecture/width");

    nlohmann::json transformer = ot::toJson(ot::TransformerConfig{});
    transformer["integrator"] = "rk5";
    const JsonError e = errorOf([&] { ot::transformerConfigFromJson(transformer); });
    EXPECT_EQ(e.pointer, "/architecture/integrator");
    EXPECT_EQ(e.detail, "unknown integrator \"rk5\" (expected one of euler, rk4); did you mean \"rk4\"?");
    transformer = ot::toJson(ot::TransformerConfig{});
    transformer["steps"] = 0;
    EXPECT_EQ(std::string(errorOf([&] { ot::transformerConfigFromJson(transformer); }).what()),
              "/architecture/steps: expected integer >= 1, got 0");
}

} // namespace
} // namespace flowscope
