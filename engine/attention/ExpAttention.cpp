#include "engine/attention/ExpAttention.h"

namespace flowscope {

HeadSetup ExpAttention::setupHead(const HeadParams& head, const Tokens&) const {
    return dotProductHead(spec_, head, Weighting::Exp);
}

} // namespace flowscope
