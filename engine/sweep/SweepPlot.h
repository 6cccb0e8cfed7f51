// Flowscope engine: a sweep's table as a figure (engine/media/Figure.h): a heatmap of a measure over two
// axes with a colour bar, or histograms of a measure, one panel per value of an axis (Figs 4 and 11).
#pragma once

#include "engine/media/Figure.h"
#include "engine/sweep/SweepTable.h"

#include <string>
#include <vector>

namespace flowscope {

// A measure's mean per (x, y) cell of a table: what sweepHeatmap draws and the app's Sweeps tab shows. Cell k
// = j * nx + i holds the rows with x = xLevels[i] and y = yLevels[j] (any other axes and the replicates
// pooled); the levels are the columns' distinct values, or the ones given (a sweep's axis values, so that a
// table still filling in keeps its grid: a cell with no row yet has rows = 0).
struct SweepHeat {
    std::vector<double> xLevels, yLevels; // ascending
    std::vector<long> rows;               // the table's rows in each cell
    std::vector<long> numbers;            // ... of them with a number (not NaN)
    std::vector<double> mean;             // the numbers' mean; NaN without one
    std::vector<double> sd;               // their sample standard deviation; NaN with fewer than two
    // Prop 2's prediction (column prop2_blow_up, when the table has it): 1 where the cell's rows mostly
    // predict a blow-up, 0 where not, -1 without a prediction.
    bool hasProp2 = false;
    std::vector<int> regime;
    // The edges between neighbouring cells of different predicted regimes: the right edge of cell (i, j)
    // when `right`, else its upper edge (towards j + 1).
    struct Edge {
        std::size_t i, j;
        bool right;
    };
    std::vector<Edge> boundary;
    double lo = 0, hi = 0; // the range of the means (0, 0 without any)

    std::size_t nx() const { return xLevels.size(); }
    std::size_t ny() const { return yLevels.size(); }
    std::size_t index(std::size_t i, std::size_t j) const { return j * nx() + i; }
    // Where `mean` sits in [lo, hi], in [0, 1] (the colour bar's position).
    double unit(double mean) const { return hi > lo ? (mean - lo) / (hi - lo) : 0.0; }
};
// Throws std::invalid_argument naming an unknown column.
SweepHeat sweepHeat(const SweepTable& table, const std::string& x, const std::string& y,
                    const std::string& measure, std::vector<double> xLevels = {},
                    std::vector<double> yLevels = {});

// The histograms of a measure, one panel per value of column x (one panel of every row when x is empty; the
// panels are x's distinct values, or the ones given). Integer measures (at most 64 distinct) get one bin per
// integer from min(0, least) to the largest, others 20 bins over their range.
struct SweepHistogram {
    std::vector<double> panels;
    bool integral = false;
    double lo = 0, width = 1; // bin b is [lo + b width, lo + (b + 1) width) (integers: centred on lo + b)
    int bins = 1;
    std::vector<std::vector<long>> counts; // [panel][bin]
    std::vector<long> excluded;            // per panel: rows without a finite value
    double binStart(int b) const { return lo + b * width; }
    int bin(double value) const; // the bin of a finite value (clamped to the first and last)
};
SweepHistogram sweepHistogram(const SweepTable& table, const std::string& x, const std::string& measure,
                              std::vector<double> panels = {});

// Table `a` with column `measure` replaced by paired differences with table `b`: each row's value less the
// mean of b's `measure` over b's rows with the same seed and the same value in every axis column the two
// tables share (NaN where b has none). Two flow sweeps of the same "seed" pair flows trained from the same
// seeds (docs/sweeps.md#flow-sweeps): a with the RWPO layer over λ0 x layers, b without it over layers gives
// the layer's effect cell by cell. The title (the sweep's name) becomes "A - B". Throws
// std::invalid_argument naming a column either table lacks.
SweepTable pairedDifference(const SweepTable& a, const SweepTable& b, const std::string& measure);

// The mean of `measure` over the rows of each (x, y) cell (replicates and any other axes; NaN left out; a
// cell with no number is grey), cells in the order of the axes' values, a viridis colour bar. Where the
// table has Prop 2's prediction (column prop2_blow_up), the boundary between the cells it predicts to blow
// up and the others is drawn in white. On a grid of at most 8 x 8 cells each cell also reads its mean, and
// under it "sd" and the sample standard deviation over its rows (the spread of the replicates; "sd", since
// the PNG font has no ±). Throws std::invalid_argument
// naming an unknown column.
Figure sweepHeatmap(const SweepTable& table, const std::string& x, const std::string& y,
                    const std::string& measure);

// Histograms of `measure` (NaN left out and counted in the panel's title): one panel per value of column x
// (all rows in one panel when x is empty). Integer measures get one bar per integer. Throws
// std::invalid_argument naming an unknown column.
Figure sweepHistograms(const SweepTable& table, const std::string& x, const std::string& measure);

} // namespace flowscope
