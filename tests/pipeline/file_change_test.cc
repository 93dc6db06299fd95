// A data file truncated or rewritten in place while a Dataset or Loader has it open (issue #14,
// item 1): every read gives the right bytes or an error naming the file and sample, never a
// signal. Before the positioned-read path these tests died of SIGBUS (the data files were
// mapped, and touching a mapped page past the new end of the file raises it). The expected bytes
// come from the source pages and from a Dataset opened before the change.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "base/file.h"
#include "codec/codec.h"
#include "format/dataset.h"
#include "pack/packer.h"
#include "pack/test_folder.h"
#include "pipeline/loader.h"
#include "testing/temp_dir.h"

namespace docfeed::internal {
namespace {

constexpr int kPages = 24;

// kPages PNG pages of one size (pixels differ with `seed`) with an int column.
void WriteFolder(const std::string& root, int seed) {
  ASSERT_TRUE(CreateDirectory(root).ok());
  std::string meta;
  for (int i = 0; i < kPages; ++i) {
    const std::string name = "p" + std::to_string(10 + i) + ".png";
    testing::WriteBytes(JoinPath(root, name),
                        *EncodePng(testing::Gradient(40, 30, 3, seed * 100 + i)));
    meta += R"({"file_name": ")" + name + R"(", "n": )" + std::to_string(10 + i) + "}\n";
  }
  ASSERT_TRUE(WriteTextFile(JoinPath(root, "metadata.jsonl"), meta).ok());
}

// Packs a folder of seed `seed`; `preprocessed` stores PPM pages, whose size does not depend
// on the pixels (so two such datasets have data files of the same size).
std::string PackFolder(const testing::TempDir& dir, const std::string& name, int seed,
                       const std::string& compression, bool preprocessed) {
  PackOptions o;
  o.source = dir.Join(name + "-src");
  o.output = dir.Join(name);
  o.threads = 1;
  o.compression = compression;
  if (preprocessed) o.encode.preprocess = {kPreprocessDonut, 24, 20, false};
  WriteFolder(o.source, seed);
  const Result<PackSummary> packed = Pack(o);
  EXPECT_TRUE(packed.ok()) << packed.status().ToString();
  return o.output;
}

std::string DataFile(const Dataset& ds) {
  return JoinPath(ds.dir(), ds.manifest().data_files[0].name);
}

bool Names(const Status& s, const std::string& path) {
  return s.ToString().find(path) != std::string::npos;
}

// Writes `bytes` over `path` in place as cp does (O_TRUNC on the same inode, then write).
void RewriteInPlace(const std::string& path, const std::vector<uint8_t>& bytes) {
  ASSERT_TRUE(Env::Default()->WriteFile(path, bytes).ok());
}

class FileChangeTest : public ::testing::TestWithParam<std::string> {};

INSTANTIATE_TEST_SUITE_P(Bodies, FileChangeTest, ::testing::Values("none", "zstd"));

// Truncated to half: samples before the cut still read right, the others fail naming the file.
TEST_P(FileChangeTest, TruncatedDataFileGivesErrorsNotSignals) {
  testing::TempDir dir;
  const std::string out = PackFolder(dir, "a", 1, GetParam(), false);
  Result<std::unique_ptr<Dataset>> ds = Dataset::Open(out);
  ASSERT_TRUE(ds.ok()) << ds.status().ToString();
  std::vector<std::vector<uint8_t>> before;
  for (uint64_t id = 0; id < (*ds)->size(); ++id) before.push_back(*(*ds)->ReadImage(id));
  const std::string file = DataFile(**ds);
  std::filesystem::resize_file(file, std::filesystem::file_size(file) / 2);
  int failed = 0;
  ReadScratch scratch;
  for (uint64_t id = 0; id < (*ds)->size(); ++id) {
    for (bool labels : {false, true}) {
      Result<SampleBytes> s = (*ds)->ReadSample(id, labels, &scratch);
      if (s.ok()) {
        EXPECT_EQ(std::vector<uint8_t>(s->image.begin(), s->image.end()), before[id]) << id;
        continue;
      }
      ++failed;
      EXPECT_TRUE(Names(s.status(), file)) << s.status().ToString();
      EXPECT_TRUE(Names(s.status(), "sample " + std::to_string(id))) << s.status().ToString();
    }
  }
  EXPECT_GT(failed, 0);
  // The change is seen by a new Open too, before any sample is read.
  Result<std::unique_ptr<Dataset>> again = Dataset::Open(out);
  ASSERT_FALSE(again.ok());
  EXPECT_TRUE(Names(again.status(), file)) << again.status().ToString();
}

// `cp other.arrow data-...arrow`: same size (PPM pages of one geometry, other pixels) and
// shorter (a dataset of fewer pages). The per-sample checksums catch every changed sample.
TEST_P(FileChangeTest, DataFileRewrittenInPlaceIsDetected) {
  testing::TempDir dir;
  const std::string a = PackFolder(dir, "a", 1, GetParam(), true);
  const std::string b = PackFolder(dir, "b", 2, GetParam(), true);
  Result<std::unique_ptr<Dataset>> ds = Dataset::Open(a);
  Result<std::unique_ptr<Dataset>> other = Dataset::Open(b);
  ASSERT_TRUE(ds.ok() && other.ok());
  const std::string file = DataFile(**ds);
  const std::vector<uint8_t> other_bytes = *ReadFile(DataFile(**other));
  ASSERT_EQ(other_bytes.size(), std::filesystem::file_size(file));  // the same-size case
  RewriteInPlace(file, other_bytes);
  for (uint64_t id = 0; id < (*ds)->size(); ++id) {
    for (bool labels : {false, true}) {
      Result<SampleBytes> s = (*ds)->ReadSample(id, labels);
      ASSERT_FALSE(s.ok()) << "sample " << id << " served the other dataset's bytes";
      EXPECT_EQ(s.status().code(), StatusCode::kCorruption) << s.status().ToString();
      EXPECT_TRUE(Names(s.status(), file)) << s.status().ToString();
    }
  }
  RewriteInPlace(file, std::vector<uint8_t>(other_bytes.begin(),
                                            other_bytes.begin() + other_bytes.size() / 3));
  for (uint64_t id = 0; id < (*ds)->size(); ++id) {
    Result<SampleBytes> s = (*ds)->ReadSample(id, id % 2 == 0);
    ASSERT_FALSE(s.ok()) << id;
    EXPECT_TRUE(Names(s.status(), file)) << s.status().ToString();
  }
}

LoaderOptions SlowLoader(const std::string& path, BadSamplePolicy on_error) {
  LoaderOptions o;
  o.path = path;
  o.preset.donut.height = 32;
  o.preset.donut.width = 24;
  o.batch_size = 1;
  o.num_threads = 1;
  o.prefetch = 1;
  o.max_held = 1;
  o.shuffle = false;
  o.remainder = Remainder::kPartial;
  o.on_error = on_error;
  return o;
}

// The loader reads ahead at most prefetch + max_held batches, so most of the epoch is read after
// the truncation: with kError one Next() fails naming the file, with kSkip the bad samples are
// counted and named in stats; neither dies of a signal.
TEST_P(FileChangeTest, LoaderOverATruncatedFileFailsOrSkips) {
  testing::TempDir dir;
  const std::string out = PackFolder(dir, "a", 1, GetParam(), false);
  const std::string file = JoinPath(out, (*Dataset::Open(out))->manifest().data_files[0].name);
  const std::vector<uint8_t> original = *ReadFile(file);
  for (BadSamplePolicy policy : {BadSamplePolicy::kError, BadSamplePolicy::kSkip}) {
    RewriteInPlace(file, original);
    Result<std::unique_ptr<Loader>> loader = Loader::Create(SlowLoader(out, policy));
    ASSERT_TRUE(loader.ok()) << loader.status().ToString();
    ASSERT_TRUE((*loader)->Next().ok());
    std::filesystem::resize_file(file, original.size() / 4);
    Status error;
    int batches = 1;
    for (int i = 0; i < 2 * kPages && error.ok(); ++i) {
      Result<Batch> b = (*loader)->Next();
      if (!b.ok())
        error = b.status();
      else if (!b->valid())
        break;
      else
        ++batches;
    }
    if (policy == BadSamplePolicy::kError) {
      ASSERT_FALSE(error.ok()) << "every batch of the truncated file was served";
      EXPECT_TRUE(Names(error, file)) << error.ToString();
    } else if (!error.ok()) {
      // Every replacement failed too (a compressed file holds the whole epoch in one batch):
      // the loader stops, naming the file, instead of serving nothing forever.
      EXPECT_EQ(error.code(), StatusCode::kResourceExhausted) << error.ToString();
      EXPECT_TRUE(Names(error, file)) << error.ToString();
    } else {
      const LoaderStats stats = (*loader)->stats();
      EXPECT_GT(stats.bad_samples, 0u);
      ASSERT_FALSE(stats.bad_sample_errors.empty());
      EXPECT_TRUE(stats.bad_sample_errors[0].find(file) != std::string::npos)
          << stats.bad_sample_errors[0];
    }
  }
}

}  // namespace
}  // namespace docfeed::internal
