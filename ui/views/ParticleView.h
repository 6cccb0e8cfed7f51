// Flowscope UI: the particle view, an OpenGL plot of the token cloud of the latest Snapshot.
//
// Pulls snapshots from a source on a timer (the worker publishes; the view never waits on it) and draws the
// tokens as round points:
//  * d <= 2: the plane (d = 1 on the x axis) with a grid; drag pans, the wheel zooms about the cursor.
//  * d >= 3: a 3-D orbit camera over three coordinates (chosen axes, or the top three principal directions
//    of the cloud for d > 3); drag orbits, the wheel zooms. A 2-D projection (two axes or PCA) is available
//    for every d.
// Colours: token index, speed |dx/dt| (finite difference between the two latest snapshots), cluster
// (greedy leader clustering at the scene's cluster tolerance) or attention entropy H_i / log N (of the latest
// recorded frame; 0: attends to one token, 1: uniform). Optional fading trails over the recorded
// history. The Gaussian of the mean/covariance ODE (GaussianOverlay) is drawn as 1-sigma and 2-sigma
// ellipses (three principal ellipses each in 3-D): the mean-field picture over the particles.
// Hovering a token (within 10 pixels) picks it: lines to every other token with opacity proportional to its
// attention weight P_ij (normalized variants), and the largest weights in a tooltip.
// A double click (or frameAll()) frames everything; a new scene is framed automatically.
//
// What is drawn is the view's ParticlePicture (render/picture, the same picture exports draw without a
// widget); the view adds the mouse (camera moves, picking, drawing tokens), the heads-up display and its own
// OpenGL context (PictureGlView).
#pragma once

#include "engine/attention/VelocityField.h"
#include "engine/runner/SimulationRunner.h"
#include "render/picture/ParticlePicture.h"
#include "ui/views/PictureGlView.h"

#include <QElapsedTimer>
#include <QImage>
#include <QPoint>
#include <QTimer>

#include <array>
#include <functional>
#include <memory>
#include <optional>

namespace flowscope {

class ImGuiLayer;

class ParticleView : public PictureGlView {
    Q_OBJECT
  public:
    using SnapshotSource = std::function<std::shared_ptr<const Snapshot>()>;

    explicit ParticleView(QWidget* parent = nullptr);
    ~ParticleView() override;

    void setSource(SnapshotSource source);
    // The scene the snapshots come from: projection defaults, the Gaussian overlay, token picking.
    void setScene(const Scene& scene);
    // Live edits: the overlay continues from the current time with the new parameters; picking uses them.
    void setAttention(const AttentionSpec& spec);
    void setIntegrator(const IntegratorSpec& spec);

    // Pulls the latest snapshot now (the timer does this every few ms) and schedules a repaint if it changed.
    void refresh();
    // Shows a fixed snapshot (the time scrubber's preview) instead of the source's until cleared (null).
    void setPreview(std::shared_ptr<const Snapshot> preview);
    std::shared_ptr<const Snapshot> displayedSnapshot() const { return picture_.shown(); }

    void setPlotStyle(const PlotStyle& style) {
        picture_.setStyle(style);
        update();
    }
    // The ImGui heads-up display and quick sliders (on by default).
    void setHudVisible(bool on);
    bool hudVisible() const { return hudVisible_; }
    // Without the heads-up display: whether the status box (t, step, N, d) is drawn instead (default on).
    void setStatusVisible(bool on) {
        picture_.setStatusBox(on);
        update();
    }
    // Whether the last frame drew the tokens straight from GPU memory (Snapshot::device).
    bool drewFromDevice() const { return drewFromDevice_; }
    void setColorBy(ColorBy c);
    ColorBy colorBy() const { return picture_.colorBy(); }
    // The picture's line layers (ParticlePicture::Layer: the Gaussian overlay, the Rényi-parking leaders, the
    // hardmax cells, the trails).
    using Layer = ParticlePicture::Layer;
    void setLayer(Layer layer, bool on);
    bool layer(Layer layer) const { return picture_.layer(layer); }
    bool overlayAvailable() const { return picture_.overlay().available(); }
    const GaussianOverlay& overlay() const { return picture_.overlay(); }
    QString overlayReason() const { return QString::fromStdString(picture_.overlay().reason()); }
    bool parkingAvailable() const { return picture_.parkingAvailable(); }
    bool hardmaxCellsAvailable() const { return picture_.hardmaxCellsAvailable(); }
    void setProjection(const ProjectionSpec& p);
    const ProjectionSpec& projection() const { return picture_.projection(); }
    bool is3D() const { return picture_.is3D(); }
    // The d x k matrix whose columns span the shown coordinates.
    const Mat& projectionBasis() const { return picture_.basis(); }
    // What the view draws (and what an export of it draws the same way).
    const ParticlePicture& picture() const { return picture_; }
    // Where a d-dimensional point is drawn, in logical pixels (camera of the last painted frame).
    std::optional<QPointF> worldToPixel(const Vec& x) const;

    // The 2-D camera (d <= 2 or a 2-D projection) and the 3-D one.
    const ViewTransform& transform() const { return picture_.view(); }
    const OrbitCamera& camera() const { return picture_.camera(); }
    // Point diameter in logical pixels for the displayed token count.
    double pointSize() const { return picture_.pointSize(); }
    // Frames the displayed tokens (applied at the next paint, when the widget's final size is known).
    void frameAll();
    // Follow (on by default): every paint eases the camera towards framing the displayed tokens
    // (ParticlePicture::follow), so the view glides after a cloud that moves or spreads and keeps it in view.
    // Panning or zooming (in 3-D zooming; orbiting keeps it) turns it off; then tokens outside the view are
    // counted and pointed at (ParticlePicture::offView).
    void setFollow(bool on);
    bool follow() const { return follow_; }
    // What the heads-up display shows for the displayed snapshot (and the frame time of the last paints).
    HudStats hudStats() const;
    // The run's play state as its owner's Play/Pause control shows it: the HUD then says the same ("running"
    // or "paused") rather than the state the displayed snapshot was published in. Unset (a view without an
    // owner): the snapshot's.
    void setRunState(std::optional<bool> playing);

    // The picked (hovered) token, -1 when none; pick(i) does it programmatically (tests, keyboard).
    int pickedToken() const { return picture_.picked(); }
    void pick(int token);
    // The picked token's attention row (empty when none or the variant has no distribution).
    const Vec& pickedWeights() const { return pickedWeights_; }
    // Mean of the last paintGL() durations (ms) over about a second.
    double frameMilliseconds() const { return frameMs_; }
    ImGuiLayer* imgui() const { return imgui_.get(); }
    // Where the quick sliders were drawn in the last frame (logical pixels), for tests and tours.
    const QuickSlidersLayout& quickLayout() const { return quickLayout_; }
    // What the quick sliders show for the run rate (the window's speed controls set it too).
    void setRate(double stepsPerSecond, bool maxSpeed);
    // The V-scale slider back to 1 (V was set from elsewhere).
    void resetValueScale() { quickVScale_ = 1.0; }

    // Drawing initial tokens: while on, a left drag adds points along the stroke (one every kDrawSpacing
    // logical pixels) instead of panning; each finished stroke emits pointsDrawn() with every point drawn
    // since drawing started. The points lie in the plane of the 2-D projection, x = basis * (u, v) (other
    // coordinates 0 for an axis projection); a 3-D view switches to its 2-D projection.
    static constexpr double kDrawSpacing = 4.0;
    void setDrawing(bool on);
    bool drawing() const { return drawing_; }
    const Tokens& drawnPoints() const { return drawn_; }
    void clearDrawnPoints();

  signals:
    void snapshotChanged();
    // A quick slider of the heads-up display moved (beta, V scale, steps/s).
    void quickBetaChanged(double beta);
    void quickValueScaleChanged(double scale); // V = scale * (V when the scene or the matrix editor set it)
    void quickRateChanged(double stepsPerSecond, bool maxSpeed);
    void pointsDrawn(const Tokens& points); // N x d, every point since drawing started
    void drawingChanged(bool on);
    void followChanged(bool on);   // also when a pan or zoom turned it off
    void pickedChanged(int token); // the hovered token (pick()), -1 when none

  protected:
    bool initializePicture(const GlApi& gl, std::string* whyNot) override;
    void releasePicture() override;
    void glInitialized() override;
    void dragged(QPointF delta) override;
    void zoomed(double factor, QPointF at) override;
    void resetView() override;
    void resizeGL(int w, int h) override;
    void paintGL() override;
    void mousePressEvent(QMouseEvent* e) override;
    void mouseMoveEvent(QMouseEvent* e) override;
    void mouseReleaseEvent(QMouseEvent* e) override;
    void leaveEvent(QEvent* e) override;
    void keyPressEvent(QKeyEvent* e) override;

  private:
    void addDrawnPoint(QPointF pixel);
    void drawDrawnPoints(QPainter& painter);
    void updatePickWeights();
    void drawHud();

    SnapshotSource source_;
    std::shared_ptr<const Snapshot> preview_;
    std::unique_ptr<VelocityField> pickField_; // the picked token's attention row
    ParticlePicture picture_;
    std::unique_ptr<ImGuiLayer> imgui_;
    QTimer timer_;
    bool hudVisible_ = true;
    bool drewFromDevice_ = false;   // the last frame's points came from GPU memory
    bool softwareRenderer_ = false; // Mesa llvmpipe/softpipe: refresh at 30 Hz
    bool drawing_ = false;
    Tokens drawn_;      // drawn points (m x d)
    QPointF lastDrawn_; // pixel of the stroke's last point
    bool stroking_ = false;
    bool userCamera_ = false; // the user panned, zoomed or orbited since the scene started
    bool follow_ = true;
    QElapsedTimer followClock_; // since the last follow step
    Vec pickedWeights_;
    QElapsedTimer frameClock_;
    double frameMs_ = 0.0;
    double quickBeta_ = 1.0, quickVScale_ = 1.0, quickRate_ = WorkerLoop::kDefaultStepsPerSecond;
    bool quickMaxSpeed_ = false;
    QuickSlidersLayout quickLayout_;
    std::optional<bool> runState_;
};

} // namespace flowscope
