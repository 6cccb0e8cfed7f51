// Flowscope engine: what Flowscope reads off a real model's hidden states (engine/models/Model.h): the
// histograms of the tokens' pairwise cosines through depth (Geshkovski, Letrouit, Polyanskiy and Rigollet's
// figure), and the scene of the papers' attention ODE with one layer's own head (docs/math/models.md).
#pragma once

#include "engine/models/Model.h"
#include "engine/scene/Scene.h"

#include <vector>

namespace flowscope::models {

// Histograms of <z_i, z_j>, i < j, of the l2-normalised tokens z_i = x_i / |x_i| of each chosen layer, on one
// set of `bins` equal bins over [-1, 1] (1 falls in the last), as densities (each integrates to 1 over
// [-1, 1]); and the mean of <z_i, z_j> over i != j of every layer.
struct GramHistograms {
    std::vector<int> layers;                  // the chosen layers
    std::vector<double> edges;                // bins + 1
    std::vector<std::vector<long>> counts;    // per chosen layer
    std::vector<std::vector<double>> density; // per chosen layer
    std::vector<double> meanCosine;           // per layer of `states`, 0 .. L
    long pairs = 0;                           // n (n - 1) / 2
};
// Throws ModelError for a layer outside the states or fewer than two tokens.
GramHistograms gramHistograms(const std::vector<RowMat<double>>& states, const std::vector<int>& layers,
                              int bins);

// The scene of the ODE of head `head` of layer `layer` (0-based; ALBERT: any depth, its layer is shared),
// started from the tokens entering that layer, states[layer]. With W the checkpoint's maps in the rows
// convention of Model.h and d_k = D / H:
//   Q = (W_q columns of head h)^T, K = (W_k columns of head h)^T   (d_k x D; scores divided by sqrt(d_k))
//   V = (W_o rows of head h)^T (W_v columns of head h)^T           (D x D: the value map W_O^h W_V^h)
// the biases left out. Post-LayerNorm (ALBERT, BERT): the tokens on the unit sphere (sphere: true), z_i =
// x_i / |x_i|, with beta = the mean of |x_i|^2 so that the scores of the z_i are those of tokens of the
// states' mean size. Pre-LayerNorm (GPT-2): the head's own inputs ln_1(x_i), not on the sphere, beta 1,
// masked (causal). Throws ModelError when D exceeds a scene's 1024 dimensions or the layer or head is out of
// range.
Scene modelScene(const Checkpoint& checkpoint, const Weights<double>& weights,
                 const std::vector<RowMat<double>>& states, int layer, int head);

} // namespace flowscope::models
