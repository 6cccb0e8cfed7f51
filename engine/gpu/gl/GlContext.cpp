#include "engine/gpu/gl/GlContext.h"

#include <EGL/egl.h>
#include <EGL/eglext.h>

#include <cstdio>
#include <cstring>

namespace flowscope {

namespace {

// True when the space-separated extension string `list` names `ext`.
bool hasExtension(const char* list, const char* ext) {
    if (!list) return false;
    const std::size_t n = std::strlen(ext);
    for (const char* p = list; (p = std::strstr(p, ext)); p += n)
        if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0')) return true;
    return false;
}

std::string eglErrorText(const char* what) {
    char code[16];
    std::snprintf(code, sizeof code, "0x%04X", unsigned(eglGetError()));
    return std::string(what) + " failed (EGL error " + code + ")";
}

// The surfaceless platform when the client offers it (no X, no Wayland, no DRM master needed), else the
// default display.
EGLDisplay openDisplay() {
    const char* client = eglQueryString(EGL_NO_DISPLAY, EGL_EXTENSIONS);
    if (hasExtension(client, "EGL_MESA_platform_surfaceless") &&
        hasExtension(client, "EGL_EXT_platform_base")) {
        auto getPlatformDisplay =
            reinterpret_cast<PFNEGLGETPLATFORMDISPLAYEXTPROC>(eglGetProcAddress("eglGetPlatformDisplayEXT"));
        if (getPlatformDisplay) {
            EGLDisplay d = getPlatformDisplay(EGL_PLATFORM_SURFACELESS_MESA, EGL_DEFAULT_DISPLAY, nullptr);
            if (d != EGL_NO_DISPLAY) return d;
        }
    }
    return eglGetDisplay(EGL_DEFAULT_DISPLAY);
}

} // namespace

std::unique_ptr<GlContext> GlContext::createHeadless(std::string* whyNot, const GlContext* shareWith) {
    auto fail = [&](const std::string& why) {
        if (whyNot) *whyNot = why;
        return std::unique_ptr<GlContext>();
    };
    EGLDisplay display = shareWith ? shareWith->display_ : openDisplay();
    if (display == EGL_NO_DISPLAY) return fail("no EGL display");
    EGLint major = 0, minor = 0;
    if (!eglInitialize(display, &major, &minor)) return fail(eglErrorText("eglInitialize"));
    const char* ext = eglQueryString(display, EGL_EXTENSIONS);
    if (!hasExtension(ext, "EGL_KHR_surfaceless_context"))
        return fail("the EGL display has no EGL_KHR_surfaceless_context");
    if (!hasExtension(ext, "EGL_KHR_create_context") && (major < 1 || (major == 1 && minor < 5)))
        return fail("EGL cannot create versioned OpenGL contexts (needs EGL 1.5 or EGL_KHR_create_context)");
    if (!eglBindAPI(EGL_OPENGL_API)) return fail(eglErrorText("eglBindAPI(EGL_OPENGL_API)"));

    // A config is irrelevant without surfaces; take none where the display allows it.
    EGLConfig config = nullptr;
    if (!hasExtension(ext, "EGL_KHR_no_config_context")) {
        const EGLint want[] = {EGL_RENDERABLE_TYPE, EGL_OPENGL_BIT, EGL_NONE};
        EGLint count = 0;
        if (!eglChooseConfig(display, want, &config, 1, &count) || count < 1)
            return fail("no EGL config supports desktop OpenGL");
    }
    const EGLint attributes[] = {EGL_CONTEXT_MAJOR_VERSION,
                                 4,
                                 EGL_CONTEXT_MINOR_VERSION,
                                 3,
                                 EGL_CONTEXT_OPENGL_PROFILE_MASK,
                                 EGL_CONTEXT_OPENGL_CORE_PROFILE_BIT,
                                 EGL_NONE};
    EGLContext context =
        eglCreateContext(display, config, shareWith ? shareWith->context_ : EGL_NO_CONTEXT, attributes);
    if (context == EGL_NO_CONTEXT) return fail(eglErrorText("creating an OpenGL 4.3 core context"));

    std::unique_ptr<GlContext> c(new GlContext);
    c->display_ = display;
    c->context_ = context;
    if (!c->makeCurrent()) return fail(eglErrorText("eglMakeCurrent without a surface"));
    std::string why;
    if (!c->gl_.load(procLoader(), GlFunctions::Use::Compute, &why)) return fail(why);
    return c;
}

GlProcLoader GlContext::procLoader() {
    return [](const char* name) { return GlProc(eglGetProcAddress(name)); };
}

GlContext::~GlContext() {
    // The display stays initialized: EGL displays are per process, and another user (Qt) may share it.
    if (eglGetCurrentContext() == context_)
        eglMakeCurrent(display_, EGL_NO_SURFACE, EGL_NO_SURFACE, EGL_NO_CONTEXT);
    eglDestroyContext(display_, context_);
}

bool GlContext::makeCurrent() {
    return eglMakeCurrent(display_, EGL_NO_SURFACE, EGL_NO_SURFACE, context_) == EGL_TRUE;
}

} // namespace flowscope
