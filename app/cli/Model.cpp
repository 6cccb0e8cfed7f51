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

// One input: its token ids, and how it was given (the --text itself or "ids 3,1,4"), for the legend.
struct Input {
    std::vector<int> ids;
    std::string label;
};

// The inputs of --text (the folder's tokenizer; repeatable) or --ids (comma-separated; repeatable), in order.
std::vector<Input> modelInputs(const Checkpoint& checkpoint, const std::vector<std::string>& texts,
                               const std::vector<std::string>& idLists) {
    if (texts.empty() == idLists.empty())
        throw UsageError(
            "give the tokens as --text \"...\" or as --ids 3,1,4 (one kind, repeated for several "
            "inputs in model gram)");
    std::vector<Input> out;
    for (const std::string& text : texts)
        out.push_back({models::tokenize(checkpoint.dir(), checkpoint.config(), text), text});
    for (const std::string& list : idLists) {
        Input in{{}, "ids " + list};
        for (const std::string& id : splitCommas(list))
            in.ids.push_back(int(parseLong(id, "--ids", 0, long(checkpoint.config().vocab) - 1)));
        out.push_back(std::move(in));
    }
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

// Colours of the inputs' outlines when a figure shows several (the first input's bars are the single-input
// figure's colour).
constexpr Rgb kInputColours[] = {{70, 110, 180}, {214, 96, 32},   {44, 150, 80},
                                 {170, 60, 160}, {120, 120, 120}, {20, 160, 170}};

// At most `most` bytes of UTF-8 `text`, with "..." when cut, never inside a character (an SVG with a broken
// character is refused whole by XML readers).
std::string shortened(const std::string& text, std::size_t most) {
    if (text.size() <= most) return text;
    std::size_t cut = most - 3;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut; // a continuation byte
    return text.substr(0, cut) + "...";
}

// The figure of Geshkovski et al.: one panel per chosen layer, the density of <z_i, z_j> over [-1, 1], every
// panel on the same density scale (linear, or log10 with --log: DensityAxis, where an empty bin has no bar
// and an outline drops to the panel's floor there). One input is drawn as bars; several as one outline each,
// in the colours of the legend above the panels, on the same scale.
Figure gramFigure(const std::vector<models::GramHistograms>& inputs, const std::vector<std::string>& labels,
                  const std::string& title, const models::DensityAxis& axis) {
    Figure f;
    const models::GramHistograms& first = inputs.front();
    const int panels = int(first.layers.size());
    const bool several = inputs.size() > 1;
    const double panelW = 240, panelH = 200, left = 50, gap = 20;
    // Wide enough for the title too (about 7.6 px a character at 14 px): one panel alone is narrower.
    f.width = int(std::max(left + panels * (panelW + gap) + 10, left + 7.6 * double(title.size())));
    // The legend: one entry per input, in two columns of 360 px where the figure is wide enough.
    const std::size_t columns = f.width >= left + 720 ? 2 : 1;
    const double legend = several ? 18.0 * double((inputs.size() + columns - 1) / columns) : 0.0;
    const double top = 40 + legend;
    f.height = int(top + panelH + (several ? 62 : 50));
    const Rgb ink{40, 40, 40}, grid{200, 200, 200};
    f.texts.push_back({left, 22, title, 14, Figure::Anchor::Start, ink});
    for (std::size_t k = 0; several && k < inputs.size(); ++k) {
        const Rgb colour = kInputColours[k % std::size(kInputColours)];
        const double x = left + double(k % columns) * 360.0, y = 40 + 18.0 * double(k / columns);
        f.lines.push_back({x, y - 4, x + 20, y - 4, colour, 2.5});
        f.texts.push_back({x + 26, y,
                           std::to_string(k + 1) + ": " + shortened(labels[k], 44) + " (" +
                               std::to_string(inputs[k].pairs) + " pairs)",
                           11, Figure::Anchor::Start, ink});
    }
    for (int p = 0; p < panels; ++p) {
        const double x0 = left + p * (panelW + gap), y1 = top + panelH;
        for (std::size_t k = 0; k < inputs.size(); ++k) {
            const std::vector<double>& d = inputs[k].density[std::size_t(p)];
            const double w = panelW / double(d.size());
            const Rgb colour = kInputColours[k % std::size(kInputColours)];
            double previous = y1; // the outline's last height
            for (std::size_t b = 0; b < d.size(); ++b) {
                const double h = panelH * axis.fraction(d[b]), xb = x0 + w * double(b);
                if (!several) {
                    if (h > 0) f.rects.push_back({xb, y1 - h, std::max(w - 0.5, 0.5), h, colour});
                    continue;
                }
                f.lines.push_back({xb, previous, xb, y1 - h, colour, 1.5});
                f.lines.push_back({xb, y1 - h, xb + w, y1 - h, colour, 1.5});
                previous = y1 - h;
            }
            if (several) f.lines.push_back({x0 + panelW, previous, x0 + panelW, y1, colour, 1.5});
        }
        f.lines.push_back({x0, y1, x0 + panelW, y1, ink});
        f.lines.push_back({x0, top, x0, y1, ink});
        f.lines.push_back({x0 + panelW / 2, top, x0 + panelW / 2, y1, grid, 0.5});
        // The log axis's decades between its floor and its top.
        for (double v = axis.bottom * 10; axis.log && v < axis.top * 0.999; v *= 10)
            f.lines.push_back(
                {x0, y1 - panelH * axis.fraction(v), x0 + panelW, y1 - panelH * axis.fraction(v), grid, 0.5});
        for (int t = 0; t < 3; ++t)
            f.texts.push_back({x0 + panelW * t / 2.0, y1 + 16,
                               t == 0   ? "-1"
                               : t == 1 ? "0"
                                        : "1",
                               11, Figure::Anchor::Middle, ink});
        const int layer = first.layers[std::size_t(p)];
        if (!several) {
            f.texts.push_back({x0 + panelW / 2, y1 + 36,
                               "layer " + std::to_string(layer) + ", mean cosine " +
                                   numberText(std::round(first.meanCosine[std::size_t(layer)] * 1000) / 1000),
                               12, Figure::Anchor::Middle, ink});
            continue;
        }
        // Several inputs: the layer, then each input's mean cosine in its colour, side by side.
        f.texts.push_back({x0 + panelW / 2, y1 + 34, "layer " + std::to_string(layer) + ", mean cosine", 12,
                           Figure::Anchor::Middle, ink});
        const double slot = std::min(48.0, panelW / double(inputs.size()));
        for (std::size_t k = 0; k < inputs.size(); ++k)
            f.texts.push_back({x0 + panelW / 2 + slot * (double(k) - 0.5 * double(inputs.size() - 1)),
                               y1 + 50,
                               numberText(std::round(inputs[k].meanCosine[std::size_t(layer)] * 1000) / 1000),
                               11, Figure::Anchor::Middle, kInputColours[k % std::size(kInputColours)]});
    }
    f.texts.push_back({left - 6, top + 10,
                       axis.log ? numberText(axis.top) : numberText(std::round(axis.top * 100) / 100), 11,
                       Figure::Anchor::End, ink});
    f.texts.push_back(
        {left - 6, top + panelH, axis.log ? numberText(axis.bottom) : "0", 11, Figure::Anchor::End, ink});
    // The log axis's decades between, where they are far enough apart to be read.
    for (double v = axis.bottom * 10;
         axis.log && panelH / std::log10(axis.top / axis.bottom) >= 18 && v < axis.top * 0.999; v *= 10)
        f.texts.push_back({left - 6, top + panelH * (1 - axis.fraction(v)) + 4, numberText(v), 11,
                           Figure::Anchor::End, ink});
    return f;
}

// One input's histograms as JSON.
nlohmann::json gramJson(const models::GramHistograms& g, const Input& input) {
    return {{"input", input.label},  {"tokens", input.ids.size()}, {"pairs", g.pairs},
            {"counts", g.counts},    {"density", g.density},       {"mean_cosine", g.meanCosine},
            {"clusters", g.clusters}};
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
    const std::vector<std::string> texts = p.options("--text");
    const std::vector<std::string> idLists = p.options("--ids");
    const std::string out = p.option("--out");
    const bool float64 = sub == "layers" && p.flag("--float64");
    const std::string layersText = sub == "scene" ? "" : p.option("--layers");
    const std::string binsText = sub == "gram" ? p.option("--bins", "50") : "";
    const bool logScale = sub == "gram" && p.flag("--log");
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
    const std::vector<Input> inputs = modelInputs(checkpoint, texts, idLists);
    if (inputs.size() > 1 && sub != "gram")
        throw UsageError("model " + sub +
                         " takes one input (--text or --ids once); model gram takes several");
    const std::vector<int>& tokens = inputs.front().ids;
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
        // Every input checked before any runs (a pair needs two tokens), naming the input.
        for (std::size_t k = 0; k < inputs.size(); ++k)
            if (inputs[k].ids.size() < 2)
                throw UsageError("input " + std::to_string(k + 1) + " (" + shortened(inputs[k].label, 40) +
                                 "): the histograms need at least two tokens, got " +
                                 std::to_string(inputs[k].ids.size()));
        // Each input runs on its own (no batch): its histograms are what a run of it alone gives. The weights
        // are read once for all of them.
        const models::Weights<float> weights = checkpoint.weights<float>();
        std::vector<models::GramHistograms> grams;
        std::vector<std::string> labels;
        for (const Input& input : inputs) {
            std::vector<RowMat<double>> states;
            for (const RowMat<float>& x : models::hiddenStates(c, weights, input.ids, std::max(1, deepest)))
                states.push_back(x.cast<double>());
            grams.push_back(models::gramHistograms(states, chosen, bins));
            labels.push_back(input.label);
        }
        const models::GramHistograms& g = grams.front();
        // One density axis for every panel and input: linear to 5 % above the largest density, or log10.
        std::vector<const models::GramHistograms*> all;
        for (const models::GramHistograms& h : grams) all.push_back(&h);
        const auto [smallest, largest] = models::densityRange(all);
        const models::DensityAxis axis = logScale ? models::DensityAxis::logarithmic(smallest, largest)
                                                  : models::DensityAxis::linear(largest * 1.05);
        // The first input's data at the top level (the single-input layout), every input's under "inputs".
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
        j["density_scale"] = axis.log ? "log" : "linear";
        j["density_axis"] = {axis.bottom, axis.top};
        j["inputs"] = nlohmann::json::array();
        for (std::size_t k = 0; k < inputs.size(); ++k) j["inputs"].push_back(gramJson(grams[k], inputs[k]));
        const OutputSet::Capture capture(outputs);
        if (figure) {
            const std::string what = inputs.size() > 1 ? std::to_string(inputs.size()) + " inputs"
                                                       : std::to_string(tokens.size()) + " tokens";
            writeFigure(gramFigure(grams, labels,
                                   std::string(j["model"]) + ": <x_i, x_j> of the normalised tokens, " +
                                       what + (axis.log ? ", log density" : ""),
                                   axis),
                        out);
        }
        writeFileAtomically(dataPath, [&](std::ostream& o) { o << j.dump(1) << "\n"; });
        outputs.commit();
        std::cerr << "wrote " << out << (figure ? " and " + dataPath : std::string()) << " (" << chosen.size()
                  << " histograms of " << inputs.size() << (inputs.size() > 1 ? " inputs)\n" : " input)\n");
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
