// Flowscope picture: the particle picture, what the Particles tab shows of a Snapshot, without a widget.
//
// The tokens as round points in the shown coordinates:
//  * the plane (d <= 2, or a 2-D projection: two axes or the top two principal directions) with a grid, under
//  a
//    2-D camera (ViewTransform: pan, zoom about a point);
//  * three coordinates (chosen axes, or the top three principal directions for d > 3) under an orbit camera.
// The layers (ParticleLayers.h) give the vertices; text (grid labels, 3-D axis names, the status box, the
// event banner) is painted with QPainter. A frame is composed in three passes, the same for the app's view
// (its QOpenGLWidget's context) and for a headless frame (a framebuffer of the caller's context):
//   prepare()                   the cameras and vertex buffers brought up to date
//   paintUnder(painter, ...)    the grid (and where the status box goes)
//   drawGl(dpr, ...)            points and lines, OpenGL, into the current framebuffer
//   paintOver(painter, ...)     the text over them
// render() does the three for a headless frame. Views add input (camera moves, picking, drawing tokens) and
// the heads-up display; the exporter adds a caption.
#pragma once

#include "engine/runner/Snapshot.h"
#include "engine/scene/Scene.h"
#include "render/GaussianOverlay.h"
#include "render/GlApi.h"
#include "render/OffscreenTarget.h"
#include "render/PointRenderer.h"
#include "render/picture/GlPicture.h"
#include "render/picture/Hud.h"
#include "render/picture/OrbitCamera.h"
#include "render/picture/ParticleLayers.h"
#include "render/picture/PlotDecorations.h"
#include "render/picture/ViewTransform.h"

#include <QImage>
#include <QMatrix4x4>
#include <QRectF>
#include <QSizeF>

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <utility>

class QPainter;

namespace flowscope {

struct ProjectionSpec {
    int dims = 2;                     // 2: plane, 3: orbit camera (needs d >= 3)
    bool pca = false;                 // principal directions of the cloud instead of coordinate axes
    std::array<int, 3> axes{0, 1, 2}; // coordinate axes shown (ignored with pca)
};

class ParticlePicture final : public GlPicture<PointRenderer> {
  public:
    // ---- what is shown
    // The scene the snapshots come from: the default projection, the Gaussian layer, the cluster tolerance.
    // Frames the next snapshot.
    void setScene(const Scene& scene);
    const std::optional<Scene>& scene() const { return scene_; }
    // Live edits: the Gaussian continues from the shown time with the new parameters.
    void setAttention(const AttentionSpec& spec);
    void setIntegrator(const IntegratorSpec& spec);
    // Shows `s`; false when it is the one already shown. A snapshot of a new run (another generation) frames
    // the view; GPU-resident runs republish the same downloaded tokens with new device positions, which keep
    // the vertices (and the speed's previous snapshot).
    bool show(std::shared_ptr<const Snapshot> s);
    const std::shared_ptr<const Snapshot>& shown() const { return shown_; }

    void setStyle(const PlotStyle& style);
    const PlotStyle& style() const { return style_; }
    void setProjection(const ProjectionSpec& p);
    const ProjectionSpec& projection() const { return projection_; }
    bool is3D() const { return projection_.dims == 3; }
    const Mat& basis() const { return frame_.basis; } // d x k: the shown coordinates are x^T basis

    // The layers (ParticleLayers.h); setting one through these marks the vertices for a rebuild.
    void setColorBy(ColorBy c);
    ColorBy colorBy() const { return tokens_.colorBy; }
    // The line layers a user switches on and off, in the Display menu's order:
    // - Gaussian: the moment ODE's ellipses (GaussianLayer), on by default;
    // - Parking: causal attention on the circle (hasParkingPicture, d = 2), the Rényi-parking leaders of the
    //   scene's initial tokens (ParkingLayer), on by default; parkingAvailable() says whether the scene has
    //   them;
    // - HardmaxCells: hardmax attention in the plane (hasHardmaxCells), the boundaries of the keys' cells
    //   (HardmaxLayer), on by default; hardmaxCellsAvailable() says whether the scene has them;
    // - Trails: fading paths over the recorded frames (TrailsLayer), off by default.
    enum class Layer { Gaussian, Parking, HardmaxCells, Trails };
    static constexpr int kLayerCount = 4;
    static_assert(int(Layer::Trails) + 1 == kLayerCount);
    void setLayer(Layer layer, bool on);
    bool layer(Layer layer) const;
    bool parkingAvailable() const { return parking_.leaders.rows() > 0; }
    const ParkingLayer& parkingLayer() const { return parking_; }
    bool hardmaxCellsAvailable() const { return hardmax_.active; }
    const HardmaxLayer& hardmaxLayer() const { return hardmax_; }
    // The status box (t, step, N, d) where there is no heads-up display (on by default); off for pictures
    // of fixed clouds that say what they show themselves (the Models tab's layers).
    void setStatusBox(bool on) { statusBox_ = on; }
    bool statusBox() const { return statusBox_; }
    const GaussianOverlay& overlay() const { return overlay_; }
    void setPicked(int token, Vec weights); // the attention layer; -1: none
    int picked() const { return attention_.token; }

    // ---- cameras: the 2-D one (plane) and the 3-D one; the picture's size in logical pixels
    void setSize(QSizeF size);
    QSizeF size() const { return size_; }
    ViewTransform& view() { return view_; }
    const ViewTransform& view() const { return view_; }
    OrbitCamera& camera() { return camera_; }
    const OrbitCamera& camera() const { return camera_; }
    // Frames the shown tokens (and the sphere they live on, if they do) at the next prepare() (when the
    // final size is known).
    void frameAll() { framePending_ = true; }
    // Follow: one step of `seconds` of the camera after the shown tokens (after prepare()). The camera is
    // first carried along by the move of the tokens' box centre since the last step, so that a cloud that
    // drifts stays where it was in the picture (the grid's numbers run instead: a fast drift does not leave
    // the camera behind); then it eases towards what frameAll() frames, each step closing 1 - exp(-seconds /
    // kFollowSeconds) of the way (in the plane the centre linearly and the zoom on a log scale; in 3-D the
    // target and the distance), so that the view glides as the cloud spreads, contracts or is followed again
    // instead of jumping. The tokens' box stays in the picture at every step: in the plane the view is pushed
    // out by the box (kKeepMargin from the border) when it spreads faster than the easing; in 3-D the camera
    // then takes the framing at once. Returns whether the camera is still moving. resetFollow(): the next
    // step carries nothing (following starts again, or the coordinates changed).
    static constexpr double kFollowSeconds = 0.35;
    static constexpr double kKeepMargin = 0.02; // of the picture's width and height
    bool follow(double seconds);
    void resetFollow() { followed_.reset(); }
    // Where a point in the shown coordinates, or a d-dimensional token, is drawn (logical pixels; the camera
    // as of the last prepare()).
    std::optional<QPointF> shownToPixel(const Vec& shown) const;
    std::optional<QPointF> worldToPixel(const Vec& x) const;
    // The shown tokens in the shown coordinates (N x k), as of the last prepare() when it drew the shown
    // snapshot, else computed now.
    Tokens shownCoordinates() const;
    // The shown tokens the camera leaves outside the picture (finite ones only; in 3-D also those behind the
    // camera), and where they are: the point of the picture's border towards their centroid, seen from the
    // centre. paintOver() marks it with an arrow and says how many.
    struct OffView {
        long count = 0;
        QPointF toward; // on the border, logical pixels (meaningful when count > 0)
    };
    OffView offView() const;
    // Point diameter in logical pixels for the shown token count: big for small clouds, small for large ones.
    double pointSize() const;
    // What the heads-up display shows for the shown snapshot, with the caller's frame time.
    HudStats hudStats(double frameMs) const;
    // Tokens on the unit sphere in 3-D: the sphere's wireframe is drawn, and a depth cue fades the far side
    // of the sphere and of the cloud towards the background (and shrinks far points). Its range: the depth
    // (clip w) of the sphere's nearest and farthest points, the camera as of the last prepare(); none (0, 0)
    // otherwise.
    bool showsSphere() const { return sphere_.enabled && is3D(); }
    std::pair<double, double> depthCueRange() const;
    // How far the grid's tick labels reach in from the left and up from the bottom edge with `font` (the
    // plane only; 0 in 3-D): an overlay kept out of these bands covers no label.
    QSizeF tickLabelBands(const QFont& font) const;
    // The names of the plane's horizontal and vertical axes ("x0", "x1", or "PC1", "PC2"), drawn at the ends
    // of the tick labels' bands.
    std::pair<QString, QString> axisNames() const;

    // ---- drawing, after initialize() (GlPicture.h: the point and line programs), with its OpenGL context
    // current for all but paintUnder and paintOver
    void prepare();
    // The grid (plane); returns the status box's rectangle (empty with `hud`: the heads-up display shows it).
    QRectF paintUnder(QPainter& painter, bool hud) const;
    // Points and lines into the bound framebuffer, `dpr` device pixels per logical pixel. The tokens come
    // from the snapshot's device copy when its buffers belong to `shareGroup` (the drawing context's share
    // group; null: never), else from the uploaded vertices. Returns whether they came from the device.
    bool drawGl(double dpr, const void* shareGroup = nullptr);
    // 3-D axis names, the status box (without `hud`), the event banner, or "No scene".
    void paintOver(QPainter& painter, bool hud, const QRectF& statusBox) const;
    // A whole headless frame into `image` (the picture's size): filled with the background, paintUnder,
    // drawGl through `glLayer` (which draws it in a transparent framebuffer and lays it over the image),
    // paintOver.
    void render(QImage& image, bool hud, const OffscreenLayer& glLayer);

  private:
    void invalidate() override { pointsDirty_ = linesDirty_ = true; }
    void updateBasis(const Tokens* from);
    void updateTheoryLayers(); // the parking and hardmax layers' data from scene_
    void rebuildFrame();       // frame_ for shown_
    QMatrix4x4 viewProjection() const;
    void paintAxisNames(QPainter& painter) const;
    void paintOffView(QPainter& painter) const;
    // Whether the corners of the shown tokens' box (of the last prepare()) are drawn inside the picture less
    // `inset` logical pixels on each side; then so is every finite token.
    bool boxInside(double insetX, double insetY) const;
    // What framing and following fit in the view: the tokens' box, and the whole sphere with it when the
    // tokens live on it (showsSphere()).
    std::pair<Eigen::Vector3d, Eigen::Vector3d> framingBox() const;

    std::optional<Scene> scene_;
    std::shared_ptr<const Snapshot> shown_, previous_;
    GaussianOverlay overlay_;
    PlotStyle style_;
    ProjectionSpec projection_;
    std::shared_ptr<const Snapshot> framed_; // the snapshot frame_ holds (shown_ once prepared)
    ParticleFrame frame_;                    // framed_ in the shown coordinates
    TokensLayer tokens_;
    // The `enabled` flag of a switched layer; Self is ParticlePicture or const ParticlePicture.
    template <class Self> static auto& layerSwitch(Self& self, Layer layer) {
        const std::array flags{&self.gaussian_.enabled, &self.parking_.enabled, &self.hardmax_.enabled,
                               &self.trails_.enabled};
        return *flags[std::size_t(layer)];
    }

    TrailsLayer trails_;
    GaussianLayer gaussian_;
    AttentionLayer attention_;
    AxesLayer axes_;
    SphereLayer sphere_;
    ParkingLayer parking_;
    HardmaxLayer hardmax_;
    ViewTransform view_;
    OrbitCamera camera_;
    QSizeF size_{1, 1};
    bool framePending_ = false, pointsDirty_ = true, linesDirty_ = true;
    std::optional<Eigen::Vector3d> followed_; // the box centre at the last follow step
    bool statusBox_ = true;
};

} // namespace flowscope
