// Flowscope UI: Dear ImGui drawn inside a QOpenGLWidget, with our own Qt -> ImGui input bridge.
//
// Upstream has no Qt backend, so this file is one: an event filter on the host widget feeds ImGui's 1.86
// input state (io.MousePos, io.MouseDown[], io.MouseWheel, io.KeysDown[] + io.KeyMap, characters) and the
// OpenGL 3 renderer backend from libimgui draws into the host's framebuffer object. Every layer owns its own
// ImGuiContext (and so its own font atlas and GL objects), so several views can show ImGui at once; every
// method makes its context current before touching ImGui.
//
// The filter only swallows an event when ImGui uses it: a press over an ImGui window, the moves and the
// release of a drag that started there, the wheel over a window, keys while an ImGui widget has the
// keyboard. Everything else reaches the view, which keeps its own pan/zoom/picking.
//
// Use from the host:
//   initializeGL(): layer.initialize();
//   paintGL():      ...scene...; layer.newFrame(); drawHud(...); ...; layer.render();
//   destructor:     layer.destroy() (or let ~ImGuiLayer do it while the widget still exists).
// Coordinates are logical pixels (DisplaySize); the framebuffer scale is the devicePixelRatio.
#pragma once

#include <QByteArray>
#include <QElapsedTimer>
#include <QObject>
#include <QPointF>
#include <QPointer>
#include <QRectF>
#include <QString>

#include <array>
#include <vector>

class QOpenGLWidget;
class QEvent;
class QKeyEvent;
class QMouseEvent;
class QWheelEvent;
struct ImGuiContext;

namespace flowscope {

class ImGuiLayer : public QObject {
    Q_OBJECT
  public:
    // Installs the event filter on `host` (and enables mouse tracking, so hovering works without a button).
    explicit ImGuiLayer(QOpenGLWidget* host);
    ~ImGuiLayer() override; // destroy() while the host still exists
    ImGuiLayer(const ImGuiLayer&) = delete;
    ImGuiLayer& operator=(const ImGuiLayer&) = delete;

    // Call with the host's GL context current (initializeGL). Creates the ImGui context, the style, the fonts
    // for the host's devicePixelRatio and the GL objects. False (and nothing drawn later) when the OpenGL 3
    // backend could not start; error() says why. Calling it again (the host got a new GL context) rebuilds.
    bool initialize();
    // Releases the GL objects and the ImGui context. Makes the host's context current when it is not.
    // Safe to call twice; also runs by itself when the host's GL context is about to be destroyed.
    void destroy();
    bool initialized() const { return context_ != nullptr; }
    QString error() const { return error_; }

    // Starts a frame (GL context current, inside paintGL): time step, display size, scale, input state.
    // ImGui::* calls that build windows go between newFrame() and render().
    void newFrame();
    // Ends the frame and draws it into the currently bound framebuffer. The backend saves and restores the
    // GL state it changes (program, textures, buffers, VAO, blend, scissor, viewport, ...), so QPainter or
    // the host's own GL drawing may follow.
    void render();

    // As of the last frame: whether ImGui uses the mouse / keyboard (io.WantCaptureMouse / Keyboard).
    bool wantsMouse() const;
    bool wantsKeyboard() const;
    // Whether `pos` (logical pixels) lies on a window of the last frame that takes mouse input.
    bool isOverWindow(const QPointF& pos) const;
    // Time between frames in milliseconds, averaged by ImGui over its last 120 frames.
    double frameMs() const;
    ImGuiContext* context() const { return context_; }
    QOpenGLWidget* host() const { return host_; }

  protected:
    bool eventFilter(QObject* watched, QEvent* event) override;

  private:
    // Makes this layer's ImGui context current (several layers may exist).
    void makeImGuiCurrent() const;
    void buildFonts(double dpr);
    void setModifiers(Qt::KeyboardModifiers m);
    bool onMouseButton(QMouseEvent* e, bool pressed);
    bool onMouseMove(QMouseEvent* e);
    bool onWheel(QWheelEvent* e);
    bool onKey(QKeyEvent* e, bool pressed);
    void recordWindows(); // after a frame: the rectangles that take the mouse, for the next events

    static const char* clipboardText(void* userData);
    static void setClipboardText(void* userData, const char* text);

    QPointer<QOpenGLWidget> host_;
    ImGuiContext* context_ = nullptr;
    QString error_;
    QElapsedTimer clock_;
    double fontDpr_ = 0.0; // the devicePixelRatio the font atlas was built for
    QByteArray clipboard_; // keeps the text handed to ImGui alive

    // Input between frames. A press and its release can both arrive before the next frame (a fast click,
    // QTest::mouseClick); ImGui 1.86 reads button and key *state*, so a press is held down for one frame
    // before its release is applied, or ImGui would never see it.
    QPointF mousePos_{-1.0, -1.0};
    bool mouseInside_ = false;
    std::array<bool, 5> mouseDown_{};
    std::array<bool, 5> mousePressedSinceFrame_{};
    std::vector<bool> keysDown_;
    std::vector<bool> keysPressedSinceFrame_;
    float wheel_ = 0.0f, wheelH_ = 0.0f;
    bool ctrl_ = false, shift_ = false, alt_ = false, super_ = false;

    // Who owns each mouse button while it is held: ImGui (the press was over one of its windows) or the view.
    std::array<bool, 5> imguiOwnsButton_{};
    std::array<bool, 5> viewOwnsButton_{};
    std::vector<QRectF> windowRects_; // windows of the last frame that take mouse input
    bool popupOpen_ = false;          // a click anywhere closes it: ImGui takes it
    bool wantMouse_ = false, wantKeyboard_ = false;
    int settleFrames_ = 0; // frames still to draw by themselves (auto-resized windows settle in two)
};

} // namespace flowscope
