// Flowscope engine: loss (16) of one batch recorded on several tapes at once, one thread each.
//
// Every term of the loss is a sum over the batch's samples. Without the RWPO layer the samples never meet:
// each part of the batch records its share (its sums divided by the whole batch's size) on its own tape and
// differentiates it there, and the parts' gradients add up to the batch's. With the layer, sub-step k's
// attention runs across the whole batch: each part gathers the batch's tokens x^k from every part
// (gather(); the parts wait for each other) as one leaf of its own tape and attends from its tokens to
// them. backward() then runs each tape in segments, stopping at those leaves until every part has reached
// them, and hands each part its columns of every part's leaf gradient. The loss and gradient are the
// one-tape ones, to rounding; on two cores an RWPO training step takes ~2/3 of the time, because all but
// the attention (the potential, its gradient and Hessian, the log-dets, the loss terms) is per sample and
// ran on one thread before.
//
//     BatchSplit<float> split(2, N);
//     split.run([&](int p) {                     // on two threads at once
//         auto loss = model.recordLoss(tape[p], columnsOf(p), grads[p], &terms[p], &split, p);
//         split.backward(p, loss);               // grads[p] += d (loss_0 + loss_1) / d params, part p's
//         share
//     });
#pragma once

#include "engine/autodiff/Tape.h"

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <vector>

namespace flowscope::flows {

template <class S> class BatchSplit {
  public:
    using Matrix = ad::Matrix<S>;

    // `parts` tapes share a batch of `batch` samples (parts >= 1, batch >= parts).
    BatchSplit(int parts, ad::Index batch);
    int parts() const { return parts_; }
    ad::Index batch() const { return batch_; }

    // Whether run() can run this many parts at once here: as many threads in the pool, and not called from
    // inside a parallelFor (whose nested calls run inline, one part after another: they would wait forever).
    static bool canRun(int parts);
    // Calls fn(p) for every part p, each on its own thread of the pool, and returns when all are done. The
    // first exception a part throws is rethrown here; the other parts are released from their waits. Throws
    // std::logic_error when !canRun(parts()).
    void run(const std::function<void(int part)>& fn);

    // Recording, part p, at an RWPO sub-step: publishes p's tokens X (d x n_p, on p's tape), waits for every
    // part's, and returns the batch's tokens [X_0 ... X_{P-1}] (d x batch) as a leaf of X's tape: an input
    // when X has a gradient to pass on, else a constant. `offset`: the column of X's first token there.
    ad::Var<S> gather(int part, ad::Var<S> X, ad::Index& offset);
    // Backward, part p, of its share of the loss: runs p's tape backward from `loss`, and at each gathered
    // leaf waits for every part to reach its own, then adds p's columns of all their gradients into X's.
    void backward(int part, ad::Var<S> loss);

  private:
    struct Gathered {
        ad::Var<S> X, leaf;
        ad::Index offset = 0;
    };
    // All parts wait here for each other; once a part has failed, every wait throws instead. Every part but
    // the last to arrive spins a while (kSpins pauses, tens of microseconds) before it sleeps: the parts come
    // within that of each other at almost every barrier (24 an RWPO step), and a thread woken from a
    // condition variable starts again only after about as long.
    void wait();
    void fail(std::exception_ptr error);

    int parts_;
    ad::Index batch_;
    std::vector<std::vector<Gathered>> gathered_; // per part, in recording order
    std::vector<const Matrix*> published_;        // per part: the tokens of the gather under way
    std::mutex mutex_;
    std::condition_variable arrivedAll_;
    int arrived_ = 0;
    std::atomic<std::uint64_t> generation_ = 0; // written under mutex_, read without it while spinning
    std::atomic<bool> failed_ = false;          // error_ is set
    std::exception_ptr error_;                  // the first failure
};

} // namespace flowscope::flows
