// Flowscope engine: what the GUI's Models workspace computes from a checkpoint folder in one background job
// (engine/runner/BackgroundJob.h): the tokens, the hidden states of every layer, the Gram histograms with the
// mean cosine and the cluster count per layer, and the tokens through depth projected on their principal
// axes. The ODE of one head beside the layers is modelDynamics (ModelAnalysis.h), a job of its own.
#pragma once

#include "engine/models/ModelAnalysis.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace flowscope::models {

// A further input compared with the first in the Cosines tab: text through the folder's tokenizer, or ids.
struct ModelInput {
    std::string text;
    std::vector<int> ids; // used when not empty
    std::string name;     // how errors name it ("compare, line 3"); empty: "compared input k"
};

struct ModelRunRequest {
    std::string dir;                  // config.json + model.safetensors (+ the tokenizer's files)
    std::string text;                 // through the folder's tokenizer, unless ids are given
    std::vector<int> ids;             // used when not empty
    int layers = 0;                   // 0: the config's (ALBERT: any number of its shared layer)
    std::vector<int> histogramLayers; // empty: 0, L/3, 2L/3, L; layers beyond the run are left out
    int bins = 40;
    double clusterTol = kGramClusterTol;
    int dims = 3; // the projection's dimension (2 or 3; at most D)
    // Further inputs, each run alone through the same layers: their histograms (at the first input's layers),
    // mean cosines and cluster counts, as `model gram` gives for several inputs.
    std::vector<ModelInput> compare;
};

// A further input's numbers: what gramHistograms gives for a run of it by itself.
struct ComparedInput {
    std::string label; // the text, or "ids 3,1,4"
    std::vector<int> ids;
    GramHistograms gram;
};

struct ModelRunResult {
    std::shared_ptr<const Checkpoint> checkpoint;
    std::string name; // the folder's name
    std::vector<int> ids;
    std::vector<std::string> texts;     // tokenTexts
    std::vector<RowMat<double>> states; // L + 1 of n x D, computed in float32 (as model gram does)
    GramHistograms gram;
    PrincipalAxes axes;                  // of the normalised tokens of every layer together
    std::vector<RowMat<double>> depth;   // per layer: axes.project(normalizedRows(states[k])), n x dims
    std::vector<ComparedInput> compared; // the request's further inputs, in order
};

// Throws ModelError (naming the file, field or tensor) and ModelCancelled (progress returned false).
// progress(fraction) is called as the layers are computed.
ModelRunResult runModel(const ModelRunRequest& request, const std::function<bool(double)>& progress = {});

// "3,1,4" or "3 1 4" as ids; throws ModelError naming `field` for anything else.
std::vector<int> parseIds(const std::string& text, const std::string& field);

} // namespace flowscope::models
