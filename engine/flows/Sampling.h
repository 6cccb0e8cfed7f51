// Flowscope engine: drawing samples and densities from a trained flow, the same way everywhere:
// flowscope-cli sample / density and the app's File ▸ Export ▸ Samples / Density call these, so the same
// model, n and seed give the same .npy bytes in both.
//
//  * baseSamples(d, n, seed): z_j = (r_{dj}, ..., r_{dj+d-1}) from Rng(seed).normal(), the column-major fill;
//  * sampleFlow: generate(Z) in independent batches of `batch` columns (with the RWPO layer a batch's samples
//    are one another's keys, as in training), in double on the float32 parameters: the sampler's fixed-point
//    solves then stop within their tolerance of the exact inverse instead of on float32 rounding noise,
//    amplified where the map nearly folds;
//  * densityGrid: exp(log ρ) by (24) at the centres of a grid² grid on [-halfWidth, halfWidth]², each query
//    pushed backward beside a reference batch (its keys; docs/math/flows.md#density): the model's reference
//    draws of data when it has them (FlowModel::setReference: the mean of the draws' densities), else the
//    model's own samples. A grid point's density does not depend on the other grid points.
#pragma once

#include "engine/flows/Flow.h"

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace flowscope::flows {

// Progress of a long sampling job: called after each batch with the fraction done (0..1]; returning false
// stops the job, which then throws SamplingCancelled (nothing is written).
using SamplingProgress = std::function<bool(double fraction)>;
struct SamplingCancelled : std::runtime_error {
    SamplingCancelled() : std::runtime_error("cancelled") {}
};

// d x n standard normal base samples from the stream `seed`.
ad::Matrix<float> baseSamples(int d, int n, std::uint64_t seed);

// model.generate(Z) in batches of `batch` columns. `residual` and `iterations` (when given) get the worst
// fixed-point change at exit and the most iterations any sub-step took, over the batches.
template <class S>
ad::Matrix<S> generateInBatches(const FlowModel<S>& model, const ad::Matrix<S>& Z, int batch,
                                double* residual = nullptr, int* iterations = nullptr,
                                const SamplingProgress& progress = {});

// The model in double on its float32 parameters (what sampleFlow and the training view's pictures sample),
// with `config` in place of the model's own when given (e.g. another sampler).
FlowModel<double> inDouble(const FlowModel<float>& model, const FlowConfig* config = nullptr);
// Keys pushed backward in double, rounded to float32 for the float model's encode() (a density grid beside
// the very keys the double sampler inverted with).
FlowModel<float>::FrozenKeys inFloat(const FlowModel<double>::FrozenKeys& keys);

// The samples flowscope-cli sample writes (d x N): generateInBatches in double, eq. (22) as printed when
// explicitSampler is set.
ad::Matrix<float> sampleFlow(const FlowModel<float>& model, const ad::Matrix<float>& Z, int batch = 2000,
                             bool explicitSampler = false, double* residual = nullptr,
                             int* iterations = nullptr, const SamplingProgress& progress = {});

struct DensityGrid {
    int grid = 0;
    double halfWidth = 0;
    std::vector<double> rho; // grid x grid, row = y, column = x (C order), probability per unit area
    double mass = 0;         // Σ ρ · cell² over the finite cells
};

// flowscope-cli density's grid (d = 2 models only; throws std::invalid_argument otherwise): the model's
// reference as the keys, or (a model without one) `references` samples from baseSamples(2, references, seed).
DensityGrid densityGrid(const FlowModel<float>& model, int grid, double halfWidth, int references = 2000,
                        std::uint64_t seed = 0, const SamplingProgress& progress = {});
// The keys densityGrid evaluates beside: an RWPO model's reference draws pushed backward, or else
// `references` of the model's own samples from baseSamples(d, references, seed) (a model without the layer
// has no keys: its frozenKeys are empty). `progress` gets the fraction of those samples generated.
FlowModel<float>::FrozenKeys densityKeys(const FlowModel<float>& model, int references = 2000,
                                         std::uint64_t seed = 0, const SamplingProgress& progress = {});
// The same grid beside a given reference batch (2 x N samples of the model, e.g. an evaluation's), or beside
// keys already pushed backward (FlowModel::frozenKeys).
DensityGrid densityGrid(const FlowModel<float>& model, int grid, double halfWidth,
                        const ad::Matrix<float>& reference);
DensityGrid densityGrid(const FlowModel<float>& model, int grid, double halfWidth,
                        const FlowModel<float>::FrozenKeys& keys);

// The .npy files (atomic): samples as an N x d float32 array (one sample per row), the density as a
// grid x grid float64 array.
void writeSamplesNpy(const std::string& path, const ad::Matrix<float>& samples);
void writeDensityNpy(const std::string& path, const DensityGrid& density);

} // namespace flowscope::flows
