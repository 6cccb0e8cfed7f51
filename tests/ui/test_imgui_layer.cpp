// ImGuiLayer + Hud: Dear ImGui inside a QOpenGLWidget, driven by QTest through our Qt -> ImGui bridge.
//
// A small view hosts a layer and draws the quick sliders at a known place and the HUD. The tests drag the β
// slider with QTest's mouse, type into it with QTest's keyboard, check which events ImGui takes and which
// reach the view, that QPainter still draws after ImGui, and that two views with their own layers coexist.
// Set FLOWSCOPE_SAVE_SHOTS=<dir> to write the frames as PNGs.
#include "GuiEnvironment.h"

#include "render/picture/Hud.h"
#include "render/picture/Theme.h"
#include "ui/views/ImGuiLayer.h"

#include <QApplication>
#include <QDir>
#include <QHBoxLayout>
#include <QImage>
#include <QMouseEvent>
#include <QOpenGLContext>
#include <QOpenGLFunctions>
#include <QOpenGLWidget>
#include <QPainter>
#include <QtTest/QTest>

#include <imgui.h>

#include <gtest/gtest.h>

#include <cmath>

namespace flowscope::test {
namespace {

const QColor kBackground(0x16, 0x18, 0x1d);
const QColor kMarker(255, 0, 255); // painted with QPainter after ImGui, bottom-left corner
constexpr int kMarkerSize = 12;

class ImGuiTestView : public QOpenGLWidget {
  public:
    explicit ImGuiTestView(QPointF slidersAt, QWidget* parent = nullptr)
        : QOpenGLWidget(parent), layer(this), slidersAt_(slidersAt) {
        setFocusPolicy(Qt::StrongFocus);
        hud = HudStats{1.25, 125, 1000, 256, 2, "CPU float64", 118.0, 16.7, true};
    }
    ~ImGuiTestView() override { layer.destroy(); }

    ImGuiLayer layer;
    QuickParams params;
    QuickSlidersLayout layout;
    HudStats hud;
    bool pickTooltip = false; // draw a token's tooltip at the mouse (screenshots)
    bool initialized = false;
    int frames = 0, presses = 0, changes = 0;

  protected:
    void initializeGL() override { initialized = layer.initialize(); }
    void paintGL() override {
        auto* gl = context()->functions();
        gl->glClearColor(kBackground.redF(), kBackground.greenF(), kBackground.blueF(), 1.0f);
        gl->glClear(GL_COLOR_BUFFER_BIT);
        layer.newFrame();
        if (layer.initialized()) {
            ImGui::SetNextWindowPos(ImVec2(float(slidersAt_.x()), float(slidersAt_.y())));
            if (drawQuickSliders(params, &layout)) ++changes;
            hud.frameMs = layer.frameMs();
            drawHud(hud);
            if (pickTooltip)
                drawPickTooltip(17, {{3, 0.41}, {17, 0.22}, {42, 0.12}, {8, 0.07}, {99, 0.05}}, "head 1");
        }
        layer.render();
        QPainter painter(this); // after ImGui: the state the backend leaves must not break QPainter
        painter.fillRect(QRect(0, height() - kMarkerSize, kMarkerSize, kMarkerSize), kMarker);
        ++frames;
    }
    void mousePressEvent(QMouseEvent* e) override {
        ++presses;
        QOpenGLWidget::mousePressEvent(e);
    }

  private:
    QPointF slidersAt_;
};

// Waits until `view` painted `n` more frames (ImGui reacts to input in the frame after it).
bool waitFrames(ImGuiTestView& view, int n = 3) {
    const int target = view.frames + n;
    return QTest::qWaitFor(
        [&] {
            view.update();
            return view.frames >= target;
        },
        5000);
}

// A left click at `p` (with `modifiers`), then waitFrames(view).
bool clickAndWait(ImGuiTestView& view, QPoint p, Qt::KeyboardModifiers modifiers = {}) {
    QTest::mouseClick(&view, Qt::LeftButton, modifiers, p);
    return waitFrames(view);
}

// A plain mouse move with no button held. (QTest::mouseMove without a button warps the X pointer instead,
// and the resulting event arrives whenever the server sends it.)
void hover(QWidget& w, QPoint pos) {
    QMouseEvent move(QEvent::MouseMove, pos, w.mapToGlobal(pos), Qt::NoButton, Qt::NoButton, Qt::NoModifier);
    QApplication::sendEvent(&w, &move);
}

QPoint at(const HudRect& r, double fx) {
    return QPoint(int(std::lround(r.left + fx * (r.right - r.left))),
                  int(std::lround((r.top + r.bottom) / 2)));
}

void saveViewShot(ImGuiTestView& view, const QString& name) {
    const QString dir = qEnvironmentVariable("FLOWSCOPE_SAVE_SHOTS");
    if (dir.isEmpty()) return;
    QDir().mkpath(dir);
    view.grabFramebuffer().save(QDir(dir).filePath(name));
}

void showAndSettle(QWidget& top, ImGuiTestView& view) {
    top.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&top));
    ASSERT_TRUE(waitFrames(view, 4));
    ASSERT_TRUE(view.initialized) << view.layer.error().toStdString();
}

TEST(ImGuiLayer, DragsTheBetaSliderWithQTest) {
    FLOWSCOPE_REQUIRE_GUI();
    ImGuiTestView view(QPointF(20, 140));
    view.resize(640, 420);
    showAndSettle(view, view);
    const HudRect beta = view.layout.beta;
    ASSERT_GT(beta.right - beta.left, 100.0f);
    ASSERT_GT(beta.top, 140.0f); // below the window's title bar, where we put it
    ASSERT_LT(beta.bottom, 140.0f + 80.0f);

    // Over the slider, ImGui wants the mouse.
    hover(view, at(beta, 0.25));
    ASSERT_TRUE(waitFrames(view));
    EXPECT_TRUE(view.layer.wantsMouse());
    EXPECT_TRUE(view.layer.isOverWindow(at(beta, 0.25)));
    saveViewShot(view, "imgui_sliders_beta_tooltip.png");

    // A click jumps to the value under the mouse; dragging right raises β (a logarithmic slider).
    QTest::mousePress(&view, Qt::LeftButton, {}, at(beta, 0.25));
    ASSERT_TRUE(waitFrames(view));
    const float afterPress = view.params.beta;
    QTest::mouseMove(&view, at(beta, 0.75));
    ASSERT_TRUE(waitFrames(view));
    const float afterDrag = view.params.beta;
    QTest::mouseRelease(&view, Qt::LeftButton, {}, at(beta, 0.75));
    ASSERT_TRUE(waitFrames(view));
    EXPECT_GT(afterDrag, afterPress);
    EXPECT_GT(view.changes, 0);
    EXPECT_EQ(view.presses, 0) << "the press on the slider went to ImGui, not to the view";
    // Where a quarter and three quarters of a log scale from 0.01 to 20 lie, give or take the grab's width.
    const double range = std::log(kBetaMax / kBetaMin);
    EXPECT_NEAR(std::log(afterPress / kBetaMin) / range, 0.25, 0.06);
    EXPECT_NEAR(std::log(afterDrag / kBetaMin) / range, 0.75, 0.06);

    // After the release the slider lets go: moves elsewhere leave β alone, and ImGui no longer wants the
    // mouse.
    const float released = view.params.beta;
    hover(view, QPoint(450, 330));
    ASSERT_TRUE(waitFrames(view));
    EXPECT_EQ(view.params.beta, released);
    EXPECT_FALSE(view.layer.wantsMouse());
    EXPECT_FALSE(view.layer.isOverWindow(QPoint(450, 330)));
}

TEST(ImGuiLayer, LetsTheViewHaveEventsOutsideItsWindows) {
    FLOWSCOPE_REQUIRE_GUI();
    ImGuiTestView view(QPointF(20, 140));
    view.resize(640, 420);
    showAndSettle(view, view);

    // Empty space: the view gets the click, ImGui does not want the mouse.
    hover(view, QPoint(450, 330));
    ASSERT_TRUE(waitFrames(view));
    EXPECT_FALSE(view.layer.wantsMouse());
    QTest::mouseClick(&view, Qt::LeftButton, {}, QPoint(450, 330));
    EXPECT_EQ(view.presses, 1);

    // The HUD (top right) is click-through: its clicks reach the view too.
    QTest::mouseClick(&view, Qt::LeftButton, {}, QPoint(view.width() - 20, 20));
    EXPECT_EQ(view.presses, 2);

    // On the sliders' window (not on a slider), ImGui takes the click.
    const HudRect box = view.layout.maxSpeed;
    QTest::mouseClick(&view, Qt::LeftButton, {},
                      QPoint(int(box.right) + 40, int((box.top + box.bottom) / 2)));
    EXPECT_EQ(view.presses, 2);

    // A drag the view started stays the view's, even across the ImGui window: the sliders do not move.
    const float beta = view.params.beta;
    QTest::mousePress(&view, Qt::LeftButton, {}, QPoint(450, 330));
    ASSERT_TRUE(waitFrames(view));
    QTest::mouseMove(&view, at(view.layout.beta, 0.9));
    ASSERT_TRUE(waitFrames(view));
    QTest::mouseRelease(&view, Qt::LeftButton, {}, at(view.layout.beta, 0.9));
    ASSERT_TRUE(waitFrames(view));
    EXPECT_EQ(view.presses, 3);
    EXPECT_EQ(view.params.beta, beta);

    // A fast click on the checkbox (press and release before any frame) still toggles it.
    const bool maxSpeed = view.params.maxSpeed;
    ASSERT_TRUE(clickAndWait(view, at(view.layout.maxSpeed, 0.1)));
    EXPECT_NE(view.params.maxSpeed, maxSpeed);
    EXPECT_EQ(view.presses, 3);
}

TEST(ImGuiLayer, TypesIntoASliderWithTheKeyboard) {
    FLOWSCOPE_REQUIRE_GUI();
    ImGuiTestView view(QPointF(20, 140));
    view.resize(640, 420);
    showAndSettle(view, view);
    EXPECT_FALSE(view.layer.wantsKeyboard());

    // Ctrl+click turns an ImGui slider into a text field with its text selected; typing replaces it.
    ASSERT_TRUE(clickAndWait(view, at(view.layout.vScale, 0.5), Qt::ControlModifier));
    EXPECT_TRUE(view.layer.wantsKeyboard());
    QTest::keyClicks(&view, "-2.5");
    ASSERT_TRUE(waitFrames(view));
    QTest::keyClick(&view, Qt::Key_Return);
    ASSERT_TRUE(waitFrames(view));
    EXPECT_FLOAT_EQ(view.params.vScale, -2.5f);
    EXPECT_FALSE(view.layer.wantsKeyboard());

    // Backspace and Escape: edit, then cancel; the value stays.
    ASSERT_TRUE(clickAndWait(view, at(view.layout.vScale, 0.5), Qt::ControlModifier));
    QTest::keyClick(&view, Qt::Key_Backspace);
    QTest::keyClicks(&view, "1");
    ASSERT_TRUE(waitFrames(view));
    QTest::keyClick(&view, Qt::Key_Escape);
    ASSERT_TRUE(waitFrames(view));
    EXPECT_FLOAT_EQ(view.params.vScale, -2.5f);
}

TEST(ImGuiLayer, DrawsOverTheSceneAndQPainterStillWorksAfterIt) {
    FLOWSCOPE_REQUIRE_GUI();
    ImGuiTestView view(QPointF(20, 140));
    view.resize(640, 420);
    view.pickTooltip = true;
    showAndSettle(view, view);
    hover(view, QPoint(420, 250));
    ASSERT_TRUE(waitFrames(view));
    const QImage img = view.grabFramebuffer().convertToFormat(QImage::Format_RGB32);
    saveViewShot(view, "imgui_hud_sliders_pick.png");
    const double dpr = view.devicePixelRatioF();
    auto pixel = [&](double x, double y) { return QColor(img.pixel(int(x * dpr), int(y * dpr))); };

    // The marker QPainter drew after ImGui.
    const QColor marker = pixel(kMarkerSize / 2.0, view.height() - kMarkerSize / 2.0);
    EXPECT_EQ(marker, kMarker) << marker.name().toStdString();
    // Empty space keeps the scene's background; the sliders' window and the HUD are drawn over it.
    EXPECT_EQ(pixel(300, 380), kBackground) << pixel(300, 380).name().toStdString();
    EXPECT_NE(pixel(view.layout.beta.left + 30, view.layout.beta.top + 2), kBackground);
    EXPECT_NE(pixel(view.width() - 15, 15), kBackground);
}

// The HUD fits text that widened in the very frame that draws it (a paused view draws no later frame): its
// left edge after one frame with a longer backend name is where it is once settled, and further left than
// before the change.
TEST(ImGuiLayer, TheHudFitsWiderTextInTheFrameThatDrawsIt) {
    FLOWSCOPE_REQUIRE_GUI();
    ImGuiTestView view(QPointF(20, 300));
    view.resize(640, 420);
    showAndSettle(view, view);
    // The HUD's left edge: the first pixel from the left, on the backend's row, that is not the background.
    const auto leftEdge = [&](const QImage& frame) {
        const QImage img = frame.convertToFormat(QImage::Format_RGB32);
        const double dpr = view.devicePixelRatioF();
        int left = img.width();
        for (int y = 0; y < int(120 * dpr); ++y)
            for (int x = int(200 * dpr); x < img.width() && x < left; ++x)
                if (QColor(img.pixel(x, y)) != kBackground) left = x;
        return left;
    };
    const int before = leftEdge(view.grabFramebuffer());
    view.hud.backend = "OpenGL float32, tokens on the GPU";
    const int first = leftEdge(view.grabFramebuffer()); // grabbing draws exactly one frame
    ASSERT_TRUE(waitFrames(view, 4));
    const int settled = leftEdge(view.grabFramebuffer());
    EXPECT_LT(settled, before - 20);
    EXPECT_EQ(first, settled) << "the first frame with the longer text drew a narrower HUD";
}

// Issue 45 item 11: the HUD's text, its grey labels included, reads at WCAG AA (4.5:1) against its window
// over either theme's plot (the light theme's labels were grey on grey at 3:1).
TEST(Hud, ItsTextReadsAtAaContrastOverEitherThemesPlot) {
    EXPECT_NEAR(contrastRatio(Qt::black, Qt::white), 21.0, 1e-9); // the scale's ends
    EXPECT_NEAR(contrastRatio(QColor(0x77, 0x77, 0x77), QColor(0x77, 0x77, 0x77)), 1.0, 1e-12);
    EXPECT_NEAR(contrastRatio(QColor(0x76, 0x76, 0x76), Qt::white), 4.54, 0.01); // WCAG's AA grey on white
    ImGuiContext* context = ImGui::CreateContext();
    applyImGuiStyle();
    const auto color = [](ImGuiCol c) {
        const ImVec4 v = ImGui::GetStyle().Colors[c];
        return QColor::fromRgbF(v.x, v.y, v.z);
    };
    for (ThemeKind kind : {ThemeKind::Dark, ThemeKind::Light}) {
        const QColor window = blend(color(ImGuiCol_WindowBg), kHudBgAlpha, plotStyle(kind).background);
        for (ImGuiCol text : {ImGuiCol_Text, ImGuiCol_TextDisabled})
            EXPECT_GE(contrastRatio(color(text), window), 4.5) << int(kind) << " " << text;
    }
    ImGui::DestroyContext(context);
}

TEST(ImGuiLayer, StartsAgainAfterDestroyAndDrawsNothingWithoutAContext) {
    FLOWSCOPE_REQUIRE_GUI();
    ImGuiTestView view(QPointF(20, 140));
    view.resize(640, 420);
    showAndSettle(view, view);

    // Destroyed (as when the host loses its GL context): frames still paint, without ImGui, and events pass.
    view.layer.destroy();
    EXPECT_FALSE(view.layer.initialized());
    EXPECT_EQ(ImGui::GetCurrentContext(), nullptr);
    ASSERT_TRUE(waitFrames(view));
    EXPECT_FALSE(view.layer.wantsMouse());
    QTest::mouseClick(&view, Qt::LeftButton, {}, at(view.layout.beta, 0.5));
    EXPECT_EQ(view.presses, 1);

    // Started again (a new GL context calls initializeGL): the sliders work as before.
    view.makeCurrent();
    ASSERT_TRUE(view.layer.initialize()) << view.layer.error().toStdString();
    view.doneCurrent();
    ASSERT_TRUE(waitFrames(view, 4));
    const float before = view.params.vScale;
    ASSERT_TRUE(clickAndWait(view, at(view.layout.vScale, 0.95)));
    EXPECT_GT(view.params.vScale, before);
    EXPECT_EQ(view.presses, 1);
}

TEST(ImGuiLayer, TwoViewsKeepTheirOwnContexts) {
    FLOWSCOPE_REQUIRE_GUI();
    QWidget top;
    auto* row = new QHBoxLayout(&top);
    auto* a = new ImGuiTestView(QPointF(10, 120));
    auto* b = new ImGuiTestView(QPointF(10, 120));
    row->addWidget(a);
    row->addWidget(b);
    top.resize(900, 380);
    showAndSettle(top, *a);
    ASSERT_TRUE(waitFrames(*b));
    ASSERT_TRUE(b->initialized) << b->layer.error().toStdString();
    EXPECT_NE(a->layer.context(), b->layer.context());

    const float betaB = b->params.beta;
    QTest::mousePress(a, Qt::LeftButton, {}, at(a->layout.beta, 0.2));
    ASSERT_TRUE(waitFrames(*a));
    QTest::mouseMove(a, at(a->layout.beta, 0.8));
    ASSERT_TRUE(waitFrames(*a) && waitFrames(*b));
    EXPECT_TRUE(a->layer.wantsMouse());
    EXPECT_FALSE(b->layer.wantsMouse());
    QTest::mouseRelease(a, Qt::LeftButton, {}, at(a->layout.beta, 0.8));
    ASSERT_TRUE(waitFrames(*a) && waitFrames(*b));
    EXPECT_GT(a->params.beta, 1.0f);
    EXPECT_EQ(b->params.beta, betaB);

    const float vA = a->params.vScale;
    QTest::mouseClick(b, Qt::LeftButton, {}, at(b->layout.vScale, 0.1));
    ASSERT_TRUE(waitFrames(*b) && waitFrames(*a));
    EXPECT_LT(b->params.vScale, -2.0f);
    EXPECT_EQ(a->params.vScale, vA);
    EXPECT_EQ(a->presses + b->presses, 0);
}

} // namespace
} // namespace flowscope::test
