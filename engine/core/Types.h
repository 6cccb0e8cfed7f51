// Flowscope engine: basic types.
//
// Tokens are stored as an N x d column-major matrix ("structure of arrays"): column c holds coordinate c of
// every token contiguously, which is what the streaming attention kernels want (they sweep keys along one
// coordinate at a time). Row i is token i.
#pragma once

#include "engine/core/EigenInstances.h"

#include <Eigen/Dense>
#include <cstdint>
#include <limits>

namespace flowscope {

using Mat = Eigen::MatrixXd;
using Vec = Eigen::VectorXd;
using Tokens = Eigen::MatrixXd;  // N x d, column-major: Tokens(i, c) = coordinate c of token i
using TokensF = Eigen::MatrixXf; // float32 working copy with the same layout

enum class Precision { Float32, Float64 };

// Constants more than one file needs.
inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
inline constexpr double kLog2Pi =
    1.8378770664093454835606594728112; // log 2 pi: a standard normal's log density

} // namespace flowscope
