// Flowscope engine: a sweep's table as a figure (engine/media/Figure.h): a heatmap of a measure over two
// axes with a colour bar, or histograms of a measure, one panel per value of an axis (Figs 4 and 11).
#pragma once

#include "engine/media/Figure.h"
#include "engine/sweep/SweepTable.h"

#include <string>

namespace flowscope {

// The mean of `measure` over the rows of each (x, y) cell (replicates and any other axes; NaN left out; a
// cell with no number is grey), cells in the order of the axes' values, a viridis colour bar. Where the
// table has Prop 2's prediction (column prop2_blow_up), the boundary between the cells it predicts to blow
// up and the others is drawn in white. Throws std::invalid_argument naming an unknown column.
Figure sweepHeatmap(const SweepTable& table, const std::string& x, const std::string& y,
                    const std::string& measure);

// Histograms of `measure` (NaN left out and counted in the panel's title): one panel per value of column x
// (all rows in one panel when x is empty). Integer measures get one bar per integer. Throws
// std::invalid_argument naming an unknown column.
Figure sweepHistograms(const SweepTable& table, const std::string& x, const std::string& measure);

} // namespace flowscope
