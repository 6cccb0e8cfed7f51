#include "engine/gpu/vulkan/VkStepper.h"

#include "engine/gpu/vulkan/VkStreamRunner.h"

#include <algorithm>

namespace flowscope {

namespace {

// The most bindings of the three shaders (stage_combine.comp: Params, x, y, the velocities, the partials).
constexpr std::uint32_t kCombineBindings = 4 + kCombineSlots;

// The most heads any time of the spec has (constant heads or a keyframe's).
std::size_t maxHeads(const AttentionSpec& spec) {
    std::size_t heads = spec.heads.size();
    for (const Keyframe& kf : spec.keyframes) heads = std::max(heads, kf.heads.size());
    return heads;
}

} // namespace

VkStepper::VkStepper(const AttentionSpec& spec, const IntegratorSpec& integrator, int d, const VkContext& ctx)
    : PlannedStepper(spec, integrator, d, "Vulkan", vkStreamKernelDevice(ctx)), ctx_(&ctx),
      stream_(ctx, requiredSpirv("stream_kernel.comp"), 5),
      assembly_(ctx, requiredSpirv("head_assembly.comp"), 4),
      combine_(ctx, requiredSpirv("stage_combine.comp"), kCombineBindings), x_(ctx, VkPlacement::Device),
      y_(ctx, VkPlacement::Device), kernelOut_(ctx, VkPlacement::Device), staging_(ctx, VkPlacement::Host),
      start_(ctx, VkPlacement::Device), partials_(ctx, VkPlacement::Device),
      directions_(ctx, VkPlacement::Device) {
    for (auto& k : k_) k = std::make_unique<VkStorageBuffer>(ctx, VkPlacement::Device);
    for (auto& b : batches_) b = std::make_unique<VkCommandBatch>(ctx);
}

VkStepper::~VkStepper() = default; // the batches wait for their submissions before the buffers go

VkCommandBatch& VkStepper::beginBatch(int dispatches, std::size_t parameterWords) {
    VkCommandBatch& batch = *batches_[nextBatch_];
    nextBatch_ = (nextBatch_ + 1) % batches_.size();
    batch.begin(std::uint32_t(dispatches), kCombineBindings, parameterWords);
    headsRecorded_ = -1; // the parameter ranges of the last batch are not this one's
    clearRange_ = {};
    directionRange_ = {};
    return batch;
}

void VkStepper::submit(VkCommandBatch& batch) {
    batch.submit();
    ++submissions_;
}

void VkStepper::finish() {
    for (auto& b : batches_) b->wait();
}

std::uint32_t VkStepper::groups(int groupSize) const {
    return std::uint32_t((plan().n() + groupSize - 1) / groupSize);
}

void VkStepper::writeTokens(const Eigen::MatrixXf& X) {
    const long maxGroups = long(ctx_->limits().maxComputeWorkGroupCount[0]);
    if (plan().kernelGroupsBound(X.rows()) > maxGroups)
        throw VkError("too many tokens for one dispatch (" + std::to_string(X.rows()) + ")");
    finish(); // the buffers may grow, and the staging buffer is the host's again
    const std::size_t bytes = std::size_t(X.size()) * sizeof(float);
    staging_.upload(X.data(), bytes);
    x_.reserve(bytes);
    reserveWork(X, y_, k_, start_, directions_, partials_, kernelOut_);

    VkCommandBatch& batch = beginBatch(0, 0);
    batch.copy(staging_, x_, bytes); // the next batch's opening barrier orders the kernels after it
    submit(batch);
}

void VkStepper::readBack(VkCommandBatch& batch, const VkStorageBuffer& from, void* to, std::size_t bytes) {
    batch.copy(from, staging_, bytes);
    batch.barrier(VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_HOST_BIT,
                  VK_ACCESS_HOST_READ_BIT);
    submit(batch);
    batch.wait();
    staging_.download(to, bytes);
}

void VkStepper::readTokens(Eigen::MatrixXf& X) {
    finish(); // staging_ is free again (an upload's copy may still read it)
    readBack(beginBatch(0, 0), x_, X.data(), std::size_t(X.size()) * sizeof(float));
}

void VkStepper::residentPass(const StreamKernelInputs& in, Eigen::MatrixXf& out) {
    const std::size_t bytes = std::size_t(out.size()) * sizeof(float);
    finish(); // staging_ is the host's again
    staging_.reserve(bytes);
    VkCommandBatch& batch = beginBatch(1, in.params.size());
    const VkBufferRange x = wholeOf(x_);
    const VkBufferRange kernel[] = {batch.parameters(in.params), x, x, x, wholeOf(kernelOut_)};
    stream_.record(batch, streamKernelConstants(in.variant), kernel,
                   std::uint32_t(streamKernelGroups(in.variant, in.nq)));
    batch.barrier(VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
                  VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_READ_BIT);
    readBack(batch, kernelOut_, out.data(), bytes);
}

void VkStepper::projectTokens() {
    const std::vector<std::uint32_t> words = plan().normalizeWords();
    VkCommandBatch& batch = beginBatch(1, words.size());
    recordCombine(batch, batch.parameters(words), {}); // velocities bound, not read
    submit(batch);
}

VkCommandBatch& VkStepper::openBatch() {
    if (open_) return *open_;
    const std::size_t heads = maxHeads(plan().spec());
    // A sub-step: k1 at the step's start, six stages (an input combine and an evaluation each), the error
    // pass, and the previous sub-step's update; every evaluation may set its heads up again (keyframes), and
    // pre- and peri-LN write the directions first.
    const int perEvaluation = (heads ? 2 * int(heads) : 1) + (plan().readsDirections() ? 1 : 0);
    open_ = &beginBatch(7 * perEvaluation + 8, 7 * headWords() + 9 * 13 + 8);
    return *open_;
}

void VkStepper::flush() {
    if (open_) submit(*open_);
    open_ = nullptr;
}

void VkStepper::evaluate(double t, bool atY, int k) {
    recordEvaluation(openBatch(), t, atY ? y_ : x_, *k_[std::size_t(k)]);
}

void VkStepper::combine(const CombineCall& call, const std::array<int, kCombineSlots>& k) {
    VkCommandBatch& batch = openBatch();
    recordCombine(batch, batch.parameters(call.words), k);
}

void VkStepper::errorPartials(const CombineCall& call, const std::array<int, kCombineSlots>& k,
                              std::vector<float>& partials) {
    VkCommandBatch& batch = openBatch();
    open_ = nullptr; // submitted by readBack
    recordCombine(batch, batch.parameters(call.words), k);
    batch.barrier(VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
                  VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_READ_BIT);
    readBack(batch, partials_, partials.data(), partials.size() * sizeof(float));
}

void VkStepper::keepTokens(bool restore) {
    VkCommandBatch& batch = openBatch();
    batch.barrier(VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
                  VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT);
    batch.copy(restore ? start_ : x_, restore ? x_ : start_,
               std::size_t(plan().n()) * plan().d() * sizeof(float));
    batch.barrier(VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
                  VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                  VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
}

int VkStepper::dispatchesPerStep() const {
    const std::size_t heads = maxHeads(plan().spec());
    // Per stage: the directions (pre- and peri-LN), a kernel and an assembly per head (one clearing assembly
    // without heads), then the combine.
    const int perStage = (heads ? 2 * int(heads) + 1 : 2) + (heads && plan().readsDirections() ? 1 : 0);
    return perStage * int(plan().stages().size());
}

std::size_t VkStepper::headWords() const {
    const std::size_t d2 = std::size_t(plan().d()) * std::size_t(plan().d());
    return maxHeads(plan().spec()) * ((4 + 2 * d2) + (8 + d2));
}

std::size_t VkStepper::parameterWords(int steps) const {
    const std::size_t stages = plan().stages().size();
    // Constant heads are written once per batch; keyframed heads once per evaluation; the direction words
    // once per batch.
    const std::size_t headSets = plan().spec().keyframes.empty() ? 1 : std::size_t(steps) * stages;
    return stages * 13 + 8 + 13 + headSets * headWords();
}

void VkStepper::recordEvaluation(VkCommandBatch& batch, double t, const VkStorageBuffer& at,
                                 const VkStorageBuffer& velocity) {
    const std::vector<StepperHead>& heads = plan().heads(t);
    const VkBufferRange x = wholeOf(at), v = wholeOf(velocity), out = wholeOf(kernelOut_);
    if (heads.empty()) {
        if (!clearRange_.buffer) clearRange_ = batch.parameters(plan().clearWords());
        const VkBufferRange buffers[] = {clearRange_, x, v, x}; // binding 1 bound, not read
        assembly_.record(batch, {}, buffers, groups(kStepperGroup));
        batch.computeBarrier();
        return;
    }
    if (headsRecorded_ != plan().headsVersion()) { // set up (again): their words into this batch
        headRanges_.clear();
        for (const StepperHead& h : heads)
            headRanges_.push_back({batch.parameters(h.kernelParams), batch.parameters(h.assemblyParams),
                                   streamKernelConstants(h.variant),
                                   streamKernelGroups(h.variant, plan().n())});
        headsRecorded_ = plan().headsVersion();
    }
    // Pre- and peri-LN: the kernel reads the directions of `at` (stage_combine: y = x / |x|).
    VkBufferRange keys = x;
    if (plan().readsDirections()) {
        if (!directionRange_.buffer) directionRange_ = batch.parameters(plan().directionWords());
        std::array<VkBufferRange, kCombineBindings> buffers;
        buffers.fill(wholeOf(*k_[0])); // the velocities: bound, not read
        buffers[0] = directionRange_;
        buffers[1] = x;
        buffers[2] = keys = wholeOf(directions_);
        buffers[kCombineBindings - 1] = wholeOf(partials_);
        combine_.record(batch, {}, buffers, groups(kStepperGroup));
        batch.computeBarrier();
    }
    for (const HeadRanges& h : headRanges_) {
        const VkBufferRange kernel[] = {h.kernel, keys, x, x, out}; // bias and queries bound, not read
        stream_.record(batch, h.constants, kernel, std::uint32_t(h.groups));
        batch.computeBarrier();
        const VkBufferRange assembly[] = {h.assembly, out, v, x};
        assembly_.record(batch, {}, assembly, groups(kStepperGroup));
        batch.computeBarrier();
    }
}

void VkStepper::recordCombine(VkCommandBatch& batch, const VkBufferRange& params,
                              const std::array<int, kCombineSlots>& k) {
    std::array<VkBufferRange, kCombineBindings> buffers;
    buffers[0] = params;
    buffers[1] = wholeOf(x_);
    buffers[2] = wholeOf(y_);
    for (int slot = 0; slot < kCombineSlots; ++slot)
        buffers[std::size_t(3 + slot)] = wholeOf(*k_[std::size_t(k[std::size_t(slot)])]);
    buffers[kCombineBindings - 1] = wholeOf(partials_);
    combine_.record(batch, {}, buffers, groups(kStepperGroup));
    batch.computeBarrier();
}

void VkStepper::takeSteps(int steps) {
    // Whole steps per submission, as many as kMaxDispatches allows (at least one).
    const int perStep = dispatchesPerStep();
    const int chunk = std::max(1, kMaxDispatches / perStep);
    for (int done = 0; done < steps;) {
        const int count = std::min(chunk, steps - done);
        VkCommandBatch& batch = beginBatch(count * perStep, parameterWords(count));
        std::vector<VkBufferRange> combines;
        std::vector<std::array<int, kCombineSlots>> slots;
        for (std::size_t s = 0; s < plan().stages().size(); ++s) {
            const CombineCall call = plan().combine(s);
            combines.push_back(batch.parameters(call.words));
            slots.push_back(call.k);
        }
        plan().walk(
            count,
            [&](double t, const StepperStage& stage, std::size_t s) {
                recordEvaluation(batch, t, stage.atY ? y_ : x_, *k_[s]);
            },
            [&](const StepperStage&, std::size_t s) { recordCombine(batch, combines[s], slots[s]); });
        submit(batch);
        done += count;
    }
}

} // namespace flowscope
