// Flowscope engine: trained posterior flows on disk (docs/inverse.md#files). A .safetensors file of float64
// tensors: the potential's "phi.K0" ... "phi.b", "lambda_raw", "beta_raw" (as a generative flow's, in
// float64), the frame's "frame.center" (d x 1) and "frame.L" (d x d); its metadata "flowscope_posterior"
// holds the architecture, the batch and the problem's JSON, so the file alone rebuilds the posterior and its
// sampler. A JSON record beside it (posterior.json) holds the training curve and the summary.
#pragma once

#include "engine/inverse/PosteriorFlow.h"
#include "engine/inverse/Problem.h"

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

namespace flowscope::inverse {

// The metadata key that marks a .safetensors file as a posterior flow.
inline constexpr char kPosteriorMetadataKey[] = "flowscope_posterior";

// Writes the averaged parameters and `record` as one output set; `record` gets "format", "architecture",
// "frame", "problem" filled in.
void savePosterior(const std::string& path, const PosteriorFlow& flow, const Problem& problem,
                   nlohmann::json record);

struct LoadedPosterior {
    Problem problem;
    std::unique_ptr<PosteriorFlow> flow; // its parameters are the file's
};
// Throws std::runtime_error naming the file and the field for malformed or mismatched files.
LoadedPosterior loadPosterior(const std::string& path);
// Whether a .safetensors file is a posterior flow (its metadata names one); false for unreadable files.
bool isPosteriorFile(const std::string& path);

} // namespace flowscope::inverse
