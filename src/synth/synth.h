// docfeed synth: generates synthetic invoices and receipts with their ground truth, in the
// spirit of SynthDoG (Kim et al., "OCR-free Document Understanding Transformer", ECCV 2022),
// as an imagefolder dataset that `docfeed pack` and Hugging Face `datasets` read:
//
//   OUT/images/000000.jpg ...          JPEG (scans, photos) or PNG (clean digital invoices)
//   OUT/metadata.jsonl                 {"file_name": "images/000000.jpg", "ground_truth": "<JSON>"}
//
// Document i depends only on (seed, i): see README.md for the determinism contract.
#ifndef DOCFEED_SYNTH_SYNTH_H_
#define DOCFEED_SYNTH_SYNTH_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/env.h"
#include "docfeed/status.h"
#include "docfeed/synth.h"
#include "synth/content.h"
#include "synth/fonts.h"

namespace docfeed::internal {

// The options, progress and summary are the public ones (docfeed/synth.h), as is Synthesize()
// itself (defined in synth.cc).
using KindChoice = docfeed::SynthKind;
using docfeed::Synthesize;
using docfeed::SynthOptions;
using docfeed::SynthProgress;
using docfeed::SynthSummary;

// "invoice", "receipt" or "mixed". Errors: InvalidArgument naming the accepted values.
Result<KindChoice> ParseKindChoice(const std::string& text);

// The resolutions a document is rendered at when SynthOptions::dpi is 0 (weights in render.cc).
inline constexpr int kMixedDpis[] = {150, 200, 300};
inline constexpr int kMinDpi = docfeed::kSynthMinDpi;
inline constexpr int kMaxDpi = docfeed::kSynthMaxDpi;

// One rendered, encoded document.
struct SynthDocument {
  std::string file_name;  // relative to OUT, e.g. "images/000042.jpg"
  std::vector<uint8_t> bytes;
  std::string ground_truth;  // GroundTruthJson()
  DocKind kind = DocKind::kInvoice;
  int32_t width = 0, height = 0, channels = 0;
};

// Renders document `index` of a run. Thread-safe given one TextEngine per thread.
// REQUIRES: options.dpi is 0 or in [kMinDpi, kMaxDpi]. Errors: encoder failures (Internal).
Result<SynthDocument> RenderDocument(const TextEngine& engine, const SynthOptions& options,
                                     uint64_t index);

}  // namespace docfeed::internal

#endif  // DOCFEED_SYNTH_SYNTH_H_
