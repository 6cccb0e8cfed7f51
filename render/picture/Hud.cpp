#include "render/picture/Hud.h"

#include <QFileInfo>
#include <QString>
#include <imgui.h>
#include <imgui_internal.h> // NextWindowData: whether the caller placed the next window

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace flowscope {

namespace {

constexpr const char* kFontPath = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";
constexpr float kFontPixels = 14.0f;        // DejaVu Sans, logical pixels
constexpr float kDefaultFontPixels = 13.0f; // ImGui's built-in ProggyClean

// Latin-1, Greek (β, λ, Σ), general punctuation (– … •), super/subscripts, arrows, math operators and
// geometric shapes (▶ ■): what our labels use. DejaVu Sans has them all.
const ImWchar kGlyphRanges[] = {0x0020, 0x00FF, 0x0370, 0x03FF, 0x2000, 0x206F, 0x2070, 0x209F,
                                0x2190, 0x21FF, 0x2200, 0x22FF, 0x25A0, 0x25FF, 0};

} // namespace

void applyImGuiStyle() {
    ImGui::StyleColorsDark();
    ImGuiStyle& s = ImGui::GetStyle();
    s.WindowRounding = 6.0f;
    s.FrameRounding = 3.0f;
    s.GrabRounding = 3.0f;
    s.PopupRounding = 4.0f;
    s.WindowBorderSize = 1.0f;
    s.WindowPadding = ImVec2(10.0f, 8.0f);
    s.ItemSpacing = ImVec2(8.0f, 5.0f);
    // The application's dark palette (ui/Theme.cpp): windows a little lighter than the plot background.
    s.Colors[ImGuiCol_WindowBg] = ImVec4(0.137f, 0.145f, 0.169f, 0.94f);
    s.Colors[ImGuiCol_PopupBg] = ImVec4(0.102f, 0.110f, 0.129f, 0.96f);
    s.Colors[ImGuiCol_Border] = ImVec4(0.30f, 0.33f, 0.38f, 0.60f);
    s.Colors[ImGuiCol_TitleBg] = ImVec4(0.16f, 0.17f, 0.20f, 1.0f);
    s.Colors[ImGuiCol_TitleBgActive] = ImVec4(0.19f, 0.21f, 0.25f, 1.0f);
    s.Colors[ImGuiCol_TitleBgCollapsed] = ImVec4(0.16f, 0.17f, 0.20f, 0.85f);
    s.Colors[ImGuiCol_Text] = ImVec4(0.90f, 0.91f, 0.93f, 1.0f);
    // Labels a step below the text, still 4.5:1 against the windows over either theme's plot (kHudBgAlpha).
    s.Colors[ImGuiCol_TextDisabled] = ImVec4(0.62f, 0.65f, 0.70f, 1.0f);
}

void buildImGuiFonts(double dpr) {
    // Rasterized at the framebuffer's resolution and drawn scaled back by 1/dpr: sharp text on HiDPI screens
    // with sizes in logical pixels.
    ImGuiIO& io = ImGui::GetIO();
    io.Fonts->Clear();
    ImFont* font = nullptr;
    if (QFileInfo::exists(QString::fromLatin1(kFontPath))) {
        ImFontConfig config;
        config.OversampleH = 2;
        font = io.Fonts->AddFontFromFileTTF(kFontPath, kFontPixels * float(dpr), &config, kGlyphRanges);
    }
    if (!font) {
        ImFontConfig config;
        config.SizePixels = kDefaultFontPixels * float(dpr);
        io.Fonts->AddFontDefault(&config);
    }
    io.FontGlobalScale = float(1.0 / dpr);
}

namespace {

constexpr float kMargin = 10.0f; // from the view's edges, logical pixels

// The symbol when the font has its glyph (DejaVu Sans), else the plain-text spelling (ImGui's built-in font
// is ASCII only).
const char* symbol(const char* glyph, ImWchar codepoint, const char* plain) {
    return ImGui::GetFont()->FindGlyphNoFallback(codepoint) ? glyph : plain;
}

// "%.4g" and the like into a string (the HUD measures its rows before it draws them).
template <class... Values> std::string format(const char* fmt, Values... values) {
    char text[160];
    std::snprintf(text, sizeof text, fmt, values...);
    return text;
}

// Shown while the last item is hovered (disabled items included).
void tooltip(const char* text) {
    if (!ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled)) return;
    ImGui::BeginTooltip();
    ImGui::PushTextWrapPos(ImGui::GetFontSize() * 24.0f);
    ImGui::TextUnformatted(text);
    ImGui::PopTextWrapPos();
    ImGui::EndTooltip();
}

} // namespace

void drawHud(const HudStats& s) {
    if (!ImGui::GetCurrentContext()) return;
    const ImGuiIO& io = ImGui::GetIO();
    // The rows, measured before they are drawn: an auto-fit window and a fit-to-content table size themselves
    // from the previous frame's contents, so text that grew (another backend, a longer step count) stayed
    // clipped until the next frame, and forever in a paused view. Fixed columns and a window at least as wide
    // as the rows lay the HUD out in the frame that draws it.
    std::vector<std::pair<std::string, std::string>> rows;
    rows.emplace_back("t", format("%.4g", s.t));
    rows.emplace_back("step",
                      s.totalSteps > 0 ? format("%ld / %ld", s.step, s.totalSteps) : format("%ld", s.step));
    rows.emplace_back(symbol("N × d", 0x00D7, "N x d"), format("%ld × %d", s.n, s.d));
    rows.emplace_back("backend", s.backend.empty() ? "-" : s.backend);
    rows.emplace_back("steps/s",
                      format(s.stepsPerSecond < 10 ? "%.2g" : "%.0f", s.stepsPerSecond)); // 0.31, 120
    if (s.subStepsPerStep > 0)
        rows.emplace_back("sub-steps",
                          format("%.3g per step, %ld rejected", s.subStepsPerStep, s.rejectedSubSteps));
    rows.emplace_back("frame", format("%.1f ms", s.frameMs));
    float labels = 0.0f, values = 0.0f;
    for (const auto& [label, value] : rows) {
        labels = std::max(labels, ImGui::CalcTextSize(label.c_str()).x);
        values = std::max(values, ImGui::CalcTextSize(value.c_str()).x);
    }
    const ImGuiStyle& style = ImGui::GetStyle();
    const float width = labels + values + 4.0f * style.CellPadding.x + 2.0f * style.WindowPadding.x;

    ImGui::SetNextWindowPos(ImVec2(io.DisplaySize.x - kMargin, kMargin), ImGuiCond_Always,
                            ImVec2(1.0f, 0.0f));
    ImGui::SetNextWindowSizeConstraints(ImVec2(width, 0.0f), ImVec2(FLT_MAX, FLT_MAX));
    ImGui::SetNextWindowBgAlpha(kHudBgAlpha);
    const ImGuiWindowFlags flags = ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_AlwaysAutoResize |
                                   ImGuiWindowFlags_NoSavedSettings | ImGuiWindowFlags_NoFocusOnAppearing |
                                   ImGuiWindowFlags_NoInputs | ImGuiWindowFlags_NoNav;
    if (ImGui::Begin("##hud", nullptr, flags)) {
        if (s.playing)
            ImGui::TextColored(ImVec4(0.45f, 0.85f, 0.50f, 1.0f), "%s running", symbol("▶", 0x25B6, ">"));
        else
            ImGui::TextColored(ImVec4(0.95f, 0.75f, 0.35f, 1.0f), "%s paused", symbol("‖", 0x2016, "||"));
        if (ImGui::BeginTable("##hudrows", 2, ImGuiTableFlags_SizingFixedFit)) {
            ImGui::TableSetupColumn("label", ImGuiTableColumnFlags_WidthFixed, labels);
            ImGui::TableSetupColumn("value", ImGuiTableColumnFlags_WidthFixed, values);
            for (const auto& [label, value] : rows) {
                ImGui::TableNextRow();
                ImGui::TableNextColumn();
                ImGui::TextDisabled("%s", label.c_str());
                ImGui::TableNextColumn();
                ImGui::TextUnformatted(value.c_str());
            }
            ImGui::EndTable();
        }
    }
    ImGui::End();
}

bool drawQuickSliders(QuickParams& p, QuickSlidersLayout* layout, HudRect inset) {
    // The last item's rectangle, when the caller wants it; for a slider its frame (the item also covers the
    // label on its right), which is as wide as the item width.
    const auto record = [layout](HudRect QuickSlidersLayout::*which, bool slider) {
        if (!layout) return;
        const ImVec2 min = ImGui::GetItemRectMin(), max = ImGui::GetItemRectMax();
        layout->*which = HudRect{min.x, min.y, slider ? min.x + ImGui::CalcItemWidth() : max.x, max.y};
    };
    if (!ImGui::GetCurrentContext()) return false;
    const ImGuiIO& io = ImGui::GetIO();
    // The caller may have placed the window (tests do); otherwise it sits in the bottom-left corner.
    if (!(GImGui->NextWindowData.Flags & ImGuiNextWindowDataFlags_HasPos))
        ImGui::SetNextWindowPos(ImVec2(kMargin + inset.left, io.DisplaySize.y - kMargin - inset.bottom),
                                ImGuiCond_Always, ImVec2(0.0f, 1.0f));
    ImGui::SetNextWindowBgAlpha(kHudBgAlpha);
    const ImGuiWindowFlags flags = ImGuiWindowFlags_AlwaysAutoResize | ImGuiWindowFlags_NoSavedSettings |
                                   ImGuiWindowFlags_NoFocusOnAppearing;
    bool changed = false;
    if (ImGui::Begin("Quick controls", nullptr, flags)) {
        // Sliders a fifth of the view wide, between 6 and 13 characters: the window covers at most about 15 %
        // of a view at 1024 x 640 (issue 45; at 13 characters it covered about 30 %).
        const float font = ImGui::GetFontSize();
        ImGui::PushItemWidth(std::clamp(io.DisplaySize.x * 0.2f, font * 6.0f, font * 13.0f));
        changed |= ImGui::SliderFloat(symbol("β", 0x03B2, "beta"), &p.beta, kBetaMin, kBetaMax, "%.3g",
                                      ImGuiSliderFlags_Logarithmic | ImGuiSliderFlags_AlwaysClamp);
        record(&QuickSlidersLayout::beta, true);
        tooltip("Inverse temperature of the softmax attention: token i attends to j with weight "
                "P_ij ∝ exp(β <Q x_i, K x_j>). Large β: each token follows its nearest neighbours and "
                "clusters form fast; small β: near-uniform averaging. Ctrl+click to type a value.");
        changed |= ImGui::SliderFloat("V scale", &p.vScale, kVScaleMin, kVScaleMax, "%.2f",
                                      ImGuiSliderFlags_AlwaysClamp);
        record(&QuickSlidersLayout::vScale, true);
        tooltip("Multiplies the value matrix: dx_i/dt = s · V Σ_j P_ij x_j. s > 0 pulls tokens together "
                "(clustering); s < 0 pushes them apart; s = 0 freezes the dynamics.");
        ImGui::BeginDisabled(p.maxSpeed);
        changed |= ImGui::SliderFloat("steps/s", &p.stepsPerSecond, kStepsPerSecondMin, kStepsPerSecondMax,
                                      "%.0f", ImGuiSliderFlags_Logarithmic | ImGuiSliderFlags_AlwaysClamp);
        ImGui::EndDisabled();
        record(&QuickSlidersLayout::stepsPerSecond, true);
        tooltip("Integrator steps per second of wall-clock time while playing. The display refreshes at "
                "about 60 frames per second whatever the rate.");
        changed |= ImGui::Checkbox("Max speed", &p.maxSpeed);
        record(&QuickSlidersLayout::maxSpeed, false);
        tooltip("Step as fast as the backend can, ignoring steps/s.");
        ImGui::PopItemWidth();
    }
    if (layout) {
        const ImVec2 pos = ImGui::GetWindowPos(), size = ImGui::GetWindowSize();
        layout->window = HudRect{pos.x, pos.y, pos.x + size.x, pos.y + size.y};
    }
    ImGui::End();
    return changed;
}

void drawPickTooltip(int token, const std::vector<std::pair<int, double>>& topWeights,
                     const std::string& note) {
    if (!ImGui::GetCurrentContext()) return;
    ImGui::BeginTooltip();
    ImGui::Text("token %d", token);
    if (!topWeights.empty()) {
        ImGui::Separator();
        ImGui::TextDisabled("attends to");
        if (ImGui::BeginTable("##weights", 3, ImGuiTableFlags_SizingFixedFit)) {
            for (const auto& [key, weight] : topWeights) {
                ImGui::TableNextRow();
                ImGui::TableNextColumn();
                ImGui::Text("%s %d", symbol("→", 0x2192, "->"), key);
                ImGui::TableNextColumn();
                ImGui::Text("%.3f", weight);
                ImGui::TableNextColumn();
                const float w = std::isfinite(weight) ? float(std::clamp(weight, 0.0, 1.0)) : 0.0f;
                ImGui::ProgressBar(w, ImVec2(ImGui::GetFontSize() * 5.0f, ImGui::GetFontSize() * 0.6f), "");
            }
            ImGui::EndTable();
        }
    }
    if (!note.empty()) {
        ImGui::Separator();
        ImGui::TextDisabled("%s", note.c_str());
    }
    ImGui::EndTooltip();
}

} // namespace flowscope
