// Flowscope engine: a Metropolis reference chain on a thread of its own (ReferenceChain.h).
#include "engine/runner/ReferenceChain.h"

#include <algorithm>
#include <cmath>
#include <exception>

namespace flowscope {

ReferenceChain::~ReferenceChain() {
    cancel();
    join();
}

void ReferenceChain::join() {
    if (thread_.joinable()) thread_.join();
}

void ReferenceChain::cancel() {
    cancelled_.store(true);
}

void ReferenceChain::start(std::shared_ptr<const inverse::Posterior> posterior,
                           std::shared_ptr<const inverse::Frame> frame, const Options& o) {
    cancel();
    join();
    {
        std::lock_guard lock(mutex_);
        result_.reset();
        error_.clear();
    }
    cancelled_.store(false);
    running_.store(true);
    thread_ = std::thread([this, posterior = std::move(posterior), frame = std::move(frame), o] {
        std::shared_ptr<ReferenceSamples> r;
        std::string error;
        try {
            const double d = double(frame->center.size());
            const long thin = std::max(1L, (o.steps - o.burnIn) / std::max(1L, o.kept));
            inverse::Chain chain =
                inverse::metropolis(*posterior, *frame, o.steps, o.burnIn, 2.38 / std::sqrt(d), o.seed, thin,
                                    [this] { return cancelled_.load(); });
            if (chain.samples.cols() > 0) {
                r = std::make_shared<ReferenceSamples>();
                r->summary = inverse::summarize(*posterior, chain.samples);
                r->samples = std::move(chain.samples);
                r->acceptance = chain.acceptance;
                r->steps = o.steps;
            }
        } catch (const std::exception& e) {
            error = e.what();
        }
        std::lock_guard lock(mutex_);
        if (!cancelled_.load()) {
            result_ = std::move(r);
            error_ = std::move(error);
        }
        running_.store(false);
    });
}

std::shared_ptr<const ReferenceSamples> ReferenceChain::result() const {
    std::lock_guard lock(mutex_);
    return result_;
}

std::string ReferenceChain::error() const {
    std::lock_guard lock(mutex_);
    return error_;
}

} // namespace flowscope
