// Flowscope engine: the latest published snapshot of a worker, shared by every runner (simulation, flow
// training, Transformer training). The worker stores immutable snapshots; readers on any thread take the
// latest without ever waiting on a step. A snapshot of an older run (the worker finishing a step of the
// previous run while start() already showed the new one) is dropped, so the shown run never flips back.
#pragma once

#include <memory>
#include <mutex>

namespace flowscope {

// T has a `generation` member that grows with every start().
template <class T> class LatestSnapshot {
  public:
    void store(std::shared_ptr<const T> s) {
        std::lock_guard lock(mutex_);
        if (!latest_ || s->generation >= latest_->generation) latest_ = std::move(s);
    }

    std::shared_ptr<const T> get() const {
        std::lock_guard lock(mutex_);
        return latest_;
    }

  private:
    mutable std::mutex mutex_;
    std::shared_ptr<const T> latest_;
};

} // namespace flowscope
