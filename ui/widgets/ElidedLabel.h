// Flowscope UI: a one-line label that elides text that does not fit ("...") and shows it whole as a tooltip.
// QLabel instead clips long text, or grows the window to fit it.
#pragma once

#include <QString>
#include <QWidget>

namespace flowscope {

class ElidedLabel : public QWidget {
    Q_OBJECT
  public:
    explicit ElidedLabel(QWidget* parent = nullptr);
    void setText(const QString& text);
    QString text() const { return text_; }
    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;

  protected:
    void paintEvent(QPaintEvent* e) override;

  private:
    QString text_;
};

} // namespace flowscope
