// Flowscope engine: what a live training run of posterior flows publishes (PosteriorRunner.h): each trainer's
// state and pictures, and what every picture of a run shares.
#pragma once

#include "engine/inverse/PosteriorFlow.h"
#include "engine/inverse/Problem.h"
#include "engine/runner/TrainerRunSnapshot.h"

#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace flowscope {

// What a posterior run trains: a problem, the flow's settings (the problem's, with the user's iterations,
// seed and RWPO choice) and the frame both trainers of a run share.
struct PosteriorRunConfig {
    std::string problemId; // the shipped problem's name ("lorenz63") or the file's path
    std::shared_ptr<const inverse::Problem> problem;
    inverse::PosteriorFlowConfig flow;
    // The frame (x = c + L u): null until made. Making the Laplace frame searches the MAP point (seconds on
    // EIT); withFrame() does it once, and every trainer and reset of the run reuses it.
    std::shared_ptr<const inverse::Frame> frame;
    // A saved posterior's parameters (File ▸ Open trained model; loadPosteriorRun): every trainer of the run
    // starts from them, and Reset returns to them. Null: φ's initialization from flow.flow.seed.
    std::shared_ptr<const flows::FlowParams<double>> initialParams;
    int evaluationSamples = 600; // samples of a held-out evaluation
};

// The posterior mean's error at an iteration (held-out: fresh samples of the averaged parameters).
struct PosteriorEvaluation {
    long iteration = 0;
    double relativeL1Error = NAN; // NaN without a known truth
    double misfit = NAN;          // mean ½‖y − F(x)‖²/σ² over the samples
    // The samples' mean and covariance: how far the flow is from a reference (a Metropolis chain) as a
    // Gaussian W₂ distance, whatever the truth.
    inverse::Vector mean;
    inverse::Matrix covariance;
};

// What one trainer looks like at an iteration; immutable once published.
struct PosteriorPicture {
    long iteration = 0;
    inverse::Matrix samples; // d x n, from the same base draws in every picture of a run
    inverse::PosteriorSummary summary;
    inverse::Vector prediction; // F(summary.mean), m entries
    // EIT only: κ's posterior mean and standard deviation on a fieldGrid² grid over [0, 1]² (row j, column i
    // at s = ((i + ½)/n, (j + ½)/n)); empty for other models.
    inverse::Matrix fieldMean, fieldSd;
};

struct PosteriorState {
    std::string label; // "with RWPO" or "without RWPO"
    bool rwpo = false;
    long iteration = 0;
    long iterations = 0; // the budget
    double learningRate = 0;
    std::vector<inverse::PosteriorRecord> history;
    std::vector<PosteriorEvaluation> evaluations;
    std::vector<flows::TrainEvent> events;
    bool stopped = false;
    std::shared_ptr<const PosteriorPicture> picture;
    std::shared_ptr<const flows::FlowParams<double>> params; // the averaged parameters (what save writes)
    std::shared_ptr<const PosteriorRunConfig> config;
};

// What every picture of a run shares: the problem's data, truth and (EIT) the truth's field.
struct PosteriorScene {
    std::string name, modelType;
    int d = 0;
    inverse::Vector y;
    std::optional<inverse::Vector> truth;
    double noise = 0;
    bool gaussianPrior = true;
    bool laplaceFrame = true;
    inverse::Matrix truthField; // EIT: κ of the truth on the field grid; else empty
};

struct PosteriorSnapshot : TrainerRunSnapshot<PosteriorState> {
    std::shared_ptr<const PosteriorScene> scene;
};

// A reference chain's samples of the same posterior (ReferenceChain.h), drawn beside a run's.
struct ReferenceSamples {
    inverse::Matrix samples; // d x kept
    inverse::PosteriorSummary summary;
    double acceptance = 0;
    long steps = 0;
};

} // namespace flowscope
