// Flowscope engine: what a live training run of generative flows publishes (FlowRunner.h).
#pragma once

#include "engine/core/Types.h"
#include "engine/flows/Trainer.h"
#include "engine/runner/TrainerRunSnapshot.h"

#include <memory>
#include <string>
#include <vector>

namespace flowscope {

// What one trainer looks like at a given iteration; immutable once published, shared by readers.
struct FlowPicture {
    long iteration = 0;
    bool draft = false;            // the first kDraftSamples samples and a grid of at most kDraftGrid cells
    Mat samples;                   // samples x d: generate(z) for fixed z
    std::vector<Mat> trajectories; // x^0 .. x^M (M + 1 entries), each trajectorySamples x d
    Mat data;                      // samples x d: points of the training law
    // Density on the grid (d = 2 only): density(i, j) at x = cellCenter(i), y = cellCenter(j), in units of
    // probability per unit area. Without the RWPO layer it is the model's exp(log ρ(x)) by (24); with it a
    // 2-D histogram of the generated samples (the layer's keys are its queries, so a lone grid point does not
    // see the model's density), and densityFromSamples says so.
    Mat density;
    bool densityFromSamples = false;
    double gridExtent = 4.0;

    int gridSize() const { return int(density.rows()); }
    double cellCenter(int i) const { return -gridExtent + (i + 0.5) * 2.0 * gridExtent / gridSize(); }
};

// One trainer's state in a snapshot.
struct FlowTrainerState {
    std::string label; // "with RWPO" or "without RWPO"
    bool rwpo = false;
    long iteration = 0;
    double learningRate = 0.0;
    std::vector<flows::TrainRecord> history; // one per iteration (loss, NLL, transport, HJB, λ, β, ...)
    std::vector<flows::Evaluation> evaluations;
    std::vector<flows::TrainEvent> events; // the last FlowRunOptions::maxEvents
    bool stopped = false;                  // twenty rejections in a row: the trainer refuses further steps
    std::shared_ptr<const FlowPicture> picture; // null until the worker made the first one
    // The parameters and config at this iteration (copies: saving or sampling them never touches the
    // worker's trainer). saveTrainedFlow() writes them with the record flowscope-cli train writes.
    std::shared_ptr<const flows::FlowModel<float>> model;
    std::shared_ptr<const flows::TrainerConfig> config;
};

struct FlowSnapshot : TrainerRunSnapshot<FlowTrainerState> {};

} // namespace flowscope
