// Flowscope engine: reading one typed, range-checked field of a JSON object, for the loaders of model
// records (flows, continuous-time Transformers). Errors name the field's path: "architecture/width: 0 is
// outside [1, 1024]".
#pragma once

#include <nlohmann/json.hpp>

#include <stdexcept>
#include <string>
#include <type_traits>

namespace flowscope {

// out = j[name] when it is a bool (for a bool out) or a number within [lo, hi] (an integer for an integral
// out). Throws std::runtime_error "<where>/<name>: ..." when the field is missing, of the wrong type or out
// of range.
template <class T>
void readJsonField(const nlohmann::json& j, const std::string& where, const char* name, T& out, double lo,
                   double hi) {
    const std::string path = where + "/" + name;
    if (!j.is_object() || !j.contains(name)) throw std::runtime_error(path + ": missing");
    const nlohmann::json& v = j[name];
    if constexpr (std::is_same_v<T, bool>) {
        if (!v.is_boolean()) throw std::runtime_error(path + ": expected true or false");
        out = v.get<bool>();
    } else {
        if (!v.is_number()) throw std::runtime_error(path + ": expected a number");
        if constexpr (std::is_integral_v<T>) {
            if (!v.is_number_integer()) throw std::runtime_error(path + ": expected an integer");
        }
        const double x = v.get<double>();
        if (!(x >= lo && x <= hi))
            throw std::runtime_error(path + ": " + v.dump() + " is outside [" + nlohmann::json(lo).dump() +
                                     ", " + nlohmann::json(hi).dump() + "]");
        out = v.get<T>();
    }
}

} // namespace flowscope
