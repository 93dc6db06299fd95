// Small datasets and a watchdog for the loader's threading and lifetime tests
// (loader_threads_test.cc, loader_torture_test.cc).
#ifndef DOCFEED_TESTS_PIPELINE_LOADER_TESTING_H_
#define DOCFEED_TESTS_PIPELINE_LOADER_TESTING_H_

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>

#include "base/file.h"
#include "codec/codec.h"
#include "format/dataset.h"
#include "pack/packer.h"
#include "pack/test_folder.h"
#include "pipeline/epoch_order.h"
#include "pipeline/loader.h"
#include "testing/temp_dir.h"

namespace docfeed::testing {

inline constexpr int32_t kLoaderTestHeight = 40;
inline constexpr int32_t kLoaderTestWidth = 32;

// `count` pages of about `size` x `size` pixels (JPEG when `jpeg`, else PNG; page i grows by
// `grow` * i columns and `grow` * i / 2 rows), each with a label row, packed into `out`
// (preprocessed for the test size when `preprocess`).
inline void PackPages(const std::string& tmp, const std::string& out, int count, int size,
                      bool jpeg, bool preprocess, int grow = 0) {
  const std::string src = out + ".src";
  ASSERT_TRUE(internal::CreateDirectory(src).ok());
  std::string meta;
  for (int i = 0; i < count; ++i) {
    const internal::Image img =
        Gradient(size + i % 5 + grow * i, size - i % 3 + grow * i / 2, 3, i);
    const std::string name = "p" + std::to_string(i) + (jpeg ? ".jpg" : ".png");
    WriteBytes(internal::JoinPath(src, name),
               jpeg ? *internal::EncodeJpeg(img, 85) : *internal::EncodePng(img));
    meta += R"({"file_name": ")" + name + R"(", "labels": [)" + std::to_string(i) + "]}\n";
  }
  ASSERT_TRUE(internal::WriteTextFile(internal::JoinPath(src, "metadata.jsonl"), meta).ok());
  internal::PackOptions o;
  o.source = src;
  o.output = out;
  o.threads = 2;
  if (preprocess) {
    o.encode.preprocess.preset = internal::kPreprocessDonut;
    o.encode.preprocess.height = kLoaderTestHeight;
    o.encode.preprocess.width = kLoaderTestWidth;
  }
  Result<internal::PackSummary> packed = internal::Pack(o);
  ASSERT_TRUE(packed.ok()) << packed.status().ToString();
  static_cast<void>(tmp);
}

// Flips bytes in the middle of sample `victim`'s stored image (uncompressed bodies), so reading
// it fails its checksum.
inline void DamageSample(const std::string& path, uint64_t victim) {
  Result<std::unique_ptr<internal::Dataset>> ds = internal::Dataset::Open(path);
  ASSERT_TRUE(ds.ok()) << ds.status().ToString();
  const internal::IndexRecord r = (*ds)->record(victim);
  const std::string file =
      internal::JoinPath(path, (*ds)->manifest().data_files[r.file_index].name);
  ds->reset();
  std::string bytes = *internal::ReadTextFile(file);
  bytes[r.image_offset + r.image_length / 2] ^= 0x55;
  ASSERT_TRUE(internal::WriteTextFile(file, bytes).ok());
}

inline LoaderOptions TestOptions(const std::string& path, int threads) {
  LoaderOptions o;
  o.path = path;
  o.preset.donut.height = kLoaderTestHeight;
  o.preset.donut.width = kLoaderTestWidth;
  o.batch_size = 3;
  o.seed = 7;
  o.num_threads = threads;
  o.remainder = Remainder::kPartial;
  return o;
}

// The order a single-rank loader with options `o` must follow in `epoch` (EpochOrder is its
// specification, tested on its own): the reference the loader tests compare against.
inline internal::EpochOrder ReferenceOrder(const LoaderOptions& o, uint64_t num_samples,
                                           uint64_t epoch) {
  internal::EpochOrderOptions eo;
  eo.num_samples = num_samples;
  eo.seed = o.seed;
  eo.epoch = epoch;
  eo.shuffle = o.shuffle;
  eo.batch_size = o.batch_size;
  eo.remainder = o.remainder;
  return *internal::EpochOrder::Create(eo);
}

// Aborts the test binary with `what` unless Done() is called within `limit`: a regression that
// hangs fails loudly instead of stalling the test run.
class Watchdog {
 public:
  Watchdog(std::string what, std::chrono::seconds limit)
      : what_(std::move(what)), thread_([this, limit] {
          std::unique_lock<std::mutex> lock(mu_);
          if (!cv_.wait_for(lock, limit, [this] { return done_; })) {
            std::fprintf(stderr, "watchdog: %s did not finish within %lld s (a hang)\n",
                         what_.c_str(), static_cast<long long>(limit.count()));
            std::abort();
          }
        }) {}
  ~Watchdog() { Done(); }
  void Done() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

 private:
  std::string what_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

}  // namespace docfeed::testing

#endif  // DOCFEED_TESTS_PIPELINE_LOADER_TESTING_H_
