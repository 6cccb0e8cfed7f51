// Flowscope engine: the velocity-field interface every attention variant implements.
//
// A velocity field maps the token cloud X (N x d) at time t to the velocities dX/dt = Gamma_X(x_i). CPU
// implementations live beside this file, one per variant; GPU backends implement the same interface. The
// float64 CPU path is the reference every other path is tested against.
#pragma once

#include "engine/core/Types.h"
#include "engine/scene/Scene.h"

#include <functional>
#include <memory>
#include <string>

namespace flowscope {

// Per-evaluation diagnostics a field may report (NaN when not applicable).
struct FieldDiagnostics {
    double sinkhornMarginalError = std::numeric_limits<double>::quiet_NaN(); // max_j |col marginal - 1|
    int sinkhornIterations = 0;
};

class VelocityField {
  public:
    virtual ~VelocityField() = default;

    // dX = Gamma(t, X). X and dX are N x d; dX is resized by the caller to X's shape.
    virtual void velocity(double t, const Tokens& X, Tokens& dX) = 0;

    // Attention entropy averaged over queries, (1/N) sum_i -sum_j P_ij log P_ij, in double precision, for
    // the normalized variants (softmax, l2, Sinkhorn, RWPO; first head). NaN where no distribution exists.
    double attentionEntropy(double t, const Tokens& X) {
        const Vec H = attentionEntropies(t, X);
        return H.size() ? H.mean() : std::numeric_limits<double>::quiet_NaN();
    }
    // The entropy of each query's distribution, H_i = -sum_j P_ij log P_ij (nats; size N, double precision),
    // for the same variants; empty where no distribution exists. The view colours tokens by it.
    virtual Vec attentionEntropies(double /*t*/, const Tokens& /*X*/) { return {}; }

    // The attention distribution of query i over the keys, P_i. (size N, summing to 1), for the normalized
    // variants (first head; double precision); empty where none exists. O(N d): meant for picking a token.
    virtual Vec attentionWeights(double /*t*/, const Tokens& /*X*/, Eigen::Index /*i*/) { return {}; }
    // The interaction energy of the variant when it has one (softmax, one head, unmasked:
    // E = (1/(2 N^2)) sum_ij exp(s_ij), s_ij = beta x_i^T A x_j the score; docs/math/attention.md#energy),
    // else NaN.
    virtual double interactionEnergy(double /*t*/, const Tokens& /*X*/) {
        return std::numeric_limits<double>::quiet_NaN();
    }
    // What a recorded frame needs, at once: the velocity, and (when asked) the entropies and the energy as
    // above. A field that can get all three from one streaming pass does (KernelAttention on the CPU: the
    // entropy adds one multiply-add per pair, the energy reuses each row's log-sum-exp), in its precision;
    // this default makes the three calls.
    virtual void velocityAndStats(double t, const Tokens& X, Tokens& dX, Vec* entropies, double* energy) {
        velocity(t, X, dX);
        if (entropies) *entropies = attentionEntropies(t, X);
        if (energy) *energy = interactionEnergy(t, X);
    }
    // Parameters may be replaced while a run continues (live editing); the state carries over.
    virtual void setAttention(const AttentionSpec& spec) = 0;

    virtual std::string name() const = 0;
    virtual FieldDiagnostics diagnostics() const { return {}; }
};

// The base of the CPU fields: the spec they compute, which a live edit replaces as it is.
class SpecField : public VelocityField {
  public:
    explicit SpecField(const AttentionSpec& spec) : spec_(spec) {}
    void setAttention(const AttentionSpec& spec) override { spec_ = spec; }

  protected:
    AttentionSpec spec_;
};

// The CPU field for an attention spec, in the given precision (float32 fast path or float64 reference),
// with sphere normalization applied when spec.sphere is set. Throws SceneError for unsupported settings.
std::unique_ptr<VelocityField> makeCpuField(const AttentionSpec& spec, int d, Precision precision);

// Makes the field of a spec on some backend (makeCpuField, or a GPU backend's; engine/backend/Registry.h).
// The simulation takes one and never needs to know where its velocities are computed.
using FieldFactory = std::function<std::unique_ptr<VelocityField>(const AttentionSpec&, int d, Precision)>;

// A field is made for one kind of attention: another type, normalization or mask need a new field, while
// parameters alone (beta, Q, K, V, iterations, eps) are set on the field in place
// (VelocityField::setAttention).
bool needsNewField(const AttentionSpec& old, const AttentionSpec& spec);

// `field`, made for `old`, now computing `spec`: a new field from `make` when needsNewField, else the same
// one with the spec set. The new field is made first, so a spec the factory refuses throws and leaves `field`
// as it was. Every holder of a field that follows live edits goes through here (the simulation, the view's
// hover).
void retargetField(std::unique_ptr<VelocityField>& field, const AttentionSpec& old, const AttentionSpec& spec,
                   int d, Precision precision, const FieldFactory& make);

} // namespace flowscope
