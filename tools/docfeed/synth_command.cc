// docfeed synth: argument handling, progress bar and the closing summary.
#include <cstdio>
#include <string>

#include "args.h"
#include "commands.h"
#include "docfeed/synth.h"
#include "progress.h"

namespace docfeed::tools {
namespace {

constexpr char kSynthHelp[] =
    "usage: docfeed synth -o OUT --n N [options]\n"
    "\n"
    "Generates N synthetic invoices and receipts with their ground truth, as an image folder\n"
    "that `docfeed pack OUT -o DATASET` packs: OUT/images/*.jpg|png and OUT/metadata.jsonl with\n"
    "{\"file_name\", \"ground_truth\"} rows, ground_truth being Donut-style\n"
    "{\"gt_parse\": {company, date, address, items: [{name, count, price}], subtotal, tax, "
    "total}}.\n"
    "Rendered with cairo + Pango in Liberation, DejaVu and Carlito fonts: three invoice layouts\n"
    "on A4/Letter, till receipts 58/80 mm wide, scanner and phone-photo effects.\n"
    "The same --seed gives byte-identical files whatever --threads is.\n"
    "\n"
    "options:\n"
    "  -o, --output OUT   output directory (written atomically)\n"
    "  --n N              number of documents (1 to 10,000,000)\n"
    "  --seed S           random seed, 0 to 2^64-1 (default 0)\n"
    "  --kind K           invoice, receipt or mixed (default mixed: 55% invoices)\n"
    "  --dpi D            render resolution, 50-600 (default: per document 150, 200 or 300)\n"
    "  --threads N        rendering threads (default: all cores)\n"
    "  --overwrite        replace OUT if it is a previous synth output\n";

Result<uint64_t> ParseU64(const std::string& name, const std::string& text) {
  if (text.empty() || text.size() > 20 ||
      text.find_first_not_of("0123456789") != std::string::npos) {
    return InvalidArgumentError(name + " must be a non-negative integer, not \"" + text + "\"");
  }
  unsigned long long value = 0;
  for (char ch : text) {
    const auto digit = static_cast<unsigned long long>(ch - '0');
    if (value > (~0ull - digit) / 10) return InvalidArgumentError(name + " is too large: " + text);
    value = value * 10 + digit;
  }
  return static_cast<uint64_t>(value);
}

Result<SynthOptions> ToOptions(const ParsedArgs& parsed) {
  SynthOptions o;
  if (!parsed.positional.empty()) {
    return InvalidArgumentError("synth takes no positional argument (got \"" +
                                parsed.positional[0] + "\"); use -o OUT");
  }
  o.output = parsed.Get("-o", parsed.Get("--output", ""));
  if (o.output.empty()) return InvalidArgumentError("synth needs -o OUT");
  if (parsed.Get("--n", "").empty()) return InvalidArgumentError("synth needs --n N");
  DOCFEED_ASSIGN_OR_RETURN(int n, ParseInt("--n", parsed.Get("--n", ""), 1, 10'000'000));
  o.count = static_cast<uint64_t>(n);
  DOCFEED_ASSIGN_OR_RETURN(o.seed, ParseU64("--seed", parsed.Get("--seed", "0")));
  DOCFEED_ASSIGN_OR_RETURN(o.kind, ParseSynthKind(parsed.Get("--kind", "mixed")));
  if (parsed.options.count("--dpi") > 0) {
    DOCFEED_ASSIGN_OR_RETURN(
        o.dpi, ParseInt("--dpi", parsed.Get("--dpi", ""), kSynthMinDpi, kSynthMaxDpi));
  }
  DOCFEED_ASSIGN_OR_RETURN(o.threads, ParseInt("--threads", parsed.Get("--threads", "0"), 0, 1024));
  o.overwrite = parsed.Has("--overwrite");
  return o;
}

void PrintSummary(const SynthOptions& o, const SynthSummary& s) {
  const double per_minute = s.seconds > 0 ? 60.0 * static_cast<double>(s.documents) / s.seconds : 0;
  const double kb_per_page =
      s.documents > 0 ? static_cast<double>(s.image_bytes) / 1e3 / static_cast<double>(s.documents)
                      : 0;
  std::printf("synthesized %llu documents into %s in %s (%.0f pages/min, %d threads)\n",
              static_cast<unsigned long long>(s.documents), o.output.c_str(),
              FormatSeconds(s.seconds).c_str(), per_minute, s.threads);
  std::printf("  kinds      %llu invoices, %llu receipts\n",
              static_cast<unsigned long long>(s.invoices),
              static_cast<unsigned long long>(s.receipts));
  std::printf("  images     %s (%.0f KB a page); jpeg=%llu png=%llu, %llu grayscale\n",
              FormatBytes(s.image_bytes).c_str(), kb_per_page,
              static_cast<unsigned long long>(s.jpeg), static_cast<unsigned long long>(s.png),
              static_cast<unsigned long long>(s.grayscale));
  std::printf("  next       docfeed pack %s -o DATASET\n", o.output.c_str());
}

}  // namespace

int RunSynth(const Args& args) {
  auto start = StartCommand("synth", args, {"--overwrite"},
                            {"-o", "--output", "--n", "--seed", "--kind", "--dpi", "--threads"},
                            kSynthHelp, &ToOptions);
  if (const int* exit_code = std::get_if<int>(&start)) return *exit_code;
  SynthOptions* options = &std::get<SynthOptions>(start);
  ProgressBar bar("synthesizing");
  options->on_progress = [&bar](const SynthProgress& p) {
    bar.Update(p.done, p.total, p.bytes, p.elapsed_seconds);
  };
  Result<SynthSummary> summary = Synthesize(*options);
  bar.Finish();
  if (!summary.ok()) {
    std::fprintf(stderr, "docfeed synth: %s\n", summary.status().ToString().c_str());
    return 1;
  }
  PrintSummary(*options, *summary);
  return 0;
}

}  // namespace docfeed::tools

// LeakSanitizer reads this hook in ASan builds (and nothing else does). fontconfig keeps the
// character sets and patterns of the fonts it scanned for the life of the process, partly behind
// offset-encoded pointers that LSan cannot follow, so they show as leaks at exit; nothing of
// docfeed's own is suppressed.
// Weak: the same hook is defined wherever fontconfig may be used (the CLI, the synth test, the
// PDF reader), and a program that links several of them takes one.
extern "C" __attribute__((weak)) const char* __lsan_default_suppressions() {
  return "leak:libfontconfig.so\n";
}
