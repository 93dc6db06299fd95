// The page layouts: three invoice designs and a till receipt, drawn on a Canvas in paper
// coordinates (points). Each draws every ground-truth string exactly as GroundTruthJson() spells
// it, so a model can learn to read the label off the page.
#ifndef DOCFEED_SYNTH_LAYOUTS_H_
#define DOCFEED_SYNTH_LAYOUTS_H_

#include "synth/canvas.h"
#include "synth/content.h"
#include "synth/rng.h"

namespace docfeed::internal {

enum class InvoiceLayout { kClassic, kBanded, kMinimal };
inline constexpr int kInvoiceLayoutCount = 3;

struct PaperSize {
  double width_pt = 0;
  double height_pt = 0;
};
inline constexpr PaperSize kA4{595.276, 841.890};  // 210 x 297 mm
inline constexpr PaperSize kLetter{612, 792};      // 8.5 x 11 in
inline constexpr double kPointsPerMm = 72.0 / 25.4;

// Draws an invoice filling `paper`. Fonts, sizes, colours and margins come from `rng`. Returns
// the lowest y (points) anything needed; the invoice fits when that is <= paper.height_pt, which
// holds for every generated invoice (at most 12 items; tested).
double DrawInvoice(Canvas& canvas, const DocContent& doc, InvoiceLayout layout,
                   const PaperSize& paper, Rng& rng);

// Draws a till receipt on a strip `width_pt` wide; returns the height it used in points. The
// same Rng state draws the same receipt, so callers measure on a small canvas first and then
// draw for real with a copy of the Rng. REQUIRES: doc.kind == kReceipt.
double DrawReceipt(Canvas& canvas, const DocContent& doc, double width_pt, Rng& rng);

}  // namespace docfeed::internal

#endif  // DOCFEED_SYNTH_LAYOUTS_H_
