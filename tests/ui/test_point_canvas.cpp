// Drawing your own data for a flow (ui/views/PointCanvas.h) and the Training panel's "your points": strokes
// spray points inside the brush around the cursor (the same strokes, the same points), the right button
// erases exactly the points under the brush, undo and clear; the panel trains on drawn or loaded points and
// refuses a file that is not (n, 2) naming it.
#include "GuiEnvironment.h"
#include "UiTestUtil.h"

#include "engine/io/Npy.h"
#include "ui/panels/FlowPanel.h"
#include "ui/shell/MainWindow.h"
#include "ui/views/PointCanvas.h"
#include "ui/workspaces/flows/FlowsWorkspace.h"
#include "ui/workspaces/particles/ParticlesWorkspace.h"
#include "ui/workspaces/transformers/TransformersWorkspace.h"

#include <QApplication>
#include <QComboBox>
#include <QDir>
#include <QLabel>
#include <QPushButton>
#include <QTemporaryDir>
#include <QTimer>
#include <QtTest/QTest>

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

namespace flowscope::test {
namespace {

// A left-button stroke through the world points `path` (press at the first, a move to each of the others).
void stroke(PointCanvas& c, const std::vector<QPointF>& path, Qt::MouseButton button = Qt::LeftButton) {
    const QPoint first = c.worldToPixel(path.front()).toPoint();
    QTest::mousePress(&c, button, Qt::NoModifier, first);
    for (std::size_t i = 1; i < path.size(); ++i) {
        QMouseEvent move(QEvent::MouseMove, QPointF(c.worldToPixel(path[i]).toPoint()),
                         c.mapToGlobal(c.worldToPixel(path[i])), Qt::NoButton, button, Qt::NoModifier);
        QApplication::sendEvent(&c, &move);
    }
    QTest::mouseRelease(&c, button, Qt::NoModifier, c.worldToPixel(path.back()).toPoint());
}

TEST(PointCanvasTest, MapsTheWorldSquareOntoTheCanvas) {
    FLOWSCOPE_REQUIRE_GUI();
    PointCanvas c;
    c.resize(500, 400); // not square: the area is the centred 398-pixel square
    const QRectF a = c.area();
    EXPECT_DOUBLE_EQ(a.width(), 398);
    EXPECT_DOUBLE_EQ(a.height(), 398);
    EXPECT_EQ(c.worldToPixel({-4, -4}), a.bottomLeft());
    EXPECT_EQ(c.worldToPixel({4, 4}), a.topRight());
    for (const QPointF w : {QPointF(0.3, -1.7), QPointF(-3.9, 2.2)}) {
        const QPointF back = c.pixelToWorld(c.worldToPixel(w));
        EXPECT_NEAR(back.x(), w.x(), 1e-12);
        EXPECT_NEAR(back.y(), w.y(), 1e-12);
    }
}

TEST(PointCanvasTest, StrokesSprayInsideTheBrushAndRepeatExactly) {
    FLOWSCOPE_REQUIRE_GUI();
    PointCanvas c, twin;
    for (PointCanvas* canvas : {&c, &twin}) {
        canvas->resize(400, 400);
        canvas->show();
        canvas->setBrush(0.25);
    }
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&c));
    const std::vector<QPointF> path = {{1, -2}, {1.5, -2}, {2, -1.5}};
    stroke(c, path);
    stroke(twin, path);
    // One spray at the press and one per move.
    ASSERT_EQ(c.points().rows(), 3 * PointCanvas::kPerStroke);
    EXPECT_EQ(c.points(), twin.points());
    for (Eigen::Index i = 0; i < c.points().rows(); ++i) {
        // Each event's points lie in the brush around that event's cursor (the pixel it landed on).
        const QPointF at =
            c.pixelToWorld(c.worldToPixel(path[std::size_t(i / PointCanvas::kPerStroke)]).toPoint());
        EXPECT_LE(std::hypot(c.points()(i, 0) - at.x(), c.points()(i, 1) - at.y()), 0.25 + 1e-12) << i;
    }
    // Not all on one spot: the brush spreads them.
    EXPECT_GT((c.points().col(0).array() - c.points()(0, 0)).abs().maxCoeff(), 0.01);
}

TEST(PointCanvasTest, RightButtonErasesExactlyThePointsUnderTheBrushAndUndoRestores) {
    FLOWSCOPE_REQUIRE_GUI();
    PointCanvas c;
    c.resize(400, 400);
    c.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&c));
    Mat grid(81, 2); // a 9 x 9 grid of points 0.5 apart
    for (int i = 0; i < 81; ++i) grid.row(i) << -2 + 0.5 * (i % 9), -2 + 0.5 * (i / 9);
    c.setPoints(grid);
    c.setBrush(0.6);
    const QPointF at = c.pixelToWorld(c.worldToPixel({0.25, 0.25}).toPoint()); // the cursor's pixel
    int under = 0;
    for (int i = 0; i < 81; ++i) under += std::hypot(grid(i, 0) - at.x(), grid(i, 1) - at.y()) <= 0.6;
    ASSERT_GT(under, 0);
    stroke(c, {{0.25, 0.25}}, Qt::RightButton);
    EXPECT_EQ(c.points().rows(), 81 - under);
    for (Eigen::Index i = 0; i < c.points().rows(); ++i)
        EXPECT_GT(std::hypot(c.points()(i, 0) - at.x(), c.points()(i, 1) - at.y()), 0.6);
    ASSERT_TRUE(c.undo());
    EXPECT_EQ(c.points(), grid);
    c.clear();
    EXPECT_EQ(c.points().rows(), 0);
    ASSERT_TRUE(c.undo());
    EXPECT_EQ(c.points(), grid);
    EXPECT_FALSE(c.undo()); // setPoints starts the history
}

TEST(PointCanvasTest, TheDialogNeedsTwoPointsAndThePanelTrainsOnThem) {
    FLOWSCOPE_REQUIRE_GUI();
    MainWindow window;
    window.resize(1200, 800);
    window.showPage(window.workspace<FlowsWorkspace>().view());
    window.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&window));
    FlowPanel* panel = window.workspace<FlowsWorkspace>().panel();
    auto* draw = panel->findChild<QPushButton*>(QStringLiteral("drawPoints"));
    ASSERT_NE(draw, nullptr);
    EXPECT_FALSE(draw->isVisibleTo(panel)); // only for "your points"

    // Draw... from the panel: the dialog opens modal; one stroke of three events, then OK.
    auto* combo = panel->findChild<QComboBox*>(QStringLiteral("training.dataset"));
    combo->setCurrentIndex(combo->count() - 1);
    EXPECT_TRUE(draw->isVisibleTo(panel));
    bool drawn = false, okDisabledWhenEmpty = false;
    QTimer poll;
    poll.setInterval(5);
    QObject::connect(&poll, &QTimer::timeout, [&] {
        auto* d = qobject_cast<PointCanvasDialog*>(QApplication::activeModalWidget());
        if (!d || drawn) return;
        drawn = true;
        auto* ok = d->findChild<QPushButton*>();
        for (QPushButton* b : d->findChildren<QPushButton*>())
            if (b->text() == QStringLiteral("Use these points")) ok = b;
        okDisabledWhenEmpty = !ok->isEnabled();
        stroke(*d->canvas(), {{-1, 1}, {0, 1}, {1, 1}});
        EXPECT_TRUE(ok->isEnabled());
        saveShot(*d, QStringLiteral("point-canvas-dialog.png"));
        d->accept();
    });
    poll.start();
    draw->click();
    poll.stop();
    ASSERT_TRUE(drawn);
    EXPECT_TRUE(okDisabledWhenEmpty);
    ASSERT_EQ(panel->points().rows(), 3 * PointCanvas::kPerStroke);
    EXPECT_TRUE(panel->usesPoints());
    EXPECT_EQ(panel->findChild<QLabel*>(QStringLiteral("pointsCount"))->text(), QStringLiteral("18 points"));

    // The run trains on exactly these points (without the RWPO layer: its first picture is O(n²) per layer).
    flows::TrainerConfig config = panel->config();
    config.flow.rwpo = false;
    EXPECT_TRUE(config.dataset.empty());
    EXPECT_EQ(config.points, panel->points());
    ASSERT_TRUE(window.workspace<FlowsWorkspace>().start(config, false, false))
        << window.lastError().toStdString();
    std::shared_ptr<const FlowSnapshot> s;
    for (int i = 0; i < 400 && !(s && !s->trainers.empty() && s->trainers[0].config); ++i) {
        QTest::qWait(10);
        s = window.workspace<FlowsWorkspace>().runner().snapshot();
    }
    ASSERT_TRUE(s && !s->trainers.empty() && s->trainers[0].config);
    EXPECT_EQ(s->trainers[0].config->points, panel->points());
    saveShot(*panel, QStringLiteral("training-panel-points.png"));
}

TEST(PointCanvasTest, ThePanelLoadsPointsFromNpyAndCsvAndNamesABadFile) {
    FLOWSCOPE_REQUIRE_GUI();
    QTemporaryDir dir;
    FlowPanel panel;
    const double xy[] = {0, 1, 2, 3, 4, 5, 6, 7}; // (4, 2), row-major
    const std::string npy = dir.filePath(QStringLiteral("p.npy")).toStdString();
    writeNpy(npy, {4, 2}, xy, false);
    QString why;
    ASSERT_TRUE(panel.loadPointsFile(QString::fromStdString(npy), &why)) << why.toStdString();
    ASSERT_EQ(panel.points().rows(), 4);
    EXPECT_EQ(panel.points()(3, 1), 7.0);
    EXPECT_TRUE(panel.usesPoints());

    const QString csv = dir.filePath(QStringLiteral("p.csv"));
    std::ofstream(csv.toStdString()) << "1.5,2\n-3,4\n0,0\n";
    ASSERT_TRUE(panel.loadPointsFile(csv, &why)) << why.toStdString();
    EXPECT_EQ(panel.points().rows(), 3);
    EXPECT_EQ(panel.points()(0, 0), 1.5);

    const std::string wide = dir.filePath(QStringLiteral("wide.npy")).toStdString();
    writeNpy(wide, {2, 4}, xy, false);
    EXPECT_FALSE(panel.loadPointsFile(QString::fromStdString(wide), &why));
    EXPECT_TRUE(why.contains(QStringLiteral("wide.npy")) && why.contains(QStringLiteral("4 columns")))
        << why.toStdString();
    const QString junk = dir.filePath(QStringLiteral("junk.npy"));
    std::ofstream(junk.toStdString()) << "not an array";
    EXPECT_FALSE(panel.loadPointsFile(junk, &why));
    EXPECT_TRUE(why.contains(QStringLiteral("junk.npy"))) << why.toStdString();
    EXPECT_EQ(panel.points().rows(), 3); // the last good points are kept
}

} // namespace
} // namespace flowscope::test
