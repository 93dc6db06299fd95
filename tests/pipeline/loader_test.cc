#include "pipeline/loader.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <map>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "base/file.h"
#include "codec/codec.h"
#include "format/dataset.h"
#include "pack/packer.h"
#include "pack/test_folder.h"
#include "testing/temp_dir.h"

namespace docfeed::internal {
namespace {

using testing::Gradient;
using testing::TempDir;
using testing::WriteBytes;

// Output size of the test preset: small, so an epoch takes milliseconds.
constexpr int32_t kHeight = 40;
constexpr int32_t kWidth = 32;
constexpr int kSamples = 23;

DonutConfig TestDonut() {
  DonutConfig c;
  c.height = kHeight;
  c.width = kWidth;
  return c;
}

// An image folder of kSamples pages in varied sizes, modes and codecs (portrait, landscape,
// grayscale, RGBA, an EXIF-less JPEG, larger than the output and smaller), each with a label
// row of its own length.
void MakeFolder(const std::string& root) {
  ASSERT_TRUE(CreateDirectory(root).ok());
  std::string meta;
  std::mt19937 rng(5);
  for (int i = 0; i < kSamples; ++i) {
    const int w = 8 + static_cast<int>(rng() % 90);
    const int h = 8 + static_cast<int>(rng() % 120);
    const int channels = i % 5 == 0 ? 1 : (i % 7 == 0 ? 4 : 3);
    Image img = Gradient(w, h, channels, i);
    for (uint8_t& p : img.pixels) p = static_cast<uint8_t>(p ^ (rng() & 0x3F));
    std::string name;
    if (i % 3 == 0 && channels != 4) {
      name = "p" + std::to_string(i) + ".jpg";
      WriteBytes(JoinPath(root, name), *EncodeJpeg(img, 90));
    } else {
      name = "p" + std::to_string(i) + ".png";
      WriteBytes(JoinPath(root, name), *EncodePng(img));
    }
    std::string labels;
    for (int t = 0; t <= i % 6; ++t) labels += (t ? ", " : "") + std::to_string(100 * i + t);
    meta += R"({"file_name": ")" + name + R"(", "labels": [)" + labels + "]}\n";
  }
  ASSERT_TRUE(WriteTextFile(JoinPath(root, "metadata.jsonl"), meta).ok());
}

// Packs once per test binary: originals (uncompressed) and preprocessed (ZSTD bodies).
struct Datasets {
  TempDir tmp;
  std::string originals;
  std::string preprocessed;
  Datasets() {
    const std::string src = tmp.Join("src");
    MakeFolder(src);
    PackOptions o;
    o.source = src;
    o.output = originals = tmp.Join("orig.docfeed");
    o.threads = 2;
    Result<PackSummary> a = Pack(o);
    EXPECT_TRUE(a.ok()) << a.status().ToString();
    o.output = preprocessed = tmp.Join("pre.docfeed");
    o.encode.preprocess.preset = kPreprocessDonut;
    o.encode.preprocess.height = kHeight;
    o.encode.preprocess.width = kWidth;
    o.compression = "zstd";
    Result<PackSummary> b = Pack(o);
    EXPECT_TRUE(b.ok()) << b.status().ToString();
  }
};

// A function-local static, not a leaked pointer: its TempDir is removed when the test exits.
const Datasets& Shared() {
  static const Datasets d;
  return d;
}

LoaderOptions Options(const std::string& path, int threads = 2) {
  LoaderOptions o;
  o.path = path;
  o.preset.donut = TestDonut();
  o.batch_size = 4;
  o.seed = 11;
  o.num_threads = threads;
  o.remainder = Remainder::kPartial;
  return o;
}

// One batch copied out of its buffer.
struct Copied {
  std::vector<uint8_t> pixels;
  std::vector<int64_t> labels;
  uint32_t label_length = 0;
  std::vector<int64_t> ids;
  std::vector<int32_t> pads;
  LoaderState resume;
  bool operator==(const Copied& o) const {
    return pixels == o.pixels && labels == o.labels && label_length == o.label_length &&
           ids == o.ids && pads == o.pads;
  }
};

Copied Copy(const Batch& b) {
  Copied c;
  const auto* px = static_cast<const uint8_t*>(b.pixels());
  c.pixels.assign(px, px + b.pixel_bytes());
  c.label_length = b.label_length();
  c.labels.assign(b.labels(), b.labels() + size_t{b.size()} * b.label_length());
  c.ids.assign(b.sample_ids(), b.sample_ids() + b.size());
  c.pads.assign(b.pad_offsets(), b.pad_offsets() + 2 * size_t{b.size()});
  c.resume = b.resume_state();
  return c;
}

std::vector<Copied> Epoch(Loader& loader) {
  std::vector<Copied> out;
  while (true) {
    Result<Batch> b = loader.Next();
    EXPECT_TRUE(b.ok()) << b.status().ToString();
    if (!b.ok() || !b->valid()) break;
    out.push_back(Copy(*b));
  }
  return out;
}

std::unique_ptr<Loader> Make(const LoaderOptions& o) {
  Result<std::unique_ptr<Loader>> l = Loader::Create(o);
  EXPECT_TRUE(l.ok()) << l.status().ToString();
  return l.ok() ? std::move(*l) : nullptr;
}

// The imaging pipeline applied by hand: decode, orientation, RGB rules, resize, pad at the
// loader's offsets, normalize. tests/python/test_donut_parity.py ties these to transformers.
std::vector<uint8_t> Reference(const Dataset& ds, uint64_t id, int32_t top, int32_t left,
                               DType dtype, OutputLayout layout,
                               const DonutConfig& config = TestDonut()) {
  Result<std::vector<uint8_t>> bytes = ds.ReadImage(id);
  EXPECT_TRUE(bytes.ok());
  Image img = *DecodeImage(*bytes);
  Image rgb = *ToDonutInput(std::move(img));
  Image resized = *DonutResize(rgb, TestDonut());
  Image padded;
  padded.width = kWidth;
  padded.height = kHeight;
  padded.channels = 3;
  padded.pixels.resize(size_t{kWidth} * kHeight * 3);
  EXPECT_TRUE(DonutPad(ViewOf(resized), {top, left}, MutableViewOf(padded)).ok());
  if (dtype == DType::kUint8 && layout == OutputLayout::kHwc) return padded.pixels;
  std::vector<uint8_t> out(padded.pixels.size() * DTypeSize(dtype));
  EXPECT_TRUE(
      Normalize(ViewOf(padded), *MakeNormalizeTable(config), layout, dtype, out.data()).ok());
  return out;
}

TEST(Loader, EverySampleOncePerEpochInTheSamplersOrder) {
  const Datasets& d = Shared();
  auto loader = Make(Options(d.originals));
  ASSERT_NE(loader, nullptr);
  for (uint64_t epoch = 0; epoch < 3; ++epoch) {
    ASSERT_TRUE(loader->StartEpoch(epoch).ok());
    const auto batches = Epoch(*loader);
    ASSERT_EQ(batches.size(), 6u);  // 23 samples, batch 4, partial last
    std::vector<int64_t> ids;
    for (const Copied& b : batches) ids.insert(ids.end(), b.ids.begin(), b.ids.end());
    const std::vector<uint32_t> perm = EpochPermutation(kSamples, 11, epoch, true);
    ASSERT_EQ(ids, std::vector<int64_t>(perm.begin(), perm.end())) << "epoch " << epoch;
  }
}

TEST(Loader, ShuffleFalseFollowsStorageOrder) {
  LoaderOptions o = Options(Shared().originals);
  o.shuffle = false;
  auto loader = Make(o);
  ASSERT_NE(loader, nullptr);
  int64_t expect = 0;
  for (const Copied& b : Epoch(*loader)) {
    for (int64_t id : b.ids) EXPECT_EQ(id, expect++);
  }
  EXPECT_EQ(expect, kSamples);
}

TEST(Loader, PixelsEqualTheImagingReferenceForEveryOutputType) {
  const Datasets& d = Shared();
  Result<std::unique_ptr<Dataset>> ds = Dataset::Open(d.originals);
  ASSERT_TRUE(ds.ok());
  struct Case {
    DType dtype;
    OutputLayout layout;
  };
  for (Case c :
       {Case{DType::kUint8, OutputLayout::kHwc}, Case{DType::kFloat32, OutputLayout::kChw},
        Case{DType::kFloat16, OutputLayout::kChw}, Case{DType::kBfloat16, OutputLayout::kChw},
        Case{DType::kUint8, OutputLayout::kChw}}) {
    for (PadMode pad : {PadMode::kCenter, PadMode::kRandom}) {
      LoaderOptions o = Options(d.originals);
      o.dtype = c.dtype;
      o.layout = c.layout;
      o.preset.pad = pad;
      auto loader = Make(o);
      ASSERT_NE(loader, nullptr);
      const size_t per_sample = size_t{kWidth} * kHeight * 3 * DTypeSize(c.dtype);
      for (const Copied& b : Epoch(*loader)) {
        for (size_t j = 0; j < b.ids.size(); ++j) {
          const std::vector<uint8_t> want =
              Reference(**ds, static_cast<uint64_t>(b.ids[j]), b.pads[2 * j], b.pads[2 * j + 1],
                        c.dtype, c.layout);
          ASSERT_EQ(0, std::memcmp(b.pixels.data() + j * per_sample, want.data(), per_sample))
              << "sample " << b.ids[j] << " dtype " << static_cast<int>(c.dtype);
        }
      }
    }
  }
}

TEST(Loader, PreprocessedAndOriginalDatasetsGiveTheSameBatches) {
  const Datasets& d = Shared();
  for (PadMode pad : {PadMode::kCenter, PadMode::kRandom}) {
    LoaderOptions a = Options(d.originals);
    a.preset.pad = pad;
    LoaderOptions b = Options(d.preprocessed);
    b.preset.pad = pad;
    auto la = Make(a);
    auto lb = Make(b);
    ASSERT_NE(la, nullptr);
    ASSERT_NE(lb, nullptr);
    EXPECT_FALSE(la->preprocessed());
    EXPECT_TRUE(lb->preprocessed());
    EXPECT_EQ(Epoch(*la), Epoch(*lb));
  }
}

TEST(Loader, OutputDoesNotDependOnThreadsOrPrefetch) {
  const Datasets& d = Shared();
  LoaderOptions o = Options(d.preprocessed, 1);
  o.prefetch = 1;
  o.max_held = 1;
  auto one = Make(o);
  ASSERT_NE(one, nullptr);
  const auto want = Epoch(*one);
  for (int threads : {2, 4, 7}) {
    LoaderOptions p = Options(d.preprocessed, threads);
    p.prefetch = threads;
    auto many = Make(p);
    ASSERT_NE(many, nullptr);
    ASSERT_EQ(Epoch(*many), want) << threads << " threads";
  }
}

TEST(Loader, RandomPaddingIsFreshEachEpochAndReproducible) {
  const Datasets& d = Shared();
  LoaderOptions o = Options(d.preprocessed);
  o.shuffle = false;
  auto a = Make(o);
  auto b = Make(o);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  std::map<int64_t, std::set<std::pair<int32_t, int32_t>>> offsets;
  for (uint64_t epoch = 0; epoch < 8; ++epoch) {
    ASSERT_TRUE(a->StartEpoch(epoch).ok());
    ASSERT_TRUE(b->StartEpoch(epoch).ok());
    const auto ea = Epoch(*a);
    ASSERT_EQ(ea, Epoch(*b));  // same seed, same epoch: same pixels and offsets
    for (const Copied& batch : ea) {
      for (size_t j = 0; j < batch.ids.size(); ++j) {
        offsets[batch.ids[j]].insert({batch.pads[2 * j], batch.pads[2 * j + 1]});
      }
    }
  }
  // Over 8 epochs most samples that have room to move got more than one placement.
  int moved = 0;
  for (const auto& [id, set] : offsets) moved += set.size() > 1 ? 1 : 0;
  EXPECT_GT(moved, kSamples / 2);
}

// Workers fill buffers from the next epoch once the current one is fully started; asking for that
// epoch keeps those batches. They must equal a next epoch built from scratch.
TEST(Loader, LookAheadIntoTheNextEpochGivesTheSameBatches) {
  const Datasets& d = Shared();
  LoaderOptions o = Options(d.preprocessed);
  o.prefetch = 3;
  auto scratch = Make(o);
  ASSERT_NE(scratch, nullptr);
  ASSERT_TRUE(scratch->StartEpoch(9).ok());  // look-ahead is now epoch 10
  ASSERT_TRUE(scratch->StartEpoch(1).ok());  // so epoch 1 is built from scratch
  const auto want = Epoch(*scratch);
  auto ahead = Make(o);
  ASSERT_NE(ahead, nullptr);
  Epoch(*ahead);  // epoch 0, then the workers run into epoch 1
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_TRUE(ahead->StartEpoch(1).ok());
  EXPECT_EQ(Epoch(*ahead), want);
  // Restarting somewhere else drops the look-ahead and still gives the right batches.
  ASSERT_TRUE(ahead->StartEpoch(1, 8).ok());
  const auto rest = Epoch(*ahead);
  ASSERT_EQ(rest.size(), want.size() - 2);
  EXPECT_EQ(rest[0], want[2]);
}

TEST(Loader, ResumeAtEveryBatchContinuesExactly) {
  const Datasets& d = Shared();
  LoaderOptions o = Options(d.preprocessed);
  auto loader = Make(o);
  ASSERT_NE(loader, nullptr);
  ASSERT_TRUE(loader->StartEpoch(2).ok());
  const auto full = Epoch(*loader);
  for (size_t k = 0; k < full.size(); ++k) {
    auto resumed = Make(o);
    ASSERT_NE(resumed, nullptr);
    ASSERT_TRUE(resumed->Restore(full[k].resume).ok());
    const auto rest = Epoch(*resumed);
    ASSERT_EQ(rest.size(), full.size() - k - 1);
    for (size_t i = 0; i < rest.size(); ++i) ASSERT_EQ(rest[i], full[k + 1 + i]);
    // The state before the next batch is the saved one.
    EXPECT_EQ(full[k].resume.position, k + 1 == full.size() ? kSamples : (k + 1) * 4);
  }
  LoaderState wrong = full[0].resume;
  wrong.seed = 12;
  EXPECT_FALSE(loader->Restore(wrong).ok());
}

TEST(Loader, ResumeWithAnotherWorldSizeCoversTheRest) {
  const Datasets& d = Shared();
  std::multiset<int64_t> seen;
  LoaderState state;
  for (uint32_t r = 0; r < 2; ++r) {  // two ranks take two steps each
    LoaderOptions o = Options(d.preprocessed);
    o.remainder = Remainder::kWrap;
    o.rank = r;
    o.world_size = 2;
    o.batch_size = 3;
    auto loader = Make(o);
    ASSERT_NE(loader, nullptr);
    for (int step = 0; step < 2; ++step) {
      Result<Batch> b = loader->Next();
      ASSERT_TRUE(b.ok() && b->valid());
      seen.insert(b->sample_ids(), b->sample_ids() + b->size());
      state = b->resume_state();
    }
  }
  EXPECT_EQ(state.position, 12u);
  for (uint32_t r = 0; r < 3; ++r) {  // then three ranks finish the epoch
    LoaderOptions o = Options(d.preprocessed);
    o.remainder = Remainder::kDrop;
    o.rank = r;
    o.world_size = 3;
    o.batch_size = 3;
    auto loader = Make(o);
    ASSERT_NE(loader, nullptr);
    ASSERT_TRUE(loader->Restore(state).ok());
    EXPECT_EQ(loader->num_batches(), 1u);  // 11 left, steps of 9
    for (const Copied& b : Epoch(*loader)) seen.insert(b.ids.begin(), b.ids.end());
  }
  EXPECT_EQ(seen.size(), 21u);
  EXPECT_EQ(std::set<int64_t>(seen.begin(), seen.end()).size(), 21u);  // no sample twice
}

// The loader's side of an elastic resume (tests/pipeline/elastic_resume_test.cc checks the
// order exhaustively): states carry the shape and the mode, Restore() checks them, and runs of
// 2 -> 1 -> 4 -> 2 ranks keeping the global batch of 4 (per-rank 2, 4, 1, 2), each but the last
// taking one step, serve each of the 23 samples once but the tail of 3 that no step fills.
TEST(Loader, ElasticResumeKeepingTheGlobalBatch) {
  const Datasets& d = Shared();
  std::multiset<int64_t> seen;
  LoaderState state;
  const std::vector<uint32_t> worlds = {2, 1, 4, 2};
  for (size_t seg = 0; seg < worlds.size(); ++seg) {
    const uint32_t world = worlds[seg];
    const bool last = seg + 1 == worlds.size();
    LoaderState next;
    for (uint32_t r = 0; r < world; ++r) {
      LoaderOptions o = Options(d.preprocessed);
      o.remainder = Remainder::kDrop;
      o.rank = r;
      o.world_size = world;
      o.batch_size = 4 / world;
      auto loader = Make(o);
      ASSERT_NE(loader, nullptr);
      if (seg > 0) {
        ASSERT_TRUE(loader->Restore(state).ok());
        EXPECT_EQ(loader->state().elastic, ElasticMode::kGlobalBatch);
      }
      EXPECT_EQ(loader->num_batches(), (kSamples - state.position) / 4);
      if (last) {
        for (const Copied& b : Epoch(*loader)) seen.insert(b.ids.begin(), b.ids.end());
      } else {
        Result<Batch> b = loader->Next();
        ASSERT_TRUE(b.ok() && b->valid());
        seen.insert(b->sample_ids(), b->sample_ids() + b->size());
      }
      next = loader->state();
      EXPECT_EQ(next.world_size, world);
      EXPECT_EQ(next.batch_size, 4 / world);
      // After the last batch (kDrop) the state is the end of the epoch.
      EXPECT_EQ(next.position, last ? uint64_t{kSamples} : 4 * (seg + 1));
    }
    state = next;
  }
  EXPECT_EQ(seen.size(), 20u);
  EXPECT_EQ(std::set<int64_t>(seen.begin(), seen.end()).size(), 20u);
  // A resume at the end of that epoch, with steps small enough for its tail, serves nothing.
  LoaderOptions o = Options(d.preprocessed);
  o.remainder = Remainder::kDrop;
  o.batch_size = 1;
  auto after = Make(o);
  ASSERT_NE(after, nullptr);
  ASSERT_TRUE(after->Restore(state, ElasticMode::kRankBatch).ok() == false);  // 1 != 2
  ASSERT_TRUE(after->Restore(state).ok() == false);  // 1 x 1 keeps neither 2 x 2 nor batch 2
  LoaderState unknown_shape{state.seed, state.epoch, state.position};
  ASSERT_TRUE(after->Restore(unknown_shape).ok());
  EXPECT_TRUE(Epoch(*after).empty());
}

// Same per-rank batch of 2: 2 ranks take 2 steps (8 positions), 1 rank takes 3 batches (to 14),
// 4 ranks take the rest (one step of 8; the tail of 1 is dropped).
TEST(Loader, ElasticResumeWithTheSamePerRankBatch) {
  const Datasets& d = Shared();
  std::multiset<int64_t> seen;
  auto run = [&](uint32_t world, const LoaderState* from, int steps) {
    LoaderState out;
    for (uint32_t r = 0; r < world; ++r) {
      LoaderOptions o = Options(d.preprocessed);
      o.remainder = Remainder::kDrop;
      o.rank = r;
      o.world_size = world;
      o.batch_size = 2;
      auto loader = Make(o);
      EXPECT_NE(loader, nullptr);
      if (loader == nullptr) return out;
      if (from != nullptr) {
        EXPECT_TRUE(loader->Restore(*from, ElasticMode::kRankBatch).ok());
      }
      for (int k = 0; steps < 0 || k < steps; ++k) {
        Result<Batch> b = loader->Next();
        EXPECT_TRUE(b.ok());
        if (!b.ok() || !b->valid()) break;
        seen.insert(b->sample_ids(), b->sample_ids() + b->size());
      }
      out = loader->state();
      EXPECT_EQ(out.elastic, from == nullptr ? ElasticMode::kSame : ElasticMode::kRankBatch);
    }
    return out;
  };
  const LoaderState a = run(2, nullptr, 2);
  EXPECT_EQ(a.position, 8u);
  const LoaderState b = run(1, &a, 3);
  EXPECT_EQ(b.position, 14u);
  const LoaderState c = run(4, &b, -1);
  EXPECT_EQ(c.position, uint64_t{kSamples});
  EXPECT_EQ(seen.size(), 22u);
  EXPECT_EQ(std::set<int64_t>(seen.begin(), seen.end()).size(), 22u);
}

TEST(Loader, RestoreRefusesAnElasticModeThatDoesNotHold) {
  const Datasets& d = Shared();
  LoaderOptions o = Options(d.preprocessed);
  o.world_size = 1;
  o.batch_size = 4;
  auto loader = Make(o);
  ASSERT_NE(loader, nullptr);
  LoaderState saved;
  saved.seed = o.seed;
  saved.position = 8;
  saved.world_size = 2;
  saved.batch_size = 2;
  // 2 x 2 = 1 x 4: the global batch is kept, so rank_batch cannot hold.
  Status s = loader->Restore(saved, ElasticMode::kRankBatch);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("elastic \"rank_batch\" requires batch_size 2"), std::string::npos)
      << s.ToString();
  saved.batch_size = 3;  // 6 over 1 rank with batch 4: neither kept
  s = loader->Restore(saved);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("batch_size 6 keeps the global batch"), std::string::npos)
      << s.ToString();
  // The failed restores changed nothing.
  EXPECT_EQ(loader->state().position, 0u);
  EXPECT_EQ(loader->state().elastic, ElasticMode::kSame);
  saved.batch_size = 4;
  ASSERT_TRUE(loader->Restore(saved).ok());
  EXPECT_EQ(loader->state().elastic, ElasticMode::kRankBatch);
  EXPECT_EQ(loader->state().position, 8u);
}

TEST(Loader, LabelsArePaddedToTheBatchMaximumOrAFixedLength) {
  const Datasets& d = Shared();
  LoaderOptions o = Options(d.originals);
  o.shuffle = false;
  auto loader = Make(o);
  ASSERT_NE(loader, nullptr);
  for (const Copied& b : Epoch(*loader)) {
    uint32_t longest = 0;
    for (int64_t id : b.ids) longest = std::max(longest, static_cast<uint32_t>(id % 6 + 1));
    ASSERT_EQ(b.label_length, longest);
    for (size_t j = 0; j < b.ids.size(); ++j) {
      const int64_t id = b.ids[j];
      for (uint32_t t = 0; t < b.label_length; ++t) {
        const int64_t want = t <= static_cast<uint32_t>(id % 6) ? 100 * id + t : -100;
        ASSERT_EQ(b.labels[j * b.label_length + t], want) << "sample " << id << " token " << t;
      }
    }
  }
  o.label_length = 9;
  auto fixed = Make(o);
  ASSERT_NE(fixed, nullptr);
  for (const Copied& b : Epoch(*fixed)) EXPECT_EQ(b.label_length, 9u);
  o.label_length = 3;  // shorter than the longest row: an error naming the sample
  auto short_labels = Make(o);
  ASSERT_NE(short_labels, nullptr);
  Status first_error;
  while (true) {
    Result<Batch> b = short_labels->Next();
    if (!b.ok()) {
      first_error = b.status();
      break;
    }
    if (!b->valid()) break;
  }
  ASSERT_FALSE(first_error.ok());
  EXPECT_NE(first_error.message().find("sample 3"), std::string::npos) << first_error.ToString();
  o.label_column = "-";
  auto none = Make(o);
  ASSERT_NE(none, nullptr);
  for (const Copied& b : Epoch(*none)) EXPECT_EQ(b.label_length, 0u);
}

// Token columns (a chat dataset's input_ids / attention_mask / labels): every row copied whole and
// padded with its column's own value to the batch's longest row, beside the label column.
TEST(Loader, TokenColumnsArePaddedWithTheirOwnValueToTheBatchMaximum) {
  LoaderOptions o = Options(Shared().originals);
  o.shuffle = false;
  o.token_columns = {{"labels", 7}, {"labels", -1}};  // one column twice: two pads
  o.token_capacity = 6;
  auto loader = Make(o);
  ASSERT_NE(loader, nullptr);
  int batches = 0;
  while (true) {
    Result<Batch> b = loader->Next();
    ASSERT_TRUE(b.ok()) << b.status().ToString();
    if (!b->valid()) break;
    ++batches;
    ASSERT_EQ(b->num_token_columns(), 2u);
    uint32_t longest = 0;
    for (uint32_t j = 0; j < b->size(); ++j) {
      longest = std::max(longest, static_cast<uint32_t>(b->sample_ids()[j] % 6 + 1));
    }
    ASSERT_EQ(b->token_length(), longest);
    EXPECT_EQ(b->label_length(), longest);  // the label column is batched as before
    for (size_t k = 0; k < 2; ++k) {
      const int64_t pad = k == 0 ? 7 : -1;
      for (uint32_t j = 0; j < b->size(); ++j) {
        const int64_t id = b->sample_ids()[j];
        for (uint32_t t = 0; t < longest; ++t) {
          const int64_t want = t <= static_cast<uint32_t>(id % 6) ? 100 * id + t : pad;
          ASSERT_EQ(b->tokens(k)[j * longest + t], want)
              << "column " << k << " sample " << id << " token " << t;
        }
      }
    }
  }
  EXPECT_GT(batches, 1);

  o.token_capacity = 3;  // shorter than the longest row: an error naming the sample
  auto small = Make(o);
  ASSERT_NE(small, nullptr);
  Status first_error;
  while (first_error.ok()) {
    Result<Batch> b = small->Next();
    if (!b.ok()) first_error = b.status();
    if (b.ok() && !b->valid()) break;
  }
  ASSERT_FALSE(first_error.ok());
  EXPECT_NE(first_error.message().find("sample 3: column \"labels\" has 4 tokens"),
            std::string::npos)
      << first_error.ToString();

  o.token_columns = {{"input_ids", 0}};
  Result<std::unique_ptr<Loader>> missing = Loader::Create(o);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(missing.status().message().find("no column \"input_ids\""), std::string::npos)
      << missing.status().ToString();
  o.token_capacity = 0;
  o.token_columns = {{"labels", 0}};
  EXPECT_EQ(Loader::Create(o).status().code(), StatusCode::kInvalidArgument);
}

TEST(Loader, RefusesAPreprocessedDatasetOfAnotherSize) {
  LoaderOptions o = Options(Shared().preprocessed);
  o.preset.donut.height = kHeight * 2;
  Result<std::unique_ptr<Loader>> l = Loader::Create(o);
  ASSERT_FALSE(l.ok());
  EXPECT_EQ(l.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(l.status().message().find("--preprocess donut --size 80x32"), std::string::npos)
      << l.status().ToString();
}

// The shared preprocessed dataset was packed for transformers 4.x (the default); a loader asked
// for 5.x pages must refuse too, saying how to re-pack.
TEST(Loader, RefusesAPreprocessedDatasetOfAnotherGeneration) {
  LoaderOptions o = Options(Shared().preprocessed);
  o.preset.donut.hf_version = 5;
  o.preset.donut.backend = DonutBackend::kTorchvision;
  Result<std::unique_ptr<Loader>> l = Loader::Create(o);
  ASSERT_FALSE(l.ok());
  EXPECT_EQ(l.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(l.status().message().find("transformers 4.x pil"), std::string::npos)
      << l.status().ToString();
  EXPECT_NE(l.status().message().find("--hf-version 5 --backend torchvision"), std::string::npos)
      << l.status().ToString();
}

// A dataset that records no normalization (packed from images) loads with Donut's 0.5 / 0.5;
// image_mean / image_std override it per channel (migrated datasets: tests/migrate).
TEST(Loader, NormalizesWithTheDefaultOrTheGivenMeanAndStd) {
  const Datasets& d = Shared();
  Result<std::unique_ptr<Dataset>> ds = Dataset::Open(d.originals);
  ASSERT_TRUE(ds.ok());
  ASSERT_FALSE((*ds)->manifest().normalization.has_value());
  auto plain = Make(Options(d.originals));
  ASSERT_NE(plain, nullptr);
  EXPECT_EQ(plain->image_mean(), (std::array<double, 3>{0.5, 0.5, 0.5}));
  EXPECT_EQ(plain->image_std(), (std::array<double, 3>{0.5, 0.5, 0.5}));
  DonutConfig imagenet = TestDonut();
  imagenet.mean = {0.485, 0.456, 0.406};
  imagenet.std = {0.229, 0.224, 0.225};
  LoaderOptions o = Options(d.originals);
  o.image_mean = imagenet.mean;
  o.image_std = imagenet.std;
  o.dtype = DType::kFloat16;
  o.preset.pad = PadMode::kRandom;
  auto loader = Make(o);
  ASSERT_NE(loader, nullptr);
  EXPECT_EQ(loader->image_mean(), imagenet.mean);
  EXPECT_EQ(loader->image_std(), imagenet.std);
  const size_t per_sample = size_t{kWidth} * kHeight * 3 * 2;
  for (const Copied& b : Epoch(*loader)) {
    for (size_t j = 0; j < b.ids.size(); ++j) {
      const std::vector<uint8_t> want =
          Reference(**ds, static_cast<uint64_t>(b.ids[j]), b.pads[2 * j], b.pads[2 * j + 1],
                    DType::kFloat16, OutputLayout::kChw, imagenet);
      ASSERT_EQ(0, std::memcmp(b.pixels.data() + j * per_sample, want.data(), per_sample))
          << "sample " << b.ids[j];
    }
  }
  o.image_std = std::array<double, 3>{0.2, 0.0, 0.2};
  Result<std::unique_ptr<Loader>> bad = Loader::Create(o);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("image_std[1]"), std::string::npos)
      << bad.status().ToString();
}

TEST(Loader, RefusesBadOptions) {
  LoaderOptions o = Options(Shared().originals);
  o.batch_size = 0;
  EXPECT_FALSE(Loader::Create(o).ok());
  o = Options(Shared().originals);
  o.rank = 2;
  o.world_size = 2;
  EXPECT_FALSE(Loader::Create(o).ok());
  o = Options(Shared().originals);
  o.path = "/nonexistent/dataset";
  Result<std::unique_ptr<Loader>> missing = Loader::Create(o);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("/nonexistent/dataset"), std::string::npos);
}

// A copy of the originals with the stored bytes of sample `victim` damaged: its checksum no
// longer matches, so reading it fails the way a bad disk would.
std::string DamagedCopy(const TempDir& tmp, uint64_t victim) {
  const std::string dst = tmp.Join("damaged.docfeed");
  EXPECT_TRUE(CreateDirectory(dst).ok());
  Result<std::vector<std::string>> names = ListDirectory(Shared().originals);
  EXPECT_TRUE(names.ok());
  for (const std::string& name : *names) {
    Result<std::string> bytes = ReadTextFile(JoinPath(Shared().originals, name));
    EXPECT_TRUE(bytes.ok());
    EXPECT_TRUE(WriteTextFile(JoinPath(dst, name), *bytes).ok());
  }
  Result<std::unique_ptr<Dataset>> ds = Dataset::Open(dst);
  EXPECT_TRUE(ds.ok());
  const IndexRecord r = (*ds)->record(victim);
  const std::string file = JoinPath(dst, (*ds)->manifest().data_files[r.file_index].name);
  std::string bytes = *ReadTextFile(file);
  bytes[r.image_offset + r.image_length / 2] ^= 0x55;
  EXPECT_TRUE(WriteTextFile(file, bytes).ok());
  return dst;
}

TEST(Loader, ABadSampleIsAnErrorNamingItByDefault) {
  TempDir tmp;
  const std::string path = DamagedCopy(tmp, 5);
  LoaderOptions o = Options(path);
  o.shuffle = false;
  auto loader = Make(o);
  ASSERT_NE(loader, nullptr);
  ASSERT_TRUE(loader->Next().ok());    // samples 0-3
  Result<Batch> bad = loader->Next();  // samples 4-7
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("sample 5"), std::string::npos) << bad.status().ToString();
  Result<Batch> after = loader->Next();  // the loader goes on with the next batch
  ASSERT_TRUE(after.ok() && after->valid());
  EXPECT_EQ(after->sample_ids()[0], 8);
}

TEST(Loader, SkipReplacesABadSampleDeterministicallyAndCountsIt) {
  TempDir tmp;
  const std::string path = DamagedCopy(tmp, 5);
  LoaderOptions o = Options(path);
  o.shuffle = false;
  o.on_error = BadSamplePolicy::kSkip;
  auto loader = Make(o);
  ASSERT_NE(loader, nullptr);
  const auto batches = Epoch(*loader);
  ASSERT_EQ(batches.size(), 6u);
  EXPECT_EQ(batches[1].ids, (std::vector<int64_t>{4, 6, 6, 7}));  // 5 replaced by the next
  const LoaderStats s = loader->stats();
  // Once per epoch read: this one, and maybe the next one's, which the workers may already be
  // prefetching (look-ahead), with nothing else skipped.
  EXPECT_GE(s.bad_samples, 1u);
  EXPECT_LE(s.bad_samples, 2u);
  ASSERT_EQ(s.bad_sample_errors.size(), s.bad_samples);
  for (const std::string& e : s.bad_sample_errors) {
    EXPECT_NE(e.find("sample 5"), std::string::npos) << e;
  }
  o.max_bad_samples = 0;  // no budget: the loader stops
  auto strict = Make(o);
  ASSERT_NE(strict, nullptr);
  ASSERT_TRUE(strict->Next().ok());
  Result<Batch> stop = strict->Next();
  ASSERT_FALSE(stop.ok());
  EXPECT_EQ(stop.status().code(), StatusCode::kResourceExhausted);
}

TEST(Loader, BatchesOutliveTheLoaderAndShutdownNeverHangs) {
  const Datasets& d = Shared();
  std::mt19937 rng(3);
  for (int round = 0; round < 30; ++round) {
    LoaderOptions o = Options(round % 2 ? d.preprocessed : d.originals, 1 + round % 4);
    o.prefetch = 1 + round % 3;
    auto loader = Make(o);
    ASSERT_NE(loader, nullptr);
    std::vector<Batch> kept;
    const int take = static_cast<int>(rng() % 4);
    for (int i = 0; i < take && static_cast<int>(kept.size()) < o.max_held; ++i) {
      Result<Batch> b = loader->Next();
      ASSERT_TRUE(b.ok());
      if (b->valid()) kept.push_back(std::move(*b));
    }
    if (round % 3 == 0) {
      ASSERT_TRUE(loader->StartEpoch(1, 4).ok());  // restart mid-flight
    }
    loader.reset();  // workers may be mid-sample
    for (const Batch& b : kept) {
      // Still readable: the pool lives as long as a batch does.
      volatile uint8_t first = static_cast<const uint8_t*>(b.pixels())[0];
      (void)first;
      EXPECT_GE(b.sample_ids()[0], 0);
    }
  }
}

TEST(Loader, HoldingEveryBufferIsAnErrorNotADeadlock) {
  LoaderOptions o = Options(Shared().preprocessed);
  o.prefetch = 1;
  o.max_held = 1;
  auto loader = Make(o);
  ASSERT_NE(loader, nullptr);
  Result<Batch> a = loader->Next();
  ASSERT_TRUE(a.ok() && a->valid());
  Result<Batch> b = loader->Next();  // the prefetched one: fine
  ASSERT_TRUE(b.ok() && b->valid());
  Result<Batch> c = loader->Next();
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kResourceExhausted);
  a->Release();
  Result<Batch> d = loader->Next();
  EXPECT_TRUE(d.ok() && d->valid());
}

TEST(Loader, StatsCountTheStages) {
  auto loader = Make(Options(Shared().originals));
  ASSERT_NE(loader, nullptr);
  const auto batches = Epoch(*loader);
  const LoaderStats s = loader->stats();
  EXPECT_EQ(s.batches, batches.size());
  EXPECT_GE(s.samples, static_cast<uint64_t>(kSamples));
  EXPECT_GE(s.read.count, static_cast<uint64_t>(kSamples));
  // Originals are resized on the fly: fused with the decode when no rotation is needed (all of
  // these test pages), else as separate stages.
  // The workers may be mid-sample in the next epoch (look-ahead) while the counters are read:
  // each of the 2 may have read a sample it has not decoded yet.
  EXPECT_LE(s.decode_resize.count + s.resize.count, s.read.count);
  EXPECT_GE(s.decode_resize.count + s.resize.count + 2, s.read.count);
  EXPECT_EQ(s.decode.count, s.resize.count);
  EXPECT_GT(s.decode_resize.count, 0u);
  EXPECT_EQ(s.consumer_wait.count, batches.size());
  EXPECT_GT(s.stored_bytes, 0u);
  EXPECT_EQ(s.pool_buffers, 6u);
}

}  // namespace
}  // namespace docfeed::internal
