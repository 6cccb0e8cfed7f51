#include "ui/widgets/Icons.h"

#include <QPainter>
#include <QPainterPath>
#include <QPixmap>

#include <utility>

namespace flowscope {

namespace {

// Draws `kind` in a 16 x 16 logical box.
void paint(QPainter& p, IconKind kind, const QColor& c) {
    p.setRenderHint(QPainter::Antialiasing);
    p.setPen(Qt::NoPen);
    p.setBrush(c);
    auto triangle = [&](double x0, double x1, bool right) {
        QPainterPath path;
        path.moveTo(right ? x0 : x1, 2.5);
        path.lineTo(right ? x1 : x0, 8.0);
        path.lineTo(right ? x0 : x1, 13.5);
        path.closeSubpath();
        p.drawPath(path);
    };
    switch (kind) {
    case IconKind::Play:
        triangle(3.5, 13.0, true);
        break;
    case IconKind::Pause:
        p.drawRect(QRectF(3.5, 2.5, 3.0, 11.0));
        p.drawRect(QRectF(9.5, 2.5, 3.0, 11.0));
        break;
    case IconKind::Step: // play one, then stop at the bar
        triangle(2.5, 10.0, true);
        p.drawRect(QRectF(11.0, 2.5, 2.5, 11.0));
        break;
    case IconKind::Reset: // back to the start: bar, then a left-pointing triangle
        p.drawRect(QRectF(2.5, 2.5, 2.5, 11.0));
        triangle(6.0, 13.5, false);
        break;
    case IconKind::Frame: { // four corner brackets around a dot
        QPen pen(c, 1.6);
        pen.setCapStyle(Qt::FlatCap);
        pen.setJoinStyle(Qt::MiterJoin);
        p.setPen(pen);
        p.setBrush(Qt::NoBrush);
        const double a = 2.0, b = 14.0, l = 4.0;
        p.drawPolyline(QPolygonF({{a, a + l}, {a, a}, {a + l, a}}));
        p.drawPolyline(QPolygonF({{b - l, a}, {b, a}, {b, a + l}}));
        p.drawPolyline(QPolygonF({{b, b - l}, {b, b}, {b - l, b}}));
        p.drawPolyline(QPolygonF({{a + l, b}, {a, b}, {a, b - l}}));
        p.setPen(Qt::NoPen);
        p.setBrush(c);
        p.drawEllipse(QPointF(8.0, 8.0), 2.0, 2.0);
        break;
    }
    case IconKind::Follow: { // a sight: a ring with four ticks around a dot
        QPen pen(c, 1.5);
        pen.setCapStyle(Qt::FlatCap);
        p.setPen(pen);
        p.setBrush(Qt::NoBrush);
        p.drawEllipse(QPointF(8.0, 8.0), 4.5, 4.5);
        for (const auto& [from, to] : {std::pair{QPointF(8.0, 0.5), QPointF(8.0, 3.5)},
                                       {QPointF(8.0, 12.5), QPointF(8.0, 15.5)},
                                       {QPointF(0.5, 8.0), QPointF(3.5, 8.0)},
                                       {QPointF(12.5, 8.0), QPointF(15.5, 8.0)}})
            p.drawLine(from, to);
        p.setPen(Qt::NoPen);
        p.setBrush(c);
        p.drawEllipse(QPointF(8.0, 8.0), 1.5, 1.5);
        break;
    }
    case IconKind::Open: { // a folder outline
        QPen pen(c, 1.4);
        pen.setJoinStyle(Qt::RoundJoin);
        p.setPen(pen);
        p.setBrush(Qt::NoBrush);
        p.drawPolygon(
            QPolygonF({{1.5, 3.5}, {6.0, 3.5}, {7.5, 5.0}, {14.5, 5.0}, {14.5, 13.0}, {1.5, 13.0}}));
        p.drawLine(QPointF(1.5, 7.0), QPointF(14.5, 7.0));
        break;
    }
    }
}

} // namespace

QIcon makeIcon(IconKind kind, const QColor& color) {
    QIcon icon;
    for (QIcon::Mode mode : {QIcon::Normal, QIcon::Disabled}) {
        const QColor c =
            mode == QIcon::Disabled ? QColor(color.red(), color.green(), color.blue(), 90) : color;
        for (int scale : {1, 2, 3}) {           // crisp at every common devicePixelRatio
            QPixmap pm(16 * scale, 16 * scale); // QIcon picks by device-pixel size
            pm.fill(Qt::transparent);
            QPainter p(&pm);
            p.scale(scale, scale);
            paint(p, kind, c);
            p.end();
            icon.addPixmap(pm, mode);
        }
    }
    return icon;
}

} // namespace flowscope
