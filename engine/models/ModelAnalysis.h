// Flowscope engine: what Flowscope reads off a real model's hidden states (engine/models/Model.h): the
// histograms of the tokens' pairwise cosines through depth (Geshkovski, Letrouit, Polyanskiy and Rigollet's
// figure), and the scene of the papers' attention ODE with one layer's own head (docs/math/models.md).
#pragma once

#include "engine/models/Model.h"
#include "engine/scene/Scene.h"

#include <functional>
#include <utility>
#include <vector>

namespace flowscope::models {

// Histograms of <z_i, z_j>, i < j, of the l2-normalised tokens z_i = x_i / |x_i| of each chosen layer, on one
// set of `bins` equal bins over [-1, 1] (1 falls in the last), as densities (each integrates to 1 over
// [-1, 1]); and the mean of <z_i, z_j> over i != j of every layer, with the number of clusters of every
// layer: the greedy leader count (engine/dynamics/Observables.h) of the z_i at Euclidean tolerance
// `clusterTol`
// (|z_i - z_j| < tol, i.e. <z_i, z_j> > 1 - tol^2 / 2).
constexpr double kGramClusterTol = 0.2;
struct GramHistograms {
    std::vector<int> layers;                  // the chosen layers
    std::vector<double> edges;                // bins + 1
    std::vector<std::vector<long>> counts;    // per chosen layer
    std::vector<std::vector<double>> density; // per chosen layer
    std::vector<double> meanCosine;           // per layer of `states`, 0 .. L
    std::vector<int> clusters;                // per layer of `states`, 0 .. L
    double clusterTol = kGramClusterTol;
    long pairs = 0; // n (n - 1) / 2
};
// Throws ModelError for a layer outside the states or fewer than two tokens.
GramHistograms gramHistograms(const std::vector<RowMat<double>>& states, const std::vector<int>& layers,
                              int bins, double clusterTol = kGramClusterTol);

// The density axis of the histograms' panels (the Models tab's and model gram's figure), one for every panel
// and input. Linear: from 0 to `top`. Log: log10 of the density from `bottom` to `top`, whole decades:
// `bottom` the decade strictly below the smallest positive density (the emptiest bin that holds a pair still
// shows a bar), `top` the decade at or above the largest. An empty bin has no logarithm: it gets no bar on
// either scale (height 0, the axis' floor); every density a bin with a pair can hold, 1 / (pairs x bin
// width) or more, lies above that floor.
struct DensityAxis {
    bool log = false;
    double bottom = 0.0, top = 1.0;
    // The height of a bar of this density as a fraction of the panel's: density / top (linear), or
    // (log10 density - log10 bottom) / (log10 top - log10 bottom) (log), clamped to [0, 1]; 0 for density <=
    // 0.
    double fraction(double density) const;
    static DensityAxis linear(double top);
    // From the smallest positive and the largest density shown (densityRange); both 0 (every bin empty):
    // the decade [0.1, 1].
    static DensityAxis logarithmic(double smallestPositive, double largest);
};
// The smallest positive and the largest density of every panel of the histograms (0, 0 when all are empty).
std::pair<double, double> densityRange(const std::vector<const GramHistograms*>& histograms);

// The rows of x divided by their norms (a zero row stays zero): the z_i of the histograms.
RowMat<double> normalizedRows(const RowMat<double>& x);

// Principal axes of clouds taken together (all layers' tokens pooled): the mean of every row, and the
// eigenvectors of the pooled covariance with the `dims` largest eigenvalues, largest first (sign: the
// largest entry of each positive, so the picture does not flip between runs). project(x) = (x - mean) basis.
struct PrincipalAxes {
    Eigen::RowVectorXd mean;
    RowMat<double> basis; // D x dims
    RowMat<double> project(const RowMat<double>& x) const;
};
// Throws ModelError when the clouds are empty or dims is outside [1, D].
PrincipalAxes principalAxes(const std::vector<RowMat<double>>& clouds, int dims);

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
// `from` (default: `layer`) starts the scene from states[from] instead, through the same map (layer's LN and
// the sphere), e.g. from the embeddings (0) to set the head's ODE beside the real layers.
Scene modelScene(const Checkpoint& checkpoint, const Weights<double>& weights,
                 const std::vector<RowMat<double>>& states, int layer, int head, int from = -1);

// The states x as the scene of layer `layer` holds tokens: the layer's attention inputs (GPT-2: its ln_1),
// on the unit sphere for post-LayerNorm models.
RowMat<double> sceneTokens(const ModelConfig& config, const Weights<double>& weights, int layer,
                           const RowMat<double>& x);

// The model's own dynamics beside its layers (docs/math/models.md, "The ODE beside the layers"): the scene of
// head `head` of layer `layer` started from the embeddings states[0], one unit of time per layer
// (T = L = states.size() - 1, `stepsPerLayer` RK4 steps each), recorded at t = 0, 1, ..., L; the real states
// mapped into the scene's coordinates (sceneTokens); and per layer k the root-mean-square distance between
// the matched tokens, sqrt((1/n) sum_i |ode_i(k) - real_i(k)|^2). A run stopped by an event (divergence)
// records fewer times: the distances after it are NaN. progress(fraction) may return false to cancel
// (ModelCancelled).
struct ModelDynamics {
    Scene scene;
    std::vector<RowMat<double>> ode;  // the scene's tokens at t = 0 .. (recorded times)
    std::vector<RowMat<double>> real; // per layer 0 .. L
    std::vector<double> distance;     // per layer 0 .. L
};
// The RK4 steps per layer the Models tab starts Build ODE with (and bench model times): 20 for models up to
// 128 wide, 2 above, where each step costs four passes of n^2 D and n D^2 (docs/models.md).
int defaultStepsPerLayer(const ModelConfig& config);
ModelDynamics modelDynamics(const Checkpoint& checkpoint, const Weights<double>& weights,
                            const std::vector<RowMat<double>>& states, int layer, int head,
                            int stepsPerLayer = 20, const std::function<bool(double)>& progress = {});

} // namespace flowscope::models
