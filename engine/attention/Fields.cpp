// The field factory: one attention spec -> one VelocityField, its streaming passes on a given runner.
#include "engine/attention/DriftingAttention.h"
#include "engine/attention/ExpAttention.h"
#include "engine/attention/L2Attention.h"
#include "engine/attention/LinearAttention.h"
#include "engine/attention/ReluAttention.h"
#include "engine/attention/RwpoAttention.h"
#include "engine/attention/SigmoidAttention.h"
#include "engine/attention/SinkhornAttention.h"
#include "engine/attention/SoftmaxAttention.h"
#include "engine/attention/SphereProjection.h"
#include "engine/attention/StreamRunner.h"

namespace flowscope {

std::unique_ptr<VelocityField> makeField(const AttentionSpec& spec, int d,
                                         std::shared_ptr<StreamRunner> runner) {
    std::unique_ptr<VelocityField> f;
    switch (spec.type) {
    case AttentionType::Softmax:
        f = std::make_unique<SoftmaxAttention>(spec, d, runner);
        break;
    case AttentionType::L2:
        f = std::make_unique<L2Attention>(spec, d, runner);
        break;
    case AttentionType::Exp:
        f = std::make_unique<ExpAttention>(spec, d, runner);
        break;
    case AttentionType::Relu:
        f = std::make_unique<ReluAttention>(spec, d, runner);
        break;
    case AttentionType::Sigmoid:
        f = std::make_unique<SigmoidAttention>(spec, d, runner);
        break;
    case AttentionType::Sinkhorn:
        if (spec.masked) throw SceneError("/attention/masked", "masked Sinkhorn attention is not supported");
        f = std::make_unique<SinkhornAttention>(spec, d, runner);
        break;
    case AttentionType::Linear:
        if (spec.masked) throw SceneError("/attention/masked", "masked linear attention is not supported");
        f = std::make_unique<LinearAttention>(spec, d); // O(N d^2) moments in double: no streaming pass
        break;
    case AttentionType::Rwpo:
        f = std::make_unique<RwpoAttention>(spec, d, runner);
        break;
    case AttentionType::Drifting:
        f = std::make_unique<DriftingAttention>(spec, d, runner);
        break;
    }
    return f;
}

std::unique_ptr<VelocityField> makeCpuField(const AttentionSpec& spec, int d, Precision p) {
    std::unique_ptr<VelocityField> f = makeField(spec, d, std::make_shared<CpuStreamRunner>(p));
    if (spec.sphere) f = std::make_unique<SphereProjection>(std::move(f));
    return f;
}

} // namespace flowscope
