// flowscope-cli sweep plot: a sweep's table as a heatmap or a histogram (engine/sweep/SweepPlot.h).
#include "Commands.h"

namespace flowscope::cli {

int sweepPlot(const Args&) {
    throw UsageError("sweep plot: not yet");
}

} // namespace flowscope::cli
