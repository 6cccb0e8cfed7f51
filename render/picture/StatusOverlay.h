// Flowscope picture: the text drawn over a particle view: run status (t, step, N, steps/s) in a corner, and a
// red banner when the run stopped with an event (divergence, ...) or an edit failed.
#pragma once

#include <QRectF>
#include <QString>

class QPainter;

namespace flowscope {

struct RunEvent;
struct Snapshot;

// Two lines: "t = 1.250 / 10   step 63 / 500" and "N = 2048   d = 2   120 steps/s".
QString statusText(const Snapshot& s);
// Empty when there is nothing to report; otherwise a headline ("Diverged at t = 3.217") and, on the next
// line, the engine's message.
QString bannerText(const Snapshot& s);
// The same two lines for a run's event alone, the headline after `subject` ("Particles: Diverged at t
// = 3.217" with subject "Particles: "): what the cone and disc animations say when their particle run stops.
QString eventBannerText(const RunEvent& e, const QString& subject = {});

// The rectangle the status box covers in the top-left corner of `area` (for others to keep clear of it).
QRectF statusRect(QPainter& painter, const QRectF& area, const Snapshot& s);
// Draws the status box; returns statusRect().
QRectF drawStatus(QPainter& painter, const QRectF& area, const Snapshot& s);
// Draws the banner centred at the top of `area`, moved below `avoid` where they would overlap.
void drawBanner(QPainter& painter, const QRectF& area, const QRectF& avoid, const Snapshot& s);
// Draws `text` as a banner there (red: `alarm`, else amber); returns its box (empty for no text).
QRectF drawBannerText(QPainter& painter, const QRectF& area, const QRectF& avoid, const QString& text,
                      bool alarm);

} // namespace flowscope
