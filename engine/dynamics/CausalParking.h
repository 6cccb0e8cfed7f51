// Flowscope engine: the Rényi-parking leaders of causal attention on the sphere (Karagodin, Polyanskiy,
// Rigollet 2024, arXiv 2411.04990; docs/math/theory.md#parking).
//
// With a causal mask, token 0 sees only itself and never moves, and token k is pulled only by tokens j < k,
// within about beta^(-1/2) of it. Read in index order, the tokens then park like cars in Rényi's problem: a
// token at least delta = 4 beta^(-1/2) (geodesic) from every earlier leader founds a cluster of its own and
// barely moves; a nearer one joins the leaders' clusters. The leaders are computed from the initial tokens;
// the clusters the dynamics then forms sit at most of them.
#pragma once

#include "engine/core/Types.h"
#include "engine/scene/Scene.h"

#include <vector>

namespace flowscope {

// The parking spacing delta = 4 / sqrt(beta) (NaN unless beta > 0).
double parkingSpacing(double beta);

// The leaders among the rows of X (directions: each row is normalised first; a zero row never leads), in
// index order: row k leads when its geodesic distance arccos <x_k, x_l> / (|x_k| |x_l|) to every earlier
// leader l is at least delta.
std::vector<int> parkingLeaders(const Tokens& X, double delta);

// Whether the attention is the setting of the parking picture: softmax, one head, causal, on the unit sphere
// (post-LN), Q = K = V = I in dimension d (the plain beta), no positional decay, no keyframes.
bool hasParkingPicture(const AttentionSpec& attention, int d);

} // namespace flowscope
