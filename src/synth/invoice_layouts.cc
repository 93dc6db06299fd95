// Three invoice designs sharing one item-table routine. Coordinates are points on the paper.
#include <algorithm>
#include <string>
#include <vector>

#include "synth/layouts.h"

namespace docfeed::internal {
namespace {

constexpr Rgb kAccents[] = {{0.11, 0.23, 0.45}, {0.10, 0.38, 0.30}, {0.50, 0.12, 0.15},
                            {0.20, 0.20, 0.22}, {0.05, 0.40, 0.50}, {0.35, 0.20, 0.45},
                            {0.70, 0.35, 0.05}, {0.05, 0.05, 0.05}};
constexpr const char* kTitles[] = {"INVOICE", "Invoice", "TAX INVOICE", "Tax Invoice", "BILL"};
constexpr const char* kFooters[] = {
    "Payment due within 30 days. Thank you for your business!",
    "Please quote the invoice number with your payment.",
    "Thank you for your order. Goods remain our property until paid in full.",
    "Payment terms: 14 days net. Late payments may incur interest.",
    "Questions about this invoice? Contact our accounts team."};

Rgb Mix(Rgb a, Rgb b, double t) {
  return {a.r + (b.r - a.r) * t, a.g + (b.g - a.g) * t, a.b + (b.b - a.b) * t};
}

struct Style {
  const char* family;
  double size;  // body size in points
  Rgb accent, light, ink, muted;
  double margin;
  std::string title;
  bool currency_in_amounts;  // "$ 12.00" in the totals vs "Total (USD)"
  int table_variant;         // 0 filled header, 1 light header + rules, 2 full grid
  bool zebra;
  Font Body() const { return {family, size}; }
  Font Bold() const { return {family, size, true}; }
  Font Small() const { return {family, size * 0.85}; }
  Font Sized(double s, bool bold = false) const { return {family, s, bold}; }
};

Style DrawStyle(Rng& rng, bool serif) {
  Style s;
  s.family =
      serif && rng.Chance(0.5) ? rng.Pick(SerifFamilies()).family : rng.Pick(SansFamilies()).family;
  s.size = rng.Real(8.5, 10.5);
  s.accent = rng.Pick(std::span<const Rgb>(kAccents));
  s.light = Mix(s.accent, kWhite, 0.86);
  s.ink = kBlack;
  s.muted = {0.35, 0.35, 0.38};
  s.margin = rng.Real(15, 25) * kPointsPerMm;
  s.title = rng.Pick(std::span<const char* const>(kTitles));
  s.currency_in_amounts = rng.Chance(0.5);
  s.table_variant = rng.IntIn(0, 2);
  s.zebra = rng.Chance(0.3);
  return s;
}

std::string Money(const Style& s, const DocContent& doc, int64_t cents) {
  if (!s.currency_in_amounts) return FormatCents(cents);
  return doc.currency.size() == 1 ? doc.currency + FormatCents(cents)
                                  : FormatCents(cents) + " " + doc.currency;
}

// Draws lines top to bottom; returns the y below the last one.
double Lines(Canvas& c, double x, double y, double w, const std::vector<std::string>& lines,
             const Font& font, Align align, Rgb color) {
  for (const std::string& line : lines) y += c.Text(x, y, w, line, font, align, color);
  return y;
}

struct Column {
  const char* header;
  double fraction;
  Align align;
};

// The line-item table. Returns the y below it.
double ItemTable(Canvas& c, const DocContent& doc, const Style& s, double x, double y, double w,
                 bool qty_first, bool index_column) {
  std::vector<Column> cols;
  if (index_column) cols.push_back({"#", 0.06, Align::kLeft});
  if (qty_first) cols.push_back({"Qty", 0.09, Align::kLeft});
  cols.push_back({"Description", 0.0, Align::kLeft});
  if (!qty_first) cols.push_back({"Qty", 0.09, Align::kRight});
  cols.push_back({"Unit Price", 0.18, Align::kRight});
  cols.push_back({"Amount", 0.18, Align::kRight});
  double used = 0;
  for (const Column& col : cols) used += col.fraction;
  for (Column& col : cols) {
    if (col.fraction == 0.0) col.fraction = 1.0 - used;
  }
  const double pad = s.size * 0.5;
  const double row_h = c.LineHeight(s.Body()) + pad * 1.2;
  // Header.
  const bool filled = s.table_variant == 0;
  c.FillRect(x, y, w, row_h, filled ? s.accent : s.light);
  double cx = x;
  for (const Column& col : cols) {
    const double cw = col.fraction * w;
    c.Text(cx + pad, y + pad * 0.6, cw - 2 * pad, col.header, s.Bold(), col.align,
           filled ? kWhite : s.ink);
    cx += cw;
  }
  y += row_h;
  for (size_t i = 0; i < doc.items.size(); ++i) {
    const LineItem& item = doc.items[i];
    const std::string cells[] = {std::to_string(i + 1), std::to_string(item.count), item.name,
                                 FormatCents(item.unit_cents), FormatCents(item.amount_cents())};
    // Map columns to cells by header.
    double h = row_h;
    if (s.zebra && i % 2 == 1) c.FillRect(x, y, w, row_h, Mix(s.light, kWhite, 0.5));
    cx = x;
    for (const Column& col : cols) {
      const double cw = col.fraction * w;
      const std::string& text = col.header[0] == '#'   ? cells[0]
                                : col.header[0] == 'Q' ? cells[1]
                                : col.header[0] == 'D' ? cells[2]
                                : col.header[0] == 'U' ? cells[3]
                                                       : cells[4];
      h = std::max(h,
                   c.Text(cx + pad, y + pad * 0.6, cw - 2 * pad, text, s.Body(), col.align, s.ink) +
                       pad * 1.2);
      cx += cw;
    }
    if (s.table_variant == 1) c.Line(x, y + h, x + w, y + h, 0.4, s.muted);
    if (s.table_variant == 2) {
      cx = x;
      for (const Column& col : cols) {
        c.StrokeRect(cx, y, col.fraction * w, h, 0.5, s.muted);
        cx += col.fraction * w;
      }
    }
    y += h;
  }
  if (s.table_variant != 2) c.Line(x, y, x + w, y, 0.8, s.accent);
  return y;
}

// Subtotal, tax and total in two right-aligned columns ending at `right`. Returns the y below.
double Totals(Canvas& c, const DocContent& doc, const Style& s, double right, double y,
              bool boxed_total) {
  const double label_w = 130, value_w = 125, x = right - label_w - value_w;
  const std::string total_label = s.currency_in_amounts ? "Total" : "Total (" + doc.currency + ")";
  const std::pair<std::string, int64_t> rows[] = {{"Subtotal", doc.subtotal_cents},
                                                  {doc.tax_label, doc.tax_cents},
                                                  {total_label, doc.total_cents}};
  for (int i = 0; i < 3; ++i) {
    const bool total = i == 2;
    const Font font = total ? s.Sized(s.size * 1.2, true) : s.Body();
    const double h = c.LineHeight(font) + 5;
    Rgb ink = s.ink;
    if (total && boxed_total) {
      c.FillRect(x, y, label_w + value_w, h + 2, s.accent);
      ink = kWhite;
    } else if (total) {
      c.Line(x, y, right, y, 0.8, s.ink);
    }
    c.Text(x + 4, y + 3, label_w - 8, rows[i].first, font, Align::kRight, ink);
    c.Text(x + label_w, y + 3, value_w - 4, Money(s, doc, rows[i].second), font, Align::kRight,
           ink);
    y += h + 2;
  }
  return y;
}

double Classic(Canvas& c, const DocContent& doc, const PaperSize& paper, Rng& rng) {
  const Style s = DrawStyle(rng, true);
  const double m = s.margin, w = paper.width_pt - 2 * m;
  double y = m;
  y += c.Text(m, y, w * 0.6, doc.company, s.Sized(s.size * rng.Real(1.7, 2.3), true), Align::kLeft,
              s.accent);
  y = Lines(c, m, y + 2, w * 0.6, doc.address_lines, s.Body(), Align::kLeft, s.ink);
  y += c.Text(m, y, w * 0.6, "Phone: " + doc.phone, s.Small(), Align::kLeft, s.muted);
  double ry = m;
  ry += c.Text(m + w * 0.5, ry, w * 0.5, s.title, s.Sized(s.size * 2.6, true), Align::kRight,
               s.accent);
  ry += c.Text(m + w * 0.5, ry + 4, w * 0.5, "Invoice No: " + doc.number, s.Body(), Align::kRight,
               s.ink) +
        4;
  ry += c.Text(m + w * 0.5, ry, w * 0.5, "Date: " + doc.date, s.Body(), Align::kRight, s.ink);
  y = std::max(y, ry) + 14;
  c.Line(m, y, m + w, y, 1.0, s.accent);
  y += 12;
  y += c.Text(m, y, w / 2, "Bill To:", s.Bold(), Align::kLeft, s.accent);
  y += c.Text(m, y + 2, w / 2, doc.customer, s.Body(), Align::kLeft, s.ink) + 2;
  y = Lines(c, m, y, w / 2, doc.customer_address, s.Body(), Align::kLeft, s.ink) + 18;
  y = ItemTable(c, doc, s, m, y, w, false, rng.Chance(0.3)) + 12;
  y = Totals(c, doc, s, m + w, y, false) + 30;
  const char* footer = rng.Pick(std::span<const char* const>(kFooters));
  const double footer_y = std::max(y, paper.height_pt - m - 30);
  return footer_y + c.Text(m, footer_y, w, footer, s.Small(), Align::kCenter, s.muted);
}

double Banded(Canvas& c, const DocContent& doc, const PaperSize& paper, Rng& rng) {
  const Style s = DrawStyle(rng, false);
  const double m = s.margin, w = paper.width_pt - 2 * m;
  const double band = rng.Real(70, 100);
  c.FillRect(0, 0, paper.width_pt, band, s.accent);
  double y = band * 0.22;
  y += c.Text(m, y, w * 0.62, doc.company, s.Sized(s.size * 1.9, true), Align::kLeft, kWhite);
  c.Text(m, y + 2, w * 0.62, JoinedAddress(doc), s.Small(), Align::kLeft,
         Mix(kWhite, s.accent, 0.15));
  c.Text(m + w * 0.6, band * 0.3, w * 0.4, s.title, s.Sized(s.size * 2.4, true), Align::kRight,
         kWhite);
  y = band + 24;
  double ly = y;
  ly += c.Text(m, ly, w * 0.5, "BILLED TO", s.Sized(s.size * 0.85, true), Align::kLeft, s.accent);
  ly += c.Text(m, ly + 2, w * 0.5, doc.customer, s.Bold(), Align::kLeft, s.ink) + 2;
  ly = Lines(c, m, ly, w * 0.5, doc.customer_address, s.Body(), Align::kLeft, s.ink);
  const std::pair<std::string, std::string> meta[] = {
      {"Invoice number", doc.number}, {"Date of issue", doc.date}, {"Phone", doc.phone}};
  double ry = y;
  for (const auto& [label, value] : meta) {
    c.Text(m + w * 0.5, ry, w * 0.22, label, s.Sized(s.size * 0.85, true), Align::kLeft, s.accent);
    ry += c.Text(m + w * 0.72, ry, w * 0.28, value, s.Body(), Align::kRight, s.ink) + 4;
  }
  y = std::max(ly, ry) + 22;
  y = ItemTable(c, doc, s, m, y, w, false, rng.Chance(0.6)) + 14;
  y = Totals(c, doc, s, m + w, y, true) + 6;
  const double foot = paper.height_pt - 28;
  c.FillRect(0, foot, paper.width_pt, 28, s.light);
  c.Text(m, foot + 8, w, rng.Pick(std::span<const char* const>(kFooters)), s.Small(),
         Align::kCenter, s.ink);
  // The totals must end above the footer band.
  return std::max(y, foot) + 28;
}

double Minimal(Canvas& c, const DocContent& doc, const PaperSize& paper, Rng& rng) {
  Style s = DrawStyle(rng, true);
  s.table_variant = 1;
  s.accent = s.ink;
  s.light = {0.93, 0.93, 0.93};
  if (rng.Chance(0.3)) s.family = rng.Pick(MonoFamilies()).family;
  const double m = s.margin, w = paper.width_pt - 2 * m;
  double y = m;
  y += c.Text(m, y, w, doc.company, s.Sized(s.size * 2.0, true), Align::kCenter, s.ink);
  y += c.Text(m, y + 2, w, JoinedAddress(doc), s.Body(), Align::kCenter, s.ink) + 2;
  y += c.Text(m, y, w, "Tel. " + doc.phone, s.Small(), Align::kCenter, s.muted) + 16;
  c.Line(m, y, m + w, y, 0.6, s.ink);
  y += 6;
  y += c.Text(m, y, w, s.title, s.Sized(s.size * 1.5, true), Align::kCenter, s.ink) + 6;
  c.Line(m, y, m + w, y, 0.6, s.ink);
  y += 14;
  c.Text(m, y, w / 2, "No. " + doc.number, s.Body(), Align::kLeft, s.ink);
  y += c.Text(m + w / 2, y, w / 2, "Date: " + doc.date, s.Body(), Align::kRight, s.ink) + 10;
  y += c.Text(m, y, w, "Customer: " + doc.customer, s.Body(), Align::kLeft, s.ink);
  y = Lines(c, m, y, w, doc.customer_address, s.Body(), Align::kLeft, s.ink) + 18;
  y = ItemTable(c, doc, s, m, y, w, true, false) + 12;
  y = Totals(c, doc, s, m + w, y, false) + 50;
  const double sig = std::max(y, paper.height_pt - m - 40);
  c.Line(m, sig, m + 160, sig, 0.5, s.ink);
  return sig + 4 +
         c.Text(m, sig + 4, 200, "Authorised signature", s.Small(), Align::kLeft, s.muted);
}

}  // namespace

double DrawInvoice(Canvas& canvas, const DocContent& doc, InvoiceLayout layout,
                   const PaperSize& paper, Rng& rng) {
  switch (layout) {
    case InvoiceLayout::kClassic:
      return Classic(canvas, doc, paper, rng);
    case InvoiceLayout::kBanded:
      return Banded(canvas, doc, paper, rng);
    case InvoiceLayout::kMinimal:
      return Minimal(canvas, doc, paper, rng);
  }
  return 0;
}

}  // namespace docfeed::internal
