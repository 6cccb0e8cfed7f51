#include "engine/gpu/gl/GlStepper.h"

#include "engine/gpu/gl/EmbeddedShaders.h"
#include "engine/gpu/gl/GlStreamRunner.h"

#include <algorithm>
#include <cstdint>

namespace flowscope {

namespace {

GlComputeProgram buildProgram(const GlFunctions& gl, const char* name, const GlDefines& defines) {
    const char* body = embeddedShader(name);
    if (!body) throw GlError(std::string(name) + " was not embedded in this build");
    return GlComputeProgram(gl, glslSource(430, defines, body));
}

void uploadWords(GlBuffer& buffer, const std::vector<std::uint32_t>& words) {
    buffer.upload(words.data(), words.size() * sizeof(std::uint32_t));
}

// What this context allows the kernel's layout, as the OpenGL field sees it (GlStreamRunner: staging off on
// Mesa's CPU rasterizers, whose loops also bound the token count), so that both paths agree.
StreamKernelDevice kernelDevice(const GlFunctions& gl) {
    gl::Int shared = 32768, invocations = 1024;
    gl.GetIntegerv(gl::MAX_COMPUTE_SHARED_MEMORY_SIZE, &shared);
    gl.GetIntegerv(gl::MAX_COMPUTE_WORK_GROUP_INVOCATIONS, &invocations);
    return {shared, invocations, glSoftwareRenderer(gl), gl.describe()};
}

} // namespace

struct GlStepper::Head {
    explicit Head(const GlFunctions& gl) : kernelParams(gl), assemblyParams(gl) {}
    GlBuffer kernelParams, assemblyParams;
    StreamKernelVariant variant;
};

GlStepper::GlStepper(const AttentionSpec& spec, const IntegratorSpec& integrator, int d,
                     const GlFunctions& gl)
    : PlannedStepper(spec, integrator, d, "OpenGL", kernelDevice(gl)), gl_(&gl), streamPrograms_(gl), x_(gl),
      y_(gl), kernelOut_(gl), clearParams_(gl), start_(gl), partials_(gl), directions_(gl),
      directionParams_(gl) {
    assembly_.emplace(buildProgram(gl, "head_assembly.comp", {}));
    combine_.emplace(buildProgram(gl, "stage_combine.comp", {}));
    for (int s = 0; s < kStageVelocities; ++s) k_.push_back(std::make_unique<GlBuffer>(gl));
    for (int s = 0; s < 16; ++s) adaptiveParams_.push_back(std::make_unique<GlBuffer>(gl));
}

GlStepper::~GlStepper() {
    for (gl::Sync fence : queued_) gl_->DeleteSync(fence);
    for (const auto& copy : shared_) {
        std::lock_guard lock(*copy->mutex);
        *copy->valid = false;
        // Under the lock and cleared, so that a reader still holding the copy never deletes them again.
        if (copy->fence) gl_->DeleteSync(copy->fence);
        if (copy->readFence) gl_->DeleteSync(copy->readFence);
        copy->fence = nullptr;
        copy->readFence = nullptr;
        gl_->DeleteBuffers(1, &copy->buffer);
    }
}

std::shared_ptr<const DeviceTokens> GlStepper::share(long step) {
    const int n = plan().n(), d = plan().d();
    if (n == 0) return nullptr;
    // A copy nobody else holds (use_count 1: only this list) is free; else make another. Readers drop theirs
    // with the snapshot that carried them, so the list stays a handful long.
    std::shared_ptr<DeviceTokens> copy;
    for (const auto& c : shared_)
        if (c.use_count() == 1) copy = c;
    if (!copy) {
        copy = std::make_shared<DeviceTokens>();
        gl_->GenBuffers(1, &copy->buffer);
        shared_.push_back(copy);
    }
    {
        // The last reader's draw from this buffer may still be queued in its context: wait for it on the GPU.
        std::lock_guard lock(*copy->mutex);
        if (copy->readFence) {
            gl_->WaitSync(copy->readFence, 0, gl::TIMEOUT_IGNORED);
            gl_->DeleteSync(copy->readFence);
            copy->readFence = nullptr;
        }
    }
    const gl::Sizeiptr bytes = gl::Sizeiptr(n) * d * gl::Sizeiptr(sizeof(float));
    gl_->MemoryBarrier(gl::BUFFER_UPDATE_BARRIER_BIT); // the copy reads what the shaders wrote
    gl_->BindBuffer(gl::COPY_WRITE_BUFFER, copy->buffer);
    if (copy->n * copy->d != n * d) gl_->BufferData(gl::COPY_WRITE_BUFFER, bytes, nullptr, gl::DYNAMIC_COPY);
    gl_->BindBuffer(gl::COPY_READ_BUFFER, x_.id());
    gl_->CopyBufferSubData(gl::COPY_READ_BUFFER, gl::COPY_WRITE_BUFFER, 0, 0, bytes);
    gl_->BindBuffer(gl::COPY_READ_BUFFER, 0);
    gl_->BindBuffer(gl::COPY_WRITE_BUFFER, 0);
    if (copy->fence) gl_->DeleteSync(copy->fence);
    copy->fence = gl_->FenceSync(gl::SYNC_GPU_COMMANDS_COMPLETE, 0);
    gl_->Flush(); // the fence must reach the GPU before another context waits on it
    copy->n = n;
    copy->d = d;
    copy->t = time();
    copy->step = step;
    copy->shareGroup = shareGroup_;
    glCheck(*gl_, "sharing the tokens");
    return copy;
}

void GlStepper::planChanged() {
    if (combinesUploaded_ == plan().combinesVersion()) return;
    combineParams_.resize(plan().stages().size());
    combineSlots_.resize(plan().stages().size());
    for (std::size_t s = 0; s < combineParams_.size(); ++s) {
        if (!combineParams_[s]) combineParams_[s] = std::make_unique<GlBuffer>(*gl_);
        const CombineCall call = plan().combine(s);
        uploadWords(*combineParams_[s], call.words);
        combineSlots_[s] = call.k;
    }
    uploadWords(clearParams_, plan().clearWords());
    uploadWords(directionParams_, plan().directionWords());
    combinesUploaded_ = plan().combinesVersion();
}

void GlStepper::writeTokens(const Eigen::MatrixXf& X) {
    gl::Int maxGroups = 65535;
    gl_->GetIntegeri_v(gl::MAX_COMPUTE_WORK_GROUP_COUNT, 0, &maxGroups);
    if (plan().kernelGroupsBound(X.rows()) > maxGroups)
        throw GlError("too many tokens for one dispatch (" + std::to_string(X.rows()) + ")");
    const std::size_t bytes = std::size_t(X.size()) * sizeof(float);
    x_.upload(X.data(), bytes);
    reserveWork(X, y_, k_, start_, directions_, partials_, kernelOut_);
    glCheck(*gl_, "uploading tokens");
}

void GlStepper::readTokens(Eigen::MatrixXf& X) {
    x_.download(X.data(), std::size_t(X.size()) * sizeof(float));
}

void GlStepper::residentPass(const StreamKernelInputs& in, Eigen::MatrixXf& out) {
    GlBuffer params(*gl_);
    uploadWords(params, in.params);
    params.bind(0);
    x_.bind(1);
    kernelOut_.bind(4);
    dispatch(streamPrograms_.get(in.variant), streamKernelGroups(in.variant, in.nq));
    kernelOut_.download(out.data(), std::size_t(out.size()) * sizeof(float));
    glCheck(*gl_, "a pass at the device's tokens");
}

void GlStepper::dispatch(const GlComputeProgram& program, long groups) {
    program.dispatch(gl::Uint(groups));
    // The next dispatch reads what this one wrote, or overwrites what it read.
    gl_->MemoryBarrier(gl::SHADER_STORAGE_BARRIER_BIT);
}

void GlStepper::projectTokens() {
    GlBuffer params(*gl_);
    uploadWords(params, plan().normalizeWords());
    params.bind(0);
    bindCombine({}); // velocities bound, not read
    dispatch(*combine_, groups(kStepperGroup));
    glCheck(*gl_, "normalizing tokens");
}

void GlStepper::bindCombine(const std::array<int, kCombineSlots>& k) {
    x_.bind(1);
    y_.bind(2);
    for (int slot = 0; slot < kCombineSlots; ++slot)
        k_[std::size_t(k[std::size_t(slot)])]->bind(gl::Uint(3 + slot));
    partials_.bind(3 + kCombineSlots);
}

void GlStepper::evaluate(double t, bool atY, int k) {
    evaluateInto(t, atY ? y_ : x_, *k_[std::size_t(k)]);
}

void GlStepper::combine(const CombineCall& call, const std::array<int, kCombineSlots>& k) {
    GlBuffer& params = *adaptiveParams_[nextParams_];
    nextParams_ = (nextParams_ + 1) % adaptiveParams_.size();
    uploadWords(params, call.words);
    params.bind(0);
    bindCombine(k);
    dispatch(*combine_, groups(kStepperGroup));
}

void GlStepper::errorPartials(const CombineCall& call, const std::array<int, kCombineSlots>& k,
                              std::vector<float>& partials) {
    combine(call, k);
    partials_.download(partials.data(), partials.size() * sizeof(float));
    glCheck(*gl_, "a Dormand-Prince error norm");
}

void GlStepper::keepTokens(bool restore) {
    const gl::Sizeiptr bytes = gl::Sizeiptr(plan().n()) * plan().d() * gl::Sizeiptr(sizeof(float));
    gl_->MemoryBarrier(gl::BUFFER_UPDATE_BARRIER_BIT); // the copy reads what the shaders wrote
    gl_->BindBuffer(gl::COPY_READ_BUFFER, restore ? start_.id() : x_.id());
    gl_->BindBuffer(gl::COPY_WRITE_BUFFER, restore ? x_.id() : start_.id());
    gl_->CopyBufferSubData(gl::COPY_READ_BUFFER, gl::COPY_WRITE_BUFFER, 0, 0, bytes);
    gl_->BindBuffer(gl::COPY_READ_BUFFER, 0);
    gl_->BindBuffer(gl::COPY_WRITE_BUFFER, 0);
    glCheck(*gl_, "keeping the step's tokens");
}

void GlStepper::uploadHeads(double t) {
    const std::vector<StepperHead>& heads = plan().heads(t);
    if (headsUploaded_ == plan().headsVersion()) return;
    while (heads_.size() < heads.size()) heads_.push_back(std::make_unique<Head>(*gl_));
    heads_.resize(heads.size());
    for (std::size_t k = 0; k < heads.size(); ++k) {
        heads_[k]->variant = heads[k].variant;
        uploadWords(heads_[k]->kernelParams, heads[k].kernelParams);
        uploadWords(heads_[k]->assemblyParams, heads[k].assemblyParams);
    }
    headsUploaded_ = plan().headsVersion();
}

void GlStepper::evaluateInto(double t, const GlBuffer& at, const GlBuffer& velocity) {
    uploadHeads(t);
    if (heads_.empty()) {
        clearParams_.bind(0);
        velocity.bind(2);
        at.bind(1); // bound, not read
        at.bind(3);
        dispatch(*assembly_, groups(kStepperGroup));
        return;
    }
    // Pre- and peri-LN: the kernel reads the directions of `at` (stage_combine: y = x / |x|).
    const GlBuffer* keys = &at;
    if (plan().readsDirections()) {
        directionParams_.bind(0);
        at.bind(1);
        directions_.bind(2);
        for (int slot = 0; slot < kCombineSlots; ++slot) k_[0]->bind(gl::Uint(3 + slot)); // bound, not read
        partials_.bind(3 + kCombineSlots);
        dispatch(*combine_, groups(kStepperGroup));
        keys = &directions_;
    }
    for (const auto& head : heads_) {
        head->kernelParams.bind(0);
        keys->bind(1);
        kernelOut_.bind(4);
        dispatch(streamPrograms_.get(head->variant), streamKernelGroups(head->variant, plan().n()));

        head->assemblyParams.bind(0);
        kernelOut_.bind(1);
        velocity.bind(2);
        at.bind(3);
        dispatch(*assembly_, groups(kStepperGroup));
    }
}

void GlStepper::takeSteps(int steps) {
    plan().walk(
        steps,
        [&](double t, const StepperStage& stage, std::size_t s) {
            evaluateInto(t, stage.atY ? y_ : x_, *k_[s]);
        },
        [&](const StepperStage&, std::size_t s) {
            combineParams_[s]->bind(0);
            bindCombine(combineSlots_[s]);
            dispatch(*combine_, groups(kStepperGroup));
        });
    paceQueue();
    glCheck(*gl_, "advancing the tokens");
}

void GlStepper::paceQueue() {
    queued_.push_back(gl_->FenceSync(gl::SYNC_GPU_COMMANDS_COMPLETE, 0));
    while (int(queued_.size()) > kQueuedAdvances) {
        // Returns at once for a fence already passed, which is every fence when the GPU keeps up. A bounded
        // wait: a device that never signals fails on the next read-back with its own error instead.
        gl_->ClientWaitSync(queued_.front(), gl::SYNC_FLUSH_COMMANDS_BIT, 10'000'000'000ULL);
        gl_->DeleteSync(queued_.front());
        queued_.pop_front();
    }
}

} // namespace flowscope
