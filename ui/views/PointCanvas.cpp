#include "ui/views/PointCanvas.h"

#include "render/picture/PlotDecorations.h"
#include "ui/widgets/Dialogs.h"

#include <QDialogButtonBox>
#include <QDoubleSpinBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QMouseEvent>
#include <QPainter>
#include <QPushButton>
#include <QVBoxLayout>
#include <QWheelEvent>

#include <algorithm>
#include <cmath>

namespace flowscope {

namespace {

constexpr double kMinBrush = 0.02, kMaxBrush = 2.0;
const QColor kPointColor(0xc8, 0xcc, 0xd4); // the Flows view's data grey

} // namespace

QString pointCountText(int count) {
    return count == 1 ? QObject::tr("1 point") : QObject::tr("%1 points").arg(count);
}

PointCanvas::PointCanvas(QWidget* parent) : QWidget(parent) {
    setObjectName(QStringLiteral("pointCanvas"));
    setMouseTracking(true); // the brush circle follows the cursor
    setCursor(Qt::CrossCursor);
    setToolTip(tr("Left button: spray points (%1 per mouse move, uniform in the brush disc). Right button: "
                  "erase the points under the brush. Wheel: brush size. The square is [-4, 4]², the Flows "
                  "view's window.")
                   .arg(kPerStroke));
}

void PointCanvas::setPoints(const Mat& points) {
    points_ = points.cols() == 2 ? points : Mat(0, 2);
    history_.clear();
    update();
    emit pointsChanged(int(points_.rows()));
}

void PointCanvas::clear() {
    if (points_.rows() == 0) return;
    history_.push_back(points_);
    points_.resize(0, 2);
    update();
    emit pointsChanged(0);
}

bool PointCanvas::undo() {
    if (history_.empty()) return false;
    points_ = std::move(history_.back());
    history_.pop_back();
    update();
    emit pointsChanged(int(points_.rows()));
    return true;
}

void PointCanvas::setBrush(double radius) {
    radius = std::clamp(radius, kMinBrush, kMaxBrush);
    if (radius == brush_) return;
    brush_ = radius;
    update();
    emit brushChanged(brush_);
}

QRectF PointCanvas::area() const {
    const double side = std::max(1, std::min(width(), height()) - 2);
    return {(width() - side) / 2.0, (height() - side) / 2.0, side, side};
}

QPointF PointCanvas::worldToPixel(QPointF w) const {
    const QRectF a = area();
    return {a.left() + (w.x() + kExtent) / (2 * kExtent) * a.width(),
            a.bottom() - (w.y() + kExtent) / (2 * kExtent) * a.height()};
}

QPointF PointCanvas::pixelToWorld(QPointF p) const {
    const QRectF a = area();
    return {(p.x() - a.left()) / a.width() * 2 * kExtent - kExtent,
            (a.bottom() - p.y()) / a.height() * 2 * kExtent - kExtent};
}

void PointCanvas::spray(QPointF c) {
    const Eigen::Index n = points_.rows();
    const int add = int(std::min<Eigen::Index>(kPerStroke, kMaxPoints - n));
    if (add <= 0) return;
    points_.conservativeResize(n + add, 2);
    for (int i = 0; i < add; ++i) {
        // Uniform in the disc: radius √u · r, angle 2πv.
        const double r = brush_ * std::sqrt(rng_.uniform()), a = 2 * M_PI * rng_.uniform();
        points_(n + i, 0) = c.x() + r * std::cos(a);
        points_(n + i, 1) = c.y() + r * std::sin(a);
    }
    emit pointsChanged(int(points_.rows()));
}

void PointCanvas::erase(QPointF c) {
    Eigen::Index kept = 0;
    for (Eigen::Index i = 0; i < points_.rows(); ++i)
        if (std::hypot(points_(i, 0) - c.x(), points_(i, 1) - c.y()) > brush_)
            points_.row(kept++) = points_.row(i);
    if (kept == points_.rows()) return;
    points_.conservativeResize(kept, 2);
    emit pointsChanged(int(kept));
}

void PointCanvas::mousePressEvent(QMouseEvent* e) {
    if (e->button() != Qt::LeftButton && e->button() != Qt::RightButton) return;
    stroke_ = e->button();
    history_.push_back(points_);
    cursor_ = e->position();
    mouseMoveEvent(e);
}

void PointCanvas::mouseMoveEvent(QMouseEvent* e) {
    cursor_ = e->position();
    const QPointF w = pixelToWorld(cursor_);
    if (stroke_ == Qt::LeftButton) spray(w);
    if (stroke_ == Qt::RightButton) erase(w);
    update();
}

void PointCanvas::mouseReleaseEvent(QMouseEvent* e) {
    if (e->button() == stroke_) stroke_ = Qt::NoButton;
}

void PointCanvas::wheelEvent(QWheelEvent* e) {
    const double steps = e->angleDelta().y() / 120.0;
    setBrush(brush_ * std::pow(1.2, steps));
    e->accept();
}

void PointCanvas::leaveEvent(QEvent*) {
    cursor_ = {-1, -1};
    update();
}

void PointCanvas::paintEvent(QPaintEvent*) {
    const PlotStyle style;
    QPainter p(this);
    p.setRenderHint(QPainter::Antialiasing);
    p.fillRect(rect(), palette().window());
    const QRectF a = area();
    p.fillRect(a, style.background);
    // The integer grid, the axes and a label at every other line.
    p.setFont(font());
    for (int k = -int(kExtent); k <= int(kExtent); ++k) {
        p.setPen(QPen(k == 0 ? style.axis : style.grid, 1));
        const double x = worldToPixel({double(k), 0}).x(), y = worldToPixel({0, double(k)}).y();
        p.drawLine(QPointF(x, a.top()), QPointF(x, a.bottom()));
        p.drawLine(QPointF(a.left(), y), QPointF(a.right(), y));
        if (k % 2 == 0 && std::abs(k) < kExtent) {
            p.setPen(style.label);
            p.drawText(QPointF(x + 3, a.bottom() - 4), QString::number(k));
            if (k != 0) p.drawText(QPointF(a.left() + 3, y - 3), QString::number(k));
        }
    }
    p.setPen(Qt::NoPen);
    p.setBrush(kPointColor);
    const double dot = 1.6;
    for (Eigen::Index i = 0; i < points_.rows(); ++i)
        p.drawEllipse(worldToPixel({points_(i, 0), points_(i, 1)}), dot, dot);
    if (a.contains(cursor_)) {
        const double r = brush_ / (2 * kExtent) * a.width();
        p.setBrush(Qt::NoBrush);
        p.setPen(QPen(stroke_ == Qt::RightButton ? QColor(0xe0, 0x6c, 0x5f) : QColor(0xf0, 0x8c, 0x2c), 1.2));
        p.drawEllipse(cursor_, r, r);
    }
    if (points_.rows() == 0) {
        p.setPen(style.label);
        p.drawText(a, Qt::AlignCenter, tr("Drag to spray points"));
    }
}

PointCanvasDialog::PointCanvasDialog(const Mat& points, QWidget* parent) : QDialog(parent) {
    auto* layout = dialogColumn(this, tr("Draw your own data"),
                                tr("The flow learns these points. <b>Left-drag</b> sprays points, "
                                   "<b>right-drag</b> erases them, the <b>wheel</b> sizes the brush."));
    canvas_ = new PointCanvas(this);
    canvas_->setPoints(points);
    layout->addWidget(canvas_, 1);

    auto* row = new QHBoxLayout;
    count_ = new QLabel(this);
    count_->setObjectName(QStringLiteral("count"));
    count_->setToolTip(tr("Points drawn; training needs at least 2 (a few hundred make a shape)"));
    row->addWidget(count_, 1);
    auto* brushLabel = new QLabel(tr("Brush"), this);
    brush_ = new QDoubleSpinBox(this);
    brush_->setObjectName(QStringLiteral("brush"));
    brush_->setRange(kMinBrush, kMaxBrush);
    brush_->setDecimals(2);
    brush_->setSingleStep(0.05);
    brush_->setValue(canvas_->brush());
    brush_->setToolTip(tr("Brush radius in data units (the wheel over the canvas changes it too)"));
    brushLabel->setToolTip(brush_->toolTip());
    row->addWidget(brushLabel);
    row->addWidget(brush_);
    auto* undo = new QPushButton(tr("Undo"), this);
    undo->setObjectName(QStringLiteral("undo"));
    undo->setShortcut(QKeySequence::Undo);
    undo->setToolTip(tr("Take back the last stroke or Clear (Ctrl+Z)"));
    auto* clear = new QPushButton(tr("Clear"), this);
    clear->setObjectName(QStringLiteral("clear"));
    clear->setToolTip(tr("Remove every point"));
    row->addWidget(undo);
    row->addWidget(clear);
    layout->addLayout(row);

    auto* buttons = okCancel(this, tr("Use these points"));
    ok_ = buttons->button(QDialogButtonBox::Ok);
    ok_->setToolTip(tr("Train on these points (Start applies them)"));
    layout->addWidget(buttons);

    connect(canvas_, &PointCanvas::pointsChanged, this, &PointCanvasDialog::updateCount);
    connect(canvas_, &PointCanvas::brushChanged, brush_, &QDoubleSpinBox::setValue);
    connect(brush_, &QDoubleSpinBox::valueChanged, canvas_, &PointCanvas::setBrush);
    connect(undo, &QPushButton::clicked, canvas_, &PointCanvas::undo);
    connect(clear, &QPushButton::clicked, canvas_, &PointCanvas::clear);
    updateCount(int(canvas_->points().rows()));
}

const Mat& PointCanvasDialog::points() const {
    return canvas_->points();
}

void PointCanvasDialog::updateCount(int count) {
    count_->setText(pointCountText(count));
    ok_->setEnabled(count >= 2);
}

} // namespace flowscope
