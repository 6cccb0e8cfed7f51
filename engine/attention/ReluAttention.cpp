#include "engine/attention/ReluAttention.h"

namespace flowscope {

HeadSetup ReluAttention::setupHead(const HeadParams& head, const Tokens&) const {
    return dotProductHead(spec_, head, Weighting::Relu);
}

} // namespace flowscope
