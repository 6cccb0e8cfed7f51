// Flowscope UI: the one owner of a particle run's scene. Widget-free.
//
// It holds the scene that runs (with its live edits), the file it came from and the SimulationRunner that
// runs it. Everything else in the Particles workspace (the Scene panel, the matrix editor, the particle view,
// the cone, the exports, Save and the share string) reads the scene from here and changes it only through
// the commands below; none keeps a scene of its own. So what the panels show is what runs.
//
// Every command is checked once, here, with the scene reader's rules and messages (engine/scene): the
// candidate scene is written out and read back, exactly as a scene file or `--set` would be. A refused
// command returns false with the reason ("/attention/beta: expected number > 0, got -1") and changes
// nothing: the old scene stays in force, whole, and the run goes on with it.
//
// A live command (the attention or the integrator: engine/dynamics/LiveEdit.h) goes to the running
// simulation, which continues from its current state; any other field (d, N, the precision, the initial
// tokens, what is recorded) starts a new run of the edited scene.
#pragma once

#include "engine/runner/SimulationRunner.h"
#include "engine/scene/Scene.h"
#include "engine/scene/SceneSetting.h"

#include <QObject>
#include <QString>

#include <optional>

namespace flowscope {

class ParticleDocument : public QObject {
    Q_OBJECT
  public:
    // What a live edit changed.
    enum class Part { Attention, Integrator };
    Q_ENUM(Part)

    explicit ParticleDocument(QObject* parent = nullptr);
    ~ParticleDocument() override;

    bool hasScene() const { return scene_.has_value(); }
    // The scene that runs, with its live edits: what Save writes. Only while hasScene().
    const Scene& scene() const { return *scene_; }
    // What a panel shows: the scene, or a default 2-D scene while there is none.
    const Scene& shown() const;
    // Whether attention of type `t` has heads of Q, K, V matrices (every type but RWPO and drifting).
    static bool hasMatrices(AttentionType t) {
        return t != AttentionType::Rwpo && t != AttentionType::Drifting;
    }
    // The attention as an editor starts from: shown()'s, with the one head Q = K = V = I that an empty head
    // list of a type with matrices stands for (a Scene built in C++, docs/scene.md) made explicit.
    AttentionSpec editableAttention() const;
    // The file the scene was read from or last saved to; empty for a scene made otherwise.
    QString path() const { return path_; }

    SimulationRunner& runner() { return runner_; }
    const SimulationRunner& runner() const { return runner_; }

    // ---- commands: each is checked before anything changes; false and *why (the field first) if refused.

    // Runs `scene` from its start (a new run; the play state is kept). `path`: the file it came from.
    bool open(const Scene& scene, const QString& path = {}, QString* why = nullptr);
    // Live: the run continues from its state with the new attention / integrator. `from` is who asked (a
    // panel that already shows the edit); it comes back with edited().
    bool setAttention(const AttentionSpec& attention, QObject* from, QString* why = nullptr);
    bool setIntegrator(const IntegratorSpec& integrator, QObject* from, QString* why = nullptr);
    // One field by its JSON pointer (a schema parameter, a matrix, ...): live when the field is live, else a
    // new run of the edited scene. A value equal to the one the scene holds changes nothing.
    bool set(const SceneSetting& setting, QObject* from, QString* why = nullptr);
    // Writes the scene atomically (written aside, then renamed); `path` becomes the document's file.
    bool save(const QString& path, QString* why = nullptr);

  signals:
    // A new scene runs (open, or a restart field set): show it whole.
    void opened();
    // A live part of the running scene changed; `from` asked for it.
    void edited(ParticleDocument::Part part, QObject* from);

  private:
    bool refuse(QString* why, const QString& reason) const;
    // Whether the reader takes the scene with `value` as its `part`; false and *why when not.
    template <class Part> bool accepts(Part Scene::*part, const Part& value, QString* why) const;
    // A checked live part: into the scene, to the runner, announced.
    void take(const AttentionSpec& attention, QObject* from);
    void take(const IntegratorSpec& integrator, QObject* from);

    std::optional<Scene> scene_;
    QString path_;
    SimulationRunner runner_;
};

} // namespace flowscope
