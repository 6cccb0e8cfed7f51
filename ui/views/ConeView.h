// Flowscope UI: the covariance-cone view, the moment trajectories of a 2-D Gaussian scene drawn in the cone
// of positive semi-definite 2x2 matrices (docs/math/gaussian.md#cone, #trace-slice, #cone-drawing;
// Castin et al. Figs 2, 3).
//
// Coordinates: Sigma = [[a, c], [c, b]] is the point (x, y, z) = (a - b, 2c, a + b). Sigma >= 0 iff
// z >= sqrt(x^2 + y^2): a round cone with apex Sigma = 0 and axis z (the isotropic matrices), whose boundary
// is the rank-one set; the fixed direction u = (cos th, sin th) gives the boundary ray r^2 (cos 2th,
// sin 2th, 1) (a generatrix). Horizontal planes are constant-trace slices.
//
// Cone mode: the cone as a translucent surface up to a little above the data, its rim, twelve generatrices,
// the trace-1 section, the cone's axis (Sigma ~ I), a trace scale at the left, an orientation gizmo for
// x = a - b, y = 2c, z = tr Sigma (axes drawn through the apex would cut across the figure), the scene's
// reference rays (and reference plane wedge) highlighted, one curve per initial covariance coloured with
// viridis (by initial y = 2c or by final trace, per the scene's "color_by" hint), its last state as a dot,
// and the state at the current time as a white-rimmed dot. Curves that rise above the height cap
// (ConeData.h) are cut there, and the legend says so. The camera is orthographic: left-drag orbits
// (azimuth, elevation), the wheel zooms, a double click restores the scene's view.
// Disc mode: the trace-1 slice Sigma / tr Sigma -> ((a - b)/(a + b), 2c/(a + b)) in the unit disc, whose
// boundary circle is the rank-one set and whose centre is Sigma ~ I; the same curves and dots, blow-ups
// running to the circle; reference rays are rings on the circle. Square aspect ratio.
//
// setScene() integrates the scene's initial Gaussians (solveAllMoments) on a background thread, one solve
// at a time: a newer scene drops the older result (and replaces a scene still waiting for its turn), and
// destroying the view during a solve neither blocks nor crashes (the result is delivered through a mailbox
// the destructor closes; the process joins still-running solves at exit, see runDetached).
// Overlay text is drawn with QPainter in logical pixels; GL line widths and point sizes are scaled by
// devicePixelRatioF.
#pragma once

#include "engine/core/Types.h"
#include "engine/scene/Scene.h"
#include "render/ConeData.h"
#include "render/ConeRenderer.h"
#include "render/GlApi.h"
#include "render/OffscreenTarget.h"
#include "render/picture/PlotDecorations.h"

#include <QColor>
#include <QImage>
#include <QLineF>
#include <QMatrix4x4>
#include <QOpenGLWidget>
#include <QPoint>
#include <QPointF>
#include <QSizeF>
#include <QString>

#include <Eigen/Dense>

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

class QPainter;

namespace flowscope {

class ConeView : public QOpenGLWidget {
    Q_OBJECT
  public:
    explicit ConeView(QWidget* parent = nullptr);
    ~ConeView() override;

    // Reads the view hints and starts integrating the scene's trajectories off the UI thread (message()
    // is set at once instead when the scene cannot be shown: d != 2, a non-Gaussian initial distribution,
    // attention without moment equations). Resets the camera and the mode to the hints.
    void setScene(const Scene& scene);
    void setMode(ConeMode mode);
    ConeMode mode() const { return mode_; }
    // Shows each trajectory's state at time t as a dot (interpolated between records; the last state after
    // its end). No dots before the first call.
    void setTime(double t);
    // The particle simulation's empirical 2x2 covariance, drawn as a large white dot; nullopt hides it.
    void setCurrentCovariance(std::optional<Mat> cov);

    bool solving() const { return solving_; }
    int trajectoryCount() const { return data_ ? int(data_->trajectories.size()) : 0; }
    // Why nothing is drawn (empty when the trajectories are or will be shown).
    QString message() const { return message_; }
    // The trajectories shown; null before the first solve finishes.
    std::shared_ptr<const ConeData> data() const { return data_; }
    const ConeHints& hints() const { return hints_; }
    // Empty when OpenGL 3.3 core was available; otherwise why nothing can be drawn.
    QString glError() const { return glError_; }

    // Where a cone point lands, in logical widget pixels, with the camera of the last paint. In Disc mode
    // the argument is a trace-1 slice point (x, y, ignored).
    QPointF projectToWidget(const Eigen::Vector3d& conePoint) const;
    // Cone mode: the trace scale at the left, from its foot (tr Σ = 0, the apex's height) to its top.
    QLineF traceScale() const;
    // Where the last paint put the legend box (logical pixels; empty before the first paint).
    QRectF legendRect() const { return legendRect_; }
    // Back to the scene's elevation, azimuth and zoom 1.
    void resetCamera();

    // Headless drawing (flowscope-cli render): the frame paintGL draws, for a widget that is never shown.
    // initializeOffscreen() takes the caller's current OpenGL context (gl: its entry points, alive until
    // releaseOffscreen(), which must run while that context is still current). renderOffscreen() draws
    // into `image` (the widget's size): the cone through `glLayer`, which runs it in a transparent
    // framebuffer and composites it over the background, then the labels, legend and colour bar.
    bool initializeOffscreen(const GlApi& gl, QString* whyNot);
    void releaseOffscreen();
    void renderOffscreen(QImage& image, const OffscreenLayer& glLayer);

  signals:
    // A solve finished: its trajectories (or its failure message) are now shown.
    void solved();

  protected:
    void initializeGL() override;
    void paintGL() override;
    void mousePressEvent(QMouseEvent* e) override;
    void mouseMoveEvent(QMouseEvent* e) override;
    void mouseReleaseEvent(QMouseEvent* e) override;
    void mouseDoubleClickEvent(QMouseEvent* e) override;
    void wheelEvent(QWheelEvent* e) override;

  private:
    struct Mailbox;
    struct Camera {
        QMatrix4x4 mvp;
        QVector3D towardsEye;
    };

    void startSolve(const Scene& scene); // for the current generation
    void deliver(std::uint64_t generation, std::shared_ptr<const ConeData> data);
    void releaseGL();
    double coneHeight() const;         // height of the drawn cone surface
    Eigen::Vector3d scaleBase() const; // foot of the trace scale, left of the cone
    Camera camera(QSizeF size) const;
    // World position of a cone point in the current mode (Disc: its trace-1 slice at z = 0), or nullopt
    // when it has none (trace <= 0, non-finite, or above the drawn cone).
    std::optional<Eigen::Vector3d> placed(const Eigen::Vector3d& conePoint) const;
    void uploadGeometry();
    void uploadDots();
    // One frame, in the order it is composed (paintGL, renderOffscreen): the camera and vertex buffers
    // brought up to date, the OpenGL part (`dpr` device pixels per logical pixel), the text over it.
    void prepareFrame();
    void drawScene(double dpr);
    void paintOver(QPainter& painter);
    void drawConeLabels(QPainter& p) const;
    void drawDiscLabels(QPainter& p) const;
    void drawLegend(QPainter& p) const;
    void drawColorBar(QPainter& p) const;

    std::shared_ptr<Mailbox> mailbox_;
    std::uint64_t generation_ = 0;
    ConeHints hints_;
    ConeMode mode_ = ConeMode::Cone;
    std::shared_ptr<const ConeData> data_;
    std::vector<QColor> colors_; // per trajectory
    double colorMin_ = 0.0, colorMax_ = 1.0;
    bool solving_ = false;
    bool workerBusy_ = false;     // a solve of this view is running
    std::optional<Scene> queued_; // the scene to solve when it finishes
    QString message_;
    std::optional<double> time_;
    std::optional<Mat> current_;

    double elev_ = 20.0, azim_ = -60.0, zoom_ = 1.0;
    bool dragging_ = false;
    QPoint lastMouse_;

    GlApi widgetGl_; // the widget's own context's entry points (headless: the caller's)
    ConeRenderer renderer_;
    PlotStyle style_;
    QString glError_;
    bool glReady_ = false;
    bool offscreen_ = false; // initializeOffscreen(): drawing in the caller's context
    bool geometryDirty_ = true;
    bool dotsDirty_ = true;
    Camera painted_; // the camera of the last paint
    QSizeF paintedSize_;
    mutable QRectF legendRect_;
    bool hasPainted_ = false;
};

} // namespace flowscope
