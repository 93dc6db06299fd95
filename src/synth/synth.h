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
#include "synth/content.h"
#include "synth/fonts.h"

namespace docfeed::internal {

enum class KindChoice { kInvoice, kReceipt, kMixed };

// "invoice", "receipt" or "mixed". Errors: InvalidArgument naming the accepted values.
Result<KindChoice> ParseKindChoice(const std::string& text);

// The resolutions a document is rendered at when SynthOptions::dpi is 0 (weights in render.cc).
inline constexpr int kMixedDpis[] = {150, 200, 300};
inline constexpr int kMinDpi = 50;
inline constexpr int kMaxDpi = 600;

struct SynthProgress {
  uint64_t done = 0;
  uint64_t total = 0;
  uint64_t bytes = 0;
  double elapsed_seconds = 0;
};

struct SynthOptions {
  std::string output;
  uint64_t count = 0;
  uint64_t seed = 0;
  KindChoice kind = KindChoice::kMixed;
  int dpi = 0;      // kMinDpi..kMaxDpi, or 0 for a per-document draw from kMixedDpis
  int threads = 0;  // 0: all cores
  bool overwrite = false;
  std::function<void(const SynthProgress&)> on_progress;  // called on the calling thread
  Env* env = nullptr;  // where the output is written (Env::Default() when null)
};

struct SynthSummary {
  uint64_t documents = 0, invoices = 0, receipts = 0;
  uint64_t jpeg = 0, png = 0, grayscale = 0;
  uint64_t image_bytes = 0;
  int threads = 0;
  double seconds = 0;
};

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

// Writes options.count documents to options.output through a temporary sibling directory that is
// renamed into place only when complete. Errors: InvalidArgument for bad options;
// AlreadyExists when OUT exists and is not empty (without overwrite); InvalidArgument when
// overwrite would replace a directory that is not a synth output; NotFound for missing fonts;
// IOError naming the file.
Result<SynthSummary> Synthesize(const SynthOptions& options);

}  // namespace docfeed::internal

#endif  // DOCFEED_SYNTH_SYNTH_H_
