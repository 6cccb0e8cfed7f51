// Flowscope picture: the covariance cone, what the Particles tab's Cone view shows of a scene's moment
// trajectories (render/ConeData), without a widget.
//
// A 2 x 2 covariance Sigma = [[a, c], [c, b]] is the point (a - b, 2c, a + b) of the solid cone
// z >= sqrt(x^2 + y^2) (docs/math/cone.md). Two modes:
//  * Cone: the cone surface, its rank-one boundary lines, the trajectories Sigma(t) as curves coloured by the
//    scene's hint (initial 2c or final trace), an orthographic camera at (elevation, azimuth) with a trace
//    scale, axis names and an orientation gizmo;
//  * Disc: the trace-1 slice Sigma / tr Sigma, the unit disc whose circle is the rank-one matrices.
// Dots mark each trajectory at a time t (where its drawn curve is at t: a finished run's dot stays on its end
// point, a curve cut at the top keeps its dot where it leaves), and the particles' own covariance (d = 2)
// when given. The curves are drawn whole (the app's view, where the dots move along them) or up to t (an
// animation: they grow as it runs). A legend and a colour bar say what is drawn, a red banner at the top why
// something stopped (an animation's particle run). Frames are composed as the particle picture's: prepare(),
// drawGl() (OpenGL, into the current framebuffer) and paintOver() (QPainter text), or render() for a headless
// frame.
#pragma once

#include "engine/core/Types.h"
#include "engine/dynamics/Simulation.h"
#include "engine/scene/Scene.h"
#include "render/ConeData.h"
#include "render/ConeRenderer.h"
#include "render/GlApi.h"
#include "render/OffscreenTarget.h"
#include "render/picture/GlPicture.h"
#include "render/picture/PlotDecorations.h"

#include <QColor>
#include <QFont>
#include <QImage>
#include <QLineF>
#include <QMatrix4x4>
#include <QPointF>
#include <QRectF>
#include <QSizeF>
#include <QString>
#include <QStringList>
#include <QVector3D>

#include <Eigen/Dense>

#include <memory>
#include <optional>
#include <string>
#include <vector>

class QPainter;

namespace flowscope {

class ConePicture final : public GlPicture<ConeRenderer> {
  public:
    ConePicture();

    // ---- what is shown
    // A new scene: its view hints (mode, camera, reference rays), no trajectories yet. Returns why the cone
    // cannot show the scene (then that is the picture's message), or nullopt: the caller solves it
    // (computeConeData) and hands the result to setData().
    std::optional<std::string> setScene(const Scene& scene);
    // The solved trajectories (their message, if any, replaces the picture); colours from the hints.
    void setData(std::shared_ptr<const ConeData> data);
    std::shared_ptr<const ConeData> data() const { return data_; }
    // While a solve runs, the legend says so.
    void setSolving(bool on) { solving_ = on; }
    bool solving() const { return solving_; }
    const QString& message() const { return message_; }
    const ConeHints& hints() const { return hints_; }
    void setMode(ConeMode mode);
    ConeMode mode() const { return mode_; }
    void setTime(std::optional<double> t);
    // Curves drawn up to the time of setTime() (growing with it) instead of whole.
    void setCurvesToTime(bool on);
    bool curvesToTime() const { return curvesToTime_; }
    // A banner (white on red) at the top of the picture, e.g. why the particle run stopped; empty: none.
    void setBanner(const QString& text) { banner_ = text; }
    // The banner of the particle run's stop ("Particles: Diverged at t = 43.2" and the event's message), or
    // none for nullopt: what the animations and the app's cone view show once the particles stopped.
    void setParticleEvent(const std::optional<RunEvent>& event);
    const QString& banner() const { return banner_; }
    // The particles' covariance (2 x 2), drawn as a white dot; nullopt (or another size): none.
    void setCurrentCovariance(std::optional<Mat> cov);
    void setStyle(const PlotStyle& style);
    void setFont(const QFont& font) { font_ = font; }

    // ---- camera: elevation and azimuth in degrees (matplotlib's convention), zoom; the size in logical
    // pixels
    void setSize(QSizeF size);
    QSizeF size() const { return size_; }
    void resetCamera(); // the scene's hints
    void orbit(double dAzimuth, double dElevation);
    void zoomBy(double factor); // clamped to 1/4 .. 16
    // Where a cone point (x, y, z) lands in logical pixels (Disc: its x and y; the camera of the last
    // prepare(), or of the current state before any).
    QPointF project(const Eigen::Vector3d& conePoint) const;
    // The trace scale's foot and top in logical pixels (Cone mode).
    QLineF traceScale() const;
    // Where the last paintOver() put the legend, and the colour bar (empty: none, for one trajectory or one
    // colour).
    QRectF legendRect() const { return legendRect_; }
    QRectF colorBarRect() const { return colorBarRect_; }
    QRectF bannerRect() const { return bannerRect_; } // the last paintOver()'s banner; empty: none
    // Trajectory i as drawn: its points in the mode's coordinates (cone points, or Disc: z = 0), up to the
    // time of setTime() with curvesToTime(), else whole; a curve that rises above the height cap (Cone mode)
    // ends where it crosses it. And where its dot is drawn (none without a time).
    std::vector<Eigen::Vector3d> drawnCurve(std::size_t i) const;
    std::optional<Eigen::Vector3d> dotPosition(std::size_t i) const;
    const QStringList& legendLines() const { return legendLines_; } // the legend's text, one entry a line
    // Disc mode marks where the runs end: each group of converged runs at its limit Σ/tr Σ (on the circle
    // for a rank-one limit) and each group of blow-ups at its direction (Σ/tr Σ where the run stopped), as
    // a ring labelled with the group's size out of its kind's ("300 of 700 limits", "all 57 blow-ups"). A
    // group: the runs whose end lies within 0.05 of its first one's. Only a group of at least a quarter of
    // its kind is marked (runs that end everywhere, as Fig 3(a)'s 1184 blow-ups along the whole circle, have
    // no place to mark), at most three of each kind.
    struct DiscMark {
        Eigen::Vector2d point;
        int runs = 0;
        bool blowUp = false;
        int ofKind = 0; // the runs of its kind (converged or blown up) that have an end point
    };
    std::vector<DiscMark> discMarks() const;
    // The orientation gizmo of the last paintOver() (Cone mode): each axis's name, line and label box.
    struct GizmoPart {
        QString name;
        QLineF axis;
        QRectF label;
    };
    const std::vector<GizmoPart>& gizmo() const { return gizmo_; }

    // ---- drawing, after initialize() (GlPicture.h), with its OpenGL context current for all but paintOver
    void prepare();
    void drawGl(double dpr);
    void paintOver(QPainter& painter) const;
    void render(QImage& image, const OffscreenLayer& glLayer);

  private:
    void invalidate() override { geometryDirty_ = dotsDirty_ = true; }
    struct Camera {
        QMatrix4x4 mvp;
        QVector3D towardsEye;
    };

    double coneHeight() const;         // height of the drawn cone surface
    Eigen::Vector3d scaleBase() const; // foot of the trace scale, left of the cone
    Camera camera() const;
    std::optional<Eigen::Vector3d> placed(const Eigen::Vector3d& conePoint) const;
    // Trajectory i's curve up to `until` (+inf: whole), before decimation; `cut`: it ends at the cap.
    std::vector<Eigen::Vector3d> curveUntil(std::size_t i, double until, bool* cut = nullptr) const;
    void uploadGeometry();
    void uploadDots();
    void drawConeLabels(QPainter& p) const;
    void drawDiscLabels(QPainter& p) const;
    void drawDiscMarks(QPainter& p) const;
    void drawLegend(QPainter& p) const;
    void drawColorBar(QPainter& p) const;

    ConeHints hints_;
    ConeMode mode_ = ConeMode::Cone;
    std::shared_ptr<const ConeData> data_;
    std::vector<QColor> colors_;        // per trajectory
    std::vector<std::size_t> capIndex_; // per trajectory: its first point above the height cap (or its size)
    double colorMin_ = 0.0, colorMax_ = 1.0;
    bool solving_ = false;
    QString message_;
    std::optional<double> time_;
    bool curvesToTime_ = false;
    QString banner_;
    std::optional<Mat> current_;
    double elev_ = 20.0, azim_ = -60.0, zoom_ = 1.0;
    QSizeF size_{1, 1};
    PlotStyle style_;
    QFont font_;
    bool geometryDirty_ = true, dotsDirty_ = true;
    Camera painted_; // the camera of the last prepare()
    bool prepared_ = false;
    mutable QRectF legendRect_, colorBarRect_, bannerRect_;
    mutable QStringList legendLines_;
    mutable std::vector<GizmoPart> gizmo_;
};

} // namespace flowscope
