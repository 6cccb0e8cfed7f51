// Flowscope UI: the particle view, an OpenGL plot of the token cloud of the latest Snapshot.
//
// Pulls snapshots from a source on a ~60 Hz timer (the worker publishes; the view never waits on it), draws
// tokens as round points coloured by token index (viridis), coordinates 0 and 1 for d >= 2, over a grid, with
// a status overlay and an event banner. Drag pans, the wheel zooms about the cursor, a double click frames
// everything; the view frames the cloud by itself when a new scene's first snapshot arrives.
#pragma once

#include "engine/runner/SimulationRunner.h"
#include "ui/PlotDecorations.h"
#include "ui/PointRenderer.h"
#include "ui/ViewTransform.h"

#include <QOpenGLWidget>
#include <QPoint>
#include <QTimer>

#include <functional>
#include <memory>

namespace flowscope {

class ParticleView : public QOpenGLWidget {
    Q_OBJECT
  public:
    using SnapshotSource = std::function<std::shared_ptr<const Snapshot>()>;

    explicit ParticleView(QWidget* parent = nullptr);
    ~ParticleView() override;

    void setSource(SnapshotSource source);
    // Pulls the latest snapshot now (the timer does this every ~16 ms) and schedules a repaint if it changed.
    void refresh();
    // The snapshot the next (or last) frame draws.
    std::shared_ptr<const Snapshot> displayedSnapshot() const { return shown_; }
    // The camera of the last painted frame; logical pixels (multiply by devicePixelRatioF for framebuffer
    // pixels).
    const ViewTransform& transform() const { return view_; }
    // Point diameter in logical pixels for the displayed token count.
    double pointSize() const;
    // Frames the displayed tokens (applied at the next paint, when the widget's final size is known).
    void frameAll();
    // Empty when OpenGL 3.3 core was available; otherwise why nothing can be drawn.
    QString glError() const { return glError_; }

  signals:
    void snapshotChanged();

  protected:
    void initializeGL() override;
    void resizeGL(int w, int h) override;
    void paintGL() override;
    void mousePressEvent(QMouseEvent* e) override;
    void mouseMoveEvent(QMouseEvent* e) override;
    void mouseReleaseEvent(QMouseEvent* e) override;
    void mouseDoubleClickEvent(QMouseEvent* e) override;
    void wheelEvent(QWheelEvent* e) override;

  private:
    void releaseGL();
    void uploadPoints();
    void applyPendingFrame();

    SnapshotSource source_;
    std::shared_ptr<const Snapshot> shown_;
    ViewTransform view_;
    PlotStyle style_;
    PointRenderer renderer_;
    QTimer timer_;
    QString glError_;
    bool glReady_ = false;
    bool uploadPending_ = false;
    bool framePending_ = false;
    bool dragging_ = false;
    QPoint lastMouse_;
};

} // namespace flowscope
