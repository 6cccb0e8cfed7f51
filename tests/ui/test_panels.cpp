// The dock panels: the matrix editor (entry edits, matrix buttons, regime prediction), the scene panel (live
// and staged edits, validation) and the preset browser (every preset listed, malformed ones disabled), plus
// the tooltip table. FLOWSCOPE_SAVE_SHOTS=DIR saves a screenshot of each panel there.
#include "GuiEnvironment.h"
#include "TestScenes.h"
#include "UiTestUtil.h"

#include "engine/scene/SceneSchema.h"
#include "ui/panels/MatrixEditor.h"
#include "ui/panels/PresetBrowser.h"
#include "ui/panels/ScenePanel.h"
#include "ui/widgets/Tooltips.h"

#include <QAbstractButton>
#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFile>
#include <QFileInfo>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QTextBrowser>
#include <QTreeWidget>
#include <QtTest/QTest>

#include <gtest/gtest.h>

#include <climits>
#include <cmath>
#include <functional>
#include <vector>

namespace flowscope::test {
namespace {

QString presetDirectory() {
#ifdef FLOWSCOPE_PRESET_DIR
    return QStringLiteral(FLOWSCOPE_PRESET_DIR);
#else
    // tests/ui/test_panels.cpp -> assets/presets (CMake passes absolute source paths).
    return QDir(QFileInfo(QStringLiteral(__FILE__)).absolutePath() + QStringLiteral("/../../assets/presets"))
        .absolutePath();
#endif
}

Mat mat2(double a, double b, double c, double d) {
    Mat m(2, 2);
    m << a, b, c, d;
    return m;
}

// Two heads, so that an edit has to land on the selected one.
Scene twoHeadScene() {
    Scene s = tinyScene();
    s.attention.heads = {HeadParams{Mat::Identity(2, 2), Mat::Identity(2, 2), -0.4 * Mat::Identity(2, 2)},
                         HeadParams{mat2(1, 2, 3, 4), mat2(0.5, 0, 0, 0.5), mat2(0, -1, 1, 0)}};
    return s;
}

// 1 / lambda_max(S B S), S = Sigma0^{1/2}: Prop 2's blow-up time.
double blowUpTime(const Mat& B, const Mat& sigma0) {
    const Eigen::SelfAdjointEigenSolver<Mat> eig(sigma0);
    const Mat S =
        eig.eigenvectors() * eig.eigenvalues().cwiseSqrt().asDiagonal() * eig.eigenvectors().transpose();
    const Mat SBS = S * B * S;
    return 1.0 /
           Eigen::SelfAdjointEigenSolver<Mat>(Mat(0.5 * (SBS + SBS.transpose()))).eigenvalues().maxCoeff();
}

void saveShot(QWidget& w, const QString& name) {
    const QByteArray dir = qgetenv("FLOWSCOPE_SAVE_SHOTS");
    if (dir.isEmpty()) return;
    w.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&w));
    QTest::qWait(50);
    const QString path = QDir(QString::fromLocal8Bit(dir)).filePath(name);
    EXPECT_TRUE(w.grab().save(path)) << path.toStdString();
}

// A Panel (ScenePanel, MatrixEditor) of a document that holds `scene`, changed by `edit`, at w x h, saved as
// `name`.
template <class Panel>
void saveShotOf(const Scene& scene, int w, int h, const char* name,
                const std::function<void(Panel&)>& edit = {}) {
    ParticleDocument doc;
    Panel panel(doc);
    doc.open(scene);
    if (edit) edit(panel);
    panel.resize(w, h);
    saveShot(panel, QString::fromLatin1(name));
}

// ---- MatrixEditor
// ---------------------------------------------------------------------------------------------

// Appends the document's attention (and integrator) after each live edit it takes.
void logEdits(ParticleDocument& doc, std::vector<AttentionSpec>& attention,
              std::vector<IntegratorSpec>* integrator = nullptr) {
    QObject::connect(&doc, &ParticleDocument::edited,
                     [&doc, &attention, integrator](ParticleDocument::Part part) {
                         if (part == ParticleDocument::Part::Attention)
                             attention.push_back(doc.scene().attention);
                         else if (integrator)
                             integrator->push_back(doc.scene().integrator);
                     });
}

// Appends every value that `signal` of `sender` emits to `log`.
template <class Sender, class Owner, class Value>
void logEmissions(Sender* sender, void (Owner::*signal)(const Value&), std::vector<Value>& log) {
    QObject::connect(sender, signal, [&log](const Value& v) { log.push_back(v); });
}

class MatrixEditorTest : public ::testing::Test {
  protected:
    void SetUp() override {
        FLOWSCOPE_REQUIRE_GUI();
        editor = std::make_unique<MatrixEditor>(doc);
        logEdits(doc, emitted);
    }
    template <class T> T* child(const char* name) { return editor->findChild<T*>(QString::fromLatin1(name)); }
    void click(const char* name) {
        auto* b = child<QAbstractButton>(name);
        ASSERT_NE(b, nullptr) << name;
        b->click();
    }

    ParticleDocument doc; // declared first: it outlives the editor
    std::unique_ptr<MatrixEditor> editor;
    std::vector<AttentionSpec> emitted;
};

TEST_F(MatrixEditorTest, SetSceneEmitsNothing) {
    doc.open(twoHeadScene());
    EXPECT_TRUE(emitted.empty());
    ASSERT_NE(editor->entry('V', 1, 1), nullptr);
    EXPECT_DOUBLE_EQ(editor->entry('V', 1, 1)->value(), -0.4);
    EXPECT_EQ(editor->entry('V', 2, 0), nullptr);
}

TEST_F(MatrixEditorTest, EntryEditEmitsTheValueAtItsHeadRowAndColumn) {
    const Scene scene = twoHeadScene();
    doc.open(scene);
    auto* head = child<QComboBox>("head");
    ASSERT_NE(head, nullptr);
    ASSERT_EQ(head->count(), 2);
    head->setCurrentIndex(1);
    EXPECT_TRUE(emitted.empty()); // choosing a head is not an edit
    ASSERT_NE(editor->entry('Q', 1, 0), nullptr);
    EXPECT_DOUBLE_EQ(editor->entry('Q', 1, 0)->value(), 3.0);

    editor->entry('V', 0, 1)->setValue(0.25);
    ASSERT_EQ(emitted.size(), 1u);
    const AttentionSpec& a = emitted.back();
    ASSERT_EQ(a.heads.size(), 2u);
    EXPECT_EQ(a.heads[1].V, mat2(0, 0.25, 1, 0));
    EXPECT_EQ(a.heads[0].V, scene.attention.heads[0].V);
    EXPECT_EQ(a.heads[1].Q, scene.attention.heads[1].Q);
    EXPECT_EQ(editor->attention().heads[1].V, a.heads[1].V);

    editor->entry('K', 1, 1)->setValue(-2.0);
    ASSERT_EQ(emitted.size(), 2u);
    EXPECT_EQ(emitted.back().heads[1].K, mat2(0.5, 0, 0, -2.0));
}

TEST_F(MatrixEditorTest, EntryEditLandsInTheSelectedKeyframe) {
    Scene scene = tinyScene();
    const HeadParams h{Mat::Identity(2, 2), Mat::Identity(2, 2), -0.4 * Mat::Identity(2, 2)};
    scene.attention.heads.clear();
    scene.attention.keyframes = {Keyframe{0.0, {h}}, Keyframe{2.0, {h}}};
    doc.open(scene);
    auto* layer = child<QComboBox>("layer");
    ASSERT_NE(layer, nullptr);
    ASSERT_EQ(layer->count(), 2);
    layer->setCurrentIndex(1);
    editor->entry('Q', 0, 1)->setValue(0.75);
    ASSERT_EQ(emitted.size(), 1u);
    ASSERT_EQ(emitted.back().keyframes.size(), 2u);
    EXPECT_DOUBLE_EQ(emitted.back().keyframes[1].heads[0].Q(0, 1), 0.75);
    EXPECT_DOUBLE_EQ(emitted.back().keyframes[0].heads[0].Q(0, 1), 0.0);
}

TEST_F(MatrixEditorTest, MatrixButtons) {
    Scene scene = tinyScene();
    scene.attention.heads[0].V = mat2(1, 2, 3, 4);
    doc.open(scene);

    click("symmetrize_V");
    ASSERT_EQ(emitted.size(), 1u);
    EXPECT_EQ(emitted.back().heads[0].V, mat2(1, 2.5, 2.5, 4));
    EXPECT_DOUBLE_EQ(editor->entry('V', 1, 0)->value(), 2.5); // the grid shows it

    click("negate_V");
    EXPECT_EQ(emitted.back().heads[0].V, mat2(-1, -2.5, -2.5, -4));

    child<QDoubleSpinBox>("factor_V")->setValue(-2.0);
    click("scale_V");
    EXPECT_EQ(emitted.back().heads[0].V, mat2(2, 5, 5, 8));

    click("identity_V");
    EXPECT_EQ(emitted.back().heads[0].V, Mat::Identity(2, 2));

    click("negate_Q");
    EXPECT_EQ(emitted.back().heads[0].Q, -Mat::Identity(2, 2));
    EXPECT_EQ(emitted.back().heads[0].V, Mat::Identity(2, 2));
    EXPECT_EQ(emitted.size(), 5u);

    // Random: N(0, 1)/sqrt(d) entries from the editor's seeded generator, the same in every editor.
    click("random_K");
    ParticleDocument otherDoc;
    MatrixEditor other(otherDoc);
    otherDoc.open(scene);
    AttentionSpec otherAttention;
    QObject::connect(&otherDoc, &ParticleDocument::edited,
                     [&] { otherAttention = otherDoc.scene().attention; });
    other.findChild<QAbstractButton*>(QStringLiteral("random_K"))->click();
    const Mat K = emitted.back().heads[0].K;
    EXPECT_EQ(K, otherAttention.heads[0].K);
    EXPECT_TRUE(K.allFinite());
    EXPECT_NE(K, Mat::Identity(2, 2));
    EXPECT_LT(K.cwiseAbs().maxCoeff(), 6.0 / std::sqrt(2.0));
}

TEST_F(MatrixEditorTest, SymmetrizeIsDisabledForRectangularQ) {
    Scene scene = tinyScene();
    scene.attention.heads[0].Q = Mat::Identity(1, 2);
    scene.attention.heads[0].K = Mat::Identity(1, 2);
    doc.open(scene);
    EXPECT_FALSE(child<QAbstractButton>("symmetrize_Q")->isEnabled());
    EXPECT_TRUE(child<QAbstractButton>("symmetrize_V")->isEnabled());
    EXPECT_NE(editor->entry('Q', 0, 1), nullptr);
    EXPECT_EQ(editor->entry('Q', 1, 0), nullptr);
}

TEST_F(MatrixEditorTest, RegimeTextPredictsConvergenceAndBlowUp) {
    // Q = K = I, V = -0.4 I, Sigma0 = I: B = -0.8 I <= 0 without zero eigenvalue: collapse, limit rank 0.
    doc.open(tinyScene());
    EXPECT_TRUE(editor->regimeText().contains(QStringLiteral("single cluster")))
        << editor->regimeText().toStdString();
    EXPECT_TRUE(editor->regimeText().contains(QStringLiteral("0 zero eigenvalues")))
        << editor->regimeText().toStdString();
    EXPECT_EQ(child<QLabel>("eigenvaluesSymA")->text(), QStringLiteral("2, 2"));
    EXPECT_EQ(child<QLabel>("eigenvaluesB")->text(), QStringLiteral("-0.8, -0.8"));

    // V = +I: B = 2 I, blow-up at t_max = 1 / lambda_max(Sigma0^{1/2} B Sigma0^{1/2}) = 0.5.
    click("identity_V");
    const QString expected =
        QString::number(blowUpTime(2.0 * Mat::Identity(2, 2), Mat::Identity(2, 2)), 'g', 4);
    EXPECT_EQ(expected, QStringLiteral("0.5"));
    EXPECT_TRUE(editor->regimeText().contains(QStringLiteral("blow-up at t_max = ") + expected))
        << editor->regimeText().toStdString();

    // A tilted Sigma0 (V = I commutes with it): t_max = 1 / (2 lambda_max(Sigma0)) = 0.2265.
    Scene tilted = tinyScene();
    tilted.initial.cov = mat2(2, 0.5, 0.5, 1);
    tilted.attention.heads[0].V = Mat::Identity(2, 2);
    doc.open(tilted);
    const QString tiltedExpected =
        QString::number(blowUpTime(2.0 * Mat::Identity(2, 2), tilted.initial.cov), 'g', 4);
    EXPECT_EQ(tiltedExpected, QStringLiteral("0.2265"));
    EXPECT_TRUE(editor->regimeText().contains(QStringLiteral("t_max = ") + tiltedExpected))
        << editor->regimeText().toStdString();

    // Not Gaussian: Sigma0 = I.
    tilted.initial.kind = InitKind::Uniform;
    doc.open(tilted);
    EXPECT_TRUE(editor->regimeText().contains(QStringLiteral("t_max = 0.5")))
        << editor->regimeText().toStdString();
}

TEST_F(MatrixEditorTest, NoGridsForRwpo) {
    Scene scene = tinyScene();
    scene.attention.type = AttentionType::Rwpo;
    scene.attention.heads.clear();
    doc.open(scene);
    EXPECT_EQ(editor->entry('Q', 0, 0), nullptr);
    EXPECT_FALSE(editor->regimeText().isEmpty());
}

// ---- ScenePanel
// -----------------------------------------------------------------------------------------------

class ScenePanelTest : public ::testing::Test {
  protected:
    void SetUp() override {
        FLOWSCOPE_REQUIRE_GUI();
        panel = std::make_unique<ScenePanel>(doc);
        logEdits(doc, attention, &integrator);
        logEmissions(panel.get(), &ScenePanel::sceneEdited, scenes);
        // Apply restarts the document with the edited scene, as the Particles workspace does.
        QObject::connect(panel.get(), &ScenePanel::sceneEdited, [this](const Scene& s) { doc.open(s); });
        doc.open(tinyScene());
    }
    template <class T> T* child(const char* name) {
        T* w = panel->findChild<T*>(QString::fromLatin1(name));
        EXPECT_NE(w, nullptr) << name;
        return w;
    }
    bool rowShown(const char* name) { return child<QWidget>(name)->isVisibleTo(panel.get()); }

    ParticleDocument doc; // declared first: it outlives the panel
    std::unique_ptr<ScenePanel> panel;
    std::vector<AttentionSpec> attention;
    std::vector<IntegratorSpec> integrator;
    std::vector<Scene> scenes;
};

TEST_F(ScenePanelTest, SetSceneEmitsNothing) {
    Scene other = twoHeadScene();
    other.attention.beta = 3.0;
    doc.open(other);
    EXPECT_TRUE(attention.empty());
    EXPECT_TRUE(integrator.empty());
    EXPECT_TRUE(scenes.empty());
    EXPECT_DOUBLE_EQ(child<QDoubleSpinBox>("attention.beta")->value(), 3.0);
    EXPECT_EQ(child<QSpinBox>("attention.heads")->value(), 2);
    EXPECT_FALSE(child<QPushButton>("apply")->isEnabled());
}

TEST_F(ScenePanelTest, BetaEditEmitsAttentionWithThatBeta) {
    child<QDoubleSpinBox>("attention.beta")->setValue(2.5);
    ASSERT_EQ(attention.size(), 1u);
    EXPECT_DOUBLE_EQ(attention.back().beta, 2.5);
    EXPECT_EQ(attention.back().heads[0].V, -0.4 * Mat::Identity(2, 2));
    EXPECT_DOUBLE_EQ(panel->editedScene().attention.beta, 2.5);
    EXPECT_TRUE(scenes.empty());
}

TEST_F(ScenePanelTest, IntegratorEditsAreLive) {
    child<QComboBox>("integrator.method")->setCurrentIndex(int(Method::DormandPrince));
    child<QDoubleSpinBox>("integrator.T")->setValue(7.5);
    child<QSpinBox>("integrator.steps")->setValue(321);
    ASSERT_EQ(integrator.size(), 3u);
    EXPECT_EQ(integrator.back().method, Method::DormandPrince);
    EXPECT_DOUBLE_EQ(integrator.back().T, 7.5);
    EXPECT_EQ(integrator.back().steps, 321);
    EXPECT_TRUE(attention.empty());
}

TEST_F(ScenePanelTest, HeadCountAddsNeutralHeadsAndDropsTheLast) {
    child<QSpinBox>("attention.heads")->setValue(3);
    ASSERT_EQ(attention.size(), 1u);
    ASSERT_EQ(attention.back().heads.size(), 3u);
    EXPECT_EQ(attention.back().heads[0].V, -0.4 * Mat::Identity(2, 2));
    for (int h : {1, 2}) {
        EXPECT_EQ(attention.back().heads[std::size_t(h)].Q, Mat::Identity(2, 2));
        EXPECT_EQ(attention.back().heads[std::size_t(h)].K, Mat::Identity(2, 2));
        EXPECT_EQ(attention.back().heads[std::size_t(h)].V, Mat::Zero(2, 2));
    }
    child<QSpinBox>("attention.heads")->setValue(1);
    ASSERT_EQ(attention.back().heads.size(), 1u);
    EXPECT_EQ(attention.back().heads[0].V, -0.4 * Mat::Identity(2, 2));
}

TEST_F(ScenePanelTest, RowsFollowTheAttentionType) {
    EXPECT_TRUE(rowShown("attention.masked"));
    EXPECT_FALSE(rowShown("attention.sinkhorn.eps"));
    EXPECT_FALSE(rowShown("attention.rwpo.lambda"));

    child<QCheckBox>("attention.masked")->setChecked(true);
    child<QComboBox>("attention.type")->setCurrentIndex(int(AttentionType::Sinkhorn));
    ASSERT_FALSE(attention.empty());
    EXPECT_EQ(attention.back().type, AttentionType::Sinkhorn);
    EXPECT_FALSE(attention.back().masked); // Sinkhorn cannot be masked
    EXPECT_TRUE(rowShown("attention.sinkhorn.eps"));
    EXPECT_TRUE(rowShown("attention.sinkhorn.iterations"));
    EXPECT_FALSE(rowShown("attention.masked"));

    child<QDoubleSpinBox>("attention.sinkhorn.eps")->setValue(0.5);
    EXPECT_DOUBLE_EQ(attention.back().sinkhornEps, 0.5);

    child<QComboBox>("attention.type")->setCurrentIndex(int(AttentionType::Rwpo));
    EXPECT_TRUE(rowShown("attention.rwpo.lambda"));
    EXPECT_TRUE(rowShown("attention.rwpo.h"));
    EXPECT_FALSE(rowShown("attention.heads"));
    child<QDoubleSpinBox>("attention.rwpo.h")->setValue(0.05);
    EXPECT_DOUBLE_EQ(attention.back().h, 0.05);
}

// Normalization and positional decay (docs/math/theory.md) are rows of the schema and live; "post" is the
// unit sphere; a type switch drops what the new type cannot take, as it drops the mask.
TEST_F(ScenePanelTest, NormalizationAndPositionalDecayAreLiveAndFollowTheType) {
    EXPECT_TRUE(rowShown("attention.normalization"));
    EXPECT_TRUE(rowShown("attention.positional_decay"));
    child<QComboBox>("attention.normalization")->setCurrentIndex(int(Normalization::Pre));
    ASSERT_EQ(attention.size(), 1u);
    EXPECT_EQ(attention.back().normalization, Normalization::Pre);
    child<QDoubleSpinBox>("attention.positional_decay")->setValue(2.0);
    EXPECT_DOUBLE_EQ(attention.back().positionalDecay, 2.0);
    EXPECT_EQ(attention.back().normalization, Normalization::Pre); // the other edit kept
    child<QComboBox>("attention.normalization")->setCurrentIndex(int(Normalization::Post));
    EXPECT_TRUE(attention.back().sphere);
    EXPECT_EQ(normalizationOf(attention.back()), Normalization::Post);
    // What the panel sent is what the document runs.
    EXPECT_EQ(normalizationOf(doc.scene().attention), Normalization::Post);
    EXPECT_DOUBLE_EQ(doc.scene().attention.positionalDecay, 2.0);

    // Sinkhorn has no decay: the switch drops it and its row goes.
    child<QComboBox>("attention.type")->setCurrentIndex(int(AttentionType::Sinkhorn));
    EXPECT_EQ(attention.back().type, AttentionType::Sinkhorn);
    EXPECT_EQ(attention.back().positionalDecay, 0.0);
    EXPECT_FALSE(rowShown("attention.positional_decay"));
    child<QComboBox>("attention.normalization")->setCurrentIndex(int(Normalization::Peri));
    EXPECT_EQ(attention.back().normalization, Normalization::Peri);
    // RWPO takes none or post: the switch drops peri.
    child<QComboBox>("attention.type")->setCurrentIndex(int(AttentionType::Rwpo));
    EXPECT_EQ(attention.back().type, AttentionType::Rwpo);
    EXPECT_EQ(normalizationOf(attention.back()), Normalization::None);
    EXPECT_EQ(child<QComboBox>("attention.normalization")->currentIndex(), int(Normalization::None));
}

TEST_F(ScenePanelTest, ChangingDimensionThenApplyEmitsResizedScene) {
    child<QSpinBox>("d")->setValue(3);
    EXPECT_TRUE(scenes.empty());    // staged
    EXPECT_TRUE(attention.empty()); // not a live edit
    EXPECT_TRUE(panel->hasStagedChanges());
    auto* apply = child<QPushButton>("apply");
    ASSERT_TRUE(apply->isEnabled()) << panel->stagedError().toStdString();
    apply->click();
    ASSERT_EQ(scenes.size(), 1u);
    const Scene& s = scenes.back();
    EXPECT_EQ(s.d, 3);
    ASSERT_EQ(s.attention.heads.size(), 1u);
    EXPECT_EQ(s.attention.heads[0].Q, Mat::Identity(3, 3));
    EXPECT_EQ(s.attention.heads[0].K, Mat::Identity(3, 3));
    Mat V = Mat::Zero(3, 3);
    V.topLeftCorner(2, 2) = -0.4 * Mat::Identity(2, 2);
    EXPECT_EQ(s.attention.heads[0].V, V);
    EXPECT_EQ(s.initial.mean, Vec::Zero(3));
    EXPECT_EQ(s.initial.cov, Mat::Identity(3, 3));
    EXPECT_EQ(s.n, 256);
    EXPECT_FALSE(panel->hasStagedChanges());
    EXPECT_FALSE(apply->isEnabled());
    // A live edit after Apply carries the new dimension.
    child<QDoubleSpinBox>("attention.beta")->setValue(1.5);
    ASSERT_EQ(attention.size(), 1u);
    EXPECT_EQ(attention.back().heads[0].V.rows(), 3);
}

// Typing a staged value enables Apply at once (not on leaving the field), and Enter applies it.
TEST_F(ScenePanelTest, TypingAStagedValueEnablesApplyAndEnterAppliesIt) {
    panel->show();
    auto* n = child<QSpinBox>("n");
    auto* apply = child<QPushButton>("apply");
    n->setFocus();
    n->selectAll();
    QTest::keyClicks(n, QStringLiteral("8192"));
    EXPECT_TRUE(apply->isEnabled()) << "Apply waits for the field to lose focus";
    EXPECT_TRUE(scenes.empty()); // staged, not applied
    QTest::keyClick(n, Qt::Key_Return);
    QCoreApplication::processEvents();
    ASSERT_EQ(scenes.size(), 1u);
    EXPECT_EQ(scenes.back().n, 8192);
    EXPECT_FALSE(apply->isEnabled());
    // Enter without a staged change applies nothing.
    QTest::keyClick(child<QLineEdit>("initial.seed"), Qt::Key_Return);
    QCoreApplication::processEvents();
    EXPECT_EQ(scenes.size(), 1u);
}

// Seeds are 64-bit (a sweep's runs have seeds beyond 2^31 - 1): shown whole and kept by Apply; one beyond
// 2^64 - 1 is an error naming the field.
TEST_F(ScenePanelTest, ASixtyFourBitSeedIsShownWholeAndKept) {
    Scene s = tinyScene();
    s.initial.seed = 3730234049722669ULL;
    doc.open(s);
    auto* seed = child<QLineEdit>("initial.seed");
    EXPECT_EQ(seed->text(), QStringLiteral("3730234049722669"));
    child<QSpinBox>("n")->setValue(300);
    child<QPushButton>("apply")->click();
    ASSERT_EQ(scenes.size(), 1u);
    EXPECT_EQ(scenes.back().initial.seed, 3730234049722669ULL);
    seed->setText(QString());
    QTest::keyClicks(seed, QStringLiteral("99999999999999999999")); // > 2^64 - 1
    EXPECT_FALSE(child<QPushButton>("apply")->isEnabled());
    EXPECT_TRUE(panel->stagedError().startsWith(QStringLiteral("initial.seed:")))
        << panel->stagedError().toStdString();
    seed->setText(QString());
    QTest::keyClicks(seed, QStringLiteral("18446744073709551615"));
    EXPECT_TRUE(child<QPushButton>("apply")->isEnabled()) << panel->stagedError().toStdString();
    child<QPushButton>("apply")->click();
    EXPECT_EQ(scenes.back().initial.seed, 18446744073709551615ULL);
}

// A scene whose steps would take minutes on a CPU says so under Apply, with the cost, and may still be
// applied; below the bar nothing is said.
TEST_F(ScenePanelTest, ACostlyNSaysWhatAStepCosts) {
    Scene s = tinyScene();
    s.integrator.method = Method::Rk4;
    doc.open(s);
    child<QSpinBox>("n")->setValue(1000);
    auto* note = child<QLabel>("error");
    EXPECT_FALSE(note->isVisibleTo(panel.get()));
    child<QSpinBox>("n")->setValue(9'999'999);
    EXPECT_TRUE(note->isVisibleTo(panel.get()));
    EXPECT_TRUE(note->text().contains(QStringLiteral("4e+14 pair interactions")))
        << note->text().toStdString();
    EXPECT_TRUE(child<QPushButton>("apply")->isEnabled());
    EXPECT_EQ(ScenePanel::costWarning(s).isEmpty(), true); // 256 tokens
}

TEST_F(ScenePanelTest, StagedDimensionDoesNotLeakIntoLiveEdits) {
    child<QSpinBox>("d")->setValue(3);
    child<QDoubleSpinBox>("attention.beta")->setValue(2.0);
    ASSERT_EQ(attention.size(), 1u);
    EXPECT_EQ(attention.back().heads[0].V.rows(), 2); // the running scene is still 2-D
    EXPECT_EQ(panel->editedScene().attention.heads[0].V.rows(), 3);
    EXPECT_DOUBLE_EQ(panel->editedScene().attention.beta, 2.0);
    child<QPushButton>("revert")->click();
    EXPECT_EQ(panel->editedScene().d, 2);
    EXPECT_FALSE(panel->hasStagedChanges());
}

TEST_F(ScenePanelTest, InvalidCovarianceDisablesApply) {
    auto* cov = child<MatrixGrid>("initial.cov");
    auto* apply = child<QPushButton>("apply");
    auto* error = child<QLabel>("error");
    ASSERT_NE(cov->entry(0, 1), nullptr);
    cov->entry(0, 1)->setValue(2.0);                               // [[1, 2], [2, 1]]: eigenvalue -1
    EXPECT_EQ(panel->editedScene().initial.cov, mat2(1, 2, 2, 1)); // edited symmetrically
    EXPECT_FALSE(apply->isEnabled());
    EXPECT_TRUE(error->isVisibleTo(panel.get()));
    EXPECT_TRUE(error->text().startsWith(QStringLiteral("initial.cov"))) << error->text().toStdString();
    EXPECT_TRUE(panel->stagedError().contains(QStringLiteral("-1"))) << panel->stagedError().toStdString();

    cov->entry(1, 0)->setValue(0.5);
    EXPECT_TRUE(apply->isEnabled());
    EXPECT_FALSE(error->isVisibleTo(panel.get()));
    apply->click();
    ASSERT_EQ(scenes.size(), 1u);
    EXPECT_EQ(scenes.back().initial.cov, mat2(1, 0.5, 0.5, 1));
}

TEST_F(ScenePanelTest, OtherInitialKindsAreValidated) {
    child<QComboBox>("initial.kind")->setCurrentIndex(int(InitKind::Uniform));
    EXPECT_TRUE(rowShown("initial.low"));
    EXPECT_FALSE(rowShown("initial.cov"));
    child<MatrixGrid>("initial.low")->entry(0, 1)->setValue(1.0); // low = high in coordinate 1
    EXPECT_FALSE(child<QPushButton>("apply")->isEnabled());
    EXPECT_TRUE(panel->stagedError().startsWith(QStringLiteral("initial.low")));

    child<QComboBox>("initial.kind")->setCurrentIndex(int(InitKind::Rings));
    EXPECT_TRUE(panel->stagedError().isEmpty());
    auto* radii = child<QLineEdit>("initial.radii");
    radii->selectAll();
    QTest::keyClicks(radii, QStringLiteral("0.5, x"));
    EXPECT_TRUE(panel->stagedError().startsWith(QStringLiteral("initial.radii")));
    radii->clear();
    QTest::keyClicks(radii, QStringLiteral("0.5, 2"));
    EXPECT_TRUE(panel->stagedError().isEmpty());
    EXPECT_EQ(panel->editedScene().initial.radii, (std::vector<double>{0.5, 2.0}));

    child<QComboBox>("initial.kind")->setCurrentIndex(int(InitKind::File));
    EXPECT_TRUE(panel->stagedError().startsWith(QStringLiteral("initial.path")));
    EXPECT_FALSE(child<QPushButton>("apply")->isEnabled());
}

// ---- PresetBrowser
// --------------------------------------------------------------------------------------------

TEST(PresetBrowserTest, ListsEveryPreset) {
    FLOWSCOPE_REQUIRE_GUI();
    const QDir dir(presetDirectory());
    const QFileInfoList files = dir.entryInfoList({QStringLiteral("*.json")}, QDir::Files);
    ASSERT_GT(files.size(), 10) << presetDirectory().toStdString();

    PresetBrowser browser;
    browser.setDirectory(dir.absolutePath());
    const QStringList paths = browser.presetPaths();
    EXPECT_EQ(paths.size(), files.size());
    for (const QFileInfo& f : files) {
        EXPECT_TRUE(paths.contains(f.absoluteFilePath())) << f.fileName().toStdString();
        EXPECT_TRUE(browser.presetError(f.absoluteFilePath()).isEmpty())
            << f.fileName().toStdString() << ": " << browser.presetError(f.absoluteFilePath()).toStdString();
    }

    // The Gaussian-mode "cone-*" presets share one group.
    QTreeWidget* tree = browser.tree();
    QTreeWidgetItem* coneGroup = nullptr;
    int leaves = 0;
    for (int g = 0; g < tree->topLevelItemCount(); ++g)
        for (int c = 0; c < tree->topLevelItem(g)->childCount(); ++c) {
            QTreeWidgetItem* item = tree->topLevelItem(g)->child(c);
            ++leaves;
            if (!item->text(0).startsWith(QStringLiteral("cone-"))) continue;
            if (!coneGroup) coneGroup = item->parent();
            EXPECT_EQ(item->parent(), coneGroup) << item->text(0).toStdString();
        }
    EXPECT_EQ(leaves, files.size());
    EXPECT_NE(coneGroup, nullptr);
    // Sorted by figure in natural order: Fig 2 before Fig 10.
    EXPECT_LT(paths.indexOf(dir.absoluteFilePath(QStringLiteral("cone-fig2a-zero.json"))),
              paths.indexOf(dir.absoluteFilePath(QStringLiteral("cone-fig10a-sinkhorn-zero.json"))));
    EXPECT_LT(paths.indexOf(dir.absoluteFilePath(QStringLiteral("cone-fig9c-mixed-multihead.json"))),
              paths.indexOf(dir.absoluteFilePath(QStringLiteral("cone-fig10a-sinkhorn-zero.json"))));

    // select() highlights the running scene without activating it; Open activates it.
    const QString defaultPath = dir.absoluteFilePath(QStringLiteral("default.json"));
    QStringList activated;
    QObject::connect(&browser, &PresetBrowser::presetActivated, [&](const QString& p) { activated << p; });
    browser.select(defaultPath);
    EXPECT_EQ(browser.selectedPath(), defaultPath);
    EXPECT_TRUE(activated.isEmpty());
    browser.findChild<QPushButton*>(QStringLiteral("open"))->click();
    EXPECT_EQ(activated, QStringList{defaultPath});

    // The filter keeps matching presets only.
    browser.findChild<QLineEdit*>(QStringLiteral("filter"))->setText(QStringLiteral("sinkhorn"));
    int shown = 0;
    for (int g = 0; g < tree->topLevelItemCount(); ++g)
        for (int c = 0; c < tree->topLevelItem(g)->childCount(); ++c)
            if (!tree->topLevelItem(g)->child(c)->isHidden()) ++shown;
    EXPECT_GE(shown, 3);
    EXPECT_LT(shown, files.size());
}

// The Theory page: every preset whose figure names a newer paper's arXiv number sits in that paper's group,
// titled "Theory: <reference>", whose tooltip gives the number and what to look for; the preset's details
// say what to look for too. The four papers of issue 48 each have their group.
TEST(PresetBrowserTest, TheoryPresetsAreGroupedByPaperWithWhatToLookFor) {
    FLOWSCOPE_REQUIRE_GUI();
    PresetBrowser browser;
    browser.setDirectory(QDir(presetDirectory()).absolutePath());
    QTreeWidget* tree = browser.tree();
    QStringList theoryGroups;
    int theoryPresets = 0;
    for (int g = 0; g < tree->topLevelItemCount(); ++g) {
        QTreeWidgetItem* group = tree->topLevelItem(g);
        for (int c = 0; c < group->childCount(); ++c) {
            // The item's tooltip ends with its file name.
            const QString figure = browser.presetFigure(
                QDir(presetDirectory()).absoluteFilePath(group->child(c)->toolTip(0).section('\n', -1)));
            const int at = figure.indexOf(QStringLiteral("arXiv "));
            if (at < 0 || figure.contains(QStringLiteral("Castin"))) {
                EXPECT_FALSE(group->text(0).startsWith(QStringLiteral("Theory: "))) << figure.toStdString();
                continue;
            }
            ++theoryPresets;
            const QString arxiv = figure.mid(at + 6, 10);
            EXPECT_TRUE(group->text(0).startsWith(QStringLiteral("Theory: "))) << figure.toStdString();
            EXPECT_TRUE(group->toolTip(0).contains(QStringLiteral("arXiv ") + arxiv)) << figure.toStdString();
            EXPECT_TRUE(group->toolTip(0).contains(QStringLiteral("Look for: "))) << figure.toStdString();
            if (!theoryGroups.contains(group->text(0))) theoryGroups << group->text(0);
            tree->setCurrentItem(group->child(c));
            EXPECT_TRUE(browser.findChild<QTextBrowser*>(QStringLiteral("details"))
                            ->toPlainText()
                            .contains(QStringLiteral("Look for:")));
        }
    }
    EXPECT_EQ(theoryGroups.size(), 4) << theoryGroups.join(QStringLiteral(" | ")).toStdString();
    EXPECT_GE(theoryPresets, 6);
}

TEST(PresetBrowserTest, MalformedPresetIsListedDisabled) {
    FLOWSCOPE_REQUIRE_GUI();
    QTemporaryDir dir;
    ASSERT_TRUE(dir.isValid());
    auto write = [&](const QString& name, const QByteArray& content) {
        QFile f(dir.filePath(name));
        EXPECT_TRUE(f.open(QIODevice::WriteOnly));
        f.write(content);
        return QFileInfo(f).absoluteFilePath();
    };
    const QString good =
        write(QStringLiteral("good.json"), QByteArray::fromStdString(sceneToJson(tinyScene())));
    const QString broken = write(QStringLiteral("broken.json"), "{ \"version\": 1, \"d\": 2,");
    const QString badField = write(QStringLiteral("bad-field.json"),
                                   "{\"d\": 2, \"n\": -5, \"attention\": {\"type\": \"softmax\"}}");

    PresetBrowser browser;
    browser.setDirectory(dir.path());
    EXPECT_EQ(browser.presetPaths().size(), 3);
    EXPECT_TRUE(browser.presetError(good).isEmpty());
    EXPECT_FALSE(browser.presetError(broken).isEmpty());
    EXPECT_TRUE(browser.presetError(badField).contains(QStringLiteral("/n")))
        << browser.presetError(badField).toStdString();

    QTreeWidget* tree = browser.tree();
    int disabled = 0;
    for (int g = 0; g < tree->topLevelItemCount(); ++g)
        for (int c = 0; c < tree->topLevelItem(g)->childCount(); ++c) {
            QTreeWidgetItem* item = tree->topLevelItem(g)->child(c);
            if (item->flags() & Qt::ItemIsEnabled) continue;
            ++disabled;
            EXPECT_FALSE(item->toolTip(0).isEmpty());
        }
    EXPECT_EQ(disabled, 2);

    QStringList activated;
    QObject::connect(&browser, &PresetBrowser::presetActivated, [&](const QString& p) { activated << p; });
    browser.select(broken);
    EXPECT_TRUE(browser.selectedPath().isEmpty());
    browser.findChild<QPushButton*>(QStringLiteral("open"))->click();
    EXPECT_TRUE(activated.isEmpty());
    browser.select(good);
    EXPECT_EQ(browser.selectedPath(), good);
}

// ---- tooltips and screenshots
// ---------------------------------------------------------------------------------

// The Scene panel's rows are the parameter schema's (ui/widgets/ParamRows.h): each control named after a
// parameter carries its tooltip, holds only values the scene reader accepts, reaches the range's finite ends
// (an open end within the box's resolution), and lists its choices; an edit sets the field through the
// schema.
TEST(PanelsTest, SceneRowsAreTheParameterSchemas) {
    FLOWSCOPE_REQUIRE_GUI();
    ParticleDocument doc;
    ScenePanel panel(doc);
    doc.open(tinyScene());
    int rows = 0;
    for (const SceneParam& p : sceneParams()) {
        auto* w = panel.findChild<QWidget*>(QString::fromStdString(p.key()));
        if (!w || w->objectName() != QString::fromStdString(p.key())) continue;
        ++rows;
        SCOPED_TRACE(p.key());
        EXPECT_EQ(w->toolTip(), parameterTooltip(p.key()));
        const ParamRange& r = p.range;
        if (auto* box = qobject_cast<QDoubleSpinBox*>(w)) {
            EXPECT_TRUE(r.contains(box->minimum()) && r.contains(box->maximum()));
            const double resolution = std::pow(10.0, -box->decimals());
            if (std::isfinite(r.low)) EXPECT_NEAR(box->minimum(), r.low, resolution * 1.001);
            if (std::isfinite(r.high)) EXPECT_NEAR(box->maximum(), r.high, resolution * 1.001);
        } else if (auto* box = qobject_cast<QSpinBox*>(w)) {
            EXPECT_TRUE(r.contains(box->minimum()) && r.contains(box->maximum()));
            EXPECT_EQ(box->minimum(), r.low);
            EXPECT_EQ(box->maximum(), std::min(r.high, double(INT_MAX)));
        } else if (auto* box = qobject_cast<QComboBox*>(w)) {
            // The type's "masked" is softmax with the Masked box, not an item.
            EXPECT_EQ(std::size_t(box->count()), p.choices.size() - (p.pointer == "/attention/type" ? 1 : 0));
        }
    }
    EXPECT_GE(rows, 16);
    std::vector<AttentionSpec> edited;
    logEdits(doc, edited);
    panel.findChild<QDoubleSpinBox*>(QStringLiteral("attention.rwpo.h"))->setValue(0.125);
    ASSERT_EQ(edited.size(), 1u);
    EXPECT_EQ(edited.front().h, 0.125);
}

TEST(PanelsTest, EveryParameterTooltipIsRichText) {
    for (std::string_view key : parameterTooltipKeys()) {
        const QString tip = parameterTooltip(key);
        EXPECT_TRUE(tip.startsWith(QStringLiteral("<p>")) && tip.size() > 20) << key;
    }
    EXPECT_TRUE(parameterTooltip("attention.beta").contains(QStringLiteral("exp(β")));
    EXPECT_TRUE(parameterTooltip("no.such.key").isEmpty());
}

TEST(PanelsTest, EveryControlHasATooltip) {
    FLOWSCOPE_REQUIRE_GUI();
    ParticleDocument doc;
    ScenePanel scenePanel(doc);
    MatrixEditor matrixEditor(doc);
    PresetBrowser presetBrowser;
    for (QWidget* panel : std::initializer_list<QWidget*>{&scenePanel, &matrixEditor, &presetBrowser}) {
        expectEveryControlHasATooltip(*panel, true);
    }
}

TEST(PanelsTest, Screenshots) {
    FLOWSCOPE_REQUIRE_GUI();
    if (qEnvironmentVariableIsEmpty("FLOWSCOPE_SAVE_SHOTS")) GTEST_SKIP() << "set FLOWSCOPE_SAVE_SHOTS=DIR";
    Scene scene = tinyScene();
    scene.initial.cov = mat2(2, 0.5, 0.5, 1);

    saveShotOf<ScenePanel>(scene, 320, 760, "scene-panel.png");

    Scene sinkhorn = scene;
    sinkhorn.attention.type = AttentionType::Sinkhorn;
    saveShotOf<ScenePanel>(sinkhorn, 320, 760, "scene-panel-invalid.png", [](ScenePanel& invalid) {
        invalid.findChild<MatrixGrid*>(QStringLiteral("initial.cov"))->entry(0, 1)->setValue(3.0);
    });

    Scene rwpoScene = scene;
    rwpoScene.attention.type = AttentionType::Rwpo;
    rwpoScene.attention.heads.clear();
    rwpoScene.initial.kind = InitKind::Rings;
    rwpoScene.initial.radii = {1.0, 2.0};
    rwpoScene.initial.noise = 0.02;
    saveShotOf<ScenePanel>(rwpoScene, 320, 640, "scene-panel-rwpo.png");

    // The tooltips as Qt renders their rich text (sub- and superscripts, formulas).
    QLabel tips;
    QString html;
    for (const char* key :
         {"attention.beta", "attention.sinkhorn.eps", "attention.rwpo.kernel", "analysis.B", "initial.cov"})
        html += parameterTooltip(key);
    tips.setText(html);
    tips.setWordWrap(true);
    tips.setMargin(8);
    tips.resize(420, tips.heightForWidth(420));
    saveShot(tips, QStringLiteral("tooltips.png"));

    saveShotOf<MatrixEditor>(twoHeadScene(), 320, 640, "matrix-editor.png");

    Scene threeD = tinyScene();
    threeD.d = 3;
    threeD.initial.mean = Vec::Zero(3);
    threeD.initial.cov = Mat::Identity(3, 3);
    threeD.attention.heads = {HeadParams{Mat::Identity(3, 3), Mat::Identity(3, 3), Mat::Identity(3, 3)}};
    saveShotOf<MatrixEditor>(threeD, 320, 640, "matrix-editor-3d.png");

    PresetBrowser presetBrowser;
    presetBrowser.setDirectory(presetDirectory());
    presetBrowser.select(QDir(presetDirectory()).absoluteFilePath(QStringLiteral("cone-fig2b-line.json")));
    presetBrowser.resize(320, 640);
    saveShot(presetBrowser, QStringLiteral("preset-browser.png"));
}

} // namespace
} // namespace flowscope::test
