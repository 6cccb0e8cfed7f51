// Flowscope engine: a request to stop the streaming passes in flight, from a signal handler or another
// thread.
//
// While it is set, streamKernel (engine/attention/StreamKernel.h) skips the chunks of queries it has not
// started and throws Cancelled when its pass returns, so a pass over N = 20000 tokens stops within one chunk
// (~65536 pairs) instead of running to its end. The caller that set it catches Cancelled, throws away
// whatever was being computed (its state is half updated) and clears the flag. Lock-free, so a signal
// handler may set it (the Python module's Ctrl+C does, python/src/Convert.cpp).
#pragma once

#include <atomic>
#include <stdexcept>

namespace flowscope {

inline std::atomic<bool>& cancelRequested() {
    static std::atomic<bool> flag{false};
    return flag;
}

struct Cancelled : std::runtime_error {
    Cancelled() : std::runtime_error("cancelled") {}
};

} // namespace flowscope
