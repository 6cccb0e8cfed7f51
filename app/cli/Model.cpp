// flowscope-cli model: real checkpoints (engine/models, docs/models.md). model layers writes the hidden
// states of every layer, model gram the histograms of the tokens' cosines per layer, model scene the ODE of
// one head.
#include "Commands.h"

#include "engine/core/Text.h"
#include "engine/io/AtomicFile.h"
#include "engine/io/Npy.h"
#include "engine/io/OutputSet.h"
#include "engine/media/Figure.h"
#include "engine/models/Model.h"
#include "engine/models/ModelAnalysis.h"
#include "engine/models/Tokenizer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

namespace flowscope::cli {

namespace {

using models::Checkpoint;
using models::RowMat;

// The token ids of --text (the folder's tokenizer) or --ids (comma-separated).
std::vector<int> tokenIds(const Checkpoint& checkpoint, const std::string& text, const std::string& ids,
                          bool hasText) {
    if (hasText == !ids.empty())
        throw UsageError("give the tokens as --text \"...\" or as --ids 3,1,4 (one of them)");
    if (hasText) return models::tokenize(checkpoint.dir(), checkpoint.config(), text);
    std::vector<int> out;
    for (const std::string& id : splitCommas(ids))
        out.push_back(int(parseLong(id, "--ids", 0, long(checkpoint.config().vocab) - 1)));
    return out;
}

// The states of `layers` layers in T, as double.
template <class T>
std::vector<RowMat<double>> runStates(const Checkpoint& checkpoint, const std::vector<int>& ids, int layers) {
    const models::Weights<T> weights = checkpoint.weights<T>();
    std::vector<RowMat<double>> states;
    for (const RowMat<T>& s : models::hiddenStates(checkpoint.config(), weights, ids, layers))
        states.push_back(s.template cast<double>());
    return states;
}

std::vector<std::string> checkpointInputs(const std::string& dir) {
    namespace fs = std::filesystem;
    return {(fs::path(dir) / "config.json").string(), (fs::path(dir) / "model.safetensors").string()};
}

// The figure of Geshkovski et al.: one panel per chosen layer, the density of <z_i, z_j> over [-1, 1], every
// panel on the same density scale.
Figure gramFigure(const models::GramHistograms& g, const std::string& title) {
    Figure f;
    const int panels = int(g.layers.size());
    const double panelW = 240, panelH = 200, left = 50, top = 40, gap = 20;
    f.width = int(left + panels * (panelW + gap) + 10);
    f.height = int(top + panelH + 50);
    double peak = 0;
    for (const auto& d : g.density) peak = std::max(peak, *std::max_element(d.begin(), d.end()));
    peak = peak > 0 ? peak * 1.05 : 1;
    const Rgb ink{40, 40, 40}, bar{70, 110, 180}, grid{200, 200, 200};
    f.texts.push_back({left, 22, title, 14, Figure::Anchor::Start, ink});
    for (int p = 0; p < panels; ++p) {
        const double x0 = left + p * (panelW + gap), y1 = top + panelH;
        const std::vector<double>& d = g.density[std::size_t(p)];
        const double w = panelW / double(d.size());
        for (std::size_t b = 0; b < d.size(); ++b) {
            const double h = panelH * d[b] / peak;
            if (h > 0) f.rects.push_back({x0 + w * double(b), y1 - h, std::max(w - 0.5, 0.5), h, bar});
        }
        f.lines.push_back({x0, y1, x0 + panelW, y1, ink});
        f.lines.push_back({x0, top, x0, y1, ink});
        f.lines.push_back({x0 + panelW / 2, top, x0 + panelW / 2, y1, grid, 0.5});
        for (int t = 0; t < 3; ++t)
            f.texts.push_back({x0 + panelW * t / 2.0, y1 + 16,
                               t == 0   ? "-1"
                               : t == 1 ? "0"
                                        : "1",
                               11, Figure::Anchor::Middle, ink});
        f.texts.push_back(
            {x0 + panelW / 2, y1 + 36,
             "layer " + std::to_string(g.layers[std::size_t(p)]) + ", mean cosine " +
                 numberText(std::round(g.meanCosine[std::size_t(g.layers[std::size_t(p)])] * 1000) / 1000),
             12, Figure::Anchor::Middle, ink});
    }
    f.texts.push_back(
        {left - 6, top + 10, numberText(std::round(peak * 100) / 100), 11, Figure::Anchor::End, ink});
    f.texts.push_back({left - 6, top + panelH, "0", 11, Figure::Anchor::End, ink});
    return f;
}

} // namespace

int model(const Args& raw) {
    if (raw.empty() || raw[0].rfind("-", 0) == 0)
        throw UsageError(
            "expected a sub-command: model layers, model gram or model scene (flowscope-cli help model)");
    const std::string sub = raw[0];
    if (sub != "layers" && sub != "gram" && sub != "scene")
        throw UsageError("unknown sub-command " + quoteForMessage(sub) + " (expected layers, gram or scene)");
    ArgParser p(Args(raw.begin() + 1, raw.end()));
    const bool hasText = std::find(raw.begin(), raw.end(), "--text") != raw.end();
    const std::string text = p.option("--text");
    const std::string ids = p.option("--ids");
    const std::string out = p.option("--out");
    const bool float64 = sub == "layers" && p.flag("--float64");
    const std::string layersText = sub == "scene" ? "" : p.option("--layers");
    const std::string binsText = sub == "gram" ? p.option("--bins", "50") : "";
    const std::string layerText = sub == "scene" ? p.option("--layer") : "";
    const std::string headText = sub == "scene" ? p.option("--head", "0") : "";
    p.rejectUnknown();
    if (p.positional.size() != 1)
        throw UsageError("expected one MODEL_DIR (a folder with config.json and model.safetensors)");
    if (out.empty()) throw UsageError("--out is required");
    const std::string dir = p.positional[0];
    // gram --out fig.png|fig.svg: the figure, and its data in <stem>.json beside it.
    const std::string extension = std::filesystem::path(out).extension().string();
    const bool figure = sub == "gram" && (extension == ".png" || extension == ".svg");
    const std::string dataPath =
        figure ? std::filesystem::path(out).replace_extension(".json").string() : out;
    OutputSet outputs(figure ? std::vector<std::string>{out, dataPath} : std::vector<std::string>{out},
                      checkpointInputs(dir));

    const Checkpoint checkpoint(dir);
    const models::ModelConfig& c = checkpoint.config();
    const std::vector<int> tokens = tokenIds(checkpoint, text, ids, hasText);
    const int most = c.sharedLayer() ? 4096 : c.layers;
    const auto start = std::chrono::steady_clock::now();
    auto seconds = [&] {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    };

    if (sub == "layers") {
        const int layers = layersText.empty() ? c.layers : int(parseLong(layersText, "--layers", 1, most));
        const std::vector<RowMat<double>> states = float64 ? runStates<double>(checkpoint, tokens, layers)
                                                           : runStates<float>(checkpoint, tokens, layers);
        const std::int64_t L1 = std::int64_t(states.size()), n = states[0].rows(), D = states[0].cols();
        std::vector<double> data;
        data.reserve(std::size_t(L1 * n * D));
        for (const RowMat<double>& s : states) data.insert(data.end(), s.data(), s.data() + s.size());
        const OutputSet::Capture capture(outputs);
        writeNpy(out, {L1, n, D}, data.data(), !float64);
        outputs.commit();
        std::cerr << "wrote " << out << " (" << L1 << " x " << n << " x " << D << ", "
                  << (float64 ? "float64" : "float32") << ") in " << seconds() << " s\n";
        return 0;
    }
    if (sub == "gram") {
        if (layersText.empty()) throw UsageError("--layers 0,5,30,48 (the layers to show) is required");
        std::vector<int> chosen;
        for (const std::string& l : splitCommas(layersText))
            chosen.push_back(int(parseLong(l, "--layers", 0, most)));
        const int bins = int(parseLong(binsText, "--bins", 1, 10000));
        const int deepest = *std::max_element(chosen.begin(), chosen.end());
        const std::vector<RowMat<double>> states = runStates<float>(checkpoint, tokens, std::max(1, deepest));
        const models::GramHistograms g = models::gramHistograms(states, chosen, bins);
        nlohmann::json j;
        j["model"] = std::filesystem::path(dir).filename().string();
        j["family"] = models::toString(c.family);
        j["tokens"] = tokens.size();
        j["pairs"] = g.pairs;
        j["layers"] = g.layers;
        j["bin_edges"] = g.edges;
        j["counts"] = g.counts;
        j["density"] = g.density;
        j["mean_cosine"] = g.meanCosine;
        j["clusters"] = g.clusters;
        j["cluster_tol"] = g.clusterTol;
        const OutputSet::Capture capture(outputs);
        if (figure)
            writeFigure(gramFigure(g, std::string(j["model"]) + ": <x_i, x_j> of the normalised tokens, " +
                                          std::to_string(tokens.size()) + " tokens"),
                        out);
        writeFileAtomically(dataPath, [&](std::ostream& o) { o << j.dump(1) << "\n"; });
        outputs.commit();
        std::cerr << "wrote " << out << (figure ? " and " + dataPath : std::string()) << " (" << chosen.size()
                  << " histograms of " << g.pairs << " pairs)\n";
        return 0;
    }
    if (layerText.empty()) throw UsageError("--layer K (the layer whose head is taken) is required");
    const int layer = int(parseLong(layerText, "--layer", 0, most - 1));
    const int head = int(parseLong(headText, "--head", 0, c.heads - 1));
    const models::Weights<double> weights = checkpoint.weights<double>();
    const std::vector<RowMat<double>> states = models::hiddenStates(c, weights, tokens, layer + 1);
    const Scene scene = models::modelScene(checkpoint, weights, states, layer, head);
    const OutputSet::Capture capture(outputs);
    saveScene(scene, out);
    outputs.commit();
    std::cerr << "wrote " << out << " (" << scene.name << ": d = " << scene.d << ", n = " << scene.n << ")\n";
    return 0;
}

} // namespace flowscope::cli
