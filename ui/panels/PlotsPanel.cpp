#include "ui/panels/PlotsPanel.h"

#include "engine/attention/KernelAttention.h"
#include "engine/dynamics/Equiangular.h"
#include "engine/runner/RunHistory.h"
#include "engine/runner/SimulationRunner.h"
#include "ui/widgets/FormWidgets.h"

#include <QEvent>
#include <QFontMetricsF>
#include <QGraphicsLayout>
#include <QLabel>
#include <QVBoxLayout>
#include <QtCharts/QChart>
#include <QtCharts/QChartView>
#include <QtCharts/QLegend>
#include <QtCharts/QLineSeries>
#include <QtCharts/QLogValueAxis>
#include <QtCharts/QValueAxis>

#include <Eigen/Eigenvalues>

#include <algorithm>
#include <cmath>
#include <limits>

namespace flowscope {

namespace {

constexpr int kEnergy = 0, kKinetic = 1, kEntropy = 2, kSpectrum = 3, kClusters = 4, kMeanCosine = 5,
              kInfluence = 6;

// Line colours that read on the dark and on the light palette.
const QColor kBlue(0x4a, 0x90, 0xd9), kOrange(0xe8, 0x91, 0x2d), kGreen(0x3f, 0xae, 0x5a),
    kPurple(0x9b, 0x6e, 0xd8), kTeal(0x2a, 0xa7, 0xa7), kRed(0xd9, 0x53, 0x4f), kGold(0xc9, 0xa2, 0x27),
    kPink(0xd8, 0x6e, 0xb4);

QColor mix(const QColor& a, const QColor& b, double f) {
    return QColor::fromRgbF(float(a.redF() + (b.redF() - a.redF()) * f),
                            float(a.greenF() + (b.greenF() - a.greenF()) * f),
                            float(a.blueF() + (b.blueF() - a.blueF()) * f));
}

// The nearest of 1, 2 or 5 times a power of ten to `raw`.
double niceStep(double raw) {
    if (!(raw > 0.0) || !std::isfinite(raw)) return 1.0;
    const double p = std::pow(10.0, std::floor(std::log10(raw)));
    const double f = raw / p;
    return (f < 1.5 ? 1.0 : f < 3.0 ? 2.0 : f < 7.0 ? 5.0 : 10.0) * p;
}

// A linear axis over [lo, hi] with ticks at multiples of a round step (about `ticks` of them).
void setLinearRange(QValueAxis* axis, double lo, double hi, int ticks, bool integer) {
    if (!std::isfinite(lo) || !std::isfinite(hi)) lo = 0.0, hi = 1.0;
    if (!(hi > lo)) { // one value: a unit window around it (relative for large values)
        const double pad = std::max(0.5, 0.05 * std::abs(lo));
        lo -= pad, hi += pad;
    }
    double step = niceStep((hi - lo) / ticks);
    if (integer) step = std::max(1.0, std::round(step));
    if (!(step > 0.0) || !std::isfinite(step)) step = hi - lo;
    // Qt lays out every tick at each change: order the two changes so that neither the old step over the
    // new range nor the new step over the old range asks for more ticks than either finished state.
    const bool coarser = step >= axis->tickInterval();
    if (coarser) axis->setTickInterval(step);
    axis->setRange(lo, hi);
    axis->setTickType(QValueAxis::TicksDynamic);
    axis->setTickAnchor(0.0);
    if (!coarser) axis->setTickInterval(step);
    axis->setLabelFormat(integer ? QStringLiteral("%.0f") : QStringLiteral("%g"));
}

} // namespace

PlotsPanel::PlotsPanel(QWidget* parent) : QWidget(parent), influenceT_(kNaN), cursorT_(kNaN) {
    content_ = new QWidget;
    auto* layout = new QVBoxLayout(content_);
    layout->setContentsMargins(2, 2, 2, 2);
    layout->setSpacing(2);
    const struct {
        QString title;
        bool logY, integerY;
    } specs[] = {// E = (1/2N²) Σ e^(s_ij) > 0 spans decades as a cloud contracts (1.5e5 to 0.5 on the default
                 // scene): on a linear axis all but its first steps lay flat on zero.
                 {tr("Interaction energy"), true, false},
                 {tr("Kinetic energy"), false, false},
                 {tr("Attention entropy (nats)"), false, false},
                 {tr("Eigenvalues of Σ <span style='font-weight:normal'>(dashed: rank threshold)</span>"),
                  true, false},
                 // Two curves: the title is their legend.
                 {tr("<span style='color:%1'>Clusters</span> and <span style='color:%2'>rank</span>")
                      .arg(kPurple.name(), kTeal.name()),
                  false, true},
                 {tr("Mean cosine ρ"), false, false},
                 // Against the source position, not the time; its title is set by updateInfluence.
                 {tr("Influence on the last token"), false, false}};
    for (const auto& spec : specs) {
        ChartBox box;
        box.chart = new QChart;
        // The title is a label above the chart: QChart elides its own title to a width of its earlier layout
        // ("Interaction e..." in a 390 px dock), and a label wraps instead when the dock is narrow.
        box.title = new QLabel(spec.title);
        box.title->setTextFormat(Qt::RichText);
        box.title->setWordWrap(true);
        box.title->setContentsMargins(6, 2, 6, 0);
        box.title->setAutoFillBackground(true);
        box.chart->legend()->hide();
        box.chart->setMargins(QMargins(2, 0, 6, 0));
        box.chart->layout()->setContentsMargins(0, 0, 0, 0);
        box.chart->setBackgroundRoundness(0);
        box.x = new QValueAxis;
        box.chart->addAxis(box.x, Qt::AlignBottom);
        if (spec.logY) {
            auto* y = new QLogValueAxis;
            y->setLabelFormat(QStringLiteral("%g"));
            box.y = y;
        } else {
            box.y = new QValueAxis;
        }
        box.chart->addAxis(box.y, Qt::AlignLeft);
        box.logY = spec.logY;
        box.integerY = spec.integerY;
        box.cursor = new QLineSeries;
        box.chart->addSeries(box.cursor);
        box.cursor->attachAxis(box.x);
        box.cursor->attachAxis(box.y);
        // Every chart gets the same plot-area gutters, so the stacked time axes line up.
        connect(box.chart, &QGraphicsWidget::geometryChanged, this, [this, i = charts_.size()] {
            if (i < charts_.size()) layoutChart(charts_[i]);
        });
        box.view = new QChartView(box.chart);
        box.view->setRenderHint(QPainter::Antialiasing);
        box.view->setFrameShape(QFrame::NoFrame);
        box.view->setMinimumHeight(96);
        auto* titled = new QWidget;
        auto* column = new QVBoxLayout(titled);
        column->setContentsMargins(0, 0, 0, 0);
        column->setSpacing(0);
        column->addWidget(box.title);
        column->addWidget(box.view, 1);
        layout->addWidget(titled, 1);
        box.panel = titled;
        charts_.push_back(box);
    }
    addCurve(QStringLiteral("energy"), kEnergy, kBlue);
    addCurve(QStringLiteral("kinetic"), kKinetic, kOrange);
    addCurve(QStringLiteral("entropy"), kEntropy, kGreen);
    addCurve(QStringLiteral("rank threshold"), kSpectrum, QColor(), Qt::DashLine);
    addCurve(QStringLiteral("clusters"), kClusters, kPurple);
    // The rank (at most d) beside a cluster count of up to thousands: on a right-hand axis of its own, in its
    // colour, so it does not read as 0.
    ChartBox& clusters = charts_[std::size_t(kClusters)];
    clusters.y2 = new QValueAxis;
    clusters.chart->addAxis(clusters.y2, Qt::AlignRight);
    clusters.y2->setGridLineVisible(false);
    addCurve(QStringLiteral("rank"), kClusters, kTeal).rightAxis = true;
    addCurve(QStringLiteral("rho predicted"), kMeanCosine, kGold, Qt::DashLine);
    addCurve(QStringLiteral("mean cosine"), kMeanCosine, kGold);
    addCurve(QStringLiteral("influence predicted"), kInfluence, kRed, Qt::DashLine);
    charts_[std::size_t(kInfluence)].timeAxis = false;
    charts_[std::size_t(kInfluence)].panel->setVisible(false); // until a scene with positional decay
    form::scrollInto(this, content_);
    applyTheme();
    rebuild();
}

PlotsPanel::~PlotsPanel() = default;

QString PlotsPanel::eigenvalueCurve(int k) {
    return QStringLiteral("lambda%1").arg(k + 1);
}

QChart* PlotsPanel::chart(Plot plot) const {
    return charts_[std::size_t(plot)].chart;
}

// ---- reading the history --------------------------------------------------------------------------------

void PlotsPanel::setSnapshot(const std::shared_ptr<const Snapshot>& snapshot) {
    if (!snapshot || !snapshot->history) {
        if (history_) clear();
        return;
    }
    const RunHistory& h = *snapshot->history;
    const bool sameRun = &h == history_ && snapshot->generation == generation_;
    if (sameRun && h.revision() == revision_ && h.size() == consumed_) return; // nothing new

    std::uint64_t revision = 0;
    if (sameRun) {
        const std::vector<RecordedFrame> frames = h.since(consumed_, &revision);
        if (revision == revision_) { // appended only
            framesRead_ += frames.size();
            readFrames(frames, consumed_);
            consumed_ += frames.size();
            rebuild();
            return;
        }
    }
    // Another run, or this one was rewound or reset: read it all again.
    forget();
    keepHistory_ = snapshot->history;
    history_ = &h;
    generation_ = snapshot->generation;
    const std::vector<RecordedFrame> frames = h.since(0, &revision);
    revision_ = revision;
    framesRead_ += frames.size();
    for (const RecordedFrame& f : frames)
        if (f.obs.cov.rows() > 0) {
            chooseEigenvalues(int(f.obs.cov.rows()));
            break;
        }
    readFrames(frames, 0);
    consumed_ = frames.size();
    rebuild();
}

void PlotsPanel::forget() {
    rows_.clear();
    predicted_.clear();
    influencePoints_.clear();
    influenceT_ = kNaN;
    hasTail_ = false;
    stride_ = 1;
    consumed_ = 0;
    revision_ = 0;
    generation_ = 0;
    history_ = nullptr;
    keepHistory_.reset();
}

void PlotsPanel::clear() {
    forget();
    cursorT_ = kNaN;
    rebuild();
}

void PlotsPanel::chooseEigenvalues(int d) {
    if (d == eigenD_) return;
    eigenD_ = d;
    // All of them up to kMaxEigenvalueCurves; beyond, evenly spaced from the largest to the smallest.
    eigenIndex_.clear();
    const int n = std::min(d, kMaxEigenvalueCurves);
    for (int k = 0; k < n; ++k)
        eigenIndex_.push_back(n == 1 ? 0 : int(std::lround(double(k) * (d - 1) / (n - 1))));
    rebuildCurves();
}

void PlotsPanel::rebuildCurves() {
    // Drop the old eigenvalue curves (and their series), then add one per chosen eigenvalue.
    for (auto it = curves_.begin(); it != curves_.end();) {
        if ((*it)->name.startsWith(QLatin1String("lambda"))) {
            for (QLineSeries* s : (*it)->segments) {
                charts_[kSpectrum].chart->removeSeries(s);
                delete s;
            }
            it = curves_.erase(it);
        } else {
            ++it;
        }
    }
    static const QColor palette[] = {kBlue, kOrange, kGreen, kRed, kPurple, kTeal, kGold, kPink};
    for (std::size_t k = 0; k < eigenIndex_.size(); ++k)
        addCurve(eigenvalueCurve(int(k)), kSpectrum, palette[k % std::size(palette)]);
}

PlotsPanel::Row PlotsPanel::makeRow(const RecordedFrame& f, std::size_t index) {
    Row r;
    r.frame = index;
    r.t = f.t;
    r.energy = f.obs.energy;
    r.kinetic = f.obs.kinetic;
    r.entropy = f.obs.entropy;
    r.meanCosine = f.obs.meanCosine;
    const bool observed = f.obs.cov.rows() > 0; // observables were computed for this frame
    r.clusters = f.obs.clusters > 0 ? double(f.obs.clusters) : kNaN; // any cloud has one
    r.rank = observed ? double(f.obs.rank) : kNaN;
    r.eigen.assign(eigenIndex_.size(), kNaN);
    r.lambdaMax = kNaN;
    const Mat& cov = f.obs.cov;
    if (observed && cov.rows() == eigenD_ && cov.allFinite()) {
        const Vec ascending = Eigen::SelfAdjointEigenSolver<Mat>(cov, Eigen::EigenvaluesOnly).eigenvalues();
        const Eigen::Index d = ascending.size();
        r.lambdaMax = ascending(d - 1);
        for (std::size_t k = 0; k < eigenIndex_.size(); ++k) r.eigen[k] = ascending(d - 1 - eigenIndex_[k]);
    }
    return r;
}

void PlotsPanel::readFrames(const std::vector<RecordedFrame>& frames, std::size_t firstIndex) {
    if (firstIndex == 0 && !frames.empty()) predictFrom(frames.front());
    for (std::size_t k = 0; k < frames.size(); ++k) {
        const std::size_t index = firstIndex + k;
        if (index % std::size_t(stride_) != 0) continue;
        rows_.push_back(makeRow(frames[k], index));
        decimate();
    }
    if (frames.empty()) return;
    // The newest frame is always shown, so a large stride does not make the curves lag behind the run.
    const std::size_t last = firstIndex + frames.size() - 1;
    hasTail_ = last % std::size_t(stride_) != 0;
    if (hasTail_) tail_ = makeRow(frames.back(), last);
}

void PlotsPanel::decimate() {
    while (rows_.size() > kMaxPoints) {
        stride_ *= 2;
        const std::size_t s = std::size_t(stride_);
        std::erase_if(rows_, [s](const Row& r) { return r.frame % s != 0; });
    }
}

// ---- drawing ----------------------------------------------------------------------------------------------

PlotsPanel::Curve& PlotsPanel::addCurve(const QString& name, int chart, QColor color, Qt::PenStyle style) {
    auto curve = std::make_unique<Curve>();
    curve->name = name;
    curve->chart = chart;
    curve->color = color;
    curve->style = style;
    curves_.push_back(std::move(curve));
    return *curves_.back();
}

void PlotsPanel::setCurve(Curve& curve, const std::vector<QPointF>& pts) {
    // A point is drawable when finite (and positive on a log axis); anything else ends a segment.
    ChartBox& box = charts_[std::size_t(curve.chart)];
    std::vector<QList<QPointF>> pieces;
    bool open = false;
    curve.points.clear();
    for (const QPointF& p : pts) {
        const bool drawable = std::isfinite(p.x()) && std::isfinite(p.y()) && (!box.logY || p.y() > 0.0);
        if (!drawable) {
            open = false;
            continue;
        }
        if (!open) pieces.emplace_back();
        open = true;
        pieces.back().append(p);
        curve.points.append(p);
    }
    while (curve.segments.size() < pieces.size()) {
        auto* s = new QLineSeries;
        s->setName(curve.name);
        s->setPen(QPen(curve.color, curve.style == Qt::SolidLine ? 1.5 : 1.2, curve.style));
        box.chart->addSeries(s);
        s->attachAxis(box.x);
        s->attachAxis(curve.rightAxis && box.y2 ? static_cast<QAbstractAxis*>(box.y2) : box.y);
        curve.segments.push_back(s);
    }
    // Drop the surplus series (an empty curve keeps one, so it always has a series).
    while (curve.segments.size() > std::max<std::size_t>(pieces.size(), 1)) {
        box.chart->removeSeries(curve.segments.back());
        delete curve.segments.back();
        curve.segments.pop_back();
    }
    for (std::size_t i = 0; i < curve.segments.size(); ++i)
        curve.segments[i]->replace(i < pieces.size() ? pieces[i] : QList<QPointF>());
}

void PlotsPanel::rebuild() {
    updateInfluence();
    std::vector<const Row*> rows;
    rows.reserve(rows_.size() + 1);
    for (const Row& r : rows_) rows.push_back(&r);
    if (hasTail_) rows.push_back(&tail_);

    const auto series = [&](auto value) {
        std::vector<QPointF> pts;
        pts.reserve(rows.size());
        for (const Row* r : rows) pts.emplace_back(r->t, value(*r));
        return pts;
    };
    // The curves that plot one field of the rows, by name.
    const std::pair<QLatin1String, double Row::*> fields[] = {
        {QLatin1String("energy"), &Row::energy},   {QLatin1String("kinetic"), &Row::kinetic},
        {QLatin1String("entropy"), &Row::entropy}, {QLatin1String("clusters"), &Row::clusters},
        {QLatin1String("rank"), &Row::rank},       {QLatin1String("mean cosine"), &Row::meanCosine}};
    for (auto& c : curves_) {
        Curve& curve = *c;
        const auto field = std::find_if(std::begin(fields), std::end(fields),
                                        [&](const auto& f) { return curve.name == f.first; });
        if (field != std::end(fields))
            setCurve(curve, series([m = field->second](const Row& r) { return r.*m; }));
        else if (curve.name == QLatin1String("rho predicted"))
            setCurve(curve, predicted_);
        else if (curve.name == QLatin1String("influence predicted"))
            setCurve(curve, influencePoints_);
        else if (curve.name == QLatin1String("rank threshold"))
            setCurve(curve, series([this](const Row& r) { return rankTol_ * r.lambdaMax; }));
        else if (curve.name.startsWith(QLatin1String("lambda"))) {
            const std::size_t k = std::size_t(curve.name.mid(6).toInt() - 1);
            setCurve(curve, series([k](const Row& r) { return k < r.eigen.size() ? r.eigen[k] : kNaN; }));
        }
    }
    updateAxes();
    updateRate();
}

void PlotsPanel::setScene(const Scene& scene, bool liveEdit) {
    scheme_ =
        hasConsensusLaw(scene.attention, scene.d) ? normalizationOf(scene.attention) : Normalization::None;
    const bool reduces = hasEquiangularReduction(scene.attention, scene.d);
    equiangularN_ = reduces && !liveEdit ? scene.n : 0;
    equiangularBeta_ = scene.attention.beta;
    horizon_ = scene.integrator.T;
    if (liveEdit) predicted_.clear();
    // The influence depends on the parameters and the time only: a live edit predicts for the new ones.
    influence_.reset();
    if (hasInfluenceProfile(scene.attention, scene.d) && scene.attention.positionalDecay > 0.0 &&
        scene.n >= 2 && scene.n <= kMaxInfluenceTokens)
        influence_ = influenceSetting(scene);
    influenceStale_ = true;
    charts_[std::size_t(kInfluence)].panel->setVisible(influence_.has_value());
    // A chart left empty says why: the energy is a quantity of softmax with one unmasked head only.
    const auto& heads =
        scene.attention.keyframes.empty() ? scene.attention.heads : scene.attention.keyframes.front().heads;
    charts_[std::size_t(kEnergy)].title->setText(
        interactionEnergyDefined(scene.attention, heads.size())
            ? tr("Interaction energy")
            : tr("Interaction energy <span style='font-weight:normal'>(defined for softmax with one unmasked "
                 "head and no positional decay)</span>"));
    rebuild();
}

// The predicted profile at the newest frame's time (docs/math/theory.md#influence): recomputed when that
// time or the setting changed; nothing before the first frame, or when the time is past the series' range.
void PlotsPanel::updateInfluence() {
    const bool any = !rows_.empty() || hasTail_;
    const double t = hasTail_ ? tail_.t : any ? rows_.back().t : kNaN;
    if (!influenceStale_ && (t == influenceT_ || (std::isnan(t) && std::isnan(influenceT_)))) return;
    influenceStale_ = false;
    influenceT_ = t;
    influencePoints_.clear();
    QString detail;
    if (influence_ && any) {
        try {
            const std::vector<double> profile = influenceProfile(*influence_, t);
            // At most kMaxPoints points: every stride-th position, and the last one.
            const std::size_t stride = (profile.size() + kMaxPoints - 1) / kMaxPoints;
            for (std::size_t k = 0; k < profile.size(); k += stride)
                influencePoints_.emplace_back(double(k), profile[k]);
            if ((profile.size() - 1) % stride != 0)
                influencePoints_.emplace_back(double(profile.size() - 1), profile.back());
            const ProfileShape shape = profileShape(profile);
            if (t > 0.0)
                detail = shape.uShaped ? tr("U-shaped, least at position %1").arg(shape.argmin)
                                       : tr("not U-shaped, least at position %1").arg(shape.argmin);
            if (influence_->masked)
                detail += (detail.isEmpty() ? QString() : QStringLiteral("; ")) +
                          tr("the mean-field U lasts until t = %1")
                              .arg(QString::number(uShapeEndTime(*influence_), 'g', 3));
        } catch (const std::exception&) { // exp(a_n t) past double's range: no prediction
            influencePoints_.clear();
            detail = tr("t is too long for the first-order prediction");
        }
    }
    QString title = tr("Influence on the last token against the source position, predicted");
    if (std::isfinite(t)) title += tr(" at t = %1").arg(QString::number(t, 'g', 3));
    if (!detail.isEmpty())
        title += QStringLiteral(" <span style='font-weight:normal'>(%1)</span>").arg(detail);
    charts_[std::size_t(kInfluence)].title->setText(title);
}

QString PlotsPanel::energyTitle() const {
    return charts_[std::size_t(kEnergy)].title->text();
}

QString PlotsPanel::influenceTitle() const {
    return charts_[std::size_t(kInfluence)].title->text();
}

// ρ(t) of the reduced ODE over [0, T] from the run's first frame, when its tokens are equiangular.
void PlotsPanel::predictFrom(const RecordedFrame& first) {
    predicted_.clear();
    if (equiangularN_ < 2 || !first.tokens || first.tokens->rows() != equiangularN_ || !(horizon_ > 0))
        return;
    if (equiangularN_ > 4096) return; // the check is O(n² d): a start this large is no equiangular one
    const std::optional<Equiangular> start = equiangularState(*first.tokens);
    if (!start) return;
    constexpr int kSamples = 256;
    std::vector<double> times(kSamples + 1);
    for (int k = 0; k <= kSamples; ++k) times[std::size_t(k)] = horizon_ * k / kSamples;
    try {
        const std::vector<double> rho =
            equiangularRho(scheme_, equiangularN_, equiangularBeta_, *start, times);
        for (std::size_t k = 0; k < times.size(); ++k) predicted_.emplace_back(times[k], rho[k]);
    } catch (const std::exception&) { // the reduced ODE failed: no prediction rather than a wrong one
        predicted_.clear();
    }
}

// The rate of 1 − ρ fitted to the plotted frames (the second half of the run so far), beside the law of the
// scene's normalization; nothing without a scheme or before four frames of the second half are in.
void PlotsPanel::updateRate() {
    std::vector<double> t, rho;
    for (const Row& r : rows_) t.push_back(r.t), rho.push_back(r.meanCosine);
    if (hasTail_) t.push_back(tail_.t), rho.push_back(tail_.meanCosine);
    const ConsensusRate rate = consensusRate(scheme_, t, rho);
    rateText_.clear();
    if (std::isfinite(rate.predicted) && std::isfinite(rate.slope)) {
        const QString scheme = QString::fromLatin1(toString(scheme_));
        const QString slope = QString::number(rate.slope, 'f', 2).replace(QLatin1Char('-'), QChar(0x2212));
        rateText_ = rate.perLogT
                        ? tr("1 − ρ ∝ t<sup>%1</sup>; %2-LN predicts t<sup>−2</sup>").arg(slope, scheme)
                        : tr("1 − ρ ∝ e<sup>%1 t</sup>; %2-LN predicts e<sup>−2t</sup>").arg(slope, scheme);
    }
    QLabel* title = charts_[std::size_t(kMeanCosine)].title;
    title->setText(rateText_.isEmpty()
                       ? tr("Mean cosine ρ")
                       : tr("Mean cosine ρ <span style='font-weight:normal'>(%1)</span>").arg(rateText_));
}

void PlotsPanel::updateAxes() {
    double t0 = 0.0, t1 = 1.0;
    if (!rows_.empty() || hasTail_) {
        t0 = rows_.empty() ? tail_.t : rows_.front().t;
        t1 = hasTail_ ? tail_.t : rows_.back().t;
        if (!(t1 > t0)) t0 -= 0.5, t1 += 0.5; // one frame: a unit window around it
    }
    for (std::size_t i = 0; i < charts_.size(); ++i) {
        ChartBox& box = charts_[i];
        if (box.timeAxis)
            setLinearRange(box.x, t0, t1, 4, false);
        else // the source positions 0 .. N - 2
            setLinearRange(box.x, 0.0, influence_ ? std::max(1.0, double(influence_->n - 2)) : 1.0, 4, true);
        double lo = std::numeric_limits<double>::infinity(), hi = -lo, hi2 = -lo;
        for (const auto& c : curves_)
            if (c->chart == int(i))
                for (const QPointF& p : c->points) {
                    if (c->rightAxis && box.y2) {
                        hi2 = std::max(hi2, p.y());
                        continue;
                    }
                    lo = std::min(lo, p.y()), hi = std::max(hi, p.y());
                }
        if (box.y2) setLinearRange(box.y2, 0.0, std::ceil(std::max(hi2, 1.0) * 1.1), 4, true);
        const bool any = lo <= hi;
        if (box.logY) {
            // Whole decades; for wide ranges the tick base grows (10, 100, ...) so labels stay few.
            const double a = any ? std::floor(std::log10(lo)) : -1.0;
            const double b = std::max(any ? std::ceil(std::log10(hi)) : 1.0, a + 1.0);
            // Qt elides a label taller than its share of the axis: at most three on these short charts.
            const double decadesPerTick = std::max(1.0, std::ceil((b - a) / 2.0));
            auto* y = static_cast<QLogValueAxis*>(box.y);
            y->setBase(std::pow(10.0, decadesPerTick));
            y->setRange(std::pow(10.0, a), std::pow(10.0, b));
        } else if (box.integerY) {
            setLinearRange(static_cast<QValueAxis*>(box.y), 0.0,
                           any ? std::ceil(std::max(hi, 1.0) * 1.1) : 1.0, 4, true);
        } else {
            if (!any) lo = 0.0, hi = 1.0;
            const double span = hi - lo;
            const double margin = span > 0.0 ? 0.06 * span : std::max(0.1 * std::abs(hi), 0.5);
            setLinearRange(static_cast<QValueAxis*>(box.y), lo - margin, hi + margin, 3, false);
        }
        updateCursor(box);
    }
}

void PlotsPanel::setRankTolerance(double relTol) {
    if (relTol == rankTol_) return;
    rankTol_ = relTol;
    rebuild();
}

void PlotsPanel::setCursorTime(double t) {
    cursorT_ = t;
    for (ChartBox& box : charts_) updateCursor(box);
}

void PlotsPanel::updateCursor(ChartBox& box) {
    if (!std::isfinite(cursorT_) || !box.timeAxis) {
        box.cursor->clear();
        return;
    }
    double lo = 0.0, hi = 1.0;
    if (box.logY) {
        const auto* y = static_cast<QLogValueAxis*>(box.y);
        lo = y->min(), hi = y->max();
    } else {
        const auto* y = static_cast<QValueAxis*>(box.y);
        lo = y->min(), hi = y->max();
    }
    box.cursor->replace(QList<QPointF>{{cursorT_, lo}, {cursorT_, hi}});
}

void PlotsPanel::layoutChart(ChartBox& box) {
    const QSizeF size = box.chart->size();
    if (size.isEmpty()) return;
    const QFontMetricsF labels(box.x->labelsFont());
    const double left = labels.horizontalAdvance(QStringLiteral("-0.0005")) + 10.0; // room for y labels
    const double top = labels.height() / 2.0 + 4.0, bottom = labels.height() + 8.0; // the top y label's half
    const double right = box.y2 ? labels.horizontalAdvance(QStringLiteral("000")) + 10.0 : 12.0;
    const QRectF plot(left, top, std::max(size.width() - left - right, 10.0),
                      std::max(size.height() - top - bottom, 10.0));
    box.chart->setPlotArea(plot);
    // QtCharts moves the axes to a new fixed plot area only in a layout pass of the chart: without one, a
    // chart resized while hidden (the dock tabbed behind Matrices) drew its ticks in the plot area of its
    // old size, under curves that spanned the new one.
    box.chart->layout()->invalidate();
}

// ---- look ------------------------------------------------------------------------------------------------

void PlotsPanel::changeEvent(QEvent* event) {
    if (event->type() == QEvent::PaletteChange) applyTheme();
    QWidget::changeEvent(event);
}

void PlotsPanel::applyTheme() {
    // Follows the widget's palette (the application's dark theme, or a light desktop palette).
    const QPalette pal = palette();
    const QColor bg = pal.color(QPalette::Base), text = pal.color(QPalette::Text);
    const QColor dim = mix(bg, text, 0.7), grid = mix(bg, text, 0.12), axis = mix(bg, text, 0.35);
    QFont titleFont = font();
    titleFont.setPointSizeF(std::max(7.0, font().pointSizeF() - 1.0));
    titleFont.setBold(true);
    QFont small = font();
    small.setPointSizeF(std::max(6.5, font().pointSizeF() - 2.0));
    for (ChartBox& box : charts_) {
        box.chart->setBackgroundBrush(bg);
        box.chart->setBackgroundPen(Qt::NoPen);
        box.title->setFont(titleFont);
        QPalette titlePalette = box.title->palette();
        titlePalette.setColor(QPalette::Window, bg);
        titlePalette.setColor(QPalette::WindowText, text);
        box.title->setPalette(titlePalette);
        box.view->setBackgroundBrush(bg);
        for (QAbstractAxis* a : {static_cast<QAbstractAxis*>(box.x), box.y}) {
            a->setLabelsBrush(dim);
            a->setLabelsFont(small);
            a->setGridLinePen(QPen(grid, 1.0));
            a->setMinorGridLinePen(QPen(grid, 0.5));
            a->setLinePen(QPen(axis, 1.0));
        }
        box.cursor->setPen(QPen(mix(bg, text, 0.8), 1.0));
        if (box.y2) {
            box.y2->setLabelsBrush(kTeal);
            box.y2->setLabelsFont(small);
            box.y2->setLinePen(QPen(axis, 1.0));
        }
    }
    for (auto& c : curves_)
        if (c->name == QLatin1String("rank threshold")) {
            c->color = mix(bg, text, 0.55);
            for (QLineSeries* s : c->segments) s->setPen(QPen(c->color, 1.2, c->style));
        }
}

// ---- queries
// ------------------------------------------------------------------------------------------------

const PlotsPanel::Curve* PlotsPanel::find(const QString& name) const {
    for (const auto& c : curves_)
        if (c->name == name) return c.get();
    return nullptr;
}

QStringList PlotsPanel::curveNames() const {
    QStringList names;
    for (const auto& c : curves_) names << c->name;
    return names;
}

int PlotsPanel::pointCount(const QString& curve) const {
    return int(points(curve).size());
}

QList<QPointF> PlotsPanel::points(const QString& curve) const {
    // What the chart series hold, not our copy: this is what is drawn.
    QList<QPointF> out;
    if (const Curve* c = find(curve))
        for (const QLineSeries* s : c->segments) out += s->points();
    return out;
}

int PlotsPanel::segmentCount(const QString& curve) const {
    const Curve* c = find(curve);
    if (!c) return 0;
    return int(std::count_if(c->segments.begin(), c->segments.end(),
                             [](const QLineSeries* s) { return s->count() > 0; }));
}

} // namespace flowscope
