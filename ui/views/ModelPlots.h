// Flowscope UI: the plots of the Models workspace, drawn with QPainter in the window's palette.
//
// GramHistogramView: Geshkovski et al.'s figure: one panel per chosen layer, the density of <z_i, z_j>
// (i < j, the l2-normalised tokens) over [-1, 1], every panel on the same density scale, captioned with the
// layer's mean cosine and cluster count, on a linear or a log10 density axis (setLogScale; an empty bin has
// no bar on the log axis, see models::DensityAxis). Panels wrap to a second row when the widget is narrow.
// Further inputs (setCompared) are drawn over the bars as outlines in their colours (comparedColour), on the
// same scale, with a legend line under the title.
//
// LayerCurveView: curves against depth (layer 0 .. L), drawn by render/picture/CurvePlot: a left axis, an
// optional right-hand one (e.g. the cluster count beside the mean cosine), and a cursor at the layer shown
// elsewhere. Values that are not finite are not drawn (a gap).
#pragma once

#include "engine/models/ModelAnalysis.h"

#include <QColor>
#include <QString>
#include <QWidget>

#include <vector>

namespace flowscope {

class GramHistogramView : public QWidget {
    Q_OBJECT
  public:
    // A further input drawn as an outline over the first input's bars.
    struct Compared {
        QString label;
        models::GramHistograms g; // at the first input's layers and bins
    };
    explicit GramHistogramView(QWidget* parent = nullptr);
    // The first input's histograms, and the further inputs' (none: one input, bars only); `label` names the
    // first input in the legend.
    void setHistograms(const models::GramHistograms& g, std::vector<Compared> compared = {},
                       const QString& label = {});
    void clear();
    const models::GramHistograms& histograms() const { return g_; }
    const std::vector<Compared>& compared() const { return compared_; }
    // The colour of further input k (0-based), in this view and in the mean cosine curves.
    static QColor comparedColour(std::size_t k);
    // The top of the shared linear density axis (the largest density of any panel, rounded up).
    double densityScale() const { return scale_; }
    // Log10 of the density instead (whole decades from the one below the smallest non-empty bin's).
    void setLogScale(bool on);
    bool logScale() const { return axis_.log; }
    // The axis the bars are drawn on, and panel k's bar heights as fractions of the panel's height, as drawn
    // (first input; compared input c's outline with c >= 0).
    const models::DensityAxis& densityAxis() const { return axis_; }
    std::vector<double> barHeights(std::size_t panel, int compared = -1) const;
    QSize minimumSizeHint() const override { return {320, 160}; }
    QSize sizeHint() const override { return {720, 260}; }

  protected:
    void paintEvent(QPaintEvent* e) override;

  private:
    models::GramHistograms g_;
    std::vector<Compared> compared_;
    QString label_;
    double scale_ = 1.0;
    models::DensityAxis axis_;
    void updateAxis();
};

class LayerCurveView : public QWidget {
    Q_OBJECT
  public:
    struct Curve {
        QString name;
        std::vector<double> values; // per layer 0 .. L
        QColor color;
        bool rightAxis = false;
    };
    explicit LayerCurveView(QWidget* parent = nullptr);
    void setCurves(std::vector<Curve> curves);
    void setCursor(int layer); // -1: none
    int cursor() const { return cursor_; }
    // The values of the curve named `name` (empty when none).
    std::vector<double> values(const QString& name) const;
    QSize minimumSizeHint() const override { return {280, 120}; }
    QSize sizeHint() const override { return {560, 200}; }

  protected:
    void paintEvent(QPaintEvent* e) override;

  private:
    std::vector<Curve> curves_;
    int cursor_ = -1;
};

} // namespace flowscope
