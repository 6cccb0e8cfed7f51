// Flowscope UI: draw your own 2-D data set for a flow to learn (issue 6, "points drawn by the user").
//
// PointCanvas is a square view of [-extent, extent]² (the Flows view's default window) with the integer grid
// and axes. Dragging with the left button sprays points: every mouse event adds `perStroke` points drawn
// uniformly in the brush disc around the cursor, from a seeded generator, so the same strokes make the same
// points. The right button erases the points inside the brush; the wheel resizes the brush. Points are rows
// (n x 2, world coordinates), the layout of flows::TrainerConfig::points.
//
// PointCanvasDialog wraps it with the point count, the brush size, Clear, Undo (the last stroke) and
// OK/Cancel, each with a tooltip.
#pragma once

#include "engine/core/Types.h"
#include "engine/flows/Datasets.h"

#include <QDialog>
#include <QPointF>
#include <QWidget>

#include <vector>

class QDoubleSpinBox;
class QLabel;
class QPushButton;

namespace flowscope {

// "1 point", "18 points": the count the dialog and the Training panel show.
QString pointCountText(int count);

class PointCanvas : public QWidget {
    Q_OBJECT
  public:
    static constexpr double kExtent = 4.0;
    static constexpr int kPerStroke = 6; // points sprayed per mouse event
    static constexpr int kMaxPoints = 100000;

    explicit PointCanvas(QWidget* parent = nullptr);

    const Mat& points() const { return points_; }
    void setPoints(const Mat& points); // n x 2; rows outside the canvas are kept (and not drawn)
    void clear();
    bool undo(); // removes the last stroke's points (or restores its erased ones); false when none

    double brush() const { return brush_; } // brush radius in world units
    void setBrush(double radius);

    // The square drawing area and the world <-> pixel maps (logical pixels, y up in the world).
    QRectF area() const;
    QPointF worldToPixel(QPointF world) const;
    QPointF pixelToWorld(QPointF pixel) const;

    QSize sizeHint() const override { return {520, 520}; }
    QSize minimumSizeHint() const override { return {240, 240}; }

  signals:
    void pointsChanged(int count);
    void brushChanged(double radius);

  protected:
    void paintEvent(QPaintEvent* e) override;
    void mousePressEvent(QMouseEvent* e) override;
    void mouseMoveEvent(QMouseEvent* e) override;
    void mouseReleaseEvent(QMouseEvent* e) override;
    void wheelEvent(QWheelEvent* e) override;
    void leaveEvent(QEvent* e) override;

  private:
    void spray(QPointF world);
    void erase(QPointF world);

    Mat points_ = Mat(0, 2);
    std::vector<Mat> history_; // the points before each stroke, for undo
    double brush_ = 0.3;
    flows::Rng rng_{1};
    Qt::MouseButton stroke_ = Qt::NoButton;
    QPointF cursor_{-1, -1};
};

class PointCanvasDialog : public QDialog {
    Q_OBJECT
  public:
    explicit PointCanvasDialog(const Mat& points, QWidget* parent = nullptr);
    const Mat& points() const;
    PointCanvas* canvas() const { return canvas_; }

  private:
    void updateCount(int count);

    PointCanvas* canvas_ = nullptr;
    QLabel* count_ = nullptr;
    QDoubleSpinBox* brush_ = nullptr;
    QPushButton* ok_ = nullptr;
};

} // namespace flowscope
