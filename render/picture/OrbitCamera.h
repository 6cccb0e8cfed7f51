// Flowscope picture: the 3-D camera of the particle view (d >= 3): an orbit around a target point.
//
// The eye sits at target + distance * (cos el cos az, cos el sin az, sin el) looking at the target, z up,
// with a perspective projection of vertical field of view fovY. Pixels are logical widget pixels (y down),
// as for ViewTransform. Free of GL and widgets so tests can compute where a point must appear.
#pragma once

#include <Eigen/Core>
#include <QMatrix4x4>
#include <QPointF>
#include <QSizeF>

namespace flowscope {

class OrbitCamera {
  public:
    void setViewportSize(QSizeF size) { viewport_ = size; }
    QSizeF viewportSize() const { return viewport_; }

    // Looks at the centre of the box [lo, hi] from a distance that shows all of it.
    void frame(const Eigen::Vector3d& lo, const Eigen::Vector3d& hi);
    void orbit(QPointF pixelDelta); // drag: 0.3 degrees per pixel; elevation clamped to +-89 degrees
    void zoom(double factor);       // > 1 moves closer

    // View-projection matrix for points given relative to `origin` (computed in double, then narrowed).
    QMatrix4x4 viewProjection(const Eigen::Vector3d& origin) const;
    // Where the eye is, and the depth of a world point (its distance from the eye along the view direction:
    // the clip w of the projection).
    Eigen::Vector3d eye() const;
    double depth(const Eigen::Vector3d& p) const { return (p - eye()).dot((target - eye()).normalized()); }
    // Logical pixel of a world point; false when it is behind the eye.
    bool worldToPixel(const Eigen::Vector3d& p, QPointF* pixel) const;

    double azimuthDegrees = -60.0, elevationDegrees = 25.0;
    double distance = 5.0;
    Eigen::Vector3d target = Eigen::Vector3d::Zero();
    double fovYDegrees = 35.0;

  private:
    Eigen::Matrix4d matrix() const; // view-projection in double, about the world origin
    QSizeF viewport_{1.0, 1.0};
};

} // namespace flowscope
