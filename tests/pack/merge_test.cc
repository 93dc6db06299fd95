// pack --part I/N and merge (docfeed/merge.h): N parts merged give the dataset one pack writes
// (same ids, order, image bytes, column values, index geometry and hashes, rejects, totals) for
// N in {1, 2, 3, 7}, over tests/data/sample-docs and over a folder whose PDF and multi-page TIFF
// pages and a bad image fall across part boundaries; mismatched, missing, duplicated and damaged
// parts are refused naming the part and the field; reruns keep complete parts and merges; a merge
// crashed at every write leaves no output or the complete one; parts on "another file system"
// (an Env without links) are copied. tests/python/test_pack_parts.py compares the rows with
// pyarrow and datasets.
#include "docfeed/merge.h"

#include <gtest/gtest.h>
#include <sentencepiece_trainer.h>

#include <string>
#include <vector>

#include "base/fault_env.h"
#include "base/file.h"
#include "format/dataset.h"
#include "format/verify.h"
#include "pack/packer.h"
#include "pack/test_folder.h"
#include "testing/fault_sweep.h"
#include "testing/temp_dir.h"

namespace docfeed::internal {
namespace {

using testing::Mentions;
using testing::TempDir;

std::string Data(const std::string& name) {
  return std::string(DOCFEED_TEST_DATA_DIR) + "/" + name;
}

// An image folder with documents: a small image set, a 3-page PDF, a 3-page TIFF and a file that
// is not an image (a bad sample, rejected with skip_bad), in a metadata.jsonl order that puts
// documents between images.
void MakeDocumentFolder(const std::string& root) {
  testing::MakeSmallFolder(root);
  testing::WriteBytes(JoinPath(root, "doc.pdf"), *ReadFile(Data("pdf/invoice.pdf")));
  testing::WriteBytes(JoinPath(root, "scan.tif"), *ReadFile(Data("tiff/cases/multipage_lzw.tif")));
  ASSERT_TRUE(WriteTextFile(JoinPath(root, "bad.png"), "not an image").ok());
  ASSERT_TRUE(WriteTextFile(JoinPath(root, "metadata.jsonl"),
                            R"({"file_name": "a.png", "n": 1})"
                            "\n"
                            R"({"file_name": "doc.pdf", "n": 2})"
                            "\n"
                            R"({"file_name": "sub/b.png", "n": 3})"
                            "\n"
                            R"({"file_name": "bad.png", "n": 4})"
                            "\n"
                            R"({"file_name": "scan.tif", "n": 5})"
                            "\n"
                            R"({"file_name": "c.jpg", "n": 6})"
                            "\n"
                            R"({"file_name": "d.webp", "n": 7})"
                            "\n")
                  .ok());
}

class MergeTest : public ::testing::Test {
 protected:
  PackOptions Options(const std::string& source, const std::string& output) const {
    PackOptions o;
    o.source = source;
    o.output = output;
    o.threads = 2;
    o.documents.dpi = 40;
    o.documents.pages = PackPages::kAll;
    o.skip_bad = true;
    return o;
  }

  // Packs `base` as N parts into dir/NAME-N/I; returns the part directories.
  std::vector<std::string> PackParts(const PackOptions& base, uint32_t n,
                                     const std::string& name = "parts") {
    std::vector<std::string> parts;
    for (uint32_t i = 0; i < n; ++i) {
      PackOptions o = base;
      o.output = dir_.Join(name + "-" + std::to_string(n) + "/" + std::to_string(i));
      o.part = {i, n};
      Result<PackSummary> s = Pack(o);
      EXPECT_TRUE(s.ok()) << "part " << i << "/" << n << ": " << s.status().ToString();
      parts.push_back(o.output);
    }
    return parts;
  }

  static Result<MergeSummary> MergeInto(const std::vector<std::string>& parts,
                                        const std::string& out, Env* env = nullptr) {
    MergeOptions o;
    o.parts = parts;
    o.output = out;
    o.env = env;
    return Merge(o);
  }

  // `merged` holds what `whole` holds, sample for sample, and verifies.
  static void ExpectSameDataset(const std::string& whole, const std::string& merged) {
    ASSERT_TRUE(VerifyDataset(merged).ok()) << VerifyDataset(merged).ToString();
    auto a = Dataset::Open(whole).value();
    auto b = Dataset::Open(merged).value();
    const Manifest& ma = a->manifest();
    const Manifest& mb = b->manifest();
    ASSERT_EQ(a->size(), b->size());
    EXPECT_EQ(ma.num_samples, mb.num_samples);
    EXPECT_EQ(ma.stored_codecs, mb.stored_codecs);
    EXPECT_EQ(ma.source_bytes, mb.source_bytes);
    EXPECT_EQ(ma.stored_image_bytes, mb.stored_image_bytes);
    EXPECT_EQ(ma.rejected, mb.rejected);
    EXPECT_EQ(ma.label_column, mb.label_column);
    EXPECT_TRUE(ma.pdf == mb.pdf);
    ASSERT_EQ(ma.columns.size(), mb.columns.size());
    for (size_t c = 0; c < ma.columns.size(); ++c)
      EXPECT_EQ(ma.columns[c].name, mb.columns[c].name);
    for (uint64_t id = 0; id < a->size(); ++id) {
      const IndexRecord x = a->record(id);
      const IndexRecord y = b->record(id);
      EXPECT_EQ(x.image_hash, y.image_hash) << "sample " << id;
      EXPECT_EQ(x.label_hash, y.label_hash) << "sample " << id;
      EXPECT_EQ(x.codec, y.codec) << "sample " << id;
      EXPECT_EQ(x.channels, y.channels) << "sample " << id;
      EXPECT_EQ(x.flags, y.flags) << "sample " << id;
      EXPECT_EQ(x.width, y.width) << "sample " << id;
      EXPECT_EQ(x.height, y.height) << "sample " << id;
      EXPECT_EQ(x.label_length, y.label_length) << "sample " << id;
      EXPECT_EQ(*a->ReadImage(id), *b->ReadImage(id)) << "sample " << id;
      EXPECT_TRUE(*a->ReadLabels(id) == *b->ReadLabels(id)) << "sample " << id;
    }
    const std::string rejects_a = JoinPath(whole, kRejectsFileName);
    const std::string rejects_b = JoinPath(merged, kRejectsFileName);
    ASSERT_EQ(PathExists(rejects_a), PathExists(rejects_b));
    if (PathExists(rejects_a)) {
      EXPECT_EQ(*ReadFile(rejects_a), *ReadFile(rejects_b));
    }
  }

  void ExpectPartsMergeToWhole(const PackOptions& base, const std::vector<uint32_t>& counts) {
    PackOptions whole = base;
    whole.output = dir_.Join("whole");
    ASSERT_TRUE(Pack(whole).ok());
    for (uint32_t n : counts) {
      SCOPED_TRACE("N = " + std::to_string(n));
      const std::string out = dir_.Join("merged-" + std::to_string(n));
      Result<MergeSummary> s = MergeInto(PackParts(base, n), out);
      ASSERT_TRUE(s.ok()) << s.status().ToString();
      EXPECT_EQ(s->parts, n);
      EXPECT_EQ(s->copied_files, 0u);  // one file system: every data file linked
      EXPECT_EQ(s->linked_files, s->data_files);
      ExpectSameDataset(whole.output, out);
    }
  }

  TempDir dir_;
};

TEST_F(MergeTest, SampleDocsPartsMergeToTheWholePack) {
  PackOptions base = Options(Data("sample-docs"), "");
  base.max_file_bytes = 3'000'000;  // several data files per part too
  ExpectPartsMergeToWhole(base, {1, 2, 3, 7});
}

TEST_F(MergeTest, DocumentPagesAndRejectsSplitAcrossParts) {
  const std::string src = dir_.Join("src");
  MakeDocumentFolder(src);
  // Listed: 4 images, the PDF's pages, the TIFF's pages and the bad file; N = 7 cuts through
  // the documents.
  ExpectPartsMergeToWhole(Options(src, ""), {2, 3, 7});
  auto merged = Dataset::Open(dir_.Join("merged-7")).value();
  EXPECT_EQ(merged->manifest().rejected, 1u);
}

// Donut labels: every part collects the new tokens over the whole listing, so the labels and
// the saved tokenizer of the merge are those of the whole pack.
TEST_F(MergeTest, LabelsAndTokenizerMatchTheWholePack) {
  const std::string tok = dir_.Join("tok");
  ASSERT_TRUE(CreateDirectory(tok).ok());
  auto trained = sentencepiece::SentencePieceTrainer::Train(
      "--input=" + Data("sample-docs/metadata.jsonl") + " --model_prefix=" + tok +
      "/m --vocab_size=300 --model_type=bpe --minloglevel=2");
  ASSERT_TRUE(trained.ok()) << trained.ToString();
  ASSERT_TRUE(Rename(tok + "/m.model", JoinPath(tok, kSentencePieceModelName)).ok());
  PackOptions base = Options(Data("sample-docs"), "");
  base.labels.tokenizer_dir = tok;
  base.labels.max_length = 64;
  ExpectPartsMergeToWhole(base, {3});
  for (const char* name : {"tokenizer/added_tokens.json", "tokenizer/sentencepiece.bpe.model"}) {
    EXPECT_EQ(*ReadFile(dir_.Join(std::string("whole/") + name)),
              *ReadFile(dir_.Join(std::string("merged-3/") + name)))
        << name;
  }
  // A part whose labels were made with another max_length does not belong.
  PackOptions other = base;
  other.labels.max_length = 32;
  other.part = {2, 3};
  other.output = dir_.Join("other-2");
  ASSERT_TRUE(Pack(other).ok());
  Result<MergeSummary> s =
      MergeInto({dir_.Join("parts-3/0"), dir_.Join("parts-3/1"), other.output}, dir_.Join("out"));
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(Mentions(s.status(), "settings.labels")) << s.status().ToString();
}

// Preprocessed pages in LZ4 bodies of one row per batch (--preprocess donut --keep-original):
// the parts merge to the whole pack, and a part of another size does not belong.
TEST_F(MergeTest, PreprocessedPartsMergeAndAnotherSizeIsRefused) {
  const std::string src = dir_.Join("src");
  MakeDocumentFolder(src);
  PackOptions base = Options(src, "");
  base.compression = kPreprocessedDefaultCompression;
  base.encode.preprocess = {kPreprocessDonut, 40, 32, false};
  base.encode.keep_original = true;
  ExpectPartsMergeToWhole(base, {3});
  PackOptions other = base;
  other.encode.preprocess.height = 48;
  other.part = {1, 3};
  other.output = dir_.Join("other-1");
  ASSERT_TRUE(Pack(other).ok());
  Result<MergeSummary> s =
      MergeInto({dir_.Join("parts-3/0"), other.output, dir_.Join("parts-3/2")}, dir_.Join("out"));
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(Mentions(s.status(), other.output) && Mentions(s.status(), "settings.preprocess"))
      << s.status().ToString();
}

TEST_F(MergeTest, PartsOfOtherSettingsOrSourcesAreRefusedNamingPartAndField) {
  const std::string src = dir_.Join("src");
  testing::MakeSmallFolder(src);
  std::vector<std::string> parts = PackParts(Options(src, ""), 2);
  PackOptions png = Options(src, dir_.Join("png-1"));
  png.encode.codec = CodecChoice::kPng;
  png.part = {1, 2};
  ASSERT_TRUE(Pack(png).ok());
  Result<MergeSummary> s = MergeInto({parts[0], png.output}, dir_.Join("out"));
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(Mentions(s.status(), png.output) && Mentions(s.status(), "codec"))
      << s.status().ToString();

  PackOptions strict = Options(src, dir_.Join("strict-1"));
  strict.strict = true;
  strict.part = {1, 2};
  ASSERT_TRUE(Pack(strict).ok());
  s = MergeInto({parts[0], strict.output}, dir_.Join("out"));
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(Mentions(s.status(), "settings.strict")) << s.status().ToString();

  const std::string other = dir_.Join("other");
  testing::MakeSmallFolder(other);
  ASSERT_TRUE(WriteTextFile(JoinPath(other, "metadata.jsonl"), R"({"file_name": "a.png", "n": 1})"
                                                               "\n"
                                                               R"({"file_name": "c.jpg", "n": 3})"
                                                               "\n")
                  .ok());
  PackOptions o = Options(other, dir_.Join("other-1"));
  o.part = {1, 2};
  ASSERT_TRUE(Pack(o).ok());
  s = MergeInto({parts[0], o.output}, dir_.Join("out"));
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(Mentions(s.status(), o.output) && Mentions(s.status(), "source"))
      << s.status().ToString();

  std::vector<std::string> three = PackParts(Options(src, ""), 3);
  s = MergeInto({parts[0], three[1], three[2]}, dir_.Join("out"));
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(Mentions(s.status(), "count")) << s.status().ToString();
  EXPECT_FALSE(PathExists(dir_.Join("out")));
}

TEST_F(MergeTest, MissingDuplicatedAndNonPartsAreRefused) {
  const std::string src = dir_.Join("src");
  testing::MakeSmallFolder(src);
  std::vector<std::string> parts = PackParts(Options(src, ""), 3);
  Result<MergeSummary> s = MergeInto({parts[0], parts[2]}, dir_.Join("out"));
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(Mentions(s.status(), "part 1/3 is missing")) << s.status().ToString();
  s = MergeInto({parts[0], parts[1], parts[1], parts[2]}, dir_.Join("out"));
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(Mentions(s.status(), "given twice")) << s.status().ToString();
  s = MergeInto({parts[0], parts[1], dir_.Join("nowhere")}, dir_.Join("out"));
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(Mentions(s.status(), dir_.Join("nowhere"))) << s.status().ToString();
  PackOptions whole = Options(src, dir_.Join("whole"));
  ASSERT_TRUE(Pack(whole).ok());
  s = MergeInto({whole.output}, dir_.Join("out"));
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(Mentions(s.status(), "not a part")) << s.status().ToString();
  EXPECT_FALSE(PathExists(dir_.Join("out")));
  // More parts than samples would leave a part empty.
  PackOptions too_many = Options(src, dir_.Join("many"));
  too_many.part = {0, 5};
  EXPECT_FALSE(Pack(too_many).ok());
}

// A dataset holds at least one sample: a part whose slice holds only rejects cannot be written,
// and the error says to use fewer parts (the whole pack, with other samples, succeeds).
TEST_F(MergeTest, APartOfOnlyRejectsSaysToUseFewerParts) {
  const std::string src = dir_.Join("src");
  MakeDocumentFolder(src);
  ASSERT_TRUE(WriteTextFile(JoinPath(src, "bad2.png"), "not an image either").ok());
  ASSERT_TRUE(WriteTextFile(JoinPath(src, "metadata.jsonl"), R"({"file_name": "a.png", "n": 1})"
                                                             "\n"
                                                             R"({"file_name": "bad.png", "n": 2})"
                                                             "\n"
                                                             R"({"file_name": "bad2.png", "n": 3})"
                                                             "\n"
                                                             R"({"file_name": "c.jpg", "n": 4})"
                                                             "\n")
                  .ok());
  PackOptions o = Options(src, dir_.Join("whole"));
  ASSERT_TRUE(Pack(o).ok());
  o.output = dir_.Join("part");
  o.part = {1, 3};  // entries 1 and 2: both bad
  Result<PackSummary> s = Pack(o);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(Mentions(s.status(), "part 1/3") && Mentions(s.status(), "use fewer parts"))
      << s.status().ToString();
}

TEST_F(MergeTest, ADamagedPartIsRefusedNamingIt) {
  const std::string src = dir_.Join("src");
  testing::MakeSmallFolder(src);
  std::vector<std::string> parts = PackParts(Options(src, ""), 2);
  const std::string data = JoinPath(parts[1], "data-00000-of-00001.arrow");
  std::vector<uint8_t> bytes = *ReadFile(data);
  bytes[bytes.size() / 2] ^= 0x40;  // inside the image bytes: only a checksum sees it
  ASSERT_TRUE(WriteFile(data, bytes).ok());
  Result<MergeSummary> s = MergeInto(parts, dir_.Join("out"));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kCorruption);
  EXPECT_TRUE(Mentions(s.status(), "part " + parts[1])) << s.status().ToString();
  EXPECT_FALSE(PathExists(dir_.Join("out")));
  // A damaged index is named too.
  std::vector<std::string> again = PackParts(Options(src, ""), 2, "again");
  const std::string index = JoinPath(again[0], kIndexFileName);
  bytes = *ReadFile(index);
  bytes[40] ^= 1;
  ASSERT_TRUE(WriteFile(index, bytes).ok());
  s = MergeInto(again, dir_.Join("out"));
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(Mentions(s.status(), again[0])) << s.status().ToString();
}

TEST_F(MergeTest, RerunsKeepCompletePartsAndMerges) {
  const std::string src = dir_.Join("src");
  testing::MakeSmallFolder(src);
  PackOptions base = Options(src, "");
  std::vector<std::string> parts = PackParts(base, 2);
  PackOptions again = base;
  again.output = parts[1];
  again.part = {1, 2};
  Result<PackSummary> p = Pack(again);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_TRUE(p->already_complete);
  EXPECT_EQ(p->samples, 2u);
  // Another part, or other settings, at that output: refused, never overwritten silently.
  again.part = {0, 2};
  p = Pack(again);
  ASSERT_FALSE(p.ok());
  EXPECT_TRUE(Mentions(p.status(), "index")) << p.status().ToString();
  again.part = {1, 2};
  again.encode.codec = CodecChoice::kPng;
  EXPECT_FALSE(Pack(again).ok());

  const std::string out = dir_.Join("out");
  ASSERT_TRUE(MergeInto(parts, out).ok());
  Result<MergeSummary> m = MergeInto(parts, out);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_TRUE(m->already_complete);
  EXPECT_EQ(m->samples, 4u);
  // Another set of parts at that output: refused.
  std::vector<std::string> other = PackParts(base, 1);
  EXPECT_EQ(MergeInto(other, out).status().code(), StatusCode::kAlreadyExists);
}

// An Env whose file system has no links (the parts on another file system): merge copies.
class NoLinkEnv : public FaultInjectionEnv {
 public:
  NoLinkEnv() : FaultInjectionEnv(Env::Default()) {}
  Status LinkFile(const std::string& from, const std::string& to) override {
    return UnsupportedError("cannot link " + from + " to " + to + ": Invalid cross-device link");
  }
};

TEST_F(MergeTest, PartsOnAnotherFileSystemAreCopied) {
  const std::string src = dir_.Join("src");
  MakeDocumentFolder(src);
  PackOptions whole = Options(src, dir_.Join("whole"));
  ASSERT_TRUE(Pack(whole).ok());
  NoLinkEnv env;
  const std::string out = dir_.Join("out");
  Result<MergeSummary> s = MergeInto(PackParts(Options(src, ""), 3), out, &env);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->linked_files, 0u);
  EXPECT_EQ(s->copied_files, s->data_files);
  ExpectSameDataset(whole.output, out);
}

TEST_F(MergeTest, AMergeCrashedAtAnyWriteLeavesNoOutputOrTheCompleteOne) {
  const std::string src = dir_.Join("src");
  testing::MakeSmallFolder(src);
  std::vector<std::string> parts = PackParts(Options(src, ""), 3);
  FaultInjectionEnv env(Env::Default());
  const std::string out = dir_.Join("out");
  const testing::IoCounts io =
      testing::CountIo(env, [&] { return MergeInto(parts, out, &env).status(); });
  ASSERT_GT(io.writes, 5u);
  ASSERT_TRUE(RemoveAll(out).ok());
  for (uint64_t i = 0; i < io.writes; ++i) {
    const std::string where = "crash at write " + std::to_string(i);
    env.Reset();
    env.CrashAfterWrites(i);
    const bool ok = MergeInto(parts, out, &env).ok();
    if (PathExists(out)) {
      EXPECT_TRUE(VerifyDataset(out).ok()) << where;
    } else {
      EXPECT_FALSE(ok) << where;
    }
    for (const std::string& name : testing::Entries(dir_.path())) {
      // A work directory killed before its manifest is one datasets.load_from_disk refuses.
      if (name.find("out.partial-") != std::string::npos &&
          !testing::HasManifest(dir_.Join(name))) {
        EXPECT_FALSE(PathExists(JoinPath(dir_.Join(name), "state.json"))) << where << ": " << name;
      }
    }
    // The rerun cleans the crashed run's leftovers and gives the merge (or keeps it).
    env.Reset();
    Result<MergeSummary> rerun = MergeInto(parts, out, &env);
    ASSERT_TRUE(rerun.ok()) << where << ": " << rerun.status().ToString();
    EXPECT_TRUE(VerifyDataset(out).ok()) << where;
    for (const std::string& name : testing::Entries(dir_.path())) {
      EXPECT_EQ(name.find("out.partial-"), std::string::npos) << where << ": " << name;
    }
    ASSERT_TRUE(RemoveAll(out).ok());
  }
  // The parts are untouched by all of it.
  for (const std::string& p : parts) EXPECT_TRUE(VerifyDataset(p).ok()) << p;
}

}  // namespace
}  // namespace docfeed::internal
