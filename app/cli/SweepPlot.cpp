// flowscope-cli sweep plot: a finished sweep's table as a heatmap (--x and --y) or histograms (--x alone, or
// neither), written as PNG or SVG (engine/sweep/SweepPlot.h, engine/media/Figure.h).
#include "Commands.h"

#include "engine/core/Text.h"
#include "engine/io/OutputSet.h"
#include "engine/sweep/SweepPlot.h"

#include <filesystem>

namespace flowscope::cli {

int sweepPlot(const Args& raw) {
    ArgParser p(raw);
    const std::string x = p.option("--x"), y = p.option("--y"), measure = p.option("--measure"),
                      out = p.option("--out"), minus = p.option("--minus");
    p.rejectUnknown();
    if (p.positional.size() != 1 || measure.empty() || out.empty())
        throw UsageError("usage: sweep plot DIR --x AXIS --y AXIS --measure M [--minus DIR2] --out "
                         "fig.png|svg (heatmap), or "
                         "sweep plot DIR [--x AXIS] --measure M --out fig.png|svg (histograms)");
    const std::string ext = std::filesystem::path(out).extension().string();
    if (ext != ".png" && ext != ".svg")
        throw UsageError("--out: expected a .png or .svg file, got " + quoteForMessage(out));
    if (!y.empty() && x.empty()) throw UsageError("--y goes with --x (a heatmap needs both axes)");
    OutputSet outputs({out});
    SweepTable table = readSweepTable(p.positional[0]);
    Figure figure;
    try {
        if (!minus.empty()) table = pairedDifference(table, readSweepTable(minus), measure);
        figure = y.empty() ? sweepHistograms(table, x, measure) : sweepHeatmap(table, x, y, measure);
    } catch (const std::invalid_argument& e) {
        throw UsageError(e.what());
    }
    {
        const OutputSet::Capture capture(outputs);
        writeFigure(figure, out);
    }
    outputs.commit();
    std::cerr << "wrote " << out << "\n";
    return 0;
}

} // namespace flowscope::cli
