// docfeed synth: synthetic invoices and receipts with their ground truth, in the spirit of
// SynthDoG (Kim et al., "OCR-free Document Understanding Transformer", ECCV 2022), written as an
// image folder that `docfeed pack` (docfeed/pack.h) and Hugging Face `datasets` read:
//
//   OUT/images/000000.jpg ...   JPEG (scans, phone photos) or PNG (clean digital invoices)
//   OUT/metadata.jsonl          {"file_name": "images/000000.jpg", "ground_truth": "<JSON>"}
//
// ground_truth is Donut-style {"gt_parse": {company, date, address, items: [{name, count,
// price}], subtotal, tax, total}}. Document i depends only on (seed, i): the same seed gives
// byte-identical files whatever the thread count (src/synth/README.md).
//
// Thread safety: Synthesize() runs its own rendering threads (SynthOptions::threads) and calls
// on_progress on the calling thread. Distinct outputs may be synthesized concurrently.
#ifndef DOCFEED_SYNTH_H_
#define DOCFEED_SYNTH_H_

#include <cstdint>
#include <functional>
#include <string>

#include "docfeed/env.h"
#include "docfeed/status.h"

namespace docfeed {

// What to render: invoices, till receipts, or a mix (55% invoices).
enum class SynthKind { kInvoice, kReceipt, kMixed };

// "invoice", "receipt" or "mixed". Errors: InvalidArgument naming the accepted values.
Result<SynthKind> ParseSynthKind(const std::string& text);

// The render resolutions SynthOptions::dpi accepts, dots per inch.
inline constexpr int kSynthMinDpi = 50;
inline constexpr int kSynthMaxDpi = 600;

struct SynthProgress {
  uint64_t done = 0;   // documents written
  uint64_t total = 0;  // SynthOptions::count
  uint64_t bytes = 0;  // image bytes written
  double elapsed_seconds = 0;
};

struct SynthOptions {
  std::string output;  // the image folder to create (written atomically)
  uint64_t count = 0;  // documents, >= 1
  uint64_t seed = 0;
  SynthKind kind = SynthKind::kMixed;
  int dpi = 0;             // kSynthMinDpi..kSynthMaxDpi, or 0: per document 150, 200 or 300
  int threads = 0;         // rendering threads; 0: one per core
  bool overwrite = false;  // replace OUT if it is a previous synth output
  std::function<void(const SynthProgress&)> on_progress;  // may be empty
  // Where the output is written (Env::Default() when null); not owned, must outlive the call.
  Env* env = nullptr;
};

struct SynthSummary {
  uint64_t documents = 0, invoices = 0, receipts = 0;
  uint64_t jpeg = 0, png = 0, grayscale = 0;  // images by format, and the grayscale ones
  uint64_t image_bytes = 0;
  int threads = 0;  // rendering threads used
  double seconds = 0;
};

// Writes options.count documents to options.output through a temporary sibling directory that
// is renamed into place only when complete. Errors: InvalidArgument for bad options;
// AlreadyExists when OUT exists and is not empty (without overwrite); InvalidArgument when
// overwrite would replace a directory that is not a synth output; NotFound for missing fonts;
// IOError naming the file.
Result<SynthSummary> Synthesize(const SynthOptions& options);

}  // namespace docfeed

#endif  // DOCFEED_SYNTH_H_
