#include "engine/models/ModelRun.h"

#include "engine/core/Text.h"
#include "engine/models/Tokenizer.h"

#include <algorithm>
#include <charconv>
#include <filesystem>

namespace flowscope::models {

std::vector<int> parseIds(const std::string& text, const std::string& field) {
    std::vector<int> ids;
    std::size_t at = 0;
    while (at < text.size()) {
        if (text[at] == ',' || std::isspace(static_cast<unsigned char>(text[at]))) {
            ++at;
            continue;
        }
        int id = 0;
        const auto [end, ec] = std::from_chars(text.data() + at, text.data() + text.size(), id);
        const std::size_t stop = std::size_t(end - text.data());
        if (ec != std::errc() || id < 0 ||
            (stop < text.size() && text[stop] != ',' &&
             !std::isspace(static_cast<unsigned char>(text[stop]))))
            throw ModelError(field + ": expected token ids such as 3,1,4, got " + quoteForMessage(text));
        ids.push_back(id);
        at = stop;
    }
    if (ids.empty()) throw ModelError(field + ": no token ids");
    return ids;
}

ModelRunResult runModel(const ModelRunRequest& request, const std::function<bool(double)>& progress) {
    ModelRunResult r;
    auto checkpoint = std::make_shared<const Checkpoint>(request.dir);
    r.checkpoint = checkpoint;
    const ModelConfig& c = checkpoint->config();
    r.name = std::filesystem::path(request.dir).filename().string();
    if (r.name.empty()) r.name = std::filesystem::path(request.dir).parent_path().filename().string();
    r.ids = request.ids.empty() ? tokenize(request.dir, c, request.text) : request.ids;
    if (r.ids.size() < 2)
        throw ModelError("the input: expected at least two tokens, got " + std::to_string(r.ids.size()));
    r.texts = tokenTexts(request.dir, c, r.ids);
    const int layers = request.layers > 0 ? request.layers : c.layers;
    // The compared inputs' tokens first, so that a bad one is refused before any layer runs.
    for (std::size_t k = 0; k < request.compare.size(); ++k) {
        const ModelInput& in = request.compare[k];
        const std::string name = in.name.empty() ? "compared input " + std::to_string(k + 1) : in.name;
        ComparedInput compared;
        try {
            compared.ids = in.ids.empty() ? tokenize(request.dir, c, in.text) : in.ids;
        } catch (const std::exception& e) {
            throw ModelError(name + ": " + e.what());
        }
        if (compared.ids.size() < 2)
            throw ModelError(name + ": expected at least two tokens, got " +
                             std::to_string(compared.ids.size()));
        if (in.ids.empty()) {
            compared.label = in.text;
        } else {
            compared.label = "ids ";
            for (std::size_t i = 0; i < in.ids.size(); ++i)
                compared.label += (i ? "," : "") + std::to_string(in.ids[i]);
        }
        r.compared.push_back(std::move(compared));
    }
    // Progress: every input's layers count alike, the first input's projection the last tenth.
    const double runs = double(1 + r.compared.size());
    const Weights<float> weights = checkpoint->weights<float>();
    for (const RowMat<float>& s : hiddenStates(c, weights, r.ids, layers, [&](int done) {
             return !progress || progress(0.9 * done / layers / runs);
         }))
        r.states.push_back(s.cast<double>());
    std::vector<int> chosen;
    for (int k : request.histogramLayers)
        if (k >= 0 && k <= layers && std::find(chosen.begin(), chosen.end(), k) == chosen.end())
            chosen.push_back(k);
    if (chosen.empty())
        for (int k : {0, layers / 3, 2 * layers / 3, layers})
            if (std::find(chosen.begin(), chosen.end(), k) == chosen.end()) chosen.push_back(k);
    r.gram = gramHistograms(r.states, chosen, request.bins, request.clusterTol);
    for (std::size_t k = 0; k < r.compared.size(); ++k) {
        // Each alone, as `model gram` runs several inputs: float32 states, the same layers and bins.
        std::vector<RowMat<double>> states;
        for (const RowMat<float>& s : hiddenStates(c, weights, r.compared[k].ids, layers, [&](int done) {
                 return !progress || progress(0.9 * (double(k + 1) + double(done) / layers) / runs);
             }))
            states.push_back(s.cast<double>());
        r.compared[k].gram = gramHistograms(states, chosen, request.bins, request.clusterTol);
    }
    std::vector<RowMat<double>> normalized;
    for (const RowMat<double>& x : r.states) normalized.push_back(normalizedRows(x));
    r.axes = principalAxes(normalized, std::clamp(request.dims, 1, c.hidden));
    for (const RowMat<double>& z : normalized) r.depth.push_back(r.axes.project(z));
    if (progress) progress(1.0);
    return r;
}

} // namespace flowscope::models
