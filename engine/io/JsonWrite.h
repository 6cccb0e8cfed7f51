// Flowscope engine: writing JSON — numbers, vectors and matrices as records and scenes store them, and the
// pretty printer of scene files. (Reading is engine/io/JsonReader.h.)
#pragma once

#include "engine/core/Types.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <string>

namespace flowscope {

// NaN and inf are not JSON: a record writes them as null, which reads back as "no value".
inline nlohmann::json numberJson(double v) {
    return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
}

inline nlohmann::json vectorJson(const Vec& v) {
    nlohmann::json out = nlohmann::json::array();
    for (Eigen::Index i = 0; i < v.size(); ++i) out.push_back(numberJson(v[i]));
    return out;
}

// A matrix as its rows.
inline nlohmann::json matrixJson(const Mat& m) {
    nlohmann::json rows = nlohmann::json::array();
    for (Eigen::Index r = 0; r < m.rows(); ++r) rows.push_back(vectorJson(m.row(r).transpose()));
    return rows;
}

// Indented JSON text that keeps short arrays and flat objects (vectors, small matrices, {"eps": 1.0, "tol":
// 1e-09}) on one line, so that a file reads top-down and hand-editing a matrix is easy: nlohmann's indented
// dump puts every number of a matrix on its own line. No trailing newline.
std::string prettyJson(const nlohmann::ordered_json& j);

} // namespace flowscope
