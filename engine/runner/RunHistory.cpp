#include "engine/runner/RunHistory.h"

#include <algorithm>

namespace flowscope {

namespace {
std::size_t bytesOf(const RecordedFrame& f) {
    return f.tokens ? std::size_t(f.tokens->size()) * sizeof(double) : 0;
}
} // namespace

void RunHistory::append(RecordedFrame frame) {
    std::lock_guard lock(mutex_);
    bytes_ += bytesOf(frame);
    frames_.push_back(std::move(frame));
    if (bytes_ > budget_) thin();
}

void RunHistory::thin() {
    // Drop the tokens of every other frame that has them (never the newest), oldest first, until the
    // budget holds: the scrubber keeps an evenly thinned history instead of losing its beginning.
    bool drop = false;
    for (std::size_t i = 0; i + 1 < frames_.size() && bytes_ > budget_ / 2; ++i) {
        if (!frames_[i].tokens) continue;
        if (drop) {
            bytes_ -= bytesOf(frames_[i]);
            frames_[i].tokens.reset();
        }
        drop = !drop;
    }
}

void RunHistory::truncateAfter(double t) {
    std::lock_guard lock(mutex_);
    const auto first =
        std::find_if(frames_.begin(), frames_.end(), [t](const RecordedFrame& f) { return f.t > t; });
    eraseFrom(std::size_t(first - frames_.begin()));
}

void RunHistory::dropFrom(std::size_t index) {
    std::lock_guard lock(mutex_);
    eraseFrom(index);
}

void RunHistory::eraseFrom(std::size_t index) {
    if (index >= frames_.size()) return;
    for (std::size_t i = index; i < frames_.size(); ++i) bytes_ -= bytesOf(frames_[i]);
    frames_.erase(frames_.begin() + std::ptrdiff_t(index), frames_.end());
    ++revision_;
}

void RunHistory::clear() {
    std::lock_guard lock(mutex_);
    frames_.clear();
    bytes_ = 0;
    ++revision_;
}

std::size_t RunHistory::size() const {
    std::lock_guard lock(mutex_);
    return frames_.size();
}

std::uint64_t RunHistory::revision() const {
    std::lock_guard lock(mutex_);
    return revision_;
}

RecordedFrame RunHistory::at(std::size_t i) const {
    std::lock_guard lock(mutex_);
    return frames_.at(i);
}

std::vector<RecordedFrame> RunHistory::since(std::size_t from, std::uint64_t* revision) const {
    std::lock_guard lock(mutex_);
    if (revision) *revision = revision_;
    if (from >= frames_.size()) return {};
    return {frames_.begin() + std::ptrdiff_t(from), frames_.end()};
}

long RunHistory::frameWithTokensAtOrBefore(double t) const {
    std::lock_guard lock(mutex_);
    for (std::size_t i = frames_.size(); i-- > 0;)
        if (frames_[i].t <= t && frames_[i].tokens) return long(i);
    return -1;
}

std::size_t RunHistory::tokenBytes() const {
    std::lock_guard lock(mutex_);
    return bytes_;
}

} // namespace flowscope
