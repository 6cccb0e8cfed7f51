// The field factory: one attention spec -> one VelocityField, its streaming passes on a given runner.
#include "engine/attention/DriftingAttention.h"
#include "engine/attention/ExpAttention.h"
#include "engine/attention/HardmaxAttention.h"
#include "engine/attention/L2Attention.h"
#include "engine/attention/LinearAttention.h"
#include "engine/attention/ReluAttention.h"
#include "engine/attention/RwpoAttention.h"
#include "engine/attention/SigmoidAttention.h"
#include "engine/attention/SinkhornAttention.h"
#include "engine/attention/SoftmaxAttention.h"
#include "engine/attention/SphereProjection.h"
#include "engine/attention/StreamRunner.h"

#include <algorithm>
#include <type_traits>

namespace flowscope {

namespace {

using FieldMaker = std::unique_ptr<VelocityField> (*)(const AttentionSpec&, int d,
                                                      std::shared_ptr<StreamRunner>);

template <class Field>
std::unique_ptr<VelocityField> make(const AttentionSpec& spec, int d, std::shared_ptr<StreamRunner> runner) {
    if constexpr (std::is_constructible_v<Field, const AttentionSpec&, int, std::shared_ptr<StreamRunner>>)
        return std::make_unique<Field>(spec, d, std::move(runner));
    else
        return std::make_unique<Field>(spec, d); // linear: O(N d^2) moments in double, no streaming pass
}

// The class of each attention type, and why a masked spec of the type is refused (null: masking is
// supported).
struct FieldKind {
    AttentionType type;
    FieldMaker make;
    const char* maskedRefusal;
};

constexpr FieldKind kFieldKinds[] = {
    {AttentionType::Softmax, make<SoftmaxAttention>, nullptr},
    {AttentionType::L2, make<L2Attention>, nullptr},
    {AttentionType::Exp, make<ExpAttention>, nullptr},
    {AttentionType::Relu, make<ReluAttention>, nullptr},
    {AttentionType::Sigmoid, make<SigmoidAttention>, nullptr},
    {AttentionType::Sinkhorn, make<SinkhornAttention>, "masked Sinkhorn attention is not supported"},
    {AttentionType::Linear, make<LinearAttention>, "masked linear attention is not supported"},
    {AttentionType::Rwpo, make<RwpoAttention>, nullptr},
    {AttentionType::Drifting, make<DriftingAttention>, nullptr},
    {AttentionType::Hardmax, make<HardmaxAttention>, nullptr},
};

} // namespace

std::unique_ptr<VelocityField> makeField(const AttentionSpec& spec, int d,
                                         std::shared_ptr<StreamRunner> runner) {
    const auto* kind = std::find_if(std::begin(kFieldKinds), std::end(kFieldKinds),
                                    [&](const FieldKind& k) { return k.type == spec.type; });
    if (kind == std::end(kFieldKinds)) return nullptr;
    if (spec.masked && kind->maskedRefusal) throw SceneError("/attention/masked", kind->maskedRefusal);
    return kind->make(spec, d, std::move(runner));
}

std::unique_ptr<VelocityField> makeCpuField(const AttentionSpec& spec, int d, Precision p) {
    return withSphereProjection(spec, makeField(spec, d, std::make_shared<CpuStreamRunner>(p)));
}

bool needsNewField(const AttentionSpec& old, const AttentionSpec& spec) {
    return spec.type != old.type || spec.sphere != old.sphere || spec.masked != old.masked ||
           spec.normalization != old.normalization;
}

void retargetField(std::unique_ptr<VelocityField>& field, const AttentionSpec& old, const AttentionSpec& spec,
                   int d, Precision precision, const FieldFactory& make) {
    if (field && !needsNewField(old, spec)) return field->setAttention(spec);
    field = make(spec, d, precision);
}

} // namespace flowscope
