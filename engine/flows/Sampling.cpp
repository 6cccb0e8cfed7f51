// Flowscope engine: samples and density grids of a trained flow (Sampling.h).
#include "engine/flows/Sampling.h"

#include "engine/flows/Datasets.h"
#include "engine/flows/Trainer.h"
#include "engine/io/Npy.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace flowscope::flows {

ad::Matrix<float> baseSamples(int d, int n, std::uint64_t seed) {
    Rng rng(seed);
    ad::Matrix<float> Z(d, n);
    for (Eigen::Index i = 0; i < Z.size(); ++i) Z(i) = float(rng.normal());
    return Z;
}

template <class S>
ad::Matrix<S> generateInBatches(const FlowModel<S>& model, const ad::Matrix<S>& Z, int batch,
                                double* residual, int* iterations, const SamplingProgress& progress) {
    ad::Matrix<S> X(Z.rows(), Z.cols());
    for (Eigen::Index j = 0; j < Z.cols(); j += batch) {
        const Eigen::Index m = std::min<Eigen::Index>(batch, Z.cols() - j);
        SamplerDiagnostics diagnostics;
        X.middleCols(j, m) = model.generate(Z.middleCols(j, m), nullptr, &diagnostics);
        if (residual) *residual = std::max(*residual, diagnostics.residual);
        if (iterations) *iterations = std::max(*iterations, diagnostics.iterations);
        if (progress && !progress(double(j + m) / double(Z.cols()))) throw SamplingCancelled();
    }
    return X;
}

template ad::Matrix<float> generateInBatches(const FlowModel<float>&, const ad::Matrix<float>&, int, double*,
                                             int*, const SamplingProgress&);
template ad::Matrix<double> generateInBatches(const FlowModel<double>&, const ad::Matrix<double>&, int,
                                              double*, int*, const SamplingProgress&);

FlowModel<double> inDouble(const FlowModel<float>& model, const FlowConfig* config) {
    FlowModel<double> m(config ? *config : model.config());
    m.params().phi = model.params().phi.cast<double>();
    m.params().lambdaRaw = model.params().lambdaRaw.cast<double>();
    m.params().betaRaw = model.params().betaRaw.cast<double>();
    m.setReference(model.reference().cast<double>(), model.referenceDraws());
    return m;
}

FlowModel<float>::FrozenKeys inFloat(const FlowModel<double>::FrozenKeys& keys) {
    FlowModel<float>::FrozenKeys out;
    for (const auto& draw : keys.draws) {
        auto& layers = out.draws.emplace_back();
        for (const auto& k : draw) layers.push_back(k.cast<float>());
    }
    return out;
}

ad::Matrix<float> sampleFlow(const FlowModel<float>& loaded, const ad::Matrix<float>& Z, int batch,
                             bool explicitSampler, double* residual, int* iterations,
                             const SamplingProgress& progress) {
    if (batch < 1) throw std::invalid_argument("sampling: batch must be >= 1");
    if (Z.rows() != loaded.config().d)
        throw std::invalid_argument("sampling: base samples of dimension " + std::to_string(Z.rows()) +
                                    " for a model of d = " + std::to_string(loaded.config().d));
    FlowConfig config = loaded.config();
    config.explicitSampler = explicitSampler;
    const FlowModel<double> model = inDouble(loaded, &config);
    double r = 0;
    int k = 0;
    const ad::Matrix<float> X =
        generateInBatches<double>(model, Z.cast<double>(), batch, &r, &k, progress).cast<float>();
    if (residual) *residual = r;
    if (iterations) *iterations = k;
    return X;
}

namespace {

void checkGrid(const FlowModel<float>& model, int grid, double halfWidth) {
    if (model.config().d != 2) throw std::invalid_argument("density grids are for d = 2 models");
    if (grid < 2 || grid > 4096) throw std::invalid_argument("density: grid must be in [2, 4096]");
    if (!(halfWidth > 0) || !std::isfinite(halfWidth))
        throw std::invalid_argument("density: the half-width must be finite and > 0");
}

// The grid's queries beside `keys`; progress reports (before + queries done) / work.
DensityGrid densityBeside(const FlowModel<float>& model, int grid, double halfWidth,
                          const FlowModel<float>::FrozenKeys& keys, const SamplingProgress& progress,
                          double before, double work) {
    const double cell = 2 * halfWidth / grid;
    ad::Matrix<float> Q(2, grid * grid);
    for (int r = 0; r < grid; ++r)
        for (int c = 0; c < grid; ++c) {
            Q(0, r * grid + c) = float(-halfWidth + (c + 0.5) * cell); // x along columns
            Q(1, r * grid + c) = float(-halfWidth + (r + 0.5) * cell); // y along rows
        }
    DensityGrid out;
    out.grid = grid;
    out.halfWidth = halfWidth;
    out.rho.resize(std::size_t(grid) * grid);
    constexpr int kChunk = 4096;
    for (Eigen::Index j = 0; j < Q.cols(); j += kChunk) {
        const Eigen::Index m = std::min<Eigen::Index>(kChunk, Q.cols() - j);
        Eigen::Matrix<float, 1, Eigen::Dynamic> logRho;
        model.encode(Q.middleCols(j, m), &logRho, nullptr, keys);
        for (Eigen::Index k = 0; k < m; ++k) out.rho[std::size_t(j + k)] = std::exp(double(logRho(k)));
        if (progress && !progress((before + double(j + m)) / work)) throw SamplingCancelled();
    }
    for (double v : out.rho) out.mass += std::isfinite(v) ? v * cell * cell : 0.0;
    return out;
}

} // namespace

DensityGrid densityGrid(const FlowModel<float>& model, int grid, double halfWidth, int references,
                        std::uint64_t seed, const SamplingProgress& progress) {
    checkGrid(model, grid, halfWidth);
    if (references < 2) throw std::invalid_argument("density: references must be >= 2");
    // Progress: the reference batch and the queries by their count (a query costs about what a sample does).
    const double work = double(references) + double(grid) * grid;
    // The reference batch: the model's own (the density its samples follow), or its own samples (their
    // backward states are the sampler's own batches).
    if (model.config().rwpo && model.reference().size() > 0)
        return densityBeside(model, grid, halfWidth, model.frozenKeys(), progress, 0, double(grid) * grid);
    const FlowModel<float>::FrozenKeys keys =
        densityKeys(model, references, seed,
                    progress ? SamplingProgress([&](double f) { return progress(f * references / work); })
                             : SamplingProgress());
    return densityBeside(model, grid, halfWidth, keys, progress, references, work);
}

FlowModel<float>::FrozenKeys densityKeys(const FlowModel<float>& model, int references, std::uint64_t seed,
                                         const SamplingProgress& progress) {
    if (model.config().rwpo && model.reference().size() > 0) return model.frozenKeys();
    if (references < 2) throw std::invalid_argument("density: references must be >= 2");
    const ad::Matrix<float> reference = generateInBatches(
        model, baseSamples(model.config().d, references, seed), references, nullptr, nullptr, progress);
    return model.frozenKeys(&reference);
}

DensityGrid densityGrid(const FlowModel<float>& model, int grid, double halfWidth,
                        const ad::Matrix<float>& reference) {
    checkGrid(model, grid, halfWidth);
    if (reference.rows() != 2 || reference.cols() < 2)
        throw std::invalid_argument("density: the reference batch must be 2 x N with N >= 2");
    return densityBeside(model, grid, halfWidth, model.frozenKeys(&reference), {}, 0, double(grid) * grid);
}

DensityGrid densityGrid(const FlowModel<float>& model, int grid, double halfWidth,
                        const FlowModel<float>::FrozenKeys& keys) {
    checkGrid(model, grid, halfWidth);
    return densityBeside(model, grid, halfWidth, keys, {}, 0, double(grid) * grid);
}

void writeSamplesNpy(const std::string& path, const ad::Matrix<float>& samples) {
    const Mat rows = toRows(samples);
    const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> c = rows;
    writeNpy(path, {c.rows(), c.cols()}, c.data(), true);
}

void writeDensityNpy(const std::string& path, const DensityGrid& density) {
    writeNpy(path, {density.grid, density.grid}, density.rho.data(), false);
}

} // namespace flowscope::flows
