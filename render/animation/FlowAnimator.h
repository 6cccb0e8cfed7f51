// Flowscope animation: an animation of generative flows being trained, composed frame by frame. The one frame
// composer of `flowscope-cli render --view training` and of the GUI's File ▸ Export ▸ Animation on the Flows
// tab.
//
// The picture is the Flows tab's own (render/picture/FlowsPicture, QPainter only: no OpenGL), painted into an
// image. The trainers are fresh ones of the given configs (one, or two side by side), stepped on the
// calling thread by the runner's own step (stepTrainer: held-out metrics every evaluateEvery iterations, as
// in the app); each frame's snapshot carries pictures made by the runner's own FlowPictureMaker.
//
// Time is the iteration index, never the wall clock: frame k shows the model(s) after k * itersPerFrame
// iterations (frame 0: the initial model), so the same settings give the same frames bit for bit. The
// learning rate decays over the whole animation, as `flowscope-cli train` decays it over its --iters.
//
// Use, with a QGuiApplication:
//   FlowAnimator a(configs, options, "moons");   // throws std::invalid_argument naming the field
//   while (a.framesDone() < options.frames) a.nextFrame(image, cancelled);   or   a.run(sink, progress)
#pragma once

#include "engine/flows/Trainer.h"
#include "engine/runner/FlowRunner.h"
#include "render/animation/AnimationExporter.h"

#include <QFont>
#include <QImage>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace flowscope {

class FrameSink;
class FlowsPicture;

// "λ = 0.0123, β = 1.04, loss = 2.31" of a trainer (λ and β only with the RWPO layer).
std::string trainerParameters(const flows::FlowTrainer& t);

class FlowAnimator {
  public:
    using Cancelled = std::function<bool()>;
    using Progress = std::function<bool(long done)>; // after each frame; false cancels
    // A trainer's new event (a rejected step, a stop), as it happens.
    using EventHandler = std::function<void(const flows::FlowTrainer&, const flows::TrainEvent&)>;

    // configs: one trainer, or two side by side (trainingConfigs()); options.view must be Training and the
    // sizes valid (animationOptionsError); dataName names the data in the automatic caption. Throws
    // std::invalid_argument when a trainer refuses its config or the caption leaves no room for the view.
    FlowAnimator(std::vector<flows::TrainerConfig> configs, const AnimationOptions& options,
                 std::string dataName);
    ~FlowAnimator();
    FlowAnimator(const FlowAnimator&) = delete;
    FlowAnimator& operator=(const FlowAnimator&) = delete;

    // The next frame (framesDone() is its index) as RGBA8888, options().width x height: trains itersPerFrame
    // iterations (none before frame 0), then draws. False, with nothing drawn, when `cancelled` returned true
    // between two iterations.
    bool nextFrame(QImage& rgba, const Cancelled& cancelled = {});
    // The remaining frames into `sink` (not finished: the caller calls sink.finish()). False when cancelled.
    // Exceptions from the sink pass through.
    bool run(FrameSink& sink, const Progress& progress = {});

    void setEventHandler(EventHandler handler) { onEvent_ = std::move(handler); }
    long framesDone() const { return framesDone_; }
    long lastIteration() const { return (options_.frames - 1) * options_.itersPerFrame; }
    const AnimationOptions& options() const { return options_; }
    bool comparison() const { return runs_.size() == 2; }
    // The trainers (with the RWPO layer first when side by side), at the last frame drawn.
    std::vector<const flows::FlowTrainer*> trainers() const;
    // The view drawing the frames, e.g. for where a point lands (add captionHeight() to y).
    const FlowsPicture& picture() const { return *picture_; }
    int captionHeight() const { return captionHeight_; }

  private:
    std::shared_ptr<const FlowSnapshot> snapshot(bool playing);
    void paintCaption(QPainter& p) const;

    const AnimationOptions options_;
    const std::string dataName_;
    FlowRunOptions pictureOptions_;
    std::unique_ptr<FlowTraining::Pictures> pictures_;
    std::vector<TrainerSlot<FlowTraining>> runs_;
    std::vector<std::size_t> eventsSeen_; // of each trainer's events, how many went to onEvent_
    EventHandler onEvent_;
    long framesDone_ = 0;
    QFont captionFont_;
    int captionHeight_ = 0;
    std::unique_ptr<FlowsPicture> picture_;
    QImage viewImage_, frame_;
};

} // namespace flowscope
