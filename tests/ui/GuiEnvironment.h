// Flowscope UI tests: whether this process could open a display with OpenGL 3.3 core (set up in main.cpp).
#pragma once

#include <QString>

namespace flowscope::test {

bool guiAvailable();
QString guiUnavailableReason();

} // namespace flowscope::test

// Widget tests need a display (Xvfb) and OpenGL 3.3 core (Mesa llvmpipe); without them they skip.
#define FLOWSCOPE_REQUIRE_GUI()                                                                              \
    do {                                                                                                     \
        if (!::flowscope::test::guiAvailable())                                                              \
            GTEST_SKIP() << ::flowscope::test::guiUnavailableReason().toStdString();                         \
    } while (false)
