// The generic shell (issue 44 item 4): MainWindow holds the workspaces makeWorkspaces() lists, in tab order,
// finds each by type with workspace<T>(), and hands a model file, a share string and its File menu entries to
// the workspaces that declare them, naming none.
#include "MainWindowFixture.h"
#include "TestScenes.h"

#include "../TinyFlow.h"

#include "engine/flows/FlowIo.h"
#include "engine/inverse/PosteriorIo.h"
#include "engine/io/Safetensors.h"
#include "engine/ottransformer/TransformerIo.h"
#include "engine/scene/SceneShareString.h"
#include "ui/shell/MainWindow.h"
#include "ui/shell/Workspace.h"
#include "ui/workspaces/flows/FlowsWorkspace.h"
#include "ui/workspaces/inverse/InverseWorkspace.h"
#include "ui/workspaces/models/ModelsWorkspace.h"
#include "ui/workspaces/particles/ParticlesWorkspace.h"
#include "ui/workspaces/sweeps/SweepsWorkspace.h"
#include "ui/workspaces/transformers/TransformersWorkspace.h"

#include <QAction>
#include <QMenu>
#include <QMenuBar>
#include <QTabWidget>

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace flowscope::test {
namespace {

// A workspace type the app does not have.
class AbsentWorkspace : public Workspace {
  public:
    using Workspace::Workspace;
    QString id() const override { return QStringLiteral("absent"); }
    QList<WorkspacePage> pages() const override { return {}; }
    QWidget* plotsOf(QWidget*) const override { return nullptr; }
};

class WorkspacesTest : public MainWindowFilesFixture {
  protected:
    WorkspacesTest() : MainWindowFilesFixture({1000, 700}) {}
    void prepare() override { ASSERT_TRUE(window->workspace<ParticlesWorkspace>().setScene(tinyScene())); }

    QString flowFile() {
        flows::FlowTrainer t(tinyFlowConfig("moons", false, 3));
        t.step();
        const QString p = path("flow.safetensors");
        flows::saveFlow(p.toStdString(), t, 1.0);
        return p;
    }
    QString transformerFile() {
        ot::OtTrainerConfig c = ot::defaultTrainerConfig(ot::Task::A);
        c.model.steps = 4;
        c.evalSets = 20;
        ot::OtTrainer t(c);
        t.step();
        const QString p = path("transformer.safetensors");
        ot::saveTransformer(p.toStdString(), t, 0.0);
        return p;
    }
    QString posteriorFile() {
        const inverse::Problem problem = inverse::loadProblem("linear-gaussian", FLOWSCOPE_PROBLEM_DIR);
        inverse::PosteriorFlow flow(problem.posterior, problem.flow);
        const QString p = path("posterior.safetensors");
        inverse::savePosterior(p.toStdString(), flow, problem, nlohmann::json::object());
        return p;
    }

    // The workspaces whose modelKinds() name `key`.
    QList<Workspace*> declaring(const char* key) const {
        QList<Workspace*> out;
        for (Workspace* w : window->workspaces())
            if (w->modelKinds().contains(QString::fromLatin1(key))) out << w;
        return out;
    }

    // Opens `file` from the Particles tab: it goes to `expected` (its page comes to the front), which
    // declares a kind that the file's metadata holds.
    void expectOpensIn(const QString& file, const char* key, Workspace* expected) {
        window->showPage(window->workspace<ParticlesWorkspace>().particleView());
        EXPECT_EQ(readSafetensors(file.toStdString()).metadata.count(key), 1u) << key;
        EXPECT_EQ(declaring(key), QList<Workspace*>{expected}) << key;
        ASSERT_TRUE(window->openModelFile(file)) << window->lastError().toStdString();
        EXPECT_EQ(window->activeWorkspace(), expected) << key;
    }
};

TEST_F(WorkspacesTest, TheShellHoldsTheSixWorkspacesInTabOrder) {
    const QList<Workspace*>& list = window->workspaces();
    ASSERT_EQ(list.size(), 6);
    EXPECT_EQ(list[0], &window->workspace<ParticlesWorkspace>());
    EXPECT_EQ(list[1], &window->workspace<FlowsWorkspace>());
    EXPECT_EQ(list[2], &window->workspace<TransformersWorkspace>());
    EXPECT_EQ(list[3], &window->workspace<InverseWorkspace>());
    EXPECT_EQ(list[4], &window->workspace<SweepsWorkspace>());
    EXPECT_EQ(list[5], &window->workspace<ModelsWorkspace>());
    QStringList ids;
    for (const Workspace* w : list) ids << w->id();
    EXPECT_EQ(ids, (QStringList{"particles", "flows", "transformers", "inverse", "sweeps", "models"}));

    // The tabs are the workspaces' pages in that order; showing one makes its workspace the active one.
    auto* tabs = qobject_cast<QTabWidget*>(window->centralWidget());
    ASSERT_NE(tabs, nullptr);
    int index = 0;
    for (Workspace* w : list)
        for (const WorkspacePage& page : w->pages()) {
            ASSERT_LT(index, tabs->count());
            EXPECT_EQ(tabs->widget(index++), page.widget) << page.title.toStdString();
            window->showPage(page.widget);
            EXPECT_EQ(window->activeWorkspace(), w) << page.title.toStdString();
            EXPECT_TRUE(w->active());
        }
    EXPECT_EQ(index, tabs->count());

    EXPECT_THROW(window->workspace<AbsentWorkspace>(), std::logic_error);
}

TEST_F(WorkspacesTest, AModelFileGoesToTheWorkspaceThatDeclaresItsKind) {
    expectOpensIn(flowFile(), flows::kFlowMetadataKey, &window->workspace<FlowsWorkspace>());
    expectOpensIn(transformerFile(), ot::kTransformerMetadataKey,
                  &window->workspace<TransformersWorkspace>());
    expectOpensIn(posteriorFile(), inverse::kPosteriorMetadataKey, &window->workspace<InverseWorkspace>());
    // Those three kinds are all the workspaces declare.
    int kinds = 0;
    for (const Workspace* w : window->workspaces()) kinds += int(w->modelKinds().size());
    EXPECT_EQ(kinds, 3);
}

TEST_F(WorkspacesTest, AFileOfNoDeclaredKindIsRefusedNamingTheFileAndTheKinds) {
    SafeTensors file;
    file.tensors.push_back({"w", true, {2}, {1.0, 2.0}});
    file.metadata["format"] = "pt";
    const QString p = path("other.safetensors");
    writeSafetensors(p.toStdString(), file);
    window->showPage(window->workspace<ParticlesWorkspace>().particleView());
    EXPECT_FALSE(window->openModelFile(p));
    const QString message = window->lastError();
    EXPECT_TRUE(message.contains(p)) << message.toStdString();
    for (const char* key :
         {flows::kFlowMetadataKey, ot::kTransformerMetadataKey, inverse::kPosteriorMetadataKey})
        EXPECT_TRUE(message.contains(QString::fromLatin1(key))) << message.toStdString();
    EXPECT_EQ(window->activeWorkspace(), &window->workspace<ParticlesWorkspace>());
    EXPECT_FALSE(window->workspace<FlowsWorkspace>().runner().snapshot());
}

TEST_F(WorkspacesTest, AShareStringGoesToTheWorkspaceThatTakesIt) {
    Scene scene = tinyScene(32, 9);
    scene.name = "shared";
    const QString text = QString::fromStdString(encodeShareString(scene));
    auto& particles = window->workspace<ParticlesWorkspace>();
    for (const Workspace* w : window->workspaces())
        EXPECT_EQ(w->takesShareString(text), w == &particles) << w->id().toStdString();
    ASSERT_TRUE(window->openShareString(text)) << window->lastError().toStdString();
    ASSERT_TRUE(particles.scene());
    EXPECT_EQ(particles.scene()->name, "shared");
    EXPECT_EQ(particles.scene()->n, 32);

    EXPECT_FALSE(window->openShareString(QStringLiteral("not a share string")));
    EXPECT_FALSE(window->lastError().isEmpty());
    EXPECT_EQ(particles.scene()->name, "shared"); // the scene stays
}

// File: the workspaces' Open entries in tab order with the shell's Open trained model before those of the
// first workspace that opens models, then their Save entries (what the menu was when the shell named them).
TEST_F(WorkspacesTest, TheFileAndEditMenusAreTheWorkspacesEntries) {
    const QList<QAction*> bar = window->menuBar()->actions();
    ASSERT_GE(bar.size(), 2);
    QMenu* file = bar[0]->menu();
    QMenu* edit = bar[1]->menu();
    ASSERT_TRUE(file && edit);
    const auto& particles = window->workspace<ParticlesWorkspace>();
    const auto& sweeps = window->workspace<SweepsWorkspace>();
    const QList<QAction*> entries = file->actions();
    QList<QAction*> expected = particles.fileOpenActions();
    const int openModel = int(expected.size());
    ASSERT_GT(entries.size(), openModel);
    EXPECT_EQ(entries[openModel]->text(), QStringLiteral("Open trained &model..."));
    expected << entries[openModel] << sweeps.fileOpenActions() << particles.fileSaveActions();
    ASSERT_GE(entries.size(), expected.size());
    EXPECT_EQ(entries.mid(0, expected.size()), expected);
    EXPECT_EQ(expected.size(), 6); // open scene, recent, open model, open sweep, save, save as
    EXPECT_EQ(edit->actions(), particles.editActions());
}

} // namespace
} // namespace flowscope::test
