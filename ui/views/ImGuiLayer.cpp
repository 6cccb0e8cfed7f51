#include "ui/views/ImGuiLayer.h"

#include "render/picture/Hud.h"

#include <QClipboard>
#include <QFocusEvent>
#include <QGuiApplication>
#include <QInputMethodEvent>
#include <QKeyEvent>
#include <QMouseEvent>
#include <QOpenGLContext>
#include <QOpenGLWidget>
#include <QWheelEvent>

#include <backends/imgui_impl_opengl3.h>
#include <imgui.h>
#include <imgui_internal.h> // the window list, to hit-test events against the last frame's windows

#include <algorithm>
#include <cfloat>

namespace flowscope {

namespace {

// Our key indices into io.KeysDown are ImGui's own ImGuiKey_ values, so io.KeyMap is the identity.
int imguiKey(int qtKey) {
    switch (qtKey) {
    case Qt::Key_Tab:
    case Qt::Key_Backtab:
        return ImGuiKey_Tab;
    case Qt::Key_Left:
        return ImGuiKey_LeftArrow;
    case Qt::Key_Right:
        return ImGuiKey_RightArrow;
    case Qt::Key_Up:
        return ImGuiKey_UpArrow;
    case Qt::Key_Down:
        return ImGuiKey_DownArrow;
    case Qt::Key_PageUp:
        return ImGuiKey_PageUp;
    case Qt::Key_PageDown:
        return ImGuiKey_PageDown;
    case Qt::Key_Home:
        return ImGuiKey_Home;
    case Qt::Key_End:
        return ImGuiKey_End;
    case Qt::Key_Insert:
        return ImGuiKey_Insert;
    case Qt::Key_Delete:
        return ImGuiKey_Delete;
    case Qt::Key_Backspace:
        return ImGuiKey_Backspace;
    case Qt::Key_Space:
        return ImGuiKey_Space;
    case Qt::Key_Return:
        return ImGuiKey_Enter;
    case Qt::Key_Escape:
        return ImGuiKey_Escape;
    case Qt::Key_Enter:
        return ImGuiKey_KeyPadEnter; // Qt's Key_Enter is the keypad's
    case Qt::Key_A:
        return ImGuiKey_A;
    case Qt::Key_C:
        return ImGuiKey_C;
    case Qt::Key_V:
        return ImGuiKey_V;
    case Qt::Key_X:
        return ImGuiKey_X;
    case Qt::Key_Y:
        return ImGuiKey_Y;
    case Qt::Key_Z:
        return ImGuiKey_Z;
    default:
        return -1;
    }
}

int imguiButton(Qt::MouseButton b) {
    switch (b) {
    case Qt::LeftButton:
        return ImGuiMouseButton_Left;
    case Qt::RightButton:
        return ImGuiMouseButton_Right;
    case Qt::MiddleButton:
        return ImGuiMouseButton_Middle;
    case Qt::BackButton:
        return 3;
    case Qt::ForwardButton:
        return 4;
    default:
        return -1;
    }
}

bool any(const std::array<bool, 5>& a) {
    return std::find(a.begin(), a.end(), true) != a.end();
}

// Printable characters only: Ctrl+A arrives as text "\x01", Backspace as "\b"; those are keys, not text.
QString printable(const QString& text) {
    QString out;
    for (QChar c : text)
        if (c.unicode() >= 0x20 && c.unicode() != 0x7f) out += c;
    return out;
}

} // namespace

ImGuiLayer::ImGuiLayer(QOpenGLWidget* host)
    : host_(host), keysDown_(ImGuiKey_COUNT, false), keysPressedSinceFrame_(ImGuiKey_COUNT, false) {
    host->setMouseTracking(true);
    host->installEventFilter(this);
}

ImGuiLayer::~ImGuiLayer() {
    destroy();
}

void ImGuiLayer::makeImGuiCurrent() const {
    ImGui::SetCurrentContext(context_);
}

bool ImGuiLayer::initialize() {
    destroy(); // a second call: the host has a new GL context, the old objects went with the old one
    error_.clear();
    if (!host_ || !host_->context()) {
        error_ = QStringLiteral("no OpenGL context");
        return false;
    }
    // The context can be replaced (the widget moves to another window): release with the old one.
    connect(host_->context(), &QOpenGLContext::aboutToBeDestroyed, this, &ImGuiLayer::destroy,
            Qt::UniqueConnection);

    IMGUI_CHECKVERSION();
    context_ = ImGui::CreateContext();
    makeImGuiCurrent();
    ImGuiIO& io = ImGui::GetIO();
    io.IniFilename = nullptr; // no imgui.ini in the working directory; views place their windows themselves
    io.LogFilename = nullptr;
    for (int k = 0; k < ImGuiKey_COUNT; ++k) io.KeyMap[k] = k;
    io.GetClipboardTextFn = &ImGuiLayer::clipboardText;
    io.SetClipboardTextFn = &ImGuiLayer::setClipboardText;
    io.ClipboardUserData = this;
    io.BackendPlatformName = "flowscope_qt";
    applyImGuiStyle();
    buildFonts(host_->devicePixelRatioF());

    if (!ImGui_ImplOpenGL3_Init("#version 330 core")) {
        error_ = QStringLiteral("the Dear ImGui OpenGL 3 backend could not start");
        ImGui::DestroyContext(context_);
        context_ = nullptr;
        return false;
    }
    clock_.start();
    settleFrames_ = 3;
    return true;
}

void ImGuiLayer::destroy() {
    if (!context_) return;
    // The backend deletes GL objects: the host's context must be current.
    const bool switchContext =
        host_ && host_->context() && QOpenGLContext::currentContext() != host_->context();
    if (switchContext) host_->makeCurrent();
    makeImGuiCurrent();
    ImGui_ImplOpenGL3_Shutdown();
    ImGui::DestroyContext(context_);
    context_ = nullptr;
    if (switchContext) host_->doneCurrent();
    windowRects_.clear();
    wantMouse_ = wantKeyboard_ = popupOpen_ = false;
    imguiOwnsButton_ = {};
    fontDpr_ = 0.0;
}

void ImGuiLayer::buildFonts(double dpr) {
    buildImGuiFonts(dpr);
    fontDpr_ = dpr;
}

void ImGuiLayer::newFrame() {
    if (!context_ || !host_) {
        ImGui::SetCurrentContext(nullptr); // callers' ImGui calls must not land in another layer's context
        return;
    }
    makeImGuiCurrent();
    ImGuiIO& io = ImGui::GetIO();

    const double dpr = host_->devicePixelRatioF();
    if (dpr != fontDpr_) { // moved to a screen of another scale
        buildFonts(dpr);
        ImGui_ImplOpenGL3_DestroyDeviceObjects(); // the backend's NewFrame recreates them, font texture
                                                  // included
    }
    io.DisplaySize = ImVec2(float(host_->width()), float(host_->height()));
    io.DisplayFramebufferScale = ImVec2(float(dpr), float(dpr));
    const double dt = double(clock_.nsecsElapsed()) * 1e-9;
    clock_.restart();
    io.DeltaTime = float(std::max(dt, 1e-4)); // ImGui needs a positive step

    io.MousePos =
        mouseInside_ ? ImVec2(float(mousePos_.x()), float(mousePos_.y())) : ImVec2(-FLT_MAX, -FLT_MAX);
    for (int b = 0; b < 5; ++b) {
        io.MouseDown[b] = mouseDown_[b] || mousePressedSinceFrame_[b];
        mousePressedSinceFrame_[b] = false;
    }
    io.MouseWheel = wheel_;
    io.MouseWheelH = wheelH_;
    wheel_ = wheelH_ = 0.0f;
    for (int k = 0; k < ImGuiKey_COUNT; ++k) {
        io.KeysDown[k] = keysDown_[k] || keysPressedSinceFrame_[k];
        keysPressedSinceFrame_[k] = false;
    }
    io.KeyCtrl = ctrl_;
    io.KeyShift = shift_;
    io.KeyAlt = alt_;
    io.KeySuper = super_;

    ImGui_ImplOpenGL3_NewFrame();
    ImGui::NewFrame();
}

void ImGuiLayer::render() {
    if (!context_ || !host_) return;
    makeImGuiCurrent();
    ImGui::Render();
    ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
    const ImGuiIO& io = ImGui::GetIO();
    wantMouse_ = io.WantCaptureMouse;
    wantKeyboard_ = io.WantCaptureKeyboard;
    recordWindows();
    // A key or button released since the last frame is still down in ImGui: one more frame applies it.
    bool pendingRelease = false;
    for (int b = 0; b < 5; ++b) pendingRelease |= io.MouseDown[b] != mouseDown_[b];
    for (int k = 0; k < ImGuiKey_COUNT; ++k) pendingRelease |= io.KeysDown[k] != keysDown_[k];
    if (settleFrames_ > 0 || pendingRelease) {
        settleFrames_ = std::max(settleFrames_ - 1, 0);
        host_->update();
    }
}

void ImGuiLayer::recordWindows() {
    // The same test ImGui uses to find the hovered window (FindHoveredWindow): windows begun this frame,
    // visible, taking mouse input, with the resize padding around resizable ones.
    const ImGuiContext& g = *context_;
    windowRects_.clear();
    for (const ImGuiWindow* w : g.Windows) {
        if (!w->Active || w->Hidden || (w->Flags & ImGuiWindowFlags_NoMouseInputs)) continue;
        ImRect r = w->OuterRectClipped;
        if (!(w->Flags &
              (ImGuiWindowFlags_ChildWindow | ImGuiWindowFlags_NoResize | ImGuiWindowFlags_AlwaysAutoResize)))
            r.Expand(g.WindowsHoverPadding);
        windowRects_.emplace_back(QPointF(r.Min.x, r.Min.y), QPointF(r.Max.x, r.Max.y));
    }
    popupOpen_ = !g.OpenPopupStack.empty();
}

bool ImGuiLayer::wantsMouse() const {
    return wantMouse_;
}

bool ImGuiLayer::wantsKeyboard() const {
    return wantKeyboard_;
}

bool ImGuiLayer::isOverWindow(const QPointF& pos) const {
    return std::any_of(windowRects_.begin(), windowRects_.end(),
                       [&](const QRectF& r) { return r.contains(pos); });
}

double ImGuiLayer::frameMs() const {
    if (!context_) return 0.0;
    makeImGuiCurrent();
    const float fps = ImGui::GetIO().Framerate;
    return fps > 0.0f ? 1000.0 / double(fps) : 0.0;
}

const char* ImGuiLayer::clipboardText(void* userData) {
    auto* self = static_cast<ImGuiLayer*>(userData);
    self->clipboard_ = QGuiApplication::clipboard()->text().toUtf8();
    return self->clipboard_.constData();
}

void ImGuiLayer::setClipboardText(void*, const char* text) {
    QGuiApplication::clipboard()->setText(QString::fromUtf8(text));
}

// ---- the bridge ----------------------------------------------------------------------------------------

bool ImGuiLayer::eventFilter(QObject* watched, QEvent* event) {
    if (watched != host_ || !context_) return QObject::eventFilter(watched, event);
    bool taken = false;
    switch (event->type()) {
    case QEvent::MouseButtonPress:
    case QEvent::MouseButtonDblClick: // ImGui detects double clicks itself: a second press
        taken = onMouseButton(static_cast<QMouseEvent*>(event), true);
        break;
    case QEvent::MouseButtonRelease:
        taken = onMouseButton(static_cast<QMouseEvent*>(event), false);
        break;
    case QEvent::MouseMove:
        taken = onMouseMove(static_cast<QMouseEvent*>(event));
        break;
    case QEvent::Wheel:
        taken = onWheel(static_cast<QWheelEvent*>(event));
        break;
    case QEvent::KeyPress:
        taken = onKey(static_cast<QKeyEvent*>(event), true);
        break;
    case QEvent::KeyRelease:
        taken = onKey(static_cast<QKeyEvent*>(event), false);
        break;
    case QEvent::ShortcutOverride:
        // While an ImGui text field has the keyboard, keys go to it rather than to the application's
        // shortcuts (Space = play, Ctrl+Z, ...): accepting the override makes Qt deliver them as key presses.
        if (wantKeyboard_) {
            event->accept();
            return true;
        }
        return false;
    case QEvent::InputMethod: {
        const QString text = static_cast<QInputMethodEvent*>(event)->commitString();
        if (!text.isEmpty()) {
            makeImGuiCurrent();
            ImGui::GetIO().AddInputCharactersUTF8(text.toUtf8().constData());
            host_->update();
        }
        return wantKeyboard_;
    }
    case QEvent::FocusIn:
    case QEvent::FocusOut: {
        const bool in = event->type() == QEvent::FocusIn;
        makeImGuiCurrent();
        ImGui::GetIO().AddFocusEvent(in); // on focus out, ImGui releases its keys
        if (!in) {
            std::fill(keysDown_.begin(), keysDown_.end(), false);
            std::fill(keysPressedSinceFrame_.begin(), keysPressedSinceFrame_.end(), false);
            ctrl_ = shift_ = alt_ = super_ = false;
        }
        host_->update();
        return false;
    }
    case QEvent::Leave:
        if (!any(mouseDown_)) { // during a drag Qt keeps sending moves; ImGui keeps following them
            mouseInside_ = false;
            host_->update();
        }
        return false;
    default:
        return QObject::eventFilter(watched, event);
    }
    host_->update(); // ImGui reacts to input in its next frame
    return taken;
}

void ImGuiLayer::setModifiers(Qt::KeyboardModifiers m) {
    ctrl_ = m.testFlag(Qt::ControlModifier);
    shift_ = m.testFlag(Qt::ShiftModifier);
    alt_ = m.testFlag(Qt::AltModifier);
    super_ = m.testFlag(Qt::MetaModifier);
}

bool ImGuiLayer::onMouseButton(QMouseEvent* e, bool pressed) {
    mousePos_ = e->position();
    mouseInside_ = true;
    setModifiers(e->modifiers());
    const int b = imguiButton(e->button());
    if (b < 0) return false;
    if (pressed) {
        mouseDown_[b] = true;
        mousePressedSinceFrame_[b] = true;
        // ImGui takes the press when it lands on one of its windows, when an open popup waits for a click
        // anywhere, or when ImGui already owns another button; otherwise the view gets it, and keeps the
        // drag.
        const bool toImGui =
            !viewOwnsButton_[b] && (isOverWindow(mousePos_) || popupOpen_ || any(imguiOwnsButton_));
        imguiOwnsButton_[b] = toImGui;
        viewOwnsButton_[b] = !toImGui;
        return toImGui;
    }
    mouseDown_[b] = false;
    const bool toImGui = imguiOwnsButton_[b];
    imguiOwnsButton_[b] = viewOwnsButton_[b] = false;
    return toImGui;
}

bool ImGuiLayer::onMouseMove(QMouseEvent* e) {
    mousePos_ = e->position();
    mouseInside_ = true;
    if (any(imguiOwnsButton_)) return true; // dragging an ImGui slider or window
    if (any(viewOwnsButton_)) return false; // the view's pan goes on, even across an ImGui window
    return isOverWindow(mousePos_);         // hovering ImGui: the view should not pick under it
}

bool ImGuiLayer::onWheel(QWheelEvent* e) {
    // One notch is 120 units; ImGui scrolls about five lines per unit. Qt's x is ImGui's "horizontal".
    wheel_ += float(e->angleDelta().y()) / 120.0f;
    wheelH_ += float(e->angleDelta().x()) / 120.0f;
    mousePos_ = e->position();
    mouseInside_ = true;
    setModifiers(e->modifiers());
    return any(imguiOwnsButton_) || isOverWindow(mousePos_);
}

bool ImGuiLayer::onKey(QKeyEvent* e, bool pressed) {
    setModifiers(e->modifiers());
    // On X11 a modifier's own event reports the state before it: use the key itself for those.
    switch (e->key()) {
    case Qt::Key_Control:
        ctrl_ = pressed;
        break;
    case Qt::Key_Shift:
        shift_ = pressed;
        break;
    case Qt::Key_Alt:
        alt_ = pressed;
        break;
    case Qt::Key_Meta:
        super_ = pressed;
        break;
    default:
        break;
    }

    const int k = imguiKey(e->key());
    // Auto-repeat: ImGui repeats held keys itself, so only the first press and the last release count; the
    // repeated characters, though, are text that ImGui must receive.
    if (k >= 0 && !e->isAutoRepeat()) {
        keysDown_[k] = pressed;
        if (pressed) keysPressedSinceFrame_[k] = true;
    }
    if (pressed && !(ctrl_ || super_)) {
        const QString text = printable(e->text());
        if (!text.isEmpty()) {
            makeImGuiCurrent();
            ImGui::GetIO().AddInputCharactersUTF8(text.toUtf8().constData());
        }
    }
    return wantKeyboard_;
}

} // namespace flowscope
