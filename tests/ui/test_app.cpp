// The application as a whole: every preset loads and draws, live edits reach the engine, the scrubber
// rewinds, settings come back, the quick sliders drive the scene.
#include "MainWindowFixture.h"
#include "TestScenes.h"

#include "engine/dynamics/Simulation.h"
#include "render/picture/Colormap.h"
#include "render/picture/Theme.h"
#include "ui/panels/MatrixEditor.h"
#include "ui/panels/ScenePanel.h"
#include "ui/shell/MainWindow.h"
#include "ui/views/ConeView.h"
#include "ui/views/ImGuiLayer.h"
#include "ui/views/ParticleView.h"
#include "ui/workspaces/flows/FlowsWorkspace.h"
#include "ui/workspaces/particles/ParticlesWorkspace.h"
#include "ui/workspaces/transformers/TransformersWorkspace.h"

#include <QAction>
#include <QApplication>
#include <QComboBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFileInfo>
#include <QMouseEvent>
#include <QSlider>
#include <QtTest/QTest>

#include <Eigen/Eigenvalues>
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace flowscope::test {
namespace {

// Pixels that differ from the background colour at (2, 2) of a view's framebuffer with the status box
// excluded (it sits in the top-left corner).
long drawnPixels(const QImage& image) {
    const QImage img = image.convertToFormat(QImage::Format_RGB32);
    const QRgb background = img.pixel(img.width() - 2, img.height() - 2);
    long count = 0;
    for (int y = 0; y < img.height(); ++y)
        for (int x = 0; x < img.width(); ++x) count += img.pixel(x, y) != background;
    return count;
}

class AppTest : public MainWindowFixture {
  protected:
    AppTest() : MainWindowFixture({1100, 700}) {}
    void prepare() override {
        window->workspace<ParticlesWorkspace>().setPresetDirectory(QStringLiteral(FLOWSCOPE_PRESET_DIR));
    }
    void stepTo(long step) {
        ASSERT_TRUE(waitForSnapshot(
            window->workspace<ParticlesWorkspace>().runner(),
            [step](const Snapshot& s) { return s.step >= step; }, kEventGuard));
        window->workspace<ParticlesWorkspace>().particleView()->refresh();
    }
    // The oracle of a run's tokens: a fresh Simulation of `scene` after `steps` steps, to 1e-12.
    void expectTokensOf(const Scene& scene, int steps) {
        Simulation expected(scene);
        for (int k = 0; k < steps; ++k) expected.step();
        const Tokens& shown = window->workspace<ParticlesWorkspace>().runner().snapshot()->tokens;
        EXPECT_LE((shown - expected.tokens()).cwiseAbs().maxCoeff(), 1e-12);
    }
};

// The shipped presets, by file name, sorted: one test case each (a ctest entry each, balanced over the
// cores).
std::vector<std::string> presetFiles() {
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(FLOWSCOPE_PRESET_DIR))
        if (e.path().extension() == ".json") names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
}

// --- Every preset ---

TEST(AppPresets, ThereAreAtLeastForty) {
    EXPECT_GE(presetFiles().size(), 40u);
}

class EveryPreset : public AppTest, public ::testing::WithParamInterface<std::string> {};

TEST_P(EveryPreset, LoadsAdvancesAndDraws) {
    const QString file =
        QDir(QStringLiteral(FLOWSCOPE_PRESET_DIR)).filePath(QString::fromStdString(GetParam()));
    ASSERT_TRUE(window->workspace<ParticlesWorkspace>().openSceneFile(file))
        << window->lastError().toStdString();
    window->workspace<ParticlesWorkspace>().stepOnce();
    window->workspace<ParticlesWorkspace>().stepOnce();
    stepTo(2);
    window->showPage(window->workspace<ParticlesWorkspace>().particleView());
    const QImage particles = window->workspace<ParticlesWorkspace>().particleView()->grabFramebuffer();
    EXPECT_GT(drawnPixels(particles), 200);
    ASSERT_TRUE(waitFor([&] { return !window->workspace<ParticlesWorkspace>().coneView()->solving(); }));
    window->showPage(window->workspace<ParticlesWorkspace>().coneView());
    const QImage cone = window->workspace<ParticlesWorkspace>().coneView()->grabFramebuffer();
    EXPECT_GT(drawnPixels(cone), 200); // trajectories, or the message that says why there are none
    if (window->workspace<ParticlesWorkspace>().scene()->d == 2 &&
        window->workspace<ParticlesWorkspace>().scene()->initial.kind == InitKind::Gaussian &&
        window->workspace<ParticlesWorkspace>().scene()->moments.grid.enabled()) {
        EXPECT_GT(window->workspace<ParticlesWorkspace>().coneView()->trajectoryCount(), 0);
    }
}

INSTANTIATE_TEST_SUITE_P(Shipped, EveryPreset, ::testing::ValuesIn(presetFiles()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                             std::string name = info.param.substr(0, info.param.size() - 5); // no ".json"
                             for (char& c : name)
                                 if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                             return name;
                         });

// --- Editing and the overlays ---

TEST_F(AppTest, AMatrixEntryEditedInTheEditorReachesTheEngine) {
    ASSERT_TRUE(window->workspace<ParticlesWorkspace>().setScene(tinyScene(64, 20)));
    QDoubleSpinBox* v00 = window->workspace<ParticlesWorkspace>().matrixEditor()->entry('V', 0, 0);
    ASSERT_NE(v00, nullptr);
    v00->setValue(0.7);
    EXPECT_DOUBLE_EQ(window->workspace<ParticlesWorkspace>().scene()->attention.heads[0].V(0, 0), 0.7);
    window->workspace<ParticlesWorkspace>().stepOnce();
    stepTo(1);
    // The oracle: the same step taken by a simulation built with the edited matrix.
    Scene edited = tinyScene(64, 20);
    edited.attention.heads[0].V(0, 0) = 0.7;
    expectTokensOf(edited, 1);
}

TEST_F(AppTest, ParticleCentroidSitsOnTheProjectedMeanIn3D) {
    Scene scene = tinyScene(400, 20);
    scene.d = 3;
    scene.initial.mean = Vec::Zero(3);
    scene.initial.cov = Mat::Identity(3, 3) * 0.5;
    scene.attention.heads = {
        HeadParams{Mat::Identity(3, 3), Mat::Identity(3, 3), -0.4 * Mat::Identity(3, 3)}};
    ASSERT_TRUE(window->workspace<ParticlesWorkspace>().setScene(scene));
    window->showPage(window->workspace<ParticlesWorkspace>().particleView());
    window->workspace<ParticlesWorkspace>().stepOnce();
    stepTo(1);
    ParticleView* view = window->workspace<ParticlesWorkspace>().particleView();
    EXPECT_TRUE(view->is3D());
    const QImage img = view->grabFramebuffer().convertToFormat(QImage::Format_RGB32);
    // Every token lands where the camera says: the pixel under the projected token is drawn.
    const Tokens& X = view->displayedSnapshot()->tokens;
    const QRgb background = img.pixel(img.width() - 2, img.height() - 2);
    const double dpr = view->devicePixelRatioF();
    int hits = 0;
    for (int i = 0; i < 50; ++i) {
        const auto p = view->worldToPixel(X.row(i).transpose());
        ASSERT_TRUE(p.has_value());
        hits += img.pixel((*p * dpr).toPoint()) != background;
    }
    EXPECT_GE(hits, 48);
}

TEST_F(AppTest, TheGaussianOverlayFollowsTheClosedFormAndIsDrawn) {
    // Q = K = I, V = -0.4 I: Sigma' = 2 eps Sigma^2 with eps = -0.4, so Sigma(t) = (Sigma0^-1 + 0.8 t I)^-1
    // (docs/math/gaussian.md#t2, Prop 2 with B = -0.8 I); the mean stays 0.
    Scene scene = tinyScene(512, 40);
    scene.initial.cov = (Mat(2, 2) << 2.0, 0.5, 0.5, 1.0).finished();
    ASSERT_TRUE(window->workspace<ParticlesWorkspace>().setScene(scene));
    window->showPage(window->workspace<ParticlesWorkspace>().particleView());
    ParticleView* view = window->workspace<ParticlesWorkspace>().particleView();
    view->setHudVisible(false);
    ASSERT_TRUE(view->overlayAvailable()) << view->overlayReason().toStdString();
    for (double t : {0.0, 0.7, 2.0, 4.0}) {
        const Mat expected = (scene.initial.cov.inverse() + 0.8 * t * Mat::Identity(2, 2)).inverse();
        const auto g = view->overlay().at(t);
        ASSERT_TRUE(g.has_value());
        EXPECT_LE((g->cov - expected).cwiseAbs().maxCoeff(), 1e-4) << "t = " << t;
        EXPECT_LE(g->mean.norm(), 1e-12);
    }
    for (int k = 0; k < 20; ++k) window->workspace<ParticlesWorkspace>().stepOnce();
    stepTo(20);
    // The 2-sigma ellipse passes through mean + 2 Sigma^{1/2} e1: pixels there change when the overlay is
    // switched off.
    const auto g = view->overlay().at(view->displayedSnapshot()->t);
    Eigen::SelfAdjointEigenSolver<Mat> eig(g->cov);
    const double dpr = view->devicePixelRatioF();
    // The camera holds still: Follow eases it toward the cloud by the wall time between paints, so on a busy
    // machine the two grabs framed the cloud a few pixels apart (the whole image differed).
    view->setFollow(false);
    // Each image is the second frame drawn in its state: Dear ImGui hides a window on the frame it first
    // appears (to size it), so how many frames came before must not decide what the grab shows.
    const auto settledFrame = [&] {
        (void)view->grabFramebuffer();
        return view->grabFramebuffer().convertToFormat(QImage::Format_RGB32);
    };
    const QImage with = settledFrame();
    view->setLayer(ParticleView::Layer::Gaussian, false);
    const QImage without = settledFrame();
    view->setLayer(ParticleView::Layer::Gaussian, true);
    for (double k : {1.0, 2.0})
        for (int axis : {0, 1}) {
            const Vec edge = g->mean + k * std::sqrt(eig.eigenvalues()(axis)) * eig.eigenvectors().col(axis);
            const QPoint p = (*view->worldToPixel(edge) * dpr).toPoint();
            int changed = 0;
            for (int dy = -2; dy <= 2; ++dy)
                for (int dx = -2; dx <= 2; ++dx)
                    changed += with.pixel(p + QPoint(dx, dy)) != without.pixel(p + QPoint(dx, dy));
            EXPECT_GT(changed, 0) << k << " sigma, axis " << axis;
        }
    // The overlay is two thin ellipses, not a repaint of the view: few of its pixels change.
    long changedInView = 0;
    for (int y = 0; y < with.height(); ++y)
        for (int x = 0; x < with.width(); ++x) changedInView += with.pixel(x, y) != without.pixel(x, y);
    EXPECT_LT(double(changedInView), 0.05 * double(with.width()) * double(with.height()));
}

// The mouse moved over `at` in the view: the token it picks (-1 for none).
int hover(ParticleView* view, QPointF at) {
    QMouseEvent move(QEvent::MouseMove, at, view->mapToGlobal(at), Qt::NoButton, Qt::NoButton,
                     Qt::NoModifier);
    QApplication::sendEvent(view, &move);
    return view->pickedToken();
}

// The softmax attention row of token i with Q = K = I, beta = 1: P_ij = exp(<x_i, x_j>) / sum_k exp(<x_i,
// x_k>).
Vec softmaxRow(const Tokens& X, int i) {
    Vec row(X.rows());
    for (Eigen::Index j = 0; j < X.rows(); ++j) row(j) = std::exp(X.row(i).dot(X.row(j)));
    return row / row.sum();
}

// --- Hover and live edits ---

TEST_F(AppTest, HoveringATokenPicksItAndShowsItsAttentionRow) {
    ASSERT_TRUE(window->workspace<ParticlesWorkspace>().setScene(tinyScene(128, 40)));
    window->showPage(window->workspace<ParticlesWorkspace>().particleView());
    ParticleView* view = window->workspace<ParticlesWorkspace>().particleView();
    view->setHudVisible(false);
    window->workspace<ParticlesWorkspace>().stepOnce();
    stepTo(1);
    QTest::qWait(50);
    view->repaint(); // the camera of a painted frame
    const Tokens X = view->displayedSnapshot()->tokens;
    // The token nearest the hovered pixel (ties aside, token 7 itself when it is not covered by another).
    const QPointF at = *view->worldToPixel(X.row(7).transpose());
    const int picked = hover(view, at);
    ASSERT_GE(picked, 0);
    const QPointF p = *view->worldToPixel(X.row(picked).transpose());
    EXPECT_LE(std::hypot(p.x() - at.x(), p.y() - at.y()), 1.0 + 1e-9);
    ASSERT_EQ(view->pickedWeights().size(), X.rows());
    EXPECT_LE((view->pickedWeights() - softmaxRow(X, picked)).cwiseAbs().maxCoeff(), 1e-12);
    // Leaving the view drops the pick.
    QEvent leave(QEvent::Leave);
    QApplication::sendEvent(view, &leave);
    EXPECT_EQ(view->pickedToken(), -1);
}

// Issue 45 item 1: a run started as sigmoid (no attention distribution) and changed live to softmax shows the
// softmax row on hover. The hover's own field was made for sigmoid and kept computing sigmoid after the edit.
TEST_F(AppTest, HoverFollowsALiveTypeEdit) {
    Scene scene = tinyScene(96, 40);
    scene.attention.type = AttentionType::Sigmoid;
    ASSERT_TRUE(window->workspace<ParticlesWorkspace>().setScene(scene));
    window->showPage(window->workspace<ParticlesWorkspace>().particleView());
    ParticleView* view = window->workspace<ParticlesWorkspace>().particleView();
    view->setHudVisible(false);
    auto* type = window->workspace<ParticlesWorkspace>().scenePanel()->findChild<QComboBox*>(
        QStringLiteral("attention.type"));
    ASSERT_NE(type, nullptr);
    type->setCurrentIndex(int(AttentionType::Softmax)); // a live edit: it takes at once
    ASSERT_EQ(window->workspace<ParticlesWorkspace>().scene()->attention.type, AttentionType::Softmax);
    window->workspace<ParticlesWorkspace>().stepOnce();
    stepTo(1);
    view->repaint();
    const Tokens X = view->displayedSnapshot()->tokens;
    const int picked = hover(view, *view->worldToPixel(X.row(3).transpose()));
    ASSERT_GE(picked, 0);
    ASSERT_EQ(view->pickedWeights().size(), X.rows()) << "the hover has no attention row after the edit";
    EXPECT_LE((view->pickedWeights() - softmaxRow(X, picked)).cwiseAbs().maxCoeff(), 1e-12);
}

// Issue 45 item 2: V -> +0.4 I live at t = 1.6. The analysis and the overlay speak of the tokens as they are
// then: Prop 2 from their covariance, t_max = 1.6 + 1 / lambda_max(B Sigma) with B = 0.8 I; the overlay
// continues from their mean and covariance (it drew the blow-up of the t = 0 Gaussian).
TEST_F(AppTest, AfterALiveEditTheAnalysisAndOverlayStartFromTheTokensAsTheyAre) {
    ASSERT_TRUE(window->workspace<ParticlesWorkspace>().setScene(
        tinyScene(256, 40))); // T = 4 in 40 steps, V = -0.4 I
    window->showPage(window->workspace<ParticlesWorkspace>().particleView());
    for (long k = 1; k <= 16; ++k) {
        window->workspace<ParticlesWorkspace>().stepOnce();
        ASSERT_NO_FATAL_FAILURE(stepTo(k));
    }
    const std::shared_ptr<const Snapshot> now = window->workspace<ParticlesWorkspace>().runner().snapshot();
    ASSERT_EQ(now->step, 16);
    const Vec mean = now->tokens.colwise().mean().transpose();
    const Tokens centred = now->tokens.rowwise() - mean.transpose();
    const Mat cov = centred.transpose() * centred / double(now->tokens.rows());
    MatrixEditor* editor = window->workspace<ParticlesWorkspace>().matrixEditor();
    editor->entry('V', 0, 0)->setValue(0.4);
    editor->entry('V', 1, 1)->setValue(0.4);
    const double tMax =
        now->t + 1.0 / (0.8 * Eigen::SelfAdjointEigenSolver<Mat>(cov).eigenvalues().maxCoeff());
    const QString text = editor->regimeText();
    EXPECT_TRUE(text.startsWith(QStringLiteral("From the tokens at t = 1.6"))) << text.toStdString();
    EXPECT_TRUE(text.contains(QStringLiteral("t_max = %1").arg(tMax, 0, 'g', 4)))
        << text.toStdString() << tMax;
    const std::optional<GaussianState> g =
        window->workspace<ParticlesWorkspace>().particleView()->overlay().at(now->t);
    ASSERT_TRUE(g);
    EXPECT_LE((g->mean - mean).norm(), 1e-12);
    EXPECT_LE((g->cov - cov).norm(), 1e-12);
    // A new scene speaks of its initial tokens again.
    ASSERT_TRUE(window->workspace<ParticlesWorkspace>().setScene(tinyScene(256, 40)));
    EXPECT_FALSE(editor->regimeText().startsWith(QStringLiteral("From the tokens")))
        << editor->regimeText().toStdString();
}

// --- Axes and colours ---

TEST(ChooseAxes, ParsesTwoOrThreeIndicesAndExplainsBadInput) {
    QString why;
    const auto plane = parseAxes(QStringLiteral(" 3, 1 "), 5, &why);
    ASSERT_TRUE(plane.has_value());
    EXPECT_EQ(plane->dims, 2);
    EXPECT_EQ(plane->axes[0], 3);
    EXPECT_EQ(plane->axes[1], 1);
    const auto space = parseAxes(QStringLiteral("0,4,2"), 5);
    ASSERT_TRUE(space.has_value());
    EXPECT_EQ(space->dims, 3);
    EXPECT_FALSE(space->pca);
    EXPECT_FALSE(parseAxes(QStringLiteral("0, 5"), 5, &why).has_value());
    EXPECT_TRUE(why.contains(QStringLiteral("0 to 4"))) << why.toStdString();
    EXPECT_FALSE(parseAxes(QStringLiteral("0, 1, 2"), 2, &why).has_value());
    EXPECT_TRUE(why.contains(QStringLiteral("d >= 3"))) << why.toStdString();
    EXPECT_FALSE(parseAxes(QStringLiteral("x, 1"), 3).has_value());
    EXPECT_FALSE(parseAxes(QStringLiteral("1"), 3).has_value());
}

TEST_F(AppTest, ChosenAxesAreTheCoordinatesDrawn) {
    Scene scene = tinyScene(64, 10);
    scene.d = 4;
    scene.initial.mean = Vec::Zero(4);
    scene.initial.cov = Mat::Identity(4, 4);
    scene.attention.heads = {
        HeadParams{Mat::Identity(4, 4), Mat::Identity(4, 4), -0.4 * Mat::Identity(4, 4)}};
    ASSERT_TRUE(window->workspace<ParticlesWorkspace>().setScene(scene));
    ParticleView* view = window->workspace<ParticlesWorkspace>().particleView();
    view->setProjection(*parseAxes(QStringLiteral("3, 1"), 4));
    EXPECT_FALSE(view->is3D());
    Mat expected = Mat::Zero(4, 2);
    expected(3, 0) = expected(1, 1) = 1.0;
    EXPECT_EQ(view->projectionBasis(), expected);
    view->repaint();
    const Vec x = (Vec(4) << 0.1, -0.7, 5.0, 0.4).finished();
    const QPointF p = *view->worldToPixel(x);
    EXPECT_NEAR(p.x(), view->transform().worldToPixel({0.4, -0.7}).x(), 1e-9);
    EXPECT_NEAR(p.y(), view->transform().worldToPixel({0.4, -0.7}).y(), 1e-9);
}

TEST_F(AppTest, EntropyColoursFollowTheAttentionRows) {
    // Q = 0: every token attends uniformly, H_i = log N, drawn at the top of viridis (yellow).
    Scene scene = tinyScene(64, 10);
    scene.output.entropy = true;
    scene.attention.heads[0].Q = Mat::Zero(2, 2);
    ASSERT_TRUE(window->workspace<ParticlesWorkspace>().setScene(scene));
    window->showPage(window->workspace<ParticlesWorkspace>().particleView());
    ParticleView* view = window->workspace<ParticlesWorkspace>().particleView();
    view->setHudVisible(false);
    view->setColorBy(ColorBy::Entropy);
    window->workspace<ParticlesWorkspace>().stepOnce();
    stepTo(1);
    const Vec& H = view->displayedSnapshot()->observables.tokenEntropy;
    ASSERT_EQ(H.size(), 64);
    EXPECT_LE((H.array() - std::log(64.0)).abs().maxCoeff(), 1e-12);
    const QImage img = view->grabFramebuffer().convertToFormat(QImage::Format_RGB32);
    const Tokens& X = view->displayedSnapshot()->tokens;
    const QColor top = viridis(1.0);
    int yellow = 0;
    for (int i = 0; i < 20; ++i) {
        const QColor c(
            img.pixel((*view->worldToPixel(X.row(i).transpose()) * view->devicePixelRatioF()).toPoint()));
        yellow += std::abs(c.red() - top.red()) < 12 && std::abs(c.green() - top.green()) < 12 &&
                  std::abs(c.blue() - top.blue()) < 12;
    }
    EXPECT_GE(yellow, 18);
}

// --- Scrubbing, settings and themes ---

TEST_F(AppTest, ScrubbingBackAndSteppingContinuesFromTheShownFrame) {
    Scene scene = tinyScene(64, 20);
    scene.output.every = 2;
    ASSERT_TRUE(window->workspace<ParticlesWorkspace>().setScene(scene));
    window->workspace<ParticlesWorkspace>().setMaxSpeed(true);
    window->workspace<ParticlesWorkspace>().play();
    ASSERT_TRUE(waitForSnapshot(window->workspace<ParticlesWorkspace>().runner(),
                                [](const Snapshot& s) { return s.finished; }));
    window->workspace<ParticlesWorkspace>().particleView()->refresh();
    const auto history = window->workspace<ParticlesWorkspace>().runner().snapshot()->history;
    ASSERT_EQ(history->size(), 11u);
    window->workspace<ParticlesWorkspace>().scrubTo(3); // step 6
    EXPECT_EQ(window->workspace<ParticlesWorkspace>().particleView()->displayedSnapshot()->step, 6);
    EXPECT_EQ(window->workspace<ParticlesWorkspace>().particleView()->displayedSnapshot()->tokens,
              *history->at(3).tokens);
    window->workspace<ParticlesWorkspace>().stepOnce();
    ASSERT_TRUE(waitForSnapshot(window->workspace<ParticlesWorkspace>().runner(),
                                [](const Snapshot& s) { return s.step == 7; }));
    expectTokensOf(scene, 7);
}

TEST_F(AppTest, SettingsBringBackTheSceneWithItsEdits) {
    Scene scene = tinyScene(64, 20);
    scene.name = "remembered";
    ASSERT_TRUE(window->workspace<ParticlesWorkspace>().setScene(scene));
    window->workspace<ParticlesWorkspace>().matrixEditor()->entry('V', 1, 1)->setValue(-0.9);
    window->setTheme(ThemeKind::Light);
    // The Display menu's four layers, each switched from its default through its action.
    using Layer = ParticleView::Layer;
    const std::pair<QString, Layer> layers[] = {{QStringLiteral("Gaussian overlay"), Layer::Gaussian},
                                                {QStringLiteral("Rényi-parking centres"), Layer::Parking},
                                                {QStringLiteral("Hardmax cells"), Layer::HardmaxCells},
                                                {QStringLiteral("Trails"), Layer::Trails}};
    ParticleView* view = window->workspace<ParticlesWorkspace>().particleView();
    std::map<Layer, bool> switched;
    for (const auto& [text, layer] : layers) {
        QAction* action = nullptr;
        for (QAction* a : window->findChildren<QAction*>())
            if (a->text() == text) action = a;
        ASSERT_NE(action, nullptr) << text.toStdString();
        EXPECT_EQ(action->isChecked(), view->layer(layer)) << text.toStdString();
        // This scene (softmax, not masked) has neither parking leaders nor hardmax cells: those two are
        // greyed, the Gaussian overlay and the trails are not.
        const bool available = layer == Layer::Gaussian || layer == Layer::Trails;
        EXPECT_EQ(action->isEnabled(), available) << text.toStdString();
        action->setChecked(!action->isChecked());
        switched[layer] = view->layer(layer);
        EXPECT_EQ(switched[layer], action->isChecked()) << text.toStdString();
    }
    EXPECT_TRUE(switched[Layer::Trails]);    // off by default
    EXPECT_FALSE(switched[Layer::Gaussian]); // on by default
    window->saveSettings();

    MainWindow restored;
    restored.restoreSettings();
    for (const auto& [text, layer] : layers)
        EXPECT_EQ(restored.workspace<ParticlesWorkspace>().particleView()->layer(layer), switched[layer])
            << text.toStdString();
    const auto last = restored.workspace<ParticlesWorkspace>().savedScene();
    ASSERT_TRUE(last.has_value());
    EXPECT_EQ(last->first.name, "remembered");
    EXPECT_DOUBLE_EQ(last->first.attention.heads[0].V(1, 1), -0.9);
    EXPECT_EQ(restored.theme(), ThemeKind::Light);
    restored.setTheme(ThemeKind::Dark);
    window->setTheme(ThemeKind::Dark);
}

// Issue 45 item 11: in the light theme the Play icon is drawn in the light palette's button text (it kept the
// dark theme's near-white, nearly invisible and looking disabled), at 4.5:1 or more against the tool bar.
TEST_F(AppTest, TheLightThemesPlayIconIsDrawnInItsInk) {
    window->setTheme(ThemeKind::Light);
    QAction* play = nullptr;
    for (QAction* a : window->findChildren<QAction*>())
        if (a->text() == QStringLiteral("Play") || a->text() == QStringLiteral("Pause")) play = a;
    ASSERT_NE(play, nullptr);
    const QImage icon = play->icon().pixmap(16, 16).toImage().convertToFormat(QImage::Format_ARGB32);
    QColor ink(0, 0, 0, 0); // the most opaque pixel's colour
    for (int y = 0; y < icon.height(); ++y)
        for (int x = 0; x < icon.width(); ++x)
            if (QColor c = icon.pixelColor(x, y); c.alpha() > ink.alpha()) ink = c;
    const QPalette light = themePalette(ThemeKind::Light);
    EXPECT_EQ(ink.rgb(), light.color(QPalette::ButtonText).rgb()) << ink.name().toStdString();
    EXPECT_GE(contrastRatio(ink, light.color(QPalette::Window)), 4.5);
    window->setTheme(ThemeKind::Dark);
}

TEST_F(AppTest, TheImGuiBetaSliderDrivesTheScene) {
    ASSERT_TRUE(window->workspace<ParticlesWorkspace>().setScene(tinyScene(64, 2000)));
    window->showPage(window->workspace<ParticlesWorkspace>().particleView());
    ParticleView* view = window->workspace<ParticlesWorkspace>().particleView();
    ASSERT_TRUE(waitFor([&] {
        view->update();
        return view->quickLayout().beta.right > view->quickLayout().beta.left;
    }));
    // ImGui 1.86 reads the input state once per frame: let a few frames pass after each event.
    const auto frames = [view] {
        for (int k = 0; k < 4; ++k) {
            view->update();
            QTest::qWait(30);
        }
    };
    frames(); // the layout of a frame at the view's final size
    const HudRect r = view->quickLayout().beta;
    const QPoint start(int(r.left + 0.25 * (r.right - r.left)), int(0.5 * (r.top + r.bottom)));
    const QPoint end(int(r.left + 0.9 * (r.right - r.left)), start.y());
    // Hover first with a plain event (QTest::mouseMove without a button warps the X pointer instead).
    QMouseEvent hover(QEvent::MouseMove, QPointF(start), view->mapToGlobal(QPointF(start)), Qt::NoButton,
                      Qt::NoButton, Qt::NoModifier);
    QApplication::sendEvent(view, &hover);
    frames();
    EXPECT_TRUE(view->imgui()->isOverWindow(QPointF(start)));
    QTest::mousePress(view, Qt::LeftButton, {}, start);
    frames();
    QTest::mouseMove(view, end);
    frames();
    QTest::mouseRelease(view, Qt::LeftButton, {}, end);
    frames();
    ASSERT_TRUE(waitFor([&] { return window->workspace<ParticlesWorkspace>().scene()->attention.beta > 1.5; },
                        kEventGuard))
        << "beta = " << window->workspace<ParticlesWorkspace>().scene()->attention.beta;
}

} // namespace
} // namespace flowscope::test
