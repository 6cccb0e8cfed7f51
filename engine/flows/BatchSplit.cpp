#include "engine/flows/BatchSplit.h"

#include "engine/core/Parallel.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace flowscope::flows {

namespace {
// What a part's wait throws once another part has failed (run() rethrows that part's own exception).
struct OtherPartFailed {};

constexpr int kSpins = 2000;

// A hint to the processor that this is a spin-wait loop (it slows the loop and frees the core's resources).
void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}
} // namespace

template <class S>
BatchSplit<S>::BatchSplit(int parts, ad::Index batch)
    : parts_(parts), batch_(batch), gathered_(std::size_t(std::max(parts, 0))),
      published_(std::size_t(std::max(parts, 0))) {
    if (parts < 1 || batch < parts)
        throw std::invalid_argument("BatchSplit: needs 1 <= parts <= batch, got " + std::to_string(parts) +
                                    " parts of " + std::to_string(batch));
}

template <class S> bool BatchSplit<S>::canRun(int parts) {
    return parts == 1 || (threadCount() >= parts && !insideParallelFor());
}

template <class S> void BatchSplit<S>::run(const std::function<void(int)>& fn) {
    if (!canRun(parts_))
        throw std::logic_error("BatchSplit: " + std::to_string(parts_) + " parts cannot run at once here (" +
                               std::to_string(threadCount()) + " threads" +
                               (insideParallelFor() ? ", inside a parallelFor)" : ")"));
    // With at least `parts_` threads and no region under way, each chunk of one goes to its own thread: a
    // thread that took one waits in it for the others, so it never takes a second.
    parallelFor(std::size_t(parts_), 1, [&](std::size_t begin, std::size_t end) {
        for (std::size_t p = begin; p < end; ++p) {
            try {
                fn(int(p));
            } catch (const OtherPartFailed&) {
            } catch (...) {
                fail(std::current_exception());
            }
        }
    });
    if (error_) std::rethrow_exception(error_);
}

template <class S> void BatchSplit<S>::wait() {
    std::uint64_t generation = 0;
    {
        std::lock_guard lock(mutex_);
        if (error_) throw OtherPartFailed{};
        generation = generation_;
        if (++arrived_ == parts_) {
            arrived_ = 0;
            ++generation_;
            arrivedAll_.notify_all();
            return;
        }
    }
    // 2000 pauses: about 40 µs on this project's AMD machines, 100 µs on recent Intel ones (a pause is 65 to
    // 140 cycles there), a plain loop elsewhere. What the others wrote is read after the lock below.
    for (int spin = 0; spin < kSpins && generation_.load(std::memory_order_relaxed) == generation &&
                       !failed_.load(std::memory_order_relaxed);
         ++spin)
        cpuRelax();
    std::unique_lock lock(mutex_);
    arrivedAll_.wait(lock, [&] { return generation_ != generation || error_; });
    if (error_) throw OtherPartFailed{};
}

template <class S> void BatchSplit<S>::fail(std::exception_ptr error) {
    {
        std::lock_guard lock(mutex_);
        if (!error_) error_ = error;
        failed_ = true;
    }
    arrivedAll_.notify_all();
}

template <class S> ad::Var<S> BatchSplit<S>::gather(int part, ad::Var<S> X, ad::Index& offset) {
    published_[std::size_t(part)] = &X.value();
    wait();
    Matrix all(X.rows(), batch_);
    offset = -1;
    ad::Index column = 0;
    for (int p = 0; p < parts_; ++p) {
        const Matrix& x = *published_[std::size_t(p)];
        if (x.rows() != all.rows() || column + x.cols() > batch_)
            throw std::invalid_argument("BatchSplit: the parts' tokens do not stack into a " +
                                        std::to_string(all.rows()) + " x " + std::to_string(batch_) +
                                        " batch");
        if (p == part) offset = column;
        all.middleCols(column, x.cols()) = x;
        column += x.cols();
    }
    if (column != batch_)
        throw std::invalid_argument("BatchSplit: the parts hold " + std::to_string(column) +
                                    " samples, not " + std::to_string(batch_));
    wait(); // every part has read every other's tokens: the next gather may publish anew
    ad::Tape<S>& tape = *X.tape;
    const ad::Var<S> leaf = tape.node(X).needsGrad ? tape.input(all) : tape.constant(all);
    gathered_[std::size_t(part)].push_back({X, leaf, offset});
    return leaf;
}

template <class S> void BatchSplit<S>::backward(int part, ad::Var<S> loss) {
    ad::Tape<S>& tape = *loss.tape;
    const std::vector<Gathered>& mine = gathered_[std::size_t(part)];
    tape.beginBackward(loss);
    for (std::size_t i = mine.size(); i-- > 0;) {
        const Gathered& g = mine[i];
        tape.backwardTo(g.leaf.index); // the leaf's consumers all come after it: its gradient is complete
        wait();
        if (tape.node(g.X).needsGrad)
            for (int p = 0; p < parts_; ++p) { // a leaf's gradient no longer changes once it is reached
                const Gathered& other = gathered_[std::size_t(p)][i];
                if (other.leaf.tape->reached(other.leaf))
                    tape.addGrad(g.X, other.leaf.tape->grad(other.leaf).middleCols(g.offset, g.X.cols()));
            }
    }
    tape.backwardTo(0);
    tape.endBackward();
}

template class BatchSplit<float>;
template class BatchSplit<double>;

} // namespace flowscope::flows
