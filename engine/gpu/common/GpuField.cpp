#include "engine/gpu/common/GpuField.h"

namespace flowscope {

namespace {

AttentionSpec withoutSphere(AttentionSpec spec) {
    spec.sphere = false;
    return spec;
}

} // namespace

GpuField::GpuField(const AttentionSpec& spec, int d, std::shared_ptr<KernelPassRunner> runner,
                   std::string backend)
    : d_(d), type_(spec.type), runner_(std::move(runner)), field_(makeField(withoutSphere(spec), d, runner_)),
      backend_(std::move(backend)) {}

void GpuField::setAttention(const AttentionSpec& spec) {
    if (spec.type != type_) {
        field_ = makeField(withoutSphere(spec), d_, runner_); // throws before anything changes
        type_ = spec.type;
    } else {
        field_->setAttention(withoutSphere(spec));
    }
}

} // namespace flowscope
