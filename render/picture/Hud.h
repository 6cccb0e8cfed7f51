// Flowscope picture: the Dear ImGui overlays the views draw over their scene: a heads-up display of the run,
// quick sliders for the parameters one tweaks most, and the tooltip of a picked token.
//
// Each helper builds ImGui windows in the current ImGui context, so call them between ImGuiLayer::newFrame()
// and ImGuiLayer::render(). With no current context (the layer failed to start) they draw nothing. Sizes and
// positions are logical pixels.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace flowscope {

// The look of every Flowscope ImGui context (the views' layers, and headless exports): the application's dark
// style, and DejaVu Sans (ImGui's built-in font where it is missing) rasterized for `dpr` device pixels per
// logical pixel. Call with the ImGui context current, before the renderer backend builds the font texture.
void applyImGuiStyle();
void buildImGuiFonts(double dpr);

// The opacity of the windows' backgrounds over the plot: with the light theme's white plot, the HUD's grey
// labels read at 5:1 against it (WCAG AA asks 4.5:1; at 0.6 they read at 3:1).
inline constexpr float kHudBgAlpha = 0.92f;

struct HudStats {
    double t = 0.0;
    long step = 0;
    long totalSteps = 0;
    long n = 0; // tokens
    int d = 0;  // dimension
    std::string backend;
    double stepsPerSecond = 0.0;
    double frameMs = 0.0; // averaged by the caller (ImGuiLayer::frameMs())
    bool playing = false;
    // Adaptive runs (Dormand-Prince): sub-steps per nominal step and rejected sub-steps; 0: not shown.
    double subStepsPerStep = 0.0;
    long rejectedSubSteps = 0;
};

// A small translucent window in the top-right corner (no title bar, sized to its text, click-through):
// run state, t, step / total, N × d, backend, steps/s, the adaptive sub-steps and frame time.
void drawHud(const HudStats& stats);

struct QuickParams {
    float beta = 1.0f;             // softmax inverse temperature β
    float vScale = 1.0f;           // multiplies the value matrix V
    float stepsPerSecond = 120.0f; // pacing while playing
    bool maxSpeed = false;         // ignore the pacing
};

// Ranges of the quick sliders (β and steps/s are logarithmic).
inline constexpr float kBetaMin = 0.01f, kBetaMax = 20.0f;
inline constexpr float kVScaleMin = -3.0f, kVScaleMax = 3.0f;
inline constexpr float kStepsPerSecondMin = 1.0f, kStepsPerSecondMax = 2000.0f;

// Where a control was drawn (logical pixels, the view's coordinates); for a slider, its frame without the
// label.
struct HudRect {
    float left = 0.0f, top = 0.0f, right = 0.0f, bottom = 0.0f;
};
struct QuickSlidersLayout {
    HudRect beta, vScale, stepsPerSecond, maxSpeed;
    HudRect window; // the whole window
};

// A small collapsible window "Quick controls" with sliders for β, V scale, steps/s and a "Max speed" box,
// each with a tooltip saying what it does. Placed in the bottom-left corner, `inset` further in from the
// left and the bottom edges (the bands of a plot's tick labels, which it then leaves uncovered), unless the
// caller called ImGui::SetNextWindowPos() just before. Returns true when the user changed a value this frame.
// `layout`, when given, receives where each control was drawn (unchanged while the window is collapsed).
bool drawQuickSliders(QuickParams& params, QuickSlidersLayout* layout = nullptr, HudRect inset = {});

// A tooltip next to the mouse for a picked token: "token i", its largest attention weights (key index and
// weight, drawn as bars) and a note (e.g. "head 1, t = 0.50"). topWeights is shown in the order given.
void drawPickTooltip(int token, const std::vector<std::pair<int, double>>& topWeights,
                     const std::string& note);

} // namespace flowscope
