// Flowscope engine: what a live training run of continuous-time Transformers publishes (TransformerRunner.h).
#pragma once

#include "engine/core/Types.h"
#include "engine/flows/StepGuard.h"
#include "engine/ottransformer/Trainer.h"
#include "engine/runner/TrainerRunSnapshot.h"

#include <memory>
#include <string>
#include <vector>

namespace flowscope {

struct TransformerPicture {
    long iteration = 0;
    std::vector<Mat> states; // X_0 .. X_M, each n x 2 (one row per token)
    Mat closedForm;          // task A, λ_OT > 0: X*(T), n x 2; else empty
    int label = -1;          // task B: the set's class
};

struct TransformerTrainerState {
    std::string label; // "λ_OT = 0.5"
    double lambdaOt = 0;
    long iteration = 0;
    double learningRate = 0;
    std::vector<ot::OtRecord> history;
    std::vector<ot::OtEvaluation> evaluations;
    std::vector<flows::TrainEvent> events; // the last maxEvents
    bool stopped = false;
    std::shared_ptr<const TransformerPicture> picture; // null until the first one
    // The evaluated parameters (OtTrainer::evaluatedModel(): the iterate average when averaging is on, as
    // the pictures and evaluations use) and the config at this iteration (copies: saving them never touches
    // the worker's trainer).
    std::shared_ptr<const ot::TransformerModel> model;
    std::shared_ptr<const ot::OtTrainerConfig> config;
};

struct TransformerSnapshot : TrainerRunSnapshot<TransformerTrainerState> {
    ot::Task task = ot::Task::A;
    double threshold = 0; // Theorem 2's T L² of the configured run, in the run's λ convention
};

} // namespace flowscope
