// Tests for the synthetic-document generator: exact sums and well-formed ground truth,
// determinism across thread counts, decodable images of the announced size, the output
// directory protocol, and that `docfeed pack` accepts the result.
#include "synth/synth.h"

#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "base/file.h"
#include "codec/codec.h"
#include "format/dataset.h"
#include "pack/packer.h"
#include "synth/content.h"
#include "synth/effects.h"
#include "synth/layouts.h"
#include "synth/rng.h"

namespace docfeed::internal {
namespace {

std::string TempDir(const std::string& name) {
  const char* base = std::getenv("TEST_TMPDIR");
  std::string dir = JoinPath(base != nullptr ? base : "/tmp",
                             "synth_test_" + std::to_string(CurrentProcessId()) + "_" + name);
  RemoveAll(dir).IgnoreError();
  return dir;
}

// Parses "1234.56" into cents; -1 when malformed.
int64_t Cents(const std::string& text) {
  const size_t dot = text.find('.');
  if (dot == std::string::npos || text.size() - dot != 3) return -1;
  return std::stoll(text.substr(0, dot)) * 100 + std::stoll(text.substr(dot + 1));
}

TEST(SynthRng, DocumentStreamsDifferAndRepeat) {
  std::set<uint64_t> firsts;
  for (uint64_t i = 0; i < 1000; ++i) firsts.insert(Rng::ForDocument(42, i).Next());
  EXPECT_EQ(firsts.size(), 1000u);
  EXPECT_EQ(Rng::ForDocument(1, 5).Next(), Rng::ForDocument(1, 5).Next());
  EXPECT_NE(Rng::ForDocument(1, 5).Next(), Rng::ForDocument(2, 5).Next());
}

TEST(SynthRng, IntStaysInRangeAndHitsBothEnds) {
  Rng rng(7);
  bool lo = false, hi = false;
  for (int i = 0; i < 10000; ++i) {
    const int64_t v = rng.Int(-3, 4);
    ASSERT_GE(v, -3);
    ASSERT_LE(v, 4);
    lo |= v == -3;
    hi |= v == 4;
  }
  EXPECT_TRUE(lo && hi);
}

TEST(SynthContent, AmountsAddUpAndGroundTruthIsWhatIsPrinted) {
  for (DocKind kind : {DocKind::kInvoice, DocKind::kReceipt}) {
    for (uint64_t i = 0; i < 300; ++i) {
      Rng rng = Rng::ForDocument(3, i);
      const DocContent doc = GenerateContent(kind, rng);
      const nlohmann::json gt = nlohmann::json::parse(GroundTruthJson(doc));
      ASSERT_TRUE(gt.contains("gt_parse"));
      const nlohmann::json& p = gt["gt_parse"];
      for (const char* key : {"company", "date", "address", "subtotal", "tax", "total"}) {
        ASSERT_TRUE(p.contains(key) && p[key].is_string() && !p[key].get<std::string>().empty())
            << key;
      }
      ASSERT_TRUE(p["items"].is_array());
      ASSERT_GE(p["items"].size(), 1u);
      int64_t subtotal = 0;
      for (const auto& item : p["items"]) {
        const int64_t count = std::stoll(item["count"].get<std::string>());
        const int64_t price = Cents(item["price"].get<std::string>());
        ASSERT_GE(count, 1);
        ASSERT_GT(price, 0);
        ASSERT_FALSE(item["name"].get<std::string>().empty());
        subtotal += count * price;
      }
      const int64_t tax = Cents(p["tax"].get<std::string>());
      EXPECT_EQ(Cents(p["subtotal"].get<std::string>()), subtotal);
      // The tax is the rate applied to the subtotal, rounded half up to the cent.
      // tax = round_half_up(subtotal * rate): s*r - 1/2 cent < tax <= s*r + 1/2 cent.
      const int64_t exact = subtotal * doc.tax_rate_bp;  // in 1/10000 cent
      EXPECT_LT(exact - 5000, tax * 10000);
      EXPECT_LE(tax * 10000, exact + 5000);
      EXPECT_EQ(Cents(p["total"].get<std::string>()), subtotal + tax);
      EXPECT_EQ(p["company"], doc.company);
    }
  }
}

TEST(SynthEffects, NoEffectsIsIdentityAndGrayscaleHasOneChannel) {
  Image rgb{.width = 5, .height = 3, .channels = 3, .pixels = {}};
  for (int i = 0; i < 45; ++i) rgb.pixels.push_back(static_cast<uint8_t>(i * 5));
  EXPECT_EQ(ApplyScanEffects(rgb, ScanEffects{}, 1).pixels, rgb.pixels);
  ScanEffects gray;
  gray.grayscale = true;
  Image l = ApplyScanEffects(rgb, gray, 1);
  EXPECT_EQ(l.channels, 1);
  EXPECT_EQ(l.pixels.size(), 15u);
  ScanEffects all{.blur_passes = 2,
                  .noise_amplitude = 10,
                  .texture_amplitude = 0.05,
                  .texture_cell_px = 4,
                  .grayscale = false};
  Image noisy = ApplyScanEffects(rgb, all, 9);
  EXPECT_EQ(noisy.pixels.size(), rgb.pixels.size());
  EXPECT_EQ(noisy.pixels, ApplyScanEffects(rgb, all, 9).pixels);
  EXPECT_NE(noisy.pixels, ApplyScanEffects(rgb, all, 10).pixels);
}

// The private font configuration holds exactly the regular and bold upright faces of the seven
// families, as the Debian packages fonts-liberation2, fonts-dejavu-core and
// fonts-crosextra-carlito name their files, whatever else is installed.
TEST(SynthFonts, PrivateConfigurationHoldsTheRegularAndBoldFaces) {
  Result<std::shared_ptr<const FontSet>> fonts = FontSet::Get();
  ASSERT_TRUE(fonts.ok()) << fonts.status().ToString();
  std::set<std::string> names;
  for (const std::string& file : (*fonts)->files()) names.insert(BaseName(file));
  const std::set<std::string> expected = {
      "Carlito-Bold.ttf",         "Carlito-Regular.ttf",
      "DejaVuSans-Bold.ttf",      "DejaVuSans.ttf",
      "DejaVuSansMono-Bold.ttf",  "DejaVuSansMono.ttf",
      "DejaVuSerif-Bold.ttf",     "DejaVuSerif.ttf",
      "LiberationMono-Bold.ttf",  "LiberationMono-Regular.ttf",
      "LiberationSans-Bold.ttf",  "LiberationSans-Regular.ttf",
      "LiberationSerif-Bold.ttf", "LiberationSerif-Regular.ttf"};
  EXPECT_EQ(names, expected);
}

TEST(SynthRender, DocumentsDecodeAtTheirAnnouncedSize) {
  Result<std::shared_ptr<const FontSet>> fonts = FontSet::Get();
  ASSERT_TRUE(fonts.ok()) << fonts.status().ToString();
  TextEngine engine(*fonts);
  SynthOptions options;
  options.seed = 11;
  options.dpi = 60;
  for (uint64_t i = 0; i < 8; ++i) {
    Result<SynthDocument> doc = RenderDocument(engine, options, i);
    ASSERT_TRUE(doc.ok()) << doc.status().ToString();
    Result<Image> image = DecodeImage(doc->bytes);
    ASSERT_TRUE(image.ok()) << image.status().ToString();
    EXPECT_EQ(image->width, doc->width);
    EXPECT_EQ(image->height, doc->height);
    EXPECT_EQ(image->channels, doc->channels);
    if (doc->kind == DocKind::kInvoice) {
      // A4 (210 x 297 mm) or US Letter (8.5 x 11 in) at 60 dpi.
      const bool a4 = doc->width == 496 && doc->height == 702;
      const bool letter = doc->width == 510 && doc->height == 660;
      EXPECT_TRUE(a4 || letter) << doc->width << "x" << doc->height;
    } else {
      EXPECT_GE(doc->width, 137);  // a 58 mm strip at 60 dpi, plus the scanner bed
    }
    Result<SynthDocument> again = RenderDocument(engine, options, i);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again->bytes, doc->bytes) << "document " << i << " is not deterministic";
  }
}

// Worst case for space: 12 items (the generator's maximum) with the longest names, counts and
// prices, and the most address lines, on both paper sizes, in every layout.
TEST(SynthLayouts, EveryInvoiceFitsOnItsPage) {
  Result<std::shared_ptr<const FontSet>> fonts = FontSet::Get();
  ASSERT_TRUE(fonts.ok()) << fonts.status().ToString();
  TextEngine engine(*fonts);
  for (uint64_t i = 0; i < 10; ++i) {
    Rng content_rng = Rng::ForDocument(9, i);
    DocContent doc = GenerateContent(DocKind::kInvoice, content_rng);
    doc.items.assign(12, LineItem{"Training workshop (half day), on site", 40, 999999});
    doc.address_lines.insert(doc.address_lines.begin(), "Suite 40");
    doc.customer_address.insert(doc.customer_address.begin(), "Suite 40");
    doc.subtotal_cents = doc.total_cents = 479'999'520;
    for (int layout = 0; layout < kInvoiceLayoutCount; ++layout) {
      for (const PaperSize& paper : {kA4, kLetter}) {
        Canvas canvas(engine, 1, 1, 72, kWhite);
        Rng rng(i);
        const double bottom =
            DrawInvoice(canvas, doc, static_cast<InvoiceLayout>(layout), paper, rng);
        EXPECT_LE(bottom, paper.height_pt) << "layout " << layout << ", document " << i;
      }
    }
  }
}

Result<SynthSummary> RunSmall(const std::string& out, int threads, bool overwrite = false) {
  SynthOptions o;
  o.output = out;
  o.count = 6;
  o.seed = 5;
  o.dpi = 60;
  o.threads = threads;
  o.overwrite = overwrite;
  return Synthesize(o);
}

TEST(Synthesize, SameSeedGivesIdenticalBytesOnOneAndTwoThreads) {
  const std::string a = TempDir("t1"), b = TempDir("t2");
  ASSERT_TRUE(RunSmall(a, 1).ok());
  ASSERT_TRUE(RunSmall(b, 2).ok());
  Result<std::vector<std::string>> files = ListFilesRecursive(a);
  ASSERT_TRUE(files.ok());
  EXPECT_EQ(files->size(), 7u);  // 6 images + metadata.jsonl
  EXPECT_EQ(ListFilesRecursive(b).value(), *files);
  for (const std::string& f : *files) {
    EXPECT_EQ(ReadFile(JoinPath(a, f)).value(), ReadFile(JoinPath(b, f)).value()) << f;
  }
  RemoveAll(a).IgnoreError();
  RemoveAll(b).IgnoreError();
}

// Regression: without FontLock(), two workers drawing text crashed inside cairo's FreeType
// backend (cairo 1.16 closes faces of its shared pool that another thread is using). With the
// lock removed this test crashed in 2 of 10 runs; with it, in none of many.
TEST(Synthesize, FourThreadsDrawingTextConcurrently) {
  const std::string out = TempDir("stress");
  SynthOptions o;
  o.output = out;
  o.count = 64;
  o.seed = 17;
  o.dpi = 50;
  o.threads = 4;
  Result<SynthSummary> s = Synthesize(o);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->documents, 64u);
  RemoveAll(out).IgnoreError();
}

TEST(Synthesize, OutputDirectoryRules) {
  const std::string out = TempDir("dir");
  ASSERT_TRUE(RunSmall(out, 2).ok());
  EXPECT_FALSE(PathExists(out + ".partial-" + std::to_string(CurrentProcessId())));
  // A non-empty output needs --overwrite; a synth output may then be replaced.
  EXPECT_EQ(RunSmall(out, 2).status().code(), StatusCode::kAlreadyExists);
  EXPECT_TRUE(RunSmall(out, 2, true).ok());
  // --overwrite never deletes a directory that synth did not write.
  ASSERT_TRUE(WriteTextFile(JoinPath(out, "notes.txt"), "mine").ok());
  Result<SynthSummary> refused = RunSmall(out, 2, true);
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("notes.txt"), std::string_view::npos);
  EXPECT_TRUE(PathExists(JoinPath(out, "notes.txt")));
  RemoveAll(out).IgnoreError();
}

TEST(Synthesize, RejectsBadOptions) {
  SynthOptions o;
  o.output = TempDir("bad");
  o.count = 0;
  EXPECT_EQ(Synthesize(o).status().code(), StatusCode::kInvalidArgument);
  o.count = 1;
  o.dpi = 10;
  EXPECT_EQ(Synthesize(o).status().code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(ParseKindChoice("invoices").ok());
  EXPECT_EQ(ParseKindChoice("receipt").value(), KindChoice::kReceipt);
  EXPECT_FALSE(PathExists(o.output));
}

TEST(Synthesize, PackAcceptsTheOutputWithItsLabels) {
  const std::string src = TempDir("pack_src"), out = TempDir("pack_out");
  ASSERT_TRUE(RunSmall(src, 2).ok());
  PackOptions p;
  p.source = src;
  p.output = out;
  p.threads = 2;
  Result<PackSummary> packed = Pack(p);
  ASSERT_TRUE(packed.ok()) << packed.status().ToString();
  EXPECT_EQ(packed->samples, 6u);
  Result<std::unique_ptr<Dataset>> ds = Dataset::Open(out);
  ASSERT_TRUE(ds.ok()) << ds.status().ToString();
  EXPECT_EQ((*ds)->size(), 6u);
  RemoveAll(src).IgnoreError();
  RemoveAll(out).IgnoreError();
}

}  // namespace
}  // namespace docfeed::internal

// LeakSanitizer reads this hook in ASan builds (and nothing else does). fontconfig keeps the
// character sets and patterns of the fonts it scanned for the life of the process, partly behind
// offset-encoded pointers that LSan cannot follow, so they show as leaks at exit; nothing of
// docfeed's own is suppressed.
// Weak: the same hook is defined wherever fontconfig may be used (the CLI, the synth test, the
// PDF reader), and a program that links several of them takes one.
extern "C" __attribute__((weak)) const char* __lsan_default_suppressions() {
  return "leak:libfontconfig.so\n";
}
