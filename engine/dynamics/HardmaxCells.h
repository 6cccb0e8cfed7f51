// Flowscope engine: the cells of hardmax attention in the plane (docs/math/theory.md#hardmax).
//
// Under hardmax a query x attends to the keys x_k of largest score x^T M x_k, M = Q^T K. The directions x
// whose best key is x_k satisfy x^T M (x_k - x_j) >= 0 for every j: linear conditions, so the cell of x_k is
// a convex cone from the origin, in the plane an arc of directions (an angle interval) of length at most pi,
// or empty. Ties (equal keys) are one cell each.
#pragma once

#include "engine/core/Types.h"
#include "engine/scene/Scene.h"

#include <vector>

namespace flowscope {

// A cell's directions: the angles [start, start + length]; empty when length < 0.
struct HardmaxArc {
    double start = 0.0;
    double length = -1.0;
    bool empty() const { return length < 0.0; }
};

// The cell of every key (rows of X, d = 2) for the score matrix M (2 x 2), in key order.
std::vector<HardmaxArc> hardmaxCells(const Tokens& X, const Mat& M);

// Whether the attention has these cells to draw: hardmax, one head, unmasked, no keyframes, d = 2 (a masked
// query's cell also depends on its index).
bool hasHardmaxCells(const AttentionSpec& attention, int d);

} // namespace flowscope
