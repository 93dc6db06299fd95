// Canvas: one page being drawn with cairo (RGB24 image surface) and laid out with Pango.
//
// User units are typographic points (1/72 inch) on the paper: the constructor scales cairo by
// dpi / 72 and sets Pango's resolution to 72, so a 10 pt font is 10 user units high at any dpi,
// and SetPaper() places and rotates the paper within the image. Hinting is off and metrics are
// unhinted, so the layout in points is the same at every resolution.
//
// Thread safety: a Canvas belongs to one thread (its TextEngine's). Its text calls serialise on
// FontLock() (see fonts.h); its fills and lines run in parallel with other canvases.
#ifndef DOCFEED_SYNTH_CANVAS_H_
#define DOCFEED_SYNTH_CANVAS_H_

#include <cairo.h>
#include <pango/pango.h>

#include <string_view>

#include "codec/codec.h"
#include "synth/fonts.h"

namespace docfeed::internal {

struct Rgb {
  double r = 0, g = 0, b = 0;  // 0..1
};
inline constexpr Rgb kBlack{0.08, 0.08, 0.09};
inline constexpr Rgb kWhite{1, 1, 1};

struct Font {
  const char* family = "Liberation Sans";
  double size_pt = 10;
  bool bold = false;
  bool italic = false;
};

enum class Align { kLeft, kCenter, kRight };

class Canvas {
 public:
  // A width_px x height_px surface filled with `background`.
  // REQUIRES: width_px, height_px >= 1; dpi > 0. `engine` outlives the Canvas.
  Canvas(const TextEngine& engine, int width_px, int height_px, double dpi, Rgb background);
  Canvas(const Canvas&) = delete;
  Canvas& operator=(const Canvas&) = delete;
  ~Canvas();

  // Places the paper's top-left corner at (x_pt, y_pt) of the image and rotates it by
  // `angle_rad` about the point (pivot_x_pt, pivot_y_pt) of the paper. Later drawing is in paper
  // coordinates.
  void SetPaper(double x_pt, double y_pt, double angle_rad, double pivot_x_pt, double pivot_y_pt);

  // Draws `text` (UTF-8) with the top of its first line at y, inside [x, x + width] aligned by
  // `align` and wrapped at word boundaries to `width`; width <= 0 means no wrapping, and then x
  // is the left, centre or right edge for kLeft, kCenter or kRight. Returns the height in points.
  double Text(double x, double y, double width, std::string_view text, const Font& font,
              Align align = Align::kLeft, Rgb color = kBlack);
  // Width in points of `text` on one line.
  double TextWidth(std::string_view text, const Font& font);
  // Height in points of one line of `font`.
  double LineHeight(const Font& font);

  void Line(double x0, double y0, double x1, double y1, double width_pt, Rgb color,
            bool dashed = false);
  void FillRect(double x, double y, double w, double h, Rgb color);
  void StrokeRect(double x, double y, double w, double h, double width_pt, Rgb color);

  cairo_t* cr() const { return cr_; }
  int width_px() const { return width_px_; }
  int height_px() const { return height_px_; }

  // The pixels as a 3-channel RGB image.
  Image ToRgb() const;

 private:
  void SetFont(const Font& font);

  int width_px_, height_px_;
  double scale_;
  cairo_surface_t* surface_ = nullptr;
  cairo_t* cr_ = nullptr;
  PangoContext* context_ = nullptr;
  PangoLayout* layout_ = nullptr;
  PangoFontDescription* desc_ = nullptr;
};

}  // namespace docfeed::internal

#endif  // DOCFEED_SYNTH_CANVAS_H_
