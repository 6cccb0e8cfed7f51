#include "engine/io/JsonWrite.h"

#include <algorithm>

namespace flowscope {

namespace {

using Json = nlohmann::ordered_json;

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

std::string prettyJson(const nlohmann::ordered_json& j) {
    std::string out;
    writePretty(out, j, 0);
    return out;
}

} // namespace flowscope
