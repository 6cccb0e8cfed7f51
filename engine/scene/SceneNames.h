// Flowscope engine: the names the scene schema gives to its enums (docs/scene.md), in enum order: what
// SceneRead.cpp accepts and SceneWrite.cpp writes. Internal to engine/scene.
#pragma once

#include <array>
#include <string_view>

namespace flowscope::scene_names {

constexpr std::array<std::string_view, 10> kAttention{"softmax", "linear",  "l2",   "sinkhorn", "exp",
                                                      "relu",    "sigmoid", "rwpo", "drifting", "hardmax"};
// What "type" accepts: the names above plus "masked", an alias of softmax with masked = true.
constexpr std::array<std::string_view, 11> kAttentionType{
    "softmax", "linear", "l2", "sinkhorn", "exp", "relu", "sigmoid", "rwpo", "drifting", "hardmax", "masked"};
constexpr std::array<std::string_view, 4> kNormalization{"none", "post", "pre", "peri"};
constexpr std::array<std::string_view, 2> kMomentMethod{"adaptive", "paper_euler"};
constexpr std::array<std::string_view, 4> kMethod{"euler", "heun", "rk4", "dopri5"};
constexpr std::array<std::string_view, 2> kInterpolation{"piecewise", "linear"};
constexpr std::array<std::string_view, 3> kRwpoKernel{"corrected", "as_printed", "per_coordinate"};
constexpr std::array<std::string_view, 5> kInit{"gaussian", "uniform", "rings", "file", "points"};
constexpr std::array<std::string_view, 2> kPrecision{"float32", "float64"};

} // namespace flowscope::scene_names
