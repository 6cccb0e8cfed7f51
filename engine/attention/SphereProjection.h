// Sphere-normalized dynamics (Geshkovski, Letrouit, Polyanskiy, Rigollet): tokens live on the unit sphere
// and move along the tangent part of any attention field,
//     dx_i/dt = P_{x_i} Gamma(x_i),   P_x = I - x x^T / |x|^2.
// The Simulation re-normalizes tokens after each step to remove the integrator's drift off the sphere.
#pragma once

#include "engine/attention/VelocityField.h"

#include <memory>

namespace flowscope {

class SphereProjection : public VelocityField {
  public:
    explicit SphereProjection(std::unique_ptr<VelocityField> inner) : inner_(std::move(inner)) {}
    void velocity(double t, const Tokens& X, Tokens& dX) override;
    void velocityAndStats(double t, const Tokens& X, Tokens& dX, Vec* entropies, double* energy) override;
    Vec attentionEntropies(double t, const Tokens& X) override { return inner_->attentionEntropies(t, X); }
    Vec attentionWeights(double t, const Tokens& X, Eigen::Index i) override {
        return inner_->attentionWeights(t, X, i);
    }
    double interactionEnergy(double t, const Tokens& X) override { return inner_->interactionEnergy(t, X); }
    void setAttention(const AttentionSpec& spec) override { inner_->setAttention(spec); }
    std::string name() const override { return inner_->name() + " on the sphere"; }
    FieldDiagnostics diagnostics() const override { return inner_->diagnostics(); }

    // Scales every non-zero token to unit norm.
    static void normalize(Tokens& X);

  private:
    std::unique_ptr<VelocityField> inner_;
};

// Pre- and peri-LN (docs/math/theory.md#normalization): the inner field is evaluated at the directions
// Theta = (x_j / |x_j|)_j, and its velocity A_i(Theta) is the token's (pre) or is scaled to unit norm (peri).
// Tokens at the origin have direction 0; a zero velocity stays zero under peri. The tokens' radii are free.
class DirectionField : public VelocityField {
  public:
    DirectionField(std::unique_ptr<VelocityField> inner, Normalization scheme)
        : inner_(std::move(inner)), scheme_(scheme) {}
    void velocity(double t, const Tokens& X, Tokens& dX) override;
    void velocityAndStats(double t, const Tokens& X, Tokens& dX, Vec* entropies, double* energy) override;
    Vec attentionEntropies(double t, const Tokens& X) override {
        return inner_->attentionEntropies(t, directions(X));
    }
    Vec attentionWeights(double t, const Tokens& X, Eigen::Index i) override {
        return inner_->attentionWeights(t, directions(X), i);
    }
    double interactionEnergy(double t, const Tokens& X) override {
        return inner_->interactionEnergy(t, directions(X));
    }
    void setAttention(const AttentionSpec& spec) override { inner_->setAttention(spec); }
    std::string name() const override {
        return inner_->name() + (scheme_ == Normalization::Pre ? ", pre-LN" : ", peri-LN");
    }
    FieldDiagnostics diagnostics() const override { return inner_->diagnostics(); }

    // Every non-zero row scaled to unit norm (a copy).
    static Tokens directions(const Tokens& X);

  private:
    std::unique_ptr<VelocityField> inner_;
    Normalization scheme_;
};

// `field`, wrapped for the spec's normalization scheme (normalizationOf): in a SphereProjection for post
// (spec.sphere), in a DirectionField for pre and peri, as it is for none: how every backend's factory
// (makeCpuField, makeGlField, makeVkField) finishes its field. Throws SceneError at /attention/normalization
// for a spec that sets both `sphere` and another scheme.
std::unique_ptr<VelocityField> withSphereProjection(const AttentionSpec& spec,
                                                    std::unique_ptr<VelocityField> field);

} // namespace flowscope
