#include "render/picture/StatusOverlay.h"

#include "engine/runner/Snapshot.h"

#include <QFontDatabase>
#include <QFontMetricsF>
#include <QPainter>
#include <QRectF>

#include <cmath>

namespace flowscope {

namespace {

constexpr double kMargin = 10.0;
constexpr double kPad = 8.0;

QString formatTime(double t, double horizon) {
    // Enough decimals to see the clock move at 500 steps per horizon, without scientific notation.
    const int decimals = horizon >= 1000.0 ? 1 : 3;
    return QString::number(t, 'f', decimals);
}

QFont statusFont() {
    QFont font =
        QFontDatabase::systemFont(QFontDatabase::FixedFont); // digits keep their width as they change
    font.setPointSizeF(std::max(font.pointSizeF(), 10.0));
    return font;
}

QString headline(const RunEvent& e) {
    const QString at = QString::number(e.t, 'g', 6);
    switch (e.kind) {
    case RunEvent::Kind::Diverged:
        return QStringLiteral("Diverged at t = %1").arg(at);
    case RunEvent::Kind::NonFinite:
        return QStringLiteral("Non-finite values at t = %1").arg(at);
    case RunEvent::Kind::StepCollapse:
        return QStringLiteral("Step size collapsed at t = %1").arg(at);
    }
    return QStringLiteral("Stopped at t = %1").arg(at);
}

} // namespace

QString statusText(const Snapshot& s) {
    const long n = long(s.tokens.rows()), d = long(s.tokens.cols());
    QString state;
    if (s.event)
        state = QStringLiteral("stopped");
    else if (s.finished)
        state = QStringLiteral("finished");
    else if (s.playing)
        state = QStringLiteral("%1 steps/s").arg(std::lround(s.stepsPerSecond));
    else
        state = QStringLiteral("paused");
    QString line2 = QStringLiteral("N = %1   d = %2   %3").arg(n).arg(d).arg(state);
    if (d >= 3) line2 += QStringLiteral("   (axes x0, x1)");
    return QStringLiteral("t = %1 / %2   step %3 / %4\n%5")
        .arg(formatTime(s.t, s.horizon), QString::number(s.horizon, 'g', 6))
        .arg(s.step)
        .arg(s.totalSteps)
        .arg(line2);
}

QString eventBannerText(const RunEvent& e, const QString& subject) {
    QString text = subject + headline(e);
    if (!e.message.empty()) text += QLatin1Char('\n') + QString::fromStdString(e.message);
    return text;
}

QString bannerText(const Snapshot& s) {
    if (s.event) return eventBannerText(*s.event);
    if (!s.error.empty()) return QStringLiteral("Error\n") + QString::fromStdString(s.error);
    return {};
}

QRectF statusRect(QPainter& p, const QRectF& area, const Snapshot& s) {
    p.save();
    p.setFont(statusFont());
    const QRectF bounds =
        p.boundingRect(QRectF(0, 0, area.width(), area.height()), Qt::AlignLeft, statusText(s));
    p.restore();
    return QRectF(area.left() + kMargin, area.top() + kMargin, bounds.width() + 2 * kPad,
                  bounds.height() + 2 * kPad);
}

QRectF drawStatus(QPainter& p, const QRectF& area, const Snapshot& s) {
    const QRectF box = statusRect(p, area, s);
    p.save();
    p.setFont(statusFont());
    const QString text = statusText(s);
    p.setPen(Qt::NoPen);
    p.setBrush(QColor(10, 11, 14, 200));
    p.drawRect(box);
    p.setPen(QColor(0xe6, 0xe8, 0xee));
    p.drawText(box.adjusted(kPad, kPad, -kPad, -kPad), Qt::AlignLeft, text);
    p.restore();
    return box;
}

void drawBanner(QPainter& p, const QRectF& area, const QRectF& avoid, const Snapshot& s) {
    drawBannerText(p, area, avoid, bannerText(s), bool(s.event));
}

QRectF drawBannerText(QPainter& p, const QRectF& area, const QRectF& avoid, const QString& text, bool alarm) {
    if (text.isEmpty()) return {};
    p.save();
    QFont font = p.font();
    font.setPointSizeF(std::max(font.pointSizeF(), 10.0) * 1.15);
    font.setBold(true);
    p.setFont(font);
    const double maxWidth = std::max(area.width() * 0.6, std::min(area.width() - 2 * kMargin, 360.0));
    const QRectF bounds = p.boundingRect(QRectF(0, 0, maxWidth - 2 * kPad, area.height()),
                                         Qt::AlignHCenter | Qt::TextWordWrap, text);
    const double w = bounds.width() + 4 * kPad, h = bounds.height() + 2 * kPad;
    QRectF box(area.center().x() - w / 2, area.top() + kMargin, w, h);
    if (box.intersects(avoid)) box.moveTop(avoid.bottom() + kMargin);
    p.setPen(Qt::NoPen);
    p.setBrush(alarm ? QColor(200, 36, 36, 235) : QColor(205, 110, 20, 235));
    p.drawRect(box);
    p.setPen(Qt::white);
    p.drawText(box.adjusted(2 * kPad, kPad, -2 * kPad, -kPad), Qt::AlignHCenter | Qt::TextWordWrap, text);
    p.restore();
    return box;
}

} // namespace flowscope
