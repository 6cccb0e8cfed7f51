// The Transformers tab: the Transformer panel drives the TransformerRunner, the view draws what it publishes.
#include "MainWindowFixture.h"
#include "TestScenes.h"
#include "UiTestUtil.h"

#include "ui/panels/TransformerPanel.h"
#include "ui/shell/MainWindow.h"
#include "ui/views/TransformerView.h"
#include "ui/workspaces/flows/FlowsWorkspace.h"
#include "ui/workspaces/particles/ParticlesWorkspace.h"
#include "ui/workspaces/transformers/TransformersWorkspace.h"

#include <QAbstractButton>
#include <QAbstractSpinBox>
#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QGridLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QScrollArea>
#include <QScrollBar>
#include <QSpinBox>
#include <QToolButton>
#include <QtTest/QTest>

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>

namespace flowscope::test {
namespace {

class TransformerViewTest : public TrainingTabFixture<TransformersWorkspace> {
  protected:
    template <class W> W* control(const char* key) { return panel->findChild<W*>(QString::fromLatin1(key)); }

    QImage grabView() { return view->grab().toImage().convertToFormat(QImage::Format_RGB32); }

    // The largest colour distance to `background` within `radius` device pixels of a logical point.
    static int inkNear(const QImage& image, QPointF logical, double dpr, const QColor& background,
                       int radius = 3) {
        int best = 0;
        const QPoint c(int(std::lround(logical.x() * dpr)), int(std::lround(logical.y() * dpr)));
        for (int y = c.y() - radius; y <= c.y() + radius; ++y)
            for (int x = c.x() - radius; x <= c.x() + radius; ++x) {
                if (x < 0 || y < 0 || x >= image.width() || y >= image.height()) continue;
                const QColor p(image.pixel(x, y));
                best = std::max(best, std::abs(p.red() - background.red()) +
                                          std::abs(p.green() - background.green()) +
                                          std::abs(p.blue() - background.blue()));
            }
        return best;
    }
};

TEST_F(TransformerViewTest, TransformersTabRaisesItsPanel) {
    expectTheCurrentTab(3, "Transformers");
    // The defaults: task A above Theorem 2's threshold (1/6 in the paper's convention), compared with 0.
    const ot::OtTrainerConfig c = panel->config();
    EXPECT_EQ(c.task, ot::Task::A);
    EXPECT_EQ(c.model.convention, ot::KineticConvention::Paper);
    EXPECT_GT(c.model.lambdaOt, 1.0 / 6.0);
    EXPECT_TRUE(panel->comparison());
}

// Three steps of task A beside λ_OT = 0: both pictures draw the six tokens' paths where the snapshot says
// they are, the regularized one also the closed-form end points; the status names the threshold T·L² = 1/6.
TEST_F(TransformerViewTest, StepsDrawTheTokenPathsOfBothModels) {
    ASSERT_NO_FATAL_FAILURE(expectStepsFromNoRun(3));
    const auto s = view->displayedSnapshot();
    ASSERT_EQ(s->trainers.size(), 2u);
    EXPECT_GT(s->trainers[0].lambdaOt, 0.0);
    EXPECT_EQ(s->trainers[1].lambdaOt, 0.0);
    EXPECT_NEAR(s->threshold, 1.0 / 6.0, 1e-12);
    EXPECT_TRUE(panel->statusText().contains(QStringLiteral("threshold T·L² = 0.1667")))
        << panel->statusText().toStdString();
    EXPECT_TRUE(panel->statusText().contains(QStringLiteral("iteration 3")));
    EXPECT_TRUE(panel->warningText().isEmpty()) << panel->warningText().toStdString();
    EXPECT_EQ(button("start")->text(), QStringLiteral("Resume"));

    const QImage image = grabView();
    const double dpr = view->devicePixelRatioF();
    const QColor background = PlotStyle{}.background;
    for (int k = 0; k < 2; ++k) {
        const TransformerPicture& picture = *s->trainers[std::size_t(k)].picture;
        ASSERT_EQ(picture.states.size(), std::size_t(panel->config().model.steps) + 1);
        ASSERT_EQ(picture.states.front().rows(), 6);
        EXPECT_EQ(picture.closedForm.rows(), k == 0 ? 6 : 0); // only with λ_OT > 0
        const QRectF square = view->picture().pictureSquare(k);
        for (int i = 0; i < 6; ++i)
            for (const Mat* x : {&picture.states.front(), &picture.states.back()}) {
                const QPointF at = view->picture().pictureToPixel(k, (*x)(i, 0), (*x)(i, 1));
                EXPECT_TRUE(square.contains(at)) << "trainer " << k << " token " << i;
                EXPECT_GT(inkNear(image, at, dpr, background), 120) << "trainer " << k << " token " << i;
            }
    }
    EXPECT_LE(view->pictureRect(0).right(), view->pictureRect(1).left());
    // A corner of the picture, far from every token, is background.
    const QRectF square = view->picture().pictureSquare(0);
    EXPECT_LT(inkNear(image, square.topLeft() + QPointF(3, 3), dpr, background, 1), 60);
}

TEST_F(TransformerViewTest, EvaluateAddsTheHeldOutDiagnostics) {
    ASSERT_TRUE(step(1));
    button("evaluate")->click();
    ASSERT_TRUE(waitFor([&] {
        view->refresh();
        const auto s = view->displayedSnapshot();
        return s && !s->trainers.empty() && !s->trainers[0].evaluations.empty() &&
               !s->trainers.back().evaluations.empty();
    }));
    const ot::OtEvaluation& e = view->displayedSnapshot()->trainers[0].evaluations.back();
    EXPECT_GT(e.straightness, 0.0);
    EXPECT_LE(e.straightness, 1.0 + 1e-12);
    EXPECT_TRUE(std::isfinite(e.closedFormError));
    EXPECT_TRUE(std::isfinite(e.lipschitzBound)); // λ_OT above the threshold
    // The read-outs: a compact grid under the run controls, not a wall of wrapped status text. The status is
    // the iteration and the threshold, a line each; the grid has a row per quantity, a right-aligned column
    // per model, each label one line that fits its width.
    EXPECT_LE(panel->statusText().count(QLatin1Char('\n')), 1) << panel->statusText().toStdString();
    const QString readouts = panel->readoutText();
    for (const char* row : {"λ_OT = 1 | λ_OT = 0", "objective | ", "Held-out, iteration ", "straightness | ",
                            "to the closed form | ", "Lipschitz ratio | ", "Theorem 2 bound | "})
        EXPECT_TRUE(readouts.contains(QString::fromUtf8(row))) << row << "\n" << readouts.toStdString();
    auto* grid = panel->findChild<QWidget*>(QStringLiteral("readouts"));
    ASSERT_NE(grid, nullptr);
    ASSERT_TRUE(grid->isVisible());
    int visible = 0;
    for (QLabel* label : grid->findChildren<QLabel*>()) {
        if (!label->isVisible()) continue;
        ++visible;
        EXPECT_FALSE(label->wordWrap()) << label->text().toStdString();
        EXPECT_LE(label->sizeHint().width(), label->width()) << label->text().toStdString();
        EXPECT_GE(label->x(), 0);
        EXPECT_LE(label->geometry().right(), grid->width()) << label->text().toStdString();
    }
    EXPECT_GE(visible, 20);
    // The values of a model share one right edge (the grid's column), right of every name.
    auto* layout = qobject_cast<QGridLayout*>(grid->layout());
    ASSERT_NE(layout, nullptr);
    std::map<int, std::set<int>> rightEdges; // by grid column
    for (int i = 0; i < layout->count(); ++i) {
        int row = 0, column = 0, rows = 0, columns = 0;
        layout->getItemPosition(i, &row, &column, &rows, &columns);
        QWidget* w = layout->itemAt(i)->widget();
        if (column > 0 && w && w->isVisible()) rightEdges[column].insert(w->geometry().right());
    }
    ASSERT_EQ(rightEdges.size(), 2u); // a column per model
    for (const auto& [column, edges] : rightEdges) EXPECT_EQ(edges.size(), 1u) << "column " << column;
    // In a 1024 x 640 window the read-outs are on screen whole, with the run controls above them: the
    // secondary settings fold away (More settings), the panel scrolls rather than cutting anything off.
    window->resize(1024, 640);
    QApplication::processEvents();
    ASSERT_LE(window->height(), 640);
    const QRect inWindow(grid->mapTo(window.get(), QPoint(0, 0)), grid->size());
    EXPECT_TRUE(window->rect().contains(inWindow)) << inWindow.bottom() << " below " << window->height();
    auto* area = panel->findChild<QScrollArea*>();
    ASSERT_NE(area, nullptr);
    EXPECT_TRUE(
        area->viewport()->rect().contains(QRect(grid->mapTo(area->viewport(), QPoint(0, 0)), grid->size())));
    EXPECT_FALSE(area->horizontalScrollBar()->isVisible())
        << area->viewport()->width() << " px wide, the panel needs "
        << area->widget()->minimumSizeHint().width();
    auto* more = panel->findChild<QToolButton*>(QStringLiteral("transformer.more"));
    ASSERT_NE(more, nullptr);
    EXPECT_FALSE(control<QSpinBox>("transformer.seed")->isVisible());
    more->click();
    EXPECT_TRUE(control<QSpinBox>("transformer.seed")->isVisible());
    // The straightness plot has its held-out dots (orange: the regularized model).
    const QImage image = grabView();
    const double dpr = view->devicePixelRatioF();
    const QRectF r = view->plotRect(TransformerView::Plot::Straightness);
    long dots = 0;
    for (int y = int(r.top() * dpr); y < int(r.bottom() * dpr); ++y)
        for (int x = int(r.left() * dpr); x < int(r.right() * dpr); ++x) {
            const QColor c(image.pixel(x, y));
            dots += (c.red() > 200 && c.green() > 100 && c.green() < 170 && c.blue() < 80) ||
                    (c.blue() > 200 && c.red() < 120 && c.green() > 130);
        }
    EXPECT_GT(dots, 3); // a dot is 5 px across
}

TEST_F(TransformerViewTest, ChoosingATaskLoadsItsDefaultsAndAnEditAsksForANewStart) {
    ASSERT_NO_FATAL_FAILURE(expectStartThenPause(3));
    EXPECT_EQ(button("start")->text(), QStringLiteral("Resume"));

    auto* task = control<QComboBox>("transformer.task");
    // Task A's default pads the tokens to [x; x; 0] in R⁶ (the setting that reaches the closed form).
    const ot::OtTrainerConfig a = panel->config();
    EXPECT_TRUE(a.model.padEmbed && a.model.padCopy && a.model.routingInit && a.model.incrementVelocity);
    EXPECT_EQ(a.model.width, 6);
    control<QSpinBox>("transformer.width")->setValue(2); // task A's model (docs/math/transformers.md#task-a)
    EXPECT_FALSE(panel->config().model.padEmbed);
    task->setCurrentIndex(task->findData(int(ot::Task::B)));
    EXPECT_TRUE(panel->edited());
    EXPECT_EQ(button("start")->text(), QStringLiteral("Start"));
    const ot::OtTrainerConfig b = panel->config();
    EXPECT_EQ(b.task, ot::Task::B);
    EXPECT_EQ(b.model.width, 16);
    EXPECT_FALSE(b.model.padEmbed || b.model.incrementVelocity);
    EXPECT_EQ(b.model.steps, 8);
    EXPECT_DOUBLE_EQ(b.model.lambdaOt, 0.01);
    EXPECT_TRUE(control<QSpinBox>("transformer.width")->isEnabled());
    EXPECT_TRUE(panel->statusText().contains(QStringLiteral("Settings edited")));

    // The discrete baseline has no transport: λ_OT and the comparison are off, and it has two blocks.
    auto* arch = control<QComboBox>("transformer.architecture");
    arch->setCurrentIndex(arch->findData(int(ot::Architecture::Discrete)));
    EXPECT_FALSE(control<QDoubleSpinBox>("transformer.lambda_ot")->isEnabled());
    EXPECT_FALSE(panel->comparison());
    EXPECT_EQ(panel->config().model.lambdaOt, 0.0);
    EXPECT_EQ(panel->config().model.blocks, 2);
}

TEST_F(TransformerViewTest, AnInvalidConfigIsReportedAndKeepsTheRun) {
    ASSERT_NO_FATAL_FAILURE(expectInvalidStartKeepsTheRun(
        [&] {
            ot::OtTrainerConfig bad = panel->config();
            bad.model.steps = 0;
            return window->workspace<TransformersWorkspace>().start(bad, true, true);
        },
        "steps"));
    EXPECT_EQ(panel->config().model.steps, 10); // the controls still show the run
}

TEST_F(TransformerViewTest, EveryTransformerControlHasATooltip) {
    expectEveryControlHasATooltip(*panel, false);
    for (int k = 0; k < TransformerView::kPlotCount; ++k) {
        const QRectF r = view->plotRect(TransformerView::Plot(k));
        EXPECT_FALSE(r.isEmpty());
        for (int j = 0; j < k; ++j) EXPECT_FALSE(r.intersects(view->plotRect(TransformerView::Plot(j))));
    }
    EXPECT_TRUE(TransformersPicture::plotTitle(TransformerView::Plot::Target, ot::Task::B)
                    .contains(QStringLiteral("accuracy")));
}

} // namespace
} // namespace flowscope::test
