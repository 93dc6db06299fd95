#include <gtest/gtest.h>

#include "base/fault_env.h"
#include "format/dataset.h"
#include "format/index.h"
#include "format/inspect.h"
#include "format/manifest.h"
#include "format/verify.h"
#include "pack/image_folder.h"
#include "pack/packer.h"
#include "pack/test_folder.h"
#include "testing/temp_dir.h"

namespace docfeed::internal {
namespace {

using testing::TempDir;

PackOptions Options(const std::string& src, const std::string& out) {
  PackOptions o;
  o.source = src;
  o.output = out;
  o.threads = 2;
  return o;
}

class PackTest : public ::testing::Test {
 protected:
  void SetUp() override { testing::MakeSmallFolder(src_); }
  // `n` 64x64 gradient PNGs more in the folder (about 12 KB each), without its metadata.jsonl.
  void AddGradientPngs(int n) {
    for (int i = 0; i < n; ++i) {
      testing::WriteBytes(JoinPath(src_, "many_" + std::to_string(100 + i) + ".png"),
                          *EncodePng(testing::Gradient(64, 64, 3, i), 0));
    }
    ASSERT_TRUE(RemoveAll(JoinPath(src_, "metadata.jsonl")).ok());
  }
  TempDir dir_;
  std::string src_ = dir_.Join("src");
  std::string out_ = dir_.Join("out");
};

TEST_F(PackTest, KeepRoundTripsBytesAndLabels) {
  Result<PackSummary> summary = Pack(Options(src_, out_));
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(summary->samples, 4u);
  EXPECT_EQ(summary->stored_codecs.at("png"), 2u);
  EXPECT_EQ(summary->stored_codecs.at("jpeg"), 1u);
  EXPECT_EQ(summary->stored_codecs.at("webp"), 1u);
  Result<ImageFolder> folder = ScanImageFolder(src_);
  ASSERT_TRUE(folder.ok());
  Result<std::unique_ptr<Dataset>> ds = Dataset::Open(out_);
  ASSERT_TRUE(ds.ok()) << ds.status().ToString();
  ASSERT_EQ((*ds)->size(), 4u);
  for (uint64_t i = 0; i < 4; ++i) {
    Result<std::vector<uint8_t>> bytes = (*ds)->ReadImage(i);
    ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
    EXPECT_EQ(*bytes, *ReadFile(JoinPath(src_, folder->samples[i].relative_path))) << i;
    Result<std::vector<Value>> labels = (*ds)->ReadLabels(i);
    ASSERT_TRUE(labels.ok()) << labels.status().ToString();
    EXPECT_EQ(*labels, folder->samples[i].values) << i;
  }
  IndexRecord r = (*ds)->record(0);
  EXPECT_EQ(r.width, 9u);
  EXPECT_EQ(r.height, 7u);
  EXPECT_EQ(r.channels, 3u);
  EXPECT_EQ((*ds)->record(1).channels, 1u);
  EXPECT_EQ((*ds)->manifest().label_column, "labels");
  EXPECT_EQ(r.label_length, 3u);
}

TEST_F(PackTest, ReencodingCodecsAndCompressionVerify) {
  for (const char* codec : {"png", "webp", "jpeg"}) {
    for (const char* compression : {"none", "zstd", "lz4_frame"}) {
      PackOptions o = Options(src_, out_);
      o.encode.codec = *ParseCodecChoice(codec);
      o.compression = compression;
      o.overwrite = true;
      Result<PackSummary> summary = Pack(o);
      ASSERT_TRUE(summary.ok()) << codec << " " << compression << ": "
                                << summary.status().ToString();
      EXPECT_EQ(summary->stored_codecs.at(codec), 4u);
      Result<std::unique_ptr<Dataset>> ds = Dataset::Open(out_);
      ASSERT_TRUE(ds.ok());
      for (uint64_t i = 0; i < 4; ++i) {
        Result<std::vector<uint8_t>> bytes = (*ds)->ReadImage(i);
        ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
        EXPECT_EQ(SniffCodec(*bytes), codec == std::string("png")    ? ImageCodec::kPng
                                      : codec == std::string("webp") ? ImageCodec::kWebp
                                                                     : ImageCodec::kJpeg);
      }
      EXPECT_TRUE(VerifyDataset(out_).ok());
    }
  }
}

TEST_F(PackTest, LosslessReencodeKeepsPixels) {
  for (const char* codec : {"png", "webp"}) {
    PackOptions o = Options(src_, out_);
    o.encode.codec = *ParseCodecChoice(codec);
    o.overwrite = true;
    ASSERT_TRUE(Pack(o).ok());
    Result<std::unique_ptr<Dataset>> ds = Dataset::Open(out_);
    ASSERT_TRUE(ds.ok());
    Result<ImageFolder> folder = ScanImageFolder(src_);
    for (uint64_t i = 0; i < 4; ++i) {
      Image want = *DecodeImage(*ReadFile(JoinPath(src_, folder->samples[i].relative_path)));
      Image got = *DecodeImage(*(*ds)->ReadImage(i));
      ASSERT_EQ(got.width, want.width);
      ASSERT_EQ(got.height, want.height);
      if (got.channels == want.channels) {
        EXPECT_EQ(got.pixels, want.pixels) << codec << " sample " << i;
      } else {
        // WebP stores grayscale as RGB: every channel must equal the gray value.
        ASSERT_EQ(want.channels, 1);
        ASSERT_EQ(got.channels, 3);
        for (size_t p = 0; p < want.pixels.size(); ++p) {
          ASSERT_EQ(got.pixels[p * 3], want.pixels[p]);
          ASSERT_EQ(got.pixels[p * 3 + 2], want.pixels[p]);
        }
      }
    }
  }
}

TEST_F(PackTest, RefusesToOverwriteAndLeavesOutputAlone) {
  ASSERT_TRUE(CreateDirectory(out_).ok());
  ASSERT_TRUE(WriteTextFile(JoinPath(out_, "keep.txt"), "mine").ok());
  Result<PackSummary> summary = Pack(Options(src_, out_));
  ASSERT_FALSE(summary.ok());
  EXPECT_EQ(summary.status().code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(*ReadTextFile(JoinPath(out_, "keep.txt")), "mine");
  // --overwrite replaces only a docfeed dataset or an empty directory (issue #14, item 8).
  PackOptions o = Options(src_, out_);
  o.overwrite = true;
  summary = Pack(o);
  EXPECT_EQ(summary.status().code(), StatusCode::kFailedPrecondition)
      << summary.status().ToString();
  EXPECT_EQ(*ReadTextFile(JoinPath(out_, "keep.txt")), "mine");
  ASSERT_TRUE(Env::Default()->RemoveFile(JoinPath(out_, "keep.txt")).ok());
  ASSERT_TRUE(Pack(o).ok());
  ASSERT_TRUE(Pack(o).ok());
  EXPECT_TRUE(VerifyDataset(out_).ok());
}

TEST_F(PackTest, OverwriteNeverDeletesTheSource) {
  for (const std::string& out : {src_, dir_.path()}) {
    PackOptions o = Options(src_, out);
    o.overwrite = true;
    Result<PackSummary> summary = Pack(o);
    ASSERT_FALSE(summary.ok()) << out;
    EXPECT_EQ(summary.status().code(), StatusCode::kInvalidArgument);
    EXPECT_TRUE(PathExists(JoinPath(src_, "metadata.jsonl")));
  }
}

TEST_F(PackTest, CorruptImageStopsNamingFileAndLineAndWritesNothing) {
  std::vector<uint8_t> png = *ReadFile(JoinPath(src_, "sub/b.png"));
  png.resize(png.size() / 2);
  testing::WriteBytes(JoinPath(src_, "sub/b.png"), png);
  Result<PackSummary> summary = Pack(Options(src_, out_));
  ASSERT_FALSE(summary.ok());
  std::string message(summary.status().message());
  EXPECT_NE(message.find("sub/b.png"), std::string::npos) << message;
  EXPECT_NE(message.find("line 2"), std::string::npos) << message;
  EXPECT_FALSE(PathExists(out_));
  Result<std::vector<std::string>> left = ListFilesRecursive(dir_.path());
  for (const std::string& f : *left) EXPECT_EQ(f.find("out."), std::string::npos) << f;
}

TEST_F(PackTest, SkipBadRecordsRejectsAndKeepsTheRest) {
  testing::WriteBytes(JoinPath(src_, "c.jpg"), {0xFF, 0xD8, 0xFF, 0xE0, 0x00});
  testing::WriteBytes(JoinPath(src_, "a.png"), {'G', 'I', 'F', '8', '9', 'a', 0, 0, 0, 0});
  PackOptions o = Options(src_, out_);
  o.skip_bad = true;
  Result<PackSummary> summary = Pack(o);
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(summary->samples, 2u);
  EXPECT_EQ(summary->rejected, 2u);
  std::string rejects = *ReadTextFile(JoinPath(out_, kRejectsFileName));
  EXPECT_NE(rejects.find("\"file_name\":\"c.jpg\""), std::string::npos) << rejects;
  EXPECT_NE(rejects.find("\"metadata_line\":3"), std::string::npos) << rejects;
  EXPECT_NE(rejects.find("GIF image file is truncated"), std::string::npos) << rejects;
  Result<std::unique_ptr<Dataset>> ds = Dataset::Open(out_);
  ASSERT_TRUE(ds.ok());
  EXPECT_EQ(std::get<int64_t>((*(*ds)->ReadLabels(0))[1]), 2);  // sub/b.png is now sample 0
  EXPECT_TRUE(VerifyDataset(out_).ok());
}

// The inputs Pillow converts (tests/data/images/modes/, whose Pillow pixels the codec tests
// check) pack: a CMYK JPEG and a 16-bit gray PNG as they are, a GIF as a PNG of frame 0. A JPEG
// with a bad Huffman code is packed and listed with its warning, or, with strict, refused: it
// stops the pack, or with skip_bad is a reject whose reason names the warning.
class PillowModesPackTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(CreateDirectory(src_).ok());
    std::string metadata;
    for (const char* name :
         {"cmyk_adobe.jpg", "gray16_mixed.png", "anim_trns.gif", "warn_huffman.jpg"}) {
      Result<std::vector<uint8_t>> bytes =
          ReadFile(std::string(DOCFEED_TEST_DATA_DIR) + "/images/modes/" + name);
      ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
      testing::WriteBytes(JoinPath(src_, name), *bytes);
      metadata += std::string(R"({"file_name": ")") + name + "\"}\n";
    }
    ASSERT_TRUE(WriteTextFile(JoinPath(src_, "metadata.jsonl"), metadata).ok());
  }
  TempDir dir_;
  std::string src_ = dir_.Join("src");
  std::string out_ = dir_.Join("out");
};

TEST_F(PillowModesPackTest, PacksAndReportsTheJpegWithWarnings) {
  Result<PackSummary> summary = Pack(Options(src_, out_));
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(summary->samples, 4u);
  EXPECT_EQ(summary->stored_codecs["jpeg"], 2u);
  EXPECT_EQ(summary->stored_codecs["png"], 2u);  // the 16-bit PNG, and the GIF's frame 0
  ASSERT_EQ(summary->decode_warnings.size(), 1u);
  EXPECT_EQ(summary->decode_warnings[0].file_name, "warn_huffman.jpg");
  EXPECT_GE(summary->decode_warnings[0].warnings, 1);
  EXPECT_NE(summary->decode_warnings[0].first.find("Corrupt JPEG data"), std::string::npos);
  EXPECT_TRUE(VerifyDataset(out_).ok());
}

TEST_F(PillowModesPackTest, StrictRefusesTheJpegWithWarnings) {
  PackOptions o = Options(src_, out_);
  o.strict = true;
  Result<PackSummary> summary = Pack(o);
  ASSERT_FALSE(summary.ok());
  const std::string message(summary.status().message());
  EXPECT_NE(message.find("warn_huffman.jpg"), std::string::npos) << message;
  EXPECT_NE(message.find("refused by strict"), std::string::npos) << message;
  EXPECT_FALSE(PathExists(out_));
  o.skip_bad = true;
  summary = Pack(o);
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(summary->samples, 3u);
  EXPECT_EQ(summary->rejected, 1u);
  EXPECT_TRUE(summary->decode_warnings.empty());
  const std::string rejects = *ReadTextFile(JoinPath(out_, kRejectsFileName));
  EXPECT_NE(rejects.find("\"file_name\":\"warn_huffman.jpg\""), std::string::npos) << rejects;
  EXPECT_NE(rejects.find("Corrupt JPEG data"), std::string::npos) << rejects;
}

// A 1x100000 page decodes, but the loader's default Donut preset cannot resize it (its
// thumbnail would be 0 pixels wide): it is refused at pack time, naming the
// file, instead of when a training run reaches it. Both ways round (portrait and landscape).
TEST_F(PackTest, AnImageTheDefaultPresetCannotResizeIsRefusedNamingIt) {
  for (const auto& [w, h] : {std::pair{1, 100000}, std::pair{100000, 1}}) {
    testing::WriteBytes(JoinPath(src_, "a.png"), *EncodePng(testing::Gradient(w, h, 1, 7), 0));
    Result<PackSummary> summary = Pack(Options(src_, out_));
    ASSERT_FALSE(summary.ok()) << w << "x" << h << " was packed";
    const std::string message = summary.status().ToString();
    EXPECT_NE(message.find("a.png"), std::string::npos) << message;
    EXPECT_NE(message.find("default Donut preset cannot process this " + std::to_string(w) + "x" +
                           std::to_string(h)),
              std::string::npos)
        << message;
    EXPECT_FALSE(PathExists(out_)) << message;
  }
}

TEST_F(PackTest, WithSkipBadAnImageTheDefaultPresetCannotResizeIsARejectNamingIt) {
  testing::WriteBytes(JoinPath(src_, "a.png"), *EncodePng(testing::Gradient(1, 100000, 3, 7), 0));
  PackOptions o = Options(src_, out_);
  o.skip_bad = true;
  Result<PackSummary> summary = Pack(o);
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(summary->samples, 3u);
  EXPECT_EQ(summary->rejected, 1u);
  std::string rejects = *ReadTextFile(JoinPath(out_, kRejectsFileName));
  EXPECT_NE(rejects.find("\"file_name\":\"a.png\""), std::string::npos) << rejects;
  EXPECT_NE(rejects.find("cannot process this 1x100000 image"), std::string::npos) << rejects;
  EXPECT_TRUE(VerifyDataset(out_).ok());
}

TEST_F(PackTest, SplitsIntoSeveralFilesAndBatches) {
  AddGradientPngs(40);
  PackOptions o = Options(src_, out_);
  o.max_file_bytes = 100'000;  // ~12 KB per image: several files
  Result<PackSummary> summary = Pack(o);
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(summary->samples, 44u);
  EXPECT_GT(summary->data_files.size(), 1u);
  Result<std::unique_ptr<Dataset>> ds = Dataset::Open(out_);
  ASSERT_TRUE(ds.ok());
  Result<ImageFolder> folder = ScanImageFolder(src_);
  for (uint64_t i = 0; i < (*ds)->size(); ++i) {
    EXPECT_EQ(*(*ds)->ReadImage(i), *ReadFile(JoinPath(src_, folder->samples[i].relative_path)));
  }
  EXPECT_GT((*ds)->record(43).file_index, 0u);
}

// A sink standing in for the s3:// upload: each data file moved to sent/K.arrow as it is
// taken; the order, the entries and the Flush after the last one recorded.
class MovingSink final : public DataFileSink {
 public:
  explicit MovingSink(std::string sent) : sent_(std::move(sent)) {}
  Status Take(const FileEntry& entry, const std::string& path) override {
    if (flushed_) return InternalError("Take after Flush");
    const std::string to = JoinPath(sent_, std::to_string(taken.size()) + ".arrow");
    taken.push_back(entry);
    return Env::Default()->Rename(path, to);
  }
  Status Flush() override {
    flushed_ = true;
    return Status::Ok();
  }
  std::vector<FileEntry> taken;
  bool flushed() const { return flushed_; }

 private:
  std::string sent_;
  bool flushed_ = false;
};

TEST_F(PackTest, ADataSinkTakesEveryDataFileAndTheDatasetVerifiesWithoutThem) {
  AddGradientPngs(20);
  const std::string sent = dir_.Join("sent");
  ASSERT_TRUE(Env::Default()->CreateDirectory(sent).ok());
  MovingSink sink(sent);
  PackOptions o = Options(src_, out_);
  o.max_file_bytes = 100'000;
  o.data_sink = &sink;
  Result<PackSummary> summary = Pack(o);
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_TRUE(sink.flushed());
  // Every data file went to the sink, in order, and none is left in (or renamed into) OUT.
  Result<std::string> text = Env::Default()->ReadTextFile(JoinPath(out_, kManifestFileName));
  ASSERT_TRUE(text.ok());
  Result<Manifest> manifest = DecodeManifest(*text, out_);
  ASSERT_TRUE(manifest.ok());
  ASSERT_GT(manifest->data_files.size(), 1u);
  ASSERT_EQ(sink.taken.size(), manifest->data_files.size());
  for (size_t i = 0; i < sink.taken.size(); ++i) {
    EXPECT_EQ(sink.taken[i].size_bytes, manifest->data_files[i].size_bytes) << i;
    EXPECT_EQ(sink.taken[i].xxh3, manifest->data_files[i].xxh3) << i;
    EXPECT_FALSE(PathExists(JoinPath(out_, manifest->data_files[i].name))) << i;
  }
  // The local verify needs the data files: it fails. Without them, against the entries the sink
  // was given (each file checked by the writer before it went), the dataset verifies; a file the
  // sink did not get is found and named.
  EXPECT_FALSE(VerifyDataset(out_).ok());
  Status verified = VerifyDatasetWithDataSent(out_, nullptr, sink.taken);
  EXPECT_TRUE(verified.ok()) << verified.ToString();
  std::vector<FileEntry> missing = sink.taken;
  missing.pop_back();
  verified = VerifyDatasetWithDataSent(out_, nullptr, missing);
  EXPECT_FALSE(verified.ok());
  EXPECT_NE(verified.ToString().find(manifest->data_files.back().name), std::string::npos)
      << verified.ToString();
}

// The writer checks each data file it hands to a sink by reading it back (VerifyDataFile): a
// read of the file failing there is an error saying so, naming the file, and the pack fails.
TEST_F(PackTest, AFileGivenToASinkIsCheckedFirst) {
  const std::string sent = dir_.Join("sent");
  ASSERT_TRUE(Env::Default()->CreateDirectory(sent).ok());
  FaultInjectionEnv env(Env::Default());
  auto pack = [&](const std::string& out) {
    MovingSink sink(sent);
    PackOptions o = Options(src_, out);
    o.threads = 1;
    o.data_sink = &sink;
    o.env = &env;
    return Pack(o).status();
  };
  ASSERT_TRUE(pack(dir_.Join("clean")).ok());
  const uint64_t reads = env.reads();
  bool checked = false;
  for (uint64_t j = 0; j < reads && !checked; ++j) {
    env.Reset();
    env.FailRead(j, FaultInjectionEnv::ReadFault::kShortRead);
    const Status s = pack(dir_.Join("out" + std::to_string(j)));
    if (env.fault_path().ends_with(".arrow.partial") &&
        s.ToString().find("checking a data file before it is sent") != std::string::npos) {
      EXPECT_NE(s.ToString().find(env.fault_path()), std::string::npos) << s.ToString();
      checked = true;
    }
  }
  EXPECT_TRUE(checked) << "no read of a data file by the check before it was sent";
}

// VerifyDataFile checks one data file against index records in memory as VerifyDataset checks
// it in the finished directory: a packed file passes; a flipped byte, a record pointing
// elsewhere or a record short of the file's samples is an error naming the file.
TEST_F(PackTest, VerifyDataFileChecksOneFileAgainstRecordsInMemory) {
  AddGradientPngs(20);
  PackOptions o = Options(src_, out_);
  o.max_file_bytes = 100'000;
  ASSERT_TRUE(Pack(o).ok());
  Result<std::string> text = Env::Default()->ReadTextFile(JoinPath(out_, kManifestFileName));
  ASSERT_TRUE(text.ok());
  Result<Manifest> manifest = DecodeManifest(*text, out_);
  ASSERT_TRUE(manifest.ok());
  ASSERT_GT(manifest->data_files.size(), 1u);
  Result<std::vector<uint8_t>> index_bytes = ReadFile(JoinPath(out_, kIndexFileName));
  ASSERT_TRUE(index_bytes.ok());
  Result<IndexView> index = IndexView::Open(*index_bytes, "index");
  ASSERT_TRUE(index.ok());
  std::vector<IndexRecord> records;
  for (uint64_t i = 0; i < index->size(); ++i) records.push_back(index->Get(i));
  const size_t f = 1;
  const std::string path = JoinPath(out_, manifest->data_files[f].name);
  Status checked = VerifyDataFile(*manifest, f, path, records);
  EXPECT_TRUE(checked.ok()) << checked.ToString();
  // The file's last sample pointing at another row.
  const Region& last = manifest->data_files[f].regions[manifest->data_files[f].regions.size() - 2];
  std::vector<IndexRecord> moved = records;
  moved[last.first_sample + last.num_rows - 1].row += 1;
  checked = VerifyDataFile(*manifest, f, path, moved);
  EXPECT_FALSE(checked.ok());
  EXPECT_NE(checked.ToString().find("index entry points elsewhere"), std::string::npos)
      << checked.ToString();
  // Fewer records than the file's samples.
  const auto first_of_last_batch = static_cast<ptrdiff_t>(last.first_sample);
  std::vector<IndexRecord> short_records(records.begin(), records.begin() + first_of_last_batch);
  checked = VerifyDataFile(*manifest, f, path, short_records);
  EXPECT_FALSE(checked.ok());
  EXPECT_NE(checked.ToString().find(path), std::string::npos) << checked.ToString();
  // One flipped byte in the file.
  std::vector<uint8_t> bytes = *ReadFile(path);
  bytes[bytes.size() / 2] ^= 1;
  testing::WriteBytes(path, bytes);
  checked = VerifyDataFile(*manifest, f, path, records);
  EXPECT_FALSE(checked.ok());
  EXPECT_NE(checked.ToString().find(path), std::string::npos) << checked.ToString();
}

TEST_F(PackTest, InspectReportsGeometryAndLabels) {
  ASSERT_TRUE(Pack(Options(src_, out_)).ok());
  Result<DatasetStats> stats = InspectDataset(out_);
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_EQ(stats->manifest.num_samples, 4u);
  EXPECT_EQ(stats->width.min, 4);
  EXPECT_EQ(stats->width.max, 16);
  EXPECT_EQ(stats->label_length.count, 2u);  // labels [0,5,2] and [7]; [] and null count as none
  EXPECT_EQ(stats->label_length.max, 3);
  EXPECT_EQ(stats->longest_label_sample, 0u);
  EXPECT_EQ(stats->arrow_columns[0].second, "struct<bytes: binary, path: string>");
  EXPECT_EQ(stats->arrow_columns[3].second, "list<item: int64>");
}

}  // namespace
}  // namespace docfeed::internal
