// Flowscope engine: the recorded frames of a run, shared between the worker that appends them and the
// readers (plots, time scrubber) that look at them while the run goes on.
//
// Append-only while a run goes forward; truncate() drops the frames after a point when the run is rewound
// (the scrubber's "continue from here") and clear() starts over (reset). Every change bumps revision(), so
// a reader that saw (revision, size) knows whether it may append the new frames or must re-read all.
// Token arrays are shared, immutable, and the oldest are thinned (every other one dropped, their
// observables kept) when they exceed the memory budget, so a long run never exhausts memory.
#pragma once

#include "engine/dynamics/Observables.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace flowscope {

struct RecordedFrame {
    double t = 0.0;
    long step = 0;
    Observables obs;
    std::shared_ptr<const Tokens> tokens; // null once thinned out of the memory budget
};

class RunHistory {
  public:
    static constexpr std::size_t kDefaultTokenBudget = std::size_t(512) << 20; // bytes of token arrays

    explicit RunHistory(std::size_t tokenBudgetBytes = kDefaultTokenBudget) : budget_(tokenBudgetBytes) {}

    // Worker side.
    void append(RecordedFrame frame);
    void truncateAfter(double t);     // keeps the frames with time <= t
    void dropFrom(std::size_t index); // keeps frames [0, index)
    void clear();

    // Reader side; any thread.
    std::size_t size() const;
    std::uint64_t revision() const; // changes on truncate/clear (not on append)
    RecordedFrame at(std::size_t i) const;
    // Frames [from, size()) and the revision they belong to, read under one lock.
    std::vector<RecordedFrame> since(std::size_t from, std::uint64_t* revision = nullptr) const;
    // The last frame at or before t that still has tokens; -1 when none.
    long frameWithTokensAtOrBefore(double t) const;
    std::size_t tokenBytes() const;

  private:
    void thin();                       // with mutex_ held
    void eraseFrom(std::size_t index); // with mutex_ held

    mutable std::mutex mutex_;
    std::vector<RecordedFrame> frames_;
    std::uint64_t revision_ = 0;
    std::size_t bytes_ = 0;
    std::size_t budget_;
};

} // namespace flowscope
