// A till receipt: monospace or condensed sans, centred header, dashed rules, item lines with
// amounts flush right, totals, payment and a barcode. Coordinates are points on the strip.
#include <string>

#include "synth/layouts.h"

namespace docfeed::internal {
namespace {

constexpr const char* kThanks[] = {
    "THANK YOU, PLEASE COME AGAIN", "Thank you for shopping with us!",
    "GOODS SOLD ARE NOT RETURNABLE", "Have a nice day :)", "KEEP THIS RECEIPT FOR RETURNS"};

// One "left ... right" line. Returns its height.
double Row(Canvas& c, double x, double y, double w, const std::string& left,
           const std::string& right, const Font& font, Rgb ink) {
  const double rw = c.TextWidth(right, font);
  const double h = c.Text(x, y, w - rw - 6, left, font, Align::kLeft, ink);
  c.Text(x + w, y, 0, right, font, Align::kRight, ink);
  return h;
}

void Barcode(Canvas& c, double x, double y, double w, double h, Rgb ink, Rng& rng) {
  double bx = x;
  while (bx < x + w) {
    const double bar = rng.Real(0.6, 2.2);
    if (rng.Chance(0.55)) c.FillRect(bx, y, bar, h, ink);
    bx += bar;
  }
}

}  // namespace

double DrawReceipt(Canvas& c, const DocContent& doc, double width_pt, Rng& rng) {
  const bool mono = rng.Chance(0.75);
  const char* family = mono ? rng.Pick(MonoFamilies()).family : rng.Pick(SansFamilies()).family;
  const double size = rng.Real(7.0, 8.5) * width_pt / 226.0;
  const Font body{family, size};
  const Font bold{family, size, true};
  const Font big{family, size * rng.Real(1.2, 1.6), true};
  // Thermal print: near-black to faded grey.
  const double g = rng.Real(0.05, 0.35);
  const Rgb ink{g, g, g * 1.05};
  const double m = width_pt * 0.06, w = width_pt - 2 * m;
  double y = m + 4;
  y += c.Text(m, y, w, doc.company, big, Align::kCenter, ink) + 2;
  for (const std::string& line : doc.address_lines)
    y += c.Text(m, y, w, line, body, Align::kCenter, ink);
  y += c.Text(m, y, w, "Tel: " + doc.phone, body, Align::kCenter, ink) + 4;
  auto rule = [&] {
    c.Line(m, y + 3, m + w, y + 3, 0.5, ink, true);
    y += 7;
  };
  rule();
  y += Row(c, m, y, w, "Receipt #" + doc.number, "", body, ink);
  std::string time;
  if (rng.Chance(0.7)) {
    const int hour = rng.IntIn(7, 22);
    time = std::to_string(hour) + ":" + std::to_string(rng.IntIn(10, 59));
  }
  y += Row(c, m, y, w, "Date: " + doc.date, time, body, ink);
  rule();
  const bool two_line = rng.Chance(0.4);
  for (const LineItem& item : doc.items) {
    const std::string amount = FormatCents(item.amount_cents());
    if (two_line) {
      y += c.Text(m, y, w, item.name, body, Align::kLeft, ink);
      y += Row(c, m, y, w, "  " + std::to_string(item.count) + " x " + FormatCents(item.unit_cents),
               amount, body, ink);
    } else {
      y += Row(c, m, y, w,
               std::to_string(item.count) + " " + item.name + " @" + FormatCents(item.unit_cents),
               amount, body, ink);
    }
  }
  rule();
  y += Row(c, m, y, w, "SUBTOTAL", FormatCents(doc.subtotal_cents), body, ink);
  y += Row(c, m, y, w, doc.tax_label, FormatCents(doc.tax_cents), body, ink) + 2;
  y += Row(c, m, y, w, "TOTAL " + doc.currency, FormatCents(doc.total_cents), big, ink) + 2;
  y += Row(c, m, y, w, doc.payment, FormatCents(doc.total_cents), body, ink);
  rule();
  y += c.Text(m, y + 2, w, rng.Pick(std::span<const char* const>(kThanks)), bold, Align::kCenter,
              ink) +
       8;
  if (rng.Chance(0.6)) {
    Barcode(c, m + w * 0.15, y, w * 0.7, size * 3.5, ink, rng);
    y += size * 3.5 + 6;
  }
  return y + m;
}

}  // namespace docfeed::internal
