// Flowscope picture: the text drawn over a particle view: run status (t, step, N, steps/s) in a corner, and a
// red banner when the run stopped with an event (divergence, ...) or an edit failed.
#pragma once

#include <QRectF>
#include <QString>

class QPainter;

namespace flowscope {

struct Snapshot;

// Two lines: "t = 1.250 / 10   step 63 / 500" and "N = 2048   d = 2   120 steps/s".
QString statusText(const Snapshot& s);
// Empty when there is nothing to report; otherwise a headline ("Diverged at t = 3.217") and, on the next
// line, the engine's message.
QString bannerText(const Snapshot& s);

// The rectangle the status box covers in the top-left corner of `area` (for others to keep clear of it).
QRectF statusRect(QPainter& painter, const QRectF& area, const Snapshot& s);
// Draws the status box; returns statusRect().
QRectF drawStatus(QPainter& painter, const QRectF& area, const Snapshot& s);
// Draws the banner centred at the top of `area`, moved below `avoid` where they would overlap.
void drawBanner(QPainter& painter, const QRectF& area, const QRectF& avoid, const Snapshot& s);

} // namespace flowscope
