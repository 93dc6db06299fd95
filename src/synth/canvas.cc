#include "synth/canvas.h"

#include <pango/pangocairo.h>

#include <cstring>
#include <string>

#include "base/check.h"

namespace docfeed::internal {

Canvas::Canvas(const TextEngine& engine, int width_px, int height_px, double dpi, Rgb background)
    : width_px_(width_px), height_px_(height_px), scale_(dpi / 72.0) {
  DOCFEED_CHECK(width_px >= 1 && height_px >= 1 && dpi > 0);
  surface_ = cairo_image_surface_create(CAIRO_FORMAT_RGB24, width_px, height_px);
  DOCFEED_CHECK(cairo_surface_status(surface_) == CAIRO_STATUS_SUCCESS);
  cr_ = cairo_create(surface_);
  cairo_set_source_rgb(cr_, background.r, background.g, background.b);
  cairo_paint(cr_);
  cairo_scale(cr_, scale_, scale_);

  std::lock_guard lock(FontLock());
  context_ = pango_font_map_create_context(engine.font_map());
  cairo_font_options_t* options = cairo_font_options_create();
  cairo_font_options_set_antialias(options, CAIRO_ANTIALIAS_GRAY);
  cairo_font_options_set_hint_style(options, CAIRO_HINT_STYLE_NONE);
  cairo_font_options_set_hint_metrics(options, CAIRO_HINT_METRICS_OFF);
  pango_cairo_context_set_font_options(context_, options);
  cairo_font_options_destroy(options);
  pango_cairo_context_set_resolution(context_, 72.0);
  pango_context_set_round_glyph_positions(context_, FALSE);
  pango_cairo_update_context(cr_, context_);
  layout_ = pango_layout_new(context_);
  pango_layout_set_wrap(layout_, PANGO_WRAP_WORD_CHAR);
  desc_ = pango_font_description_new();
}

Canvas::~Canvas() {
  std::lock_guard lock(FontLock());
  pango_font_description_free(desc_);
  g_object_unref(layout_);
  g_object_unref(context_);
  cairo_destroy(cr_);
  cairo_surface_destroy(surface_);
}

void Canvas::SetPaper(double x_pt, double y_pt, double angle_rad, double pivot_x_pt,
                      double pivot_y_pt) {
  std::lock_guard lock(FontLock());
  cairo_identity_matrix(cr_);
  cairo_scale(cr_, scale_, scale_);
  cairo_translate(cr_, x_pt + pivot_x_pt, y_pt + pivot_y_pt);
  cairo_rotate(cr_, angle_rad);
  cairo_translate(cr_, -pivot_x_pt, -pivot_y_pt);
  pango_cairo_update_context(cr_, context_);
  pango_layout_context_changed(layout_);
}

void Canvas::SetFont(const Font& font) {
  pango_font_description_set_family_static(desc_, font.family);
  pango_font_description_set_weight(desc_, font.bold ? PANGO_WEIGHT_BOLD : PANGO_WEIGHT_NORMAL);
  pango_font_description_set_style(desc_, font.italic ? PANGO_STYLE_ITALIC : PANGO_STYLE_NORMAL);
  pango_font_description_set_size(desc_, static_cast<int>(font.size_pt * PANGO_SCALE + 0.5));
  pango_layout_set_font_description(layout_, desc_);
}

double Canvas::Text(double x, double y, double width, std::string_view text, const Font& font,
                    Align align, Rgb color) {
  std::lock_guard lock(FontLock());
  SetFont(font);
  pango_layout_set_text(layout_, text.data(), static_cast<int>(text.size()));
  PangoAlignment pango_align = align == Align::kLeft     ? PANGO_ALIGN_LEFT
                               : align == Align::kCenter ? PANGO_ALIGN_CENTER
                                                         : PANGO_ALIGN_RIGHT;
  pango_layout_set_alignment(layout_, pango_align);
  PangoRectangle logical;
  if (width > 0) {
    pango_layout_set_width(layout_, static_cast<int>(width * PANGO_SCALE));
    pango_layout_get_extents(layout_, nullptr, &logical);
  } else {
    pango_layout_set_width(layout_, -1);
    pango_layout_get_extents(layout_, nullptr, &logical);
    const double w = static_cast<double>(logical.width) / PANGO_SCALE;
    if (align == Align::kCenter) x -= w / 2;
    if (align == Align::kRight) x -= w;
  }
  cairo_set_source_rgb(cr_, color.r, color.g, color.b);
  cairo_move_to(cr_, x, y);
  pango_cairo_show_layout(cr_, layout_);
  return static_cast<double>(logical.height) / PANGO_SCALE;
}

double Canvas::TextWidth(std::string_view text, const Font& font) {
  std::lock_guard lock(FontLock());
  SetFont(font);
  pango_layout_set_width(layout_, -1);
  pango_layout_set_text(layout_, text.data(), static_cast<int>(text.size()));
  PangoRectangle logical;
  pango_layout_get_extents(layout_, nullptr, &logical);
  return static_cast<double>(logical.width) / PANGO_SCALE;
}

double Canvas::LineHeight(const Font& font) {
  std::lock_guard lock(FontLock());
  SetFont(font);
  pango_layout_set_width(layout_, -1);
  pango_layout_set_text(layout_, "Ag", 2);
  PangoRectangle logical;
  pango_layout_get_extents(layout_, nullptr, &logical);
  return static_cast<double>(logical.height) / PANGO_SCALE;
}

void Canvas::Line(double x0, double y0, double x1, double y1, double width_pt, Rgb color,
                  bool dashed) {
  cairo_save(cr_);
  cairo_set_source_rgb(cr_, color.r, color.g, color.b);
  cairo_set_line_width(cr_, width_pt);
  if (dashed) {
    const double dash[] = {2.5, 1.5};
    cairo_set_dash(cr_, dash, 2, 0);
  }
  cairo_move_to(cr_, x0, y0);
  cairo_line_to(cr_, x1, y1);
  cairo_stroke(cr_);
  cairo_restore(cr_);
}

void Canvas::FillRect(double x, double y, double w, double h, Rgb color) {
  cairo_set_source_rgb(cr_, color.r, color.g, color.b);
  cairo_rectangle(cr_, x, y, w, h);
  cairo_fill(cr_);
}

void Canvas::StrokeRect(double x, double y, double w, double h, double width_pt, Rgb color) {
  cairo_set_source_rgb(cr_, color.r, color.g, color.b);
  cairo_set_line_width(cr_, width_pt);
  cairo_rectangle(cr_, x, y, w, h);
  cairo_stroke(cr_);
}

Image Canvas::ToRgb() const {
  cairo_surface_flush(surface_);
  const uint8_t* data = cairo_image_surface_get_data(surface_);
  const int stride = cairo_image_surface_get_stride(surface_);
  Image image;
  image.width = width_px_;
  image.height = height_px_;
  image.channels = 3;
  image.pixels.resize(image.stride_bytes() * static_cast<size_t>(height_px_));
  for (int y = 0; y < height_px_; ++y) {
    // RGB24 is a native-endian uint32 0x00RRGGBB per pixel.
    const uint8_t* src = data + static_cast<ptrdiff_t>(y) * stride;
    uint8_t* dst = image.pixels.data() + static_cast<size_t>(y) * image.stride_bytes();
    for (int x = 0; x < width_px_; ++x) {
      uint32_t p;
      std::memcpy(&p, src + 4 * x, 4);
      dst[3 * x + 0] = static_cast<uint8_t>(p >> 16);
      dst[3 * x + 1] = static_cast<uint8_t>(p >> 8);
      dst[3 * x + 2] = static_cast<uint8_t>(p);
    }
  }
  return image;
}

}  // namespace docfeed::internal
