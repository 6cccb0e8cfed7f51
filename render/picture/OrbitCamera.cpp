#include "render/picture/OrbitCamera.h"

#include <Eigen/Geometry>

#include <algorithm>
#include <cmath>

namespace flowscope {

namespace {
constexpr double kDeg = M_PI / 180.0;
constexpr double kNear = 0.01; // near plane, as a fraction of the distance
} // namespace

void OrbitCamera::frame(const Eigen::Vector3d& lo, const Eigen::Vector3d& hi) {
    target = 0.5 * (lo + hi);
    const double radius = std::max(0.5 * (hi - lo).norm(), 1e-12);
    const double aspect = std::max(viewport_.width() / std::max(viewport_.height(), 1.0), 1e-3);
    const double halfFov = 0.5 * fovYDegrees * kDeg;
    const double fit = std::min(std::tan(halfFov), std::tan(halfFov) * aspect);
    distance = 1.08 * radius / std::sin(std::atan(fit));
}

void OrbitCamera::orbit(QPointF d) {
    azimuthDegrees -= 0.3 * d.x();
    elevationDegrees = std::clamp(elevationDegrees + 0.3 * d.y(), -89.0, 89.0);
}

void OrbitCamera::zoom(double factor) {
    if (factor > 0) distance /= factor;
}

Eigen::Vector3d OrbitCamera::eye() const {
    const double az = azimuthDegrees * kDeg, el = elevationDegrees * kDeg;
    return target +
           distance * Eigen::Vector3d(std::cos(el) * std::cos(az), std::cos(el) * std::sin(az), std::sin(el));
}

Eigen::Matrix4d OrbitCamera::matrix() const {
    const Eigen::Vector3d eye = this->eye();
    const Eigen::Vector3d f = (target - eye).normalized();
    const Eigen::Vector3d s = f.cross(Eigen::Vector3d::UnitZ()).normalized();
    const Eigen::Vector3d u = s.cross(f);
    Eigen::Matrix4d view = Eigen::Matrix4d::Identity();
    view.block<1, 3>(0, 0) = s.transpose();
    view.block<1, 3>(1, 0) = u.transpose();
    view.block<1, 3>(2, 0) = -f.transpose();
    view(0, 3) = -s.dot(eye);
    view(1, 3) = -u.dot(eye);
    view(2, 3) = f.dot(eye);

    const double aspect = std::max(viewport_.width() / std::max(viewport_.height(), 1.0), 1e-3);
    const double n = kNear * distance, fa = 100.0 * distance;
    const double t = 1.0 / std::tan(0.5 * fovYDegrees * kDeg);
    Eigen::Matrix4d proj = Eigen::Matrix4d::Zero();
    proj(0, 0) = t / aspect;
    proj(1, 1) = t;
    proj(2, 2) = -(fa + n) / (fa - n);
    proj(2, 3) = -2.0 * fa * n / (fa - n);
    proj(3, 2) = -1.0;
    return proj * view;
}

QMatrix4x4 OrbitCamera::viewProjection(const Eigen::Vector3d& origin) const {
    Eigen::Affine3d shift(Eigen::Translation3d{origin});
    const Eigen::Matrix4d m = matrix() * shift.matrix();
    QMatrix4x4 q;
    for (int r = 0; r < 4; ++r)
        for (int c = 0; c < 4; ++c) q(r, c) = float(m(r, c));
    return q;
}

bool OrbitCamera::worldToPixel(const Eigen::Vector3d& p, QPointF* pixel) const {
    const Eigen::Vector4d c = matrix() * p.homogeneous();
    if (c.w() <= 0.0) return false;
    const double x = c.x() / c.w(), y = c.y() / c.w();
    *pixel = QPointF((x + 1.0) * 0.5 * viewport_.width(), (1.0 - y) * 0.5 * viewport_.height());
    return true;
}

} // namespace flowscope
