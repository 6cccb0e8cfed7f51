// Flowscope UI: the application's look (a dark Fusion palette that matches the plot background).
#pragma once

class QApplication;

namespace flowscope {

void applyDarkTheme(QApplication& app);

} // namespace flowscope
