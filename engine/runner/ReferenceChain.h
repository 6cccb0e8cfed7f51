// Flowscope engine: the Inverse tab's reference: a random-walk Metropolis chain on a posterior
// (inverse::metropolis), run on a thread of its own while a flow trains, so that the picture can draw the
// posterior a flow should reach beside the flow's samples (docs/inverse.md, "The reference chain").
//
// The proposal is x' = x + (2.38/√d) L ξ in the run's frame (L Lᵀ: the Laplace approximation's covariance,
// or the prior's): the random-walk scale that is optimal for a near-Gaussian target in d dimensions. The
// chain is thinned to `kept` samples for drawing; their summary (mean, sd) is what the picture prints.
#pragma once

#include "engine/inverse/Posterior.h"
#include "engine/inverse/PosteriorFlow.h"
#include "engine/runner/PosteriorSnapshot.h"

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace flowscope {

class ReferenceChain {
  public:
    struct Options {
        long steps = 200000;
        long burnIn = 5000;
        long kept = 4000;
        std::uint64_t seed = 0x3e7c;
    };

    ReferenceChain() = default;
    ~ReferenceChain(); // cancels and waits (at most ~1024 steps)
    ReferenceChain(const ReferenceChain&) = delete;
    ReferenceChain& operator=(const ReferenceChain&) = delete;

    // Starts a chain on its own thread, after cancelling and waiting for the one in flight; returns at once.
    void start(std::shared_ptr<const inverse::Posterior> posterior,
               std::shared_ptr<const inverse::Frame> frame, const Options& options);
    void start(std::shared_ptr<const inverse::Posterior> posterior,
               std::shared_ptr<const inverse::Frame> frame) {
        start(std::move(posterior), std::move(frame), Options{});
    }
    // Stops the chain in flight, if any (it ends within ~1024 steps); result() stays null.
    void cancel();
    bool running() const { return running_.load(); }
    // The finished chain's samples; null while running, after cancel(), or when it failed (error()).
    std::shared_ptr<const ReferenceSamples> result() const;
    std::string error() const;

  private:
    void join();

    std::thread thread_;
    std::atomic<bool> running_{false}, cancelled_{false};
    mutable std::mutex mutex_;
    std::shared_ptr<const ReferenceSamples> result_;
    std::string error_;
};

} // namespace flowscope
