// RenderDocument: draws the scene (paper on a scanner bed or a table), the layout, the scan
// effects, and encodes the image. Every random choice comes from Rng::ForDocument(seed, index),
// drawn in a fixed order.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numbers>

#include "codec/codec.h"
#include "synth/canvas.h"
#include "synth/effects.h"
#include "synth/layouts.h"
#include "synth/synth.h"

namespace docfeed::internal {
namespace {

constexpr double kDpiWeights[] = {0.4, 0.3, 0.3};  // for kMixedDpis

// How a page is captured, and what that does to its pixels and encoding.
struct Capture {
  bool clean = false;    // a digital export: no rotation, no effects, PNG
  double angle_rad = 0;  // rotation of the paper
  Rgb paper = kWhite;    // paper tint
  Rgb bed = kWhite;      // what shows around the paper
  ScanEffects effects;
  int jpeg_quality = 85;
};

int Px(double pt, int dpi) { return std::max(1, static_cast<int>(std::lround(pt * dpi / 72.0))); }

double Degrees(double d) { return d * std::numbers::pi / 180.0; }

Rgb PaperTint(Rng& rng) {
  const double r = 1.0 - rng.Real(0, 0.04);
  const double g = r - rng.Real(0, 0.025);
  const double b = g - rng.Real(0, 0.05);
  return {r, g, b};
}

// Scanner-like capture: slight skew, light noise and blur, sometimes grayscale.
Capture ScanCapture(int dpi, Rng& rng) {
  Capture c;
  c.angle_rad = Degrees(rng.Chance(0.75) ? rng.Real(-1.2, 1.2) : 0.0);
  c.paper = PaperTint(rng);
  const double bed = rng.Real(0.75, 0.95);
  c.bed = {bed, bed, bed};
  const double blur = rng.Unit();
  c.effects.blur_passes = blur < 0.3 ? 0 : blur < 0.8 ? 1 : 2;
  c.effects.noise_amplitude = rng.IntIn(3, 12);
  c.effects.texture_amplitude = rng.Real(0.005, 0.025);
  c.effects.texture_cell_px = std::max(16, dpi / 2);
  c.effects.grayscale = rng.Chance(0.15);
  c.jpeg_quality = rng.IntIn(60, 92);
  return c;
}

// Phone-photo capture of a receipt on a table: stronger skew, uneven light, more blur.
Capture PhotoCapture(int dpi, Rng& rng) {
  Capture c;
  c.angle_rad = Degrees(rng.Real(-5, 5));
  c.paper = PaperTint(rng);
  const double tone = rng.Real(0.15, 0.55);
  c.bed = {tone * rng.Real(1.0, 1.3), tone, tone * rng.Real(0.7, 1.0)};
  c.effects.blur_passes = rng.IntIn(1, 2);
  c.effects.noise_amplitude = rng.IntIn(6, 16);
  c.effects.texture_amplitude = rng.Real(0.03, 0.10);
  c.effects.texture_cell_px = std::max(32, dpi);
  c.jpeg_quality = rng.IntIn(70, 92);
  return c;
}

// Draws an invoice page; returns its pixels.
Image InvoiceScene(const TextEngine& engine, const DocContent& doc, int dpi, Capture& capture,
                   Rng& rng) {
  const PaperSize paper = rng.Chance(0.6) ? kA4 : kLetter;
  const auto layout = static_cast<InvoiceLayout>(rng.IntIn(0, kInvoiceLayoutCount - 1));
  capture.clean = rng.Chance(0.12);
  if (!capture.clean) capture = ScanCapture(dpi, rng);
  Canvas canvas(engine, Px(paper.width_pt, dpi), Px(paper.height_pt, dpi), dpi, capture.bed);
  canvas.SetPaper(0, 0, capture.angle_rad, paper.width_pt / 2, paper.height_pt / 2);
  canvas.FillRect(0, 0, paper.width_pt, paper.height_pt, capture.paper);
  DrawInvoice(canvas, doc, layout, paper, rng);
  return canvas.ToRgb();
}

// Draws a receipt strip on a scanner bed or a table; returns its pixels.
Image ReceiptScene(const TextEngine& engine, const DocContent& doc, int dpi, Capture& capture,
                   Rng& rng) {
  const double width_pt = (rng.Chance(0.75) ? 80.0 : 58.0) * kPointsPerMm;
  const bool photo = rng.Chance(0.35);
  capture = photo ? PhotoCapture(dpi, rng) : ScanCapture(dpi, rng);
  double margin_x = width_pt * (photo ? rng.Real(0.25, 0.6) : rng.Real(0.04, 0.15));
  double margin_y = width_pt * (photo ? rng.Real(0.15, 0.4) : rng.Real(0.04, 0.15));
  // Measure on a 1x1 canvas with a copy of the generator, then draw for real with the same
  // state, so both passes make the same choices.
  Rng measure_rng = rng;
  Canvas probe(engine, 1, 1, dpi, kWhite);
  const double height_pt = DrawReceipt(probe, doc, width_pt, measure_rng);
  // Keep the whole rotated strip in the picture: grow the margins by its bounding box.
  const double sin_a = std::abs(std::sin(capture.angle_rad));
  const double cos_a = std::abs(std::cos(capture.angle_rad));
  margin_x += (width_pt * cos_a + height_pt * sin_a - width_pt) / 2;
  margin_y += (width_pt * sin_a + height_pt * cos_a - height_pt) / 2;
  Canvas canvas(engine, Px(width_pt + 2 * margin_x, dpi), Px(height_pt + 2 * margin_y, dpi), dpi,
                capture.bed);
  canvas.SetPaper(margin_x, margin_y, capture.angle_rad, width_pt / 2, height_pt / 2);
  if (photo) {
    const Rgb shadow{capture.bed.r * 0.6, capture.bed.g * 0.6, capture.bed.b * 0.6};
    canvas.FillRect(3, 4, width_pt, height_pt, shadow);
  }
  canvas.FillRect(0, 0, width_pt, height_pt, capture.paper);
  DrawReceipt(canvas, doc, width_pt, rng);
  return canvas.ToRgb();
}

}  // namespace

Result<SynthDocument> RenderDocument(const TextEngine& engine, const SynthOptions& options,
                                     uint64_t index) {
  Rng rng = Rng::ForDocument(options.seed, index);
  DocKind kind = options.kind == KindChoice::kReceipt ? DocKind::kReceipt : DocKind::kInvoice;
  if (options.kind == KindChoice::kMixed && rng.Chance(0.45)) kind = DocKind::kReceipt;
  const int dpi = options.dpi > 0 ? options.dpi
                                  : kMixedDpis[rng.Weighted(std::span<const double>(kDpiWeights))];
  const DocContent doc = GenerateContent(kind, rng);
  Capture capture;
  Image pixels = kind == DocKind::kInvoice ? InvoiceScene(engine, doc, dpi, capture, rng)
                                           : ReceiptScene(engine, doc, dpi, capture, rng);
  SynthDocument out;
  out.kind = kind;
  out.ground_truth = GroundTruthJson(doc);
  if (!capture.clean) pixels = ApplyScanEffects(std::move(pixels), capture.effects, rng.Next());
  out.width = pixels.width;
  out.height = pixels.height;
  out.channels = pixels.channels;
  char name[48];
  std::snprintf(name, sizeof(name), "images/%06llu.%s", static_cast<unsigned long long>(index),
                capture.clean ? "png" : "jpg");
  out.file_name = name;
  Result<std::vector<uint8_t>> bytes =
      capture.clean ? EncodePng(pixels, 6) : EncodeJpeg(pixels, capture.jpeg_quality);
  if (!bytes.ok())
    return bytes.status().WithContext("encoding synthetic document " + out.file_name);
  out.bytes = std::move(*bytes);
  return out;
}

}  // namespace docfeed::internal
