// Flowscope engine: what a training loop does with a step whose loss or gradient is not finite; shared by
// the flow trainer and the continuous-time Transformer trainer, so both behave and report the same way.
//
//  * The step is rejected (the parameters stay) and the learning rate halved; the user sees a message.
//  * Every third rejection in a row asks the caller to restore its last good checkpoint.
//  * The twentieth in a row stops the training, with a message saying what to do.
//  * Each accepted step raises a halved rate by 2^(1/50), back to its schedule: a halving is undone in 50
//    good steps, so one bad batch early on does not slow the rest of the run.
#pragma once

#include "engine/flows/Adam.h"

#include <cmath>
#include <string>

namespace flowscope::flows {

// What a training loop tells its user: a rejected step, a restore, a stop.
struct TrainEvent {
    long iteration = 0;
    std::string message;
};

class StepGuard {
  public:
    static constexpr int kRestoreAfter = 3, kStopAfter = 20;

    struct Rejection {
        bool restore = false; // the caller restores its last good parameters
        bool stop = false;    // training is over
        std::string message;
    };

    template <class S> Rejection reject(const std::string& why, Adam<S>& adam) {
        adam.halveLearningRate();
        ++inARow_;
        Rejection r;
        r.message = why + ": step rejected, learning rate halved to " + std::to_string(adam.learningRate());
        if (inARow_ >= kStopAfter) {
            r.stop = true;
            r.message = why + ": " + std::to_string(kStopAfter) +
                        " steps in a row rejected; training stopped (lower the learning rate or reset)";
        } else if (inARow_ % kRestoreAfter == 0) {
            r.restore = true;
            r.message += "; parameters restored to the last good checkpoint";
        }
        return r;
    }

    template <class S> void accept(Adam<S>& adam) {
        inARow_ = 0;
        adam.recoverLearningRate(std::exp2(1.0 / 50.0));
    }

    int rejectedInARow() const { return inARow_; }

  private:
    int inARow_ = 0;
};

} // namespace flowscope::flows
