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

Tokens DirectionField::directions(const Tokens& X) {
    Tokens Theta = X;
    SphereProjection::normalize(Theta);
    return Theta;
}

namespace {

// Peri-LN: every non-zero velocity scaled to unit norm.
void unitRows(Tokens& dX) {
    for (Eigen::Index i = 0; i < dX.rows(); ++i) {
        const double n = dX.row(i).norm();
        if (n > 0.0) dX.row(i) /= n;
    }
}

} // namespace

void DirectionField::velocity(double t, const Tokens& X, Tokens& dX) {
    inner_->velocity(t, directions(X), dX);
    if (scheme_ == Normalization::Peri) unitRows(dX);
}

void DirectionField::velocityAndStats(double t, const Tokens& X, Tokens& dX, Vec* entropies, double* energy) {
    inner_->velocityAndStats(t, directions(X), dX, entropies, energy);
    if (scheme_ == Normalization::Peri) unitRows(dX);
}

std::unique_ptr<VelocityField> withSphereProjection(const AttentionSpec& spec,
                                                    std::unique_ptr<VelocityField> field) {
    if (spec.sphere && spec.normalization != Normalization::None)
        throw SceneError("/attention/normalization",
                         std::string("expected one scheme: sphere (post) and \"") +
                             toString(spec.normalization) + "\" are both set");
    switch (normalizationOf(spec)) {
    case Normalization::Post:
        return std::make_unique<SphereProjection>(std::move(field));
    case Normalization::Pre:
    case Normalization::Peri:
        return std::make_unique<DirectionField>(std::move(field), spec.normalization);
    default:
        return field;
    }
}

} // namespace flowscope
