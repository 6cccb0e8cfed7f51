#include "engine/attention/SphereProjection.h"

namespace flowscope {

namespace {

// The tangent part of each velocity: dX_i minus its component along x_i.
void projectToTangent(const Tokens& X, Tokens& dX) {
    for (Eigen::Index i = 0; i < X.rows(); ++i) {
        const double n2 = X.row(i).squaredNorm();
        if (n2 > 0.0) dX.row(i) -= (dX.row(i).dot(X.row(i)) / n2) * X.row(i);
    }
}

} // namespace

void SphereProjection::velocity(double t, const Tokens& X, Tokens& dX) {
    inner_->velocity(t, X, dX);
    projectToTangent(X, dX);
}

void SphereProjection::velocityAndStats(double t, const Tokens& X, Tokens& dX, Vec* entropies,
                                        double* energy) {
    inner_->velocityAndStats(t, X, dX, entropies, energy);
    projectToTangent(X, dX);
}

void SphereProjection::normalize(Tokens& X) {
    for (Eigen::Index i = 0; i < X.rows(); ++i) {
        const double n = X.row(i).norm();
        if (n > 0.0) X.row(i) /= n;
    }
}

std::unique_ptr<VelocityField> withSphereProjection(const AttentionSpec& spec,
                                                    std::unique_ptr<VelocityField> field) {
    if (spec.sphere) field = std::make_unique<SphereProjection>(std::move(field));
    return field;
}

} // namespace flowscope
