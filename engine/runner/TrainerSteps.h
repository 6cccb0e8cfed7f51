// Flowscope engine: what the training runners (flows, continuous-time Transformers) do alike with each of
// their trainers: one step with the periodic held-out evaluation, and the trainer's state copied into a
// snapshot. A trainer has step(), stopped(), iteration(), evaluate(), learningRate(), history(),
// evaluations() and events(); a state has the matching fields.
#pragma once

#include <algorithm>
#include <cstddef>

namespace flowscope {

// One step unless the trainer has stopped, then the held-out evaluation every evaluateEvery iterations (0:
// never). Returns whether the trainer can go on. Exceptions propagate.
template <class Trainer> bool stepTrainer(Trainer& t, int evaluateEvery) {
    if (t.stopped()) return false;
    const bool more = t.step();
    if (evaluateEvery > 0 && t.iteration() % evaluateEvery == 0) t.evaluate();
    return more;
}

// The fields every trainer state shares; the events are the last maxEvents.
template <class State, class Trainer>
void fillTrainerState(State& s, const Trainer& t, std::size_t maxEvents) {
    s.iteration = t.iteration();
    s.learningRate = t.learningRate();
    s.history = t.history();
    s.evaluations = t.evaluations();
    const auto& events = t.events();
    s.events.assign(events.end() - long(std::min(maxEvents, events.size())), events.end());
    s.stopped = t.stopped();
}

} // namespace flowscope
