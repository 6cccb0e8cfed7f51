// Flowscope UI: the "Sweeps" view, a sweep's phase diagram or histograms as its runs finish (QPainter, no
// GL): render/picture/SweepPicture.h says what it draws. Hovering a cell or bar shows what it holds (a
// tooltip, and hovered() for the panel's readout line); a click on it asks for its scene (cellClicked).
#pragma once

#include "render/picture/SweepPicture.h"
#include "ui/views/LiveView.h"

namespace flowscope {

class SweepView : public LiveView {
    Q_OBJECT
  public:
    explicit SweepView(QWidget* parent = nullptr);

    // The workspace pushes the sweep and its table (the view pulls nothing: refresh() does nothing).
    void refresh() override {}
    void setSweep(std::shared_ptr<const SweepSpec> spec);
    void setTable(SweepTable table);
    void setSelection(const std::string& x, const std::string& y, const std::string& measure);
    const SweepPicture& picture() const { return picture_; }
    // What hovering `pos` reports (empty off the plot), and the run a click there opens (-1: none).
    QString describeAt(QPointF pos) const;
    long runAt(QPointF pos) const;

  signals:
    void hovered(const QString& text); // empty when the mouse leaves the cells
    void cellClicked(long run);

  protected:
    QString tooltipAt(QPointF pos) const override { return describeAt(pos); }
    void plotStyleChanged() override;
    void resizeEvent(QResizeEvent* e) override;
    void changeEvent(QEvent* e) override;
    void paintEvent(QPaintEvent* e) override;
    void mouseMoveEvent(QMouseEvent* e) override;
    void mouseReleaseEvent(QMouseEvent* e) override;
    void leaveEvent(QEvent* e) override;

  private:
    void reportHover();
    SweepPicture picture_;
    QPointF mouse_{-1, -1};
};

} // namespace flowscope
