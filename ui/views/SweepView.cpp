#include "ui/views/SweepView.h"

#include <QMouseEvent>
#include <QPainter>

namespace flowscope {

SweepView::SweepView(QWidget* parent) : LiveView(parent) {
    setObjectName(QStringLiteral("sweepView"));
    setMouseTracking(true);
    picture_.setPalette(palette());
    picture_.setFont(font());
    picture_.setStyle(style_);
    picture_.setSize(size());
}

void SweepView::setSweep(std::shared_ptr<const SweepSpec> spec) {
    picture_.setSweep(std::move(spec));
    update();
    reportHover();
}

void SweepView::setTable(SweepTable table) {
    picture_.setTable(std::move(table));
    update();
    reportHover();
}

void SweepView::setSelection(const std::string& x, const std::string& y, const std::string& measure) {
    picture_.setSelection(x, y, measure);
    update();
    reportHover();
}

QString SweepView::describeAt(QPointF pos) const {
    const auto hit = picture_.hitAt(pos);
    return hit ? picture_.describe(*hit) : QString();
}

long SweepView::runAt(QPointF pos) const {
    const auto hit = picture_.hitAt(pos);
    return hit ? picture_.runOf(*hit) : -1;
}

void SweepView::plotStyleChanged() {
    picture_.setStyle(style_);
}

void SweepView::resizeEvent(QResizeEvent* e) {
    picture_.setSize(size());
    LiveView::resizeEvent(e);
}

void SweepView::changeEvent(QEvent* e) {
    if (e->type() == QEvent::PaletteChange) picture_.setPalette(palette());
    if (e->type() == QEvent::FontChange) picture_.setFont(font());
    LiveView::changeEvent(e);
}

void SweepView::paintEvent(QPaintEvent*) {
    QPainter p(this);
    picture_.paint(p);
}

void SweepView::mouseMoveEvent(QMouseEvent* e) {
    mouse_ = e->position();
    reportHover();
    LiveView::mouseMoveEvent(e);
}

void SweepView::mouseReleaseEvent(QMouseEvent* e) {
    if (e->button() == Qt::LeftButton) {
        const long run = runAt(e->position());
        if (run >= 0) emit cellClicked(run);
    }
    LiveView::mouseReleaseEvent(e);
}

void SweepView::leaveEvent(QEvent* e) {
    mouse_ = {-1, -1};
    emit hovered(QString());
    LiveView::leaveEvent(e);
}

// The readout follows the mouse, and the cell under it as runs fill it in.
void SweepView::reportHover() {
    if (mouse_.x() >= 0) emit hovered(describeAt(mouse_));
}

} // namespace flowscope
