// Flowscope engine: inverse-problem files (PROBLEM.json, docs/inverse.md): a forward model, its data, noise
// and prior, and the posterior flow's settings. Read as scenes are: every error is a JsonError naming the
// field by its JSON pointer ("/prior/sd: expected number > 0, got -1"), and unknown fields are errors.
//
//     {"name": "linear 2-D", "model": {"type": "linear", "G": [[1, 0.5], [0, 1]], "b": [0, 0]},
//      "noise": 0.5, "prior": {"type": "gaussian", "mean": 0, "sd": 1},
//      "truth": [1, -0.5], "data_seed": 1,
//      "flow": {"rwpo": true, "iterations": 1500, "batch": 256, "frame": "laplace"}}
//
// The data: "data" (the observations y), or made from "truth" as y = F(truth) + σ ξ with ξ ~ N(0, I) drawn
// from "data_seed" (default 0). Shipped problems live in assets/problems (loadProblem takes a name too).
#pragma once

#include "engine/inverse/Posterior.h"
#include "engine/inverse/PosteriorFlow.h"
#include "engine/io/JsonReader.h"

#include <memory>
#include <string>
#include <vector>

namespace flowscope::inverse {

struct Problem {
    std::string name, description;
    std::shared_ptr<Posterior> posterior;
    PosteriorFlowConfig flow;
    std::string modelType; // the "type" of /model
    std::string source;    // the problem's JSON (compact): a saved posterior carries it
};

Problem readProblem(const JsonReader& j);
Problem problemFromJson(const std::string& text); // parseJson + readProblem
// A path to a PROBLEM.json, or the name of a shipped problem (a file `name`.json in `dir`).
Problem loadProblem(const std::string& pathOrName, const std::string& dir);
// The shipped problems' names (the .json files of `dir`, sorted).
std::vector<std::string> problemNames(const std::string& dir);

// The forward-model types "type" may name.
std::vector<std::string_view> modelTypes();

} // namespace flowscope::inverse
