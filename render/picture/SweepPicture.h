// Flowscope picture: the Sweeps tab's picture of a sweep's table as it fills in (engine/sweep), without a
// widget. The numbers are engine/sweep/SweepPlot.h's (sweepHeat, sweepHistogram: the same as flowscope-cli
// sweep plot draws); this draws them in the app's plot style:
//  * a heatmap of a measure over two axes (the mean per cell, replicates and any other axes pooled) with a
//    viridis colour bar, the axes' values as ticks, and Prop 2's predicted blow-up boundary in white where
//    the table has prop2_blow_up. A cell no run has reached yet is hatched; one whose runs gave no number
//    (an invalid cell, NaN) is grey;
//  * histograms of a measure, one panel per value of an axis (Figs 4 and 11), or one of all runs.
// The grid is the spec's (its axes' values), so it does not move while runs arrive. hitAt() tells the cell or
// bar under a point and describe() what it holds.
#pragma once

#include "engine/sweep/SweepPlot.h"
#include "render/picture/PlotDecorations.h"

#include <QFont>
#include <QPalette>
#include <QRectF>
#include <QSizeF>
#include <QString>

#include <memory>
#include <optional>

class QPainter;

namespace flowscope {

class SweepPicture {
  public:
    enum class Kind { Empty, Heatmap, Histograms };
    // A heatmap cell (i, j) = (x level, y level), or a histogram's panel `i` and bin `j`.
    struct Hit {
        std::size_t i = 0, j = 0;
    };

    // The sweep shown (null: none) and its table so far (rows of the finished runs, SweepTable.h's
    // sweepTableOf).
    void setSweep(std::shared_ptr<const SweepSpec> spec);
    void setTable(SweepTable table);
    // What is drawn: a heatmap of `measure` over axes x and y, or (y empty) its histograms per value of axis
    // x (x empty: one of all runs). Unknown columns draw a note instead.
    void setSelection(const std::string& x, const std::string& y, const std::string& measure);
    void setStyle(const PlotStyle& style) { style_ = style; }
    void setPalette(const QPalette& palette) { palette_ = palette; }
    void setFont(const QFont& font) { font_ = font; }
    void setSize(QSizeF size) { size_ = size; }

    Kind kind() const { return kind_; }
    const SweepTable& table() const { return table_; }
    const SweepHeat& heat() const { return heat_; }
    const SweepHistogram& histogram() const { return histogram_; }
    // The note drawn instead of a plot (nothing to show, a bad column); empty when a plot is drawn.
    QString note() const { return note_; }

    void paint(QPainter& p) const;

    // Where a heatmap cell or a histogram bar's column is drawn (logical pixels, at the current size).
    QRectF cellRect(Hit hit) const;
    std::optional<Hit> hitAt(QPointF pos) const;
    // What is under `hit`: the axis values, the mean of every measure there and how many runs it holds.
    QString describe(Hit hit) const;
    // The run whose scene a click on `hit` opens: a heatmap cell's first run (run or not), a bar's first
    // run with that value; -1 for none.
    long runOf(Hit hit) const;

  private:
    struct Layout {
        QRectF title, plot, bar, legend; // heatmap: plot area and colour bar
        std::vector<QRectF> panels;      // histograms: each panel's bar area
    };
    Layout layout() const;
    void update();
    void paintHeatmap(QPainter& p, const Layout& l) const;
    void paintHistograms(QPainter& p, const Layout& l) const;
    QString titleText() const;
    QString levelText(double v) const;
    std::vector<double> axisValues(const std::string& name) const;

    std::shared_ptr<const SweepSpec> spec_;
    SweepTable table_;
    std::string x_, y_, measure_;
    Kind kind_ = Kind::Empty;
    QString note_;
    SweepHeat heat_;
    SweepHistogram histogram_;
    PlotStyle style_;
    QPalette palette_;
    QFont font_;
    QSizeF size_{640, 480};
};

} // namespace flowscope
