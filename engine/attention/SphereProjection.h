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

// `field`, wrapped in a SphereProjection when spec.sphere is set: how every backend's factory (makeCpuField,
// makeGlField, makeVkField) finishes its field.
std::unique_ptr<VelocityField> withSphereProjection(const AttentionSpec& spec,
                                                    std::unique_ptr<VelocityField> field);

} // namespace flowscope
