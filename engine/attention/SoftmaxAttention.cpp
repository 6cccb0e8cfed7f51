#include "engine/attention/SoftmaxAttention.h"

namespace flowscope {

HeadSetup SoftmaxAttention::setupHead(const HeadParams& head, const Tokens&) const {
    return dotProductHead(spec_, head, Weighting::Softmax);
}

} // namespace flowscope
