#include "render/animation/FlowAnimator.h"

#include "engine/media/FrameSink.h"
#include "engine/runner/TrainerSteps.h"
#include "render/picture/FlowsPicture.h"
#include "render/picture/PlotDecorations.h"

#include <QGuiApplication>
#include <QPainter>

#include <algorithm>
#include <cstdio>
#include <stdexcept>

namespace flowscope {

namespace {

std::string number(double v) {
    char text[32];
    std::snprintf(text, sizeof text, "%.3g", v);
    return text;
}

} // namespace

std::string trainerParameters(const flows::FlowTrainer& t) {
    std::string text;
    if (t.config().flow.rwpo)
        text = "\u03bb = " + number(t.model().params().lambda()) +
               ", \u03b2 = " + number(t.model().params().beta()) + ", ";
    return text +
           "loss = " + (t.history().empty() ? std::string("\u2013") : number(t.history().back().terms.loss));
}

FlowAnimator::FlowAnimator(std::vector<flows::TrainerConfig> configs, const AnimationOptions& options,
                           std::string dataName)
    : options_(options), dataName_(std::move(dataName)), captionFont_(captionFont()) {
    if (options_.view != AnimationView::Training || configs.empty() || configs.size() > 2)
        throw std::invalid_argument("the training animation needs the training view and one or two trainers");
    // The app's pictures (a 64² density grid, FlowRunOptions' trajectories), with the samples asked for.
    pictureOptions_.samples = options_.pictureSamples;
    std::vector<std::unique_ptr<flows::FlowTrainer>> trainers;
    for (flows::TrainerConfig& c : configs) {
        // As `train` decays the learning rate over its --iters, this decays it over the whole animation;
        // held-out metrics on 1000 points, as the app's Training panel (O(n²) per layer with the RWPO layer).
        c.adam.decaySteps = std::max(1L, lastIteration());
        c.evalSamples = 1000;
        trainers.push_back(std::make_unique<flows::FlowTrainer>(c)); // throws std::invalid_argument
    }
    pictures_ = std::make_unique<FlowTraining::Pictures>(pictureOptions_, *trainers.front());
    runs_ = trainerSlots<FlowTraining>(std::move(trainers));
    eventsSeen_.assign(runs_.size(), 0);
    captionHeight_ = options_.caption ? captionStripHeight(captionFont_) : 0;
    const int viewHeight = options_.height - captionHeight_;
    if (viewHeight < kAnimationMinSide)
        throw std::invalid_argument("size: " + std::to_string(options_.height) +
                                    " pixels leave no room for the view under the caption");
    picture_ = std::make_unique<FlowsPicture>();
    picture_->setStyle(PlotStyle());
    picture_->setPalette(QGuiApplication::palette());
    picture_->setFont(QGuiApplication::font());
    picture_->setSize(QSizeF(options_.width, viewHeight));
    viewImage_ = newFrameImage(options_.width, viewHeight);
    if (options_.caption) frame_ = newFrameImage(options_.width, options_.height);
}

FlowAnimator::~FlowAnimator() = default;

std::vector<const flows::FlowTrainer*> FlowAnimator::trainers() const {
    std::vector<const flows::FlowTrainer*> out;
    for (const auto& r : runs_) out.push_back(r.trainer.get());
    return out;
}

// The snapshot the app's runner would publish for these trainers now (pictures made at their iteration).
std::shared_ptr<const FlowSnapshot> FlowAnimator::snapshot(bool playing) {
    for (auto& run : runs_) run.picture = pictures_->make(*run.trainer);
    const double rate = double(options_.itersPerFrame) * options_.fps; // of the video
    return trainerSnapshot<FlowTraining>(runs_, *pictures_, 1, playing, rate, pictureOptions_.maxEvents, {});
}

// The strip above the view: the caption's text ({iteration} replaced), or (auto) the data and the model(s)
// on the left, the iteration, λ, β and the loss on the right.
void FlowAnimator::paintCaption(QPainter& p) const {
    const long iteration = runs_.front().trainer->iteration();
    QString left, right;
    if (*options_.caption == "auto") {
        std::string l = dataName_ + "  \u00b7  ", r = "iteration " + std::to_string(iteration);
        if (comparison()) {
            l += "with and without RWPO";
            for (const auto& run : runs_)
                r += std::string("    ") + (run.trainer->config().flow.rwpo ? "RWPO: " : "OT-Flow: ") +
                     trainerParameters(*run.trainer);
        } else {
            l += runs_.front().trainer->config().flow.rwpo ? "with RWPO" : "without RWPO (OT-Flow)";
            r += "    " + trainerParameters(*runs_.front().trainer);
        }
        left = QString::fromStdString(l);
        right = QString::fromStdString(r);
    } else {
        left = QString::fromStdString(*options_.caption);
        left.replace(QStringLiteral("{iteration}"), QString::number(iteration));
    }
    paintCaptionStrip(p, QRectF(0, 0, options_.width, captionHeight_), left, right, captionFont_,
                      PlotStyle());
}

bool FlowAnimator::nextFrame(QImage& rgba, const Cancelled& cancelled) {
    if (framesDone_ > 0)
        for (long i = 0; i < options_.itersPerFrame; ++i)
            for (std::size_t k = 0; k < runs_.size(); ++k) {
                if (cancelled && cancelled()) return false;
                const flows::FlowTrainer& t = *runs_[k].trainer;
                stepTrainer(*runs_[k].trainer, pictureOptions_.evaluateEvery); // nothing once it has stopped
                for (; eventsSeen_[k] < t.events().size(); ++eventsSeen_[k])
                    if (onEvent_) onEvent_(t, t.events()[eventsSeen_[k]]);
            }
    if (cancelled && cancelled()) return false;

    picture_->show(snapshot(framesDone_ + 1 < options_.frames));
    viewImage_.fill(Qt::transparent);
    {
        QPainter p(&viewImage_);
        picture_->paint(p);
    }
    const QImage* out = &viewImage_;
    if (options_.caption) {
        QPainter p(&frame_);
        paintCaption(p);
        p.drawImage(0, captionHeight_, viewImage_);
        p.end();
        out = &frame_;
    }
    rgba = out->convertToFormat(QImage::Format_RGBA8888);
    ++framesDone_;
    return true;
}

bool FlowAnimator::run(FrameSink& sink, const Progress& progress) {
    bool cancelled = false;
    const Cancelled poll = [&] { return cancelled = cancelled || (progress && !progress(framesDone_)); };
    QImage rgba;
    while (framesDone_ < options_.frames) {
        if (!nextFrame(rgba, poll)) return false;
        sink.addFrame(rgba.constBits(), int(rgba.bytesPerLine()));
        if (progress && !progress(framesDone_)) return false;
    }
    return true;
}

} // namespace flowscope
