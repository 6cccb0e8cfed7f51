// Flowscope UI: plots of a run's recorded observables against t, for a dock.
//
// Six small Qt Charts stacked vertically: interaction energy (log scale), kinetic energy, attention entropy,
// the spectrum of the token covariance Σ on a log scale (with the rank threshold rankTol × λmax dashed), the
// cluster count with the numerical rank, and the mean cosine ρ, whose title gives the consensus rate fitted
// to the run so far beside the one theory predicts for the scene's normalization (consensusRate,
// docs/math/theory.md#rates). A seventh, for scenes with positional decay that the influence profile
// describes (hasInfluenceProfile), draws the predicted influence of each source position on the last token at
// the newest frame's time against the position (docs/math/theory.md#influence); it is hidden for other
// scenes. They read the run's RunHistory from the Snapshot: when the history and its revision are those of
// the last call only the new frames are read; a new run (another history or generation) or a rewind (another
// revision) re-reads everything.
//
// Values that are not finite (NaN: not defined for this attention variant; inf: blow-up) are not drawn: the
// curve has a gap there, never a zero. Eigenvalues <= 0 have no place on a log axis and are left out the same
// way. Each curve keeps at most kMaxPoints points: frame i of the history is plotted when i is a multiple
// of the stride (1, 2, 4, ...), which doubles whenever the points would exceed that, plus the newest frame;
// so incremental reads and full re-reads plot the same points.
#pragma once

#include "engine/dynamics/PositionalInfluence.h"
#include "engine/scene/Scene.h"

#include <QColor>
#include <QList>
#include <QPointF>
#include <QString>
#include <QStringList>
#include <QWidget>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

QT_BEGIN_NAMESPACE
class QChart;
class QChartView;
class QLineSeries;
class QAbstractAxis;
class QValueAxis;
QT_END_NAMESPACE

class QLabel;

namespace flowscope {

struct Snapshot;
class RunHistory;
struct RecordedFrame;

class PlotsPanel : public QWidget {
    Q_OBJECT
  public:
    static constexpr std::size_t kMaxPoints = 4000; // per curve
    static constexpr int kMaxEigenvalueCurves = 16; // for larger d, evenly spaced ones from λmax to λmin

    enum class Plot { Energy, Kinetic, Entropy, Spectrum, Clusters, MeanCosine, Influence };
    static constexpr int kMaxInfluenceTokens = 8192; // the influence prediction's O(N) sweeps, per frame

    explicit PlotsPanel(QWidget* parent = nullptr);
    ~PlotsPanel() override;

    // Cheap when nothing changed; reads only the new frames while the history's revision is unchanged.
    // A null snapshot or one without a history clears the plots.
    void setSnapshot(const std::shared_ptr<const Snapshot>& snapshot);
    // The numerical-rank tolerance of the scene: the dashed line is rankTol × λmax(t). Default 1e-6.
    void setRankTolerance(double relTol);
    double rankTolerance() const { return rankTol_; }
    // The scene the run follows: its normalization (which consensus law the mean cosine's rate is fitted to;
    // none: no fit) and, where the equiangular reduction describes it (hasEquiangularReduction) and the run
    // starts equiangular, the curve "rho predicted": ρ(t) of the reduced ODE, dashed under the measured one.
    // With liveEdit (the run goes on under the edited scene) it fits the new law and drops the prediction,
    // which was made for the old one, until the next run.
    void setScene(const Scene& scene, bool liveEdit = false);
    // The mean cosine chart's rate line ("1 − ρ ∝ e^{−1.98 t}; post-LN predicts e^{−2t}"), empty without one.
    QString rateText() const { return rateText_; }
    // Whether the influence chart is shown (the scene has positional decay and the profile describes it, with
    // at most kMaxInfluenceTokens tokens; a live edit recomputes it for the new parameters), and its title.
    bool showsInfluence() const { return influence_.has_value(); }
    QString influenceTitle() const;
    // The interaction energy chart's title: it says when the scene has no such energy (an empty chart).
    QString energyTitle() const;
    // A vertical line at t on every chart (the time scrubber); NaN hides it.
    void setCursorTime(double t);
    double cursorTime() const { return cursorT_; }
    void clear();
    // The charts, stacked at their full height: the panel shows them in a scroll area (a short dock scrolls
    // instead of setting the window's minimum height), and exports render this widget whole.
    QWidget* content() const { return content_; }

    // Curve names: "energy", "kinetic", "entropy", "clusters", "rank", "rank threshold", "mean cosine",
    // "rho predicted", "influence predicted" (x: the source position 0 .. N - 2), and
    // eigenvalueCurve(k) = "lambda<k+1>" for the (k+1)-th largest eigenvalue shown.
    static QString eigenvalueCurve(int k);
    QStringList curveNames() const;
    // The points a curve's chart series hold (all its segments, in order); 0 / empty for an unknown name.
    int pointCount(const QString& curve) const;
    QList<QPointF> points(const QString& curve) const;
    // How many separate pieces a curve is drawn in (gaps split it).
    int segmentCount(const QString& curve) const;
    // Which eigenvalue (0 = largest) each eigenvalue curve follows.
    const std::vector<int>& eigenvalueIndices() const { return eigenIndex_; }
    // Frames read from histories so far (all calls together): shows whether a call appended or re-read.
    std::size_t framesRead() const { return framesRead_; }
    int stride() const { return stride_; }
    QChart* chart(Plot plot) const;

  protected:
    void changeEvent(QEvent* event) override; // palette changes re-theme the charts

  private:
    // One plotted frame.
    struct Row {
        std::size_t frame = 0; // index in the history
        double t = 0.0;
        double energy = 0.0, kinetic = 0.0, entropy = 0.0, clusters = 0.0, rank = 0.0, meanCosine = 0.0;
        double lambdaMax = 0.0;
        std::vector<double> eigen; // the eigenvalues at eigenIndex_, descending
    };
    // A named line on one chart, drawn as one QLineSeries per run of drawable points.
    struct Curve {
        QString name;
        int chart = 0;
        QColor color;
        Qt::PenStyle style = Qt::SolidLine;
        bool rightAxis = false; // on its chart's right-hand axis (the rank beside the cluster count)
        std::vector<QLineSeries*> segments;
        QList<QPointF> points;
    };
    struct ChartBox {
        QWidget* panel = nullptr; // the title and the chart
        bool timeAxis = true;     // x is the time (false: the source position of the influence chart)
        QChart* chart = nullptr;
        QChartView* view = nullptr;
        QLabel* title = nullptr; // above the chart: QChart elided its own titles to ~100 px
        QValueAxis* x = nullptr;
        QAbstractAxis* y = nullptr;
        QValueAxis* y2 =
            nullptr; // a right-hand integer axis, where a curve of another scale shares the chart
        bool logY = false;
        bool integerY = false;
        QLineSeries* cursor = nullptr;
    };

    void forget(); // the data read so far, not the charts
    void readFrames(const std::vector<RecordedFrame>& frames, std::size_t firstIndex);
    Row makeRow(const RecordedFrame& frame, std::size_t index);
    void chooseEigenvalues(int d);
    void decimate();
    void rebuild();       // curves from rows_ + tail_, then axes
    void rebuildCurves(); // eigenvalue curves follow eigenIndex_
    Curve& addCurve(const QString& name, int chart, QColor color, Qt::PenStyle style = Qt::SolidLine);
    void setCurve(Curve& curve, const std::vector<QPointF>& pts);
    void updateAxes();
    void updateRate(); // the mean cosine chart's title
    void updateCursor(ChartBox& box);
    void layoutChart(ChartBox& box); // the plot area for the chart's current size
    void applyTheme();
    const Curve* find(const QString& name) const;

    std::vector<ChartBox> charts_;
    std::vector<std::unique_ptr<Curve>> curves_;
    std::vector<int> eigenIndex_;
    int eigenD_ = 0; // the dimension eigenIndex_ was chosen for

    // What has been read.
    const RunHistory* history_ = nullptr;
    std::shared_ptr<const RunHistory> keepHistory_; // so the pointer above stays unique while we compare
    std::uint64_t generation_ = 0, revision_ = 0;
    std::size_t consumed_ = 0;
    std::vector<Row> rows_; // frames at multiples of stride_
    bool hasTail_ = false;
    Row tail_; // the newest frame when it is not a multiple of stride_
    int stride_ = 1;
    std::size_t framesRead_ = 0;

    double rankTol_ = 1e-6;
    Normalization scheme_ = Normalization::None; // None also where no consensus law applies (hasConsensusLaw)
    QString rateText_;
    // The equiangular prediction: the reduction's n, β and horizon T when it describes the scene (n = 0: it
    // does not), and ρ(t) on [0, T] once the run's first frame showed an equiangular start.
    int equiangularN_ = 0;
    double equiangularBeta_ = 1.0, horizon_ = 0.0;
    std::vector<QPointF> predicted_;
    void predictFrom(const RecordedFrame& first);
    // The influence prediction: the scene's setting where the chart is shown, the time and points drawn.
    std::optional<InfluenceSetting> influence_;
    double influenceT_;
    bool influenceStale_ = true;
    std::vector<QPointF> influencePoints_;
    void updateInfluence(); // at the newest frame's time, when that or the setting changed
    double cursorT_;
    QWidget* content_ = nullptr;
};

} // namespace flowscope
