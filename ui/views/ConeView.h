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

#include "render/picture/ConePicture.h"
#include "ui/views/PictureGlView.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>

namespace flowscope {

// The widget around a ConePicture (render/picture): the background solve, the camera under the mouse, and
// the widget's own OpenGL context. What it draws is the picture's; see ConePicture.h.
class ConeView : public PictureGlView {
    Q_OBJECT
  public:
    explicit ConeView(QWidget* parent = nullptr);
    ~ConeView() override;

    void setScene(const Scene& scene);
    void setMode(ConeMode mode);
    ConeMode mode() const { return picture_.mode(); }
    void setTime(double t);
    void setCurrentCovariance(std::optional<Mat> cov);
    // Why the particle run stopped, as a red banner at the top of the picture
    // (ConePicture::setParticleEvent); nullopt: no banner.
    void setParticleEvent(const std::optional<RunEvent>& event);
    QString banner() const { return picture_.banner(); }
    QRectF bannerRect() const { return picture_.bannerRect(); } // of the last paint; empty: none

    bool solving() const { return picture_.solving(); }
    int trajectoryCount() const { return picture_.data() ? int(picture_.data()->trajectories.size()) : 0; }
    QString message() const { return picture_.message(); }
    std::shared_ptr<const ConeData> data() const { return picture_.data(); }
    const ConeHints& hints() const { return picture_.hints(); }
    const ConePicture& picture() const { return picture_; }

    // Where a cone point lands in the widget (logical pixels), the trace scale and the legend (the camera of
    // the last paint).
    QPointF projectToWidget(const Eigen::Vector3d& conePoint) const { return picture_.project(conePoint); }
    QLineF traceScale() const { return picture_.traceScale(); }
    QRectF legendRect() const { return picture_.legendRect(); }
    void resetCamera();

  signals:
    void solved(); // a solve's result is shown

  protected:
    bool initializePicture(const GlApi& gl, std::string* whyNot) override;
    void releasePicture() override;
    bool canDrag() const override;
    void dragged(QPointF delta) override;
    void zoomed(double factor, QPointF at) override;
    void resetView() override { resetCamera(); }
    void resizeGL(int w, int h) override;
    void paintGL() override;

  private:
    struct Mailbox;

    // The moment trajectories of one scene, solved off the UI thread.
    using Solve = std::function<ConeData()>;
    void startSolve(Solve solve); // for the current generation
    void deliver(std::uint64_t generation, std::shared_ptr<const ConeData> data);

    std::shared_ptr<Mailbox> mailbox_;
    std::uint64_t generation_ = 0;
    bool workerBusy_ = false; // a solve of this view is running
    Solve queued_;            // the newest scene's solve, started when the running one finishes
    ConePicture picture_;
};

} // namespace flowscope
