// Flowscope UI: the preset browser, a dock panel listing the scenes of a preset directory.
//
// Every *.json file of the directory is read with loadScene() and listed by name and paper figure, grouped
// (Castin et al. particle scenes, Gaussian-mode moment scenes such as the "cone-*" covariance figures, the
// Theory page: one group per newer paper whose arXiv number the figure names, with what to look for in the
// group's tooltip and the preset's details, then scenes from other papers) and sorted by figure in natural
// order (Fig 2 before Fig 10). A preset that does not load
// is listed, disabled, under "Unreadable", with its error as tooltip. A filter line keeps the presets whose
// name, file, figure or description contain every word typed. Below the list, the selected preset's
// description. Double-click, Enter or "Open" emits presetActivated(path).
//
// Child object names: "filter", "presets" (the tree), "details", "open".
#pragma once

#include <QString>
#include <QStringList>
#include <QWidget>

#include <vector>

class QLineEdit;
class QPushButton;
class QTextBrowser;
class QTreeWidget;
class QTreeWidgetItem;

namespace flowscope {

class PresetBrowser : public QWidget {
    Q_OBJECT
  public:
    explicit PresetBrowser(QWidget* parent = nullptr);

    // Lists the presets of `dir` (again: call it to refresh).
    void setDirectory(const QString& dir);
    QString directory() const { return directory_; }

    // Highlights the preset at `path` (the running scene's file); clears the selection when it is not listed.
    // Emits nothing.
    void select(const QString& path);
    // The selected preset's absolute path; empty when none.
    QString selectedPath() const;

    // Every listed file, malformed ones included, in display order (absolute paths).
    QStringList presetPaths() const;
    // The paper figure the preset at `path` reproduces ("Castin et al. 2025, Fig 2(d)"); empty when none.
    QString presetFigure(const QString& path) const;
    // Why the preset at `path` could not be read; empty when it loads (or is not listed).
    QString presetError(const QString& path) const;
    QTreeWidget* tree() const { return tree_; }

  signals:
    void presetActivated(const QString& path);

  private:
    struct Preset {
        QString path; // absolute
        QString file; // base name, without .json
        QString name, description, figure;
        QString summary; // "softmax · d = 2 · N = 2048"
        QString error;   // non-empty: loadScene failed
        int group = 0;
    };

    void rebuildTree();
    void applyFilter();
    void showDetails();
    void activate(QTreeWidgetItem* item);
    const Preset* presetOf(const QTreeWidgetItem* item) const;

    QString directory_;
    std::vector<Preset> presets_; // in display order
    QLineEdit* filter_ = nullptr;
    QTreeWidget* tree_ = nullptr;
    QTextBrowser* details_ = nullptr;
    QPushButton* open_ = nullptr;
};

} // namespace flowscope
