#include "engine/runner/FlowRunner.h"

#include "engine/flows/Sampling.h"

#include "engine/flows/FlowIo.h"
#include "engine/runner/TrainerSteps.h"

#include <algorithm>
#include <cmath>

namespace flowscope {

namespace {
using flows::FlowTrainer;
using Matrix = FlowTrainer::Matrix;
} // namespace

std::vector<flows::TrainerConfig> trainingConfigs(const flows::TrainerConfig& config, bool comparison) {
    if (!comparison) return {config};
    flows::TrainerConfig with = config, without = config;
    with.flow.rwpo = true;
    without.flow.rwpo = false;
    return {with, without};
}

// ---------------------------------------------------------------------------------------------------------
// FlowPictureMaker

FlowPictureMaker::FlowPictureMaker(const FlowRunOptions& options, int d) : options_(options) {
    flows::Rng rng(options_.pictureSeed);
    base_.resize(d, options_.samples);
    for (Eigen::Index i = 0; i < base_.size(); ++i) base_(i) = float(rng.normal());
}

Mat FlowPictureMaker::data(const FlowTrainer& t) const {
    return t.sampleData(options_.samples, options_.pictureSeed);
}

bool FlowPictureMaker::hasDrafts() const {
    return options_.samples > kDraftSamples || options_.gridSize > kDraftGrid;
}

std::shared_ptr<const FlowPicture> FlowPictureMaker::make(long iteration,
                                                          const flows::FlowModel<float>& model,
                                                          const Mat& data, bool draft) const {
    auto p = std::make_shared<FlowPicture>();
    p->iteration = iteration;
    p->draft = draft && hasDrafts();
    p->data = data;
    p->gridExtent = options_.gridExtent;
    const Eigen::Index samples =
        p->draft ? std::min<Eigen::Index>(kDraftSamples, base_.cols()) : base_.cols();
    const int gridSize = p->draft ? std::min(options_.gridSize, kDraftGrid) : options_.gridSize;
    // In double on the float32 parameters, as flowscope-cli sample draws (engine/flows/Sampling.h): there the
    // exact-inverse sampler's fixed points converge, where in float32 they stall at the iteration cap on
    // rounding noise (with the RWPO layer at initialization, 1000 samples: 35 iterations per sub-step and
    // 5.9 s, against 100 and 13.3 s), and a picture shows the samples `sample` writes for these draws.
    // A draft of a model with several reference draws uses the first alone: the keys of each draw cost
    // O(n²) per layer, and with 8 draws they were most of a 250-sample draft's seconds. Its samples and
    // density are then that draw's component ρ_0 of the mixture, exact in themselves (sample j of the full
    // picture, j ≡ 0 mod R, is the draft's).
    // The RWPO layer's frozen keys (the reference draws pushed backward, O(n²) per layer) are computed once,
    // in double, and serve both the samples and, rounded to float32, the density grid.
    const bool oneDraw = p->draft && model.config().rwpo && model.referenceDraws() > 1;
    const flows::FlowModel<double> inDouble = flows::inDouble(model);
    const flows::FlowModel<double>::Matrix firstDraw =
        oneDraw ? model.referenceDraw(0).cast<double>() : flows::FlowModel<double>::Matrix();
    const flows::FlowModel<double>::FrozenKeys keys = inDouble.frozenKeys(oneDraw ? &firstDraw : nullptr);
    std::vector<flows::FlowModel<double>::Matrix> trajectory;
    const flows::FlowModel<double>::Matrix Z = base_.leftCols(samples).cast<double>();
    p->samples = flows::toRows(inDouble.generate(Z, &trajectory, nullptr, keys).cast<float>());
    const Eigen::Index k = std::min<Eigen::Index>(options_.trajectorySamples, samples);
    for (const auto& layer : trajectory)
        p->trajectories.push_back(flows::toRows(layer.leftCols(k).cast<float>()));
    if (model.config().d == 2 && gridSize > 0) {
        // The model density where it is defined point by point: without the layer, or beside its reference.
        p->densityFromSamples = model.config().rwpo && model.reference().size() == 0;
        p->density = p->densityFromSamples ? sampleHistogram(p->samples, gridSize)
                                           : modelDensity(model, gridSize, flows::inFloat(keys));
    }
    return p;
}

// exp(log ρ) by (24) at the centres of a gridSize² grid, beside the frozen `keys` (none: the queries are
// their own keys, the flow without the layer).
Mat FlowPictureMaker::modelDensity(const FlowTrainer::Model& model, int gridSize,
                                   const FlowTrainer::Model::FrozenKeys& keys) const {
    const int n = gridSize;
    const double cell = 2.0 * options_.gridExtent / n;
    Matrix grid(2, n * n);
    for (int j = 0; j < n; ++j)
        for (int i = 0; i < n; ++i) {
            grid(0, i + n * j) = float(-options_.gridExtent + (i + 0.5) * cell);
            grid(1, i + n * j) = float(-options_.gridExtent + (j + 0.5) * cell);
        }
    Eigen::Matrix<float, 1, Eigen::Dynamic> logDensity;
    model.encode(grid, &logDensity, nullptr, keys);
    Mat density(n, n);
    for (int j = 0; j < n; ++j)
        for (int i = 0; i < n; ++i) density(i, j) = std::exp(double(logDensity(i + n * j)));
    return density;
}

// Samples per unit area on a grid of half as many cells per side as the model's (a thousand samples would
// leave most of 64² cells empty). Samples outside the grid or not finite are not counted.
Mat FlowPictureMaker::sampleHistogram(const Mat& samples, int gridSize) const {
    const int n = std::max(gridSize / 2, 1);
    const double cell = 2.0 * options_.gridExtent / n;
    Mat h = Mat::Zero(n, n);
    for (Eigen::Index r = 0; r < samples.rows(); ++r) {
        const double i = std::floor((samples(r, 0) + options_.gridExtent) / cell);
        const double j = std::floor((samples(r, 1) + options_.gridExtent) / cell);
        if (i >= 0 && i < n && j >= 0 && j < n) h(int(i), int(j)) += 1.0;
    }
    if (samples.rows() > 0) h /= double(samples.rows()) * cell * cell;
    return h;
}

// ---------------------------------------------------------------------------------------------------------
// FlowTraining

std::string FlowTraining::label(const Config& config) {
    return config.flow.rwpo ? "with RWPO" : "without RWPO";
}

FlowTrainerState FlowTraining::state(const Trainer& t, std::size_t maxEvents,
                                     std::shared_ptr<const Config> config) {
    FlowTrainerState s;
    s.label = label(t.config());
    s.rwpo = t.config().flow.rwpo;
    fillTrainerState(s, t, maxEvents);
    copyTrainerModel(s, t, std::move(config));
    return s;
}

flows::TrainerConfig FlowTraining::fromModel(const Model& model, Config config) {
    config.flow = model.config();
    config.initialParams = std::make_shared<const flows::FlowParams<float>>(model.params());
    return config;
}

// Fixed base draws z: successive pictures show where the same z's go as the flow learns. The comparison's
// trainers differ only in the layer, so they share the data points.
FlowTraining::Pictures::Pictures(const Options& options, const Trainer& first)
    : maker_(options, first.config().flow.d), data_(maker_.data(first)) {}

PictureTask<FlowPicture> FlowTraining::Pictures::capture(const Trainer& t) const {
    return [this, model = std::make_shared<const Model>(t.evaluatedModel()),
            iteration = t.iteration()](bool draft) { return maker_.make(iteration, *model, data_, draft); };
}

void saveTrainedFlow(const std::string& path, const FlowTrainerState& state) {
    saveTrainerState(path, state, [](auto&&... a) { flows::saveFlow(std::forward<decltype(a)>(a)...); });
}

} // namespace flowscope
