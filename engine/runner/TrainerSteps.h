// Flowscope engine: what the training runners (flows, continuous-time Transformers) do alike with each of
// their trainers: one step with the periodic held-out evaluation, the trainer's state copied into a
// snapshot, and a snapshot's trainer saved. A trainer has step(), stopped(), iteration(), evaluate(),
// learningRate(), history(), evaluations() and events(); a state has the matching fields.
#pragma once

#include <algorithm>
#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

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

// A state's model and config: a copy of the trainer's evaluated model, and `config`, the run's one copy of
// the trainer's config (TrainerSlot::config, shared by every snapshot: it may hold the user's points).
template <class State, class Trainer, class Config>
void copyTrainerModel(State& s, const Trainer& t, std::shared_ptr<const Config> config) {
    s.model = std::make_shared<typename decltype(s.model)::element_type>(t.evaluatedModel());
    s.config = std::move(config);
}

// Writes a snapshot's trainer as its CLI command does: save(path, model, record) with the record of
// trainingRecord (flows:: or ot::, found by the config's type) over the seconds its history took. Throws
// std::runtime_error when the state has no model yet.
template <class State, class Save> void saveTrainerState(const std::string& path, const State& s, Save save) {
    if (!s.model || !s.config) throw std::runtime_error("no trained model to save yet");
    double seconds = 0;
    for (const auto& r : s.history) seconds += r.seconds;
    save(path, *s.model,
         trainingRecord(*s.config, s.iteration, s.stopped, s.history, s.evaluations, s.events, seconds));
}

} // namespace flowscope
