#include "ui/document/ParticleDocument.h"

#include "engine/dynamics/LiveEdit.h"
#include "engine/io/JsonReader.h"
#include "engine/scene/SceneSchema.h"

#include <QFile>

#include <exception>

namespace flowscope {

namespace {

QString whatOf(const std::exception& e) {
    return QString::fromStdString(e.what());
}

// The reader's verdict on `scene`: written out and read back, as a scene file is. Throws SceneError.
void readBack(const Scene& scene) {
    (void)sceneFromJson(sceneToJson(scene));
}

} // namespace

ParticleDocument::ParticleDocument(QObject* parent) : QObject(parent) {}

ParticleDocument::~ParticleDocument() = default;

const Scene& ParticleDocument::shown() const {
    static const Scene placeholder; // its empty head list stands for Q = K = V = I (editableAttention)
    return scene_ ? *scene_ : placeholder;
}

AttentionSpec ParticleDocument::editableAttention() const {
    const Scene& s = shown();
    AttentionSpec a = s.attention;
    if (a.heads.empty() && a.keyframes.empty() && hasMatrices(a.type))
        a.heads.push_back({Mat::Identity(s.d, s.d), Mat::Identity(s.d, s.d), Mat::Identity(s.d, s.d)});
    return a;
}

bool ParticleDocument::refuse(QString* why, const QString& reason) const {
    if (why) *why = reason;
    return false;
}

bool ParticleDocument::open(const Scene& scene, const QString& path, QString* why) {
    try {
        runner_.start(scene); // builds the Simulation here: a bad scene throws and leaves the run as it was
    } catch (const std::exception& e) {
        return refuse(why, whatOf(e));
    }
    scene_ = scene;
    path_ = path;
    emit opened();
    return true;
}

template <class Part>
bool ParticleDocument::accepts(Part Scene::*part, const Part& value, QString* why) const {
    if (!scene_) return refuse(why, tr("There is no scene."));
    Scene candidate = *scene_;
    candidate.*part = value;
    try {
        readBack(candidate);
    } catch (const std::exception& e) {
        return refuse(why, whatOf(e));
    }
    return true;
}

bool ParticleDocument::setAttention(const AttentionSpec& attention, QObject* from, QString* why) {
    if (!accepts(&Scene::attention, attention, why)) return false;
    take(attention, from);
    return true;
}

void ParticleDocument::take(const AttentionSpec& attention, QObject* from) {
    scene_->attention = attention;
    runner_.setAttention(attention);
    emit edited(Part::Attention, from);
}

void ParticleDocument::take(const IntegratorSpec& integrator, QObject* from) {
    scene_->integrator = integrator;
    runner_.setIntegrator(integrator);
    emit edited(Part::Integrator, from);
}

bool ParticleDocument::setIntegrator(const IntegratorSpec& integrator, QObject* from, QString* why) {
    if (!accepts(&Scene::integrator, integrator, why)) return false;
    take(integrator, from);
    return true;
}

bool ParticleDocument::set(const SceneSetting& setting, QObject* from, QString* why) {
    if (!scene_) return refuse(why, tr("There is no scene."));
    if (const SceneParam* p = findSceneParam(setting.pointer); p && paramJson(*p, *scene_) == setting.value)
        return true; // a spin box re-emits its value on Enter
    Scene edited;
    try {
        edited = withSetting(*scene_, setting); // checked by the reader
    } catch (const std::exception& e) {
        return refuse(why, whatOf(e));
    }
    if (!isLiveSetting(setting.pointer)) return open(edited, path_, why);
    if (setting.pointer == "/integrator" || pointerIsUnder(setting.pointer, "/integrator"))
        take(edited.integrator, from);
    else
        take(edited.attention, from);
    return true;
}

bool ParticleDocument::save(const QString& path, QString* why) {
    if (!scene_) return refuse(why, tr("There is no scene to save."));
    try {
        saveScene(*scene_, QFile::encodeName(path).toStdString()); // atomic: written aside, then renamed
    } catch (const std::exception& e) {
        return refuse(why, whatOf(e));
    }
    path_ = path;
    return true;
}

} // namespace flowscope
