#include "engine/attention/SigmoidAttention.h"

namespace flowscope {

HeadSetup SigmoidAttention::setupHead(const HeadParams& head, const Tokens&) const {
    return dotProductHead(spec_, head, Weighting::Sigmoid);
}

} // namespace flowscope
