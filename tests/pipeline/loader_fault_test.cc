// The loader through the Env seam: an I/O error or a short read at every read of its dataset
// gives an error naming the file (never a crash, never wrong batches), and a whole
// pack -> verify -> load round trip runs inside a MemEnv, which shows that every file the
// library touches goes through the Env (nothing of it exists on disk).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/fault_env.h"
#include "base/file.h"
#include "base/mem_env.h"
#include "codec/codec.h"
#include "format/verify.h"
#include "pack/packer.h"
#include "pack/test_folder.h"
#include "pipeline/loader.h"
#include "testing/fault_sweep.h"
#include "testing/temp_dir.h"

namespace docfeed::internal {
namespace {

using testing::Mentions;
using RF = FaultInjectionEnv::ReadFault;

LoaderOptions SmallLoader(const std::string& path, Env* env) {
  LoaderOptions o;
  o.path = path;
  o.env = env;
  o.preset.donut.height = 16;
  o.preset.donut.width = 12;
  o.batch_size = 2;
  o.num_threads = 1;
  o.remainder = Remainder::kPartial;
  o.shuffle = false;
  return o;
}

// Three small PNG pages with an int column, written through `env`.
void WriteFolder(Env* env, const std::string& root) {
  ASSERT_TRUE(env->CreateDirectory(root).ok());
  std::string meta;
  for (int i = 0; i < 3; ++i) {
    const std::string name = "p" + std::to_string(i) + ".png";
    ASSERT_TRUE(
        env->WriteFile(JoinPath(root, name), *EncodePng(testing::Gradient(9 + i, 7, 3, i))).ok());
    meta += R"({"file_name": ")" + name + R"(", "n": )" + std::to_string(i) + "}\n";
  }
  ASSERT_TRUE(env->WriteTextFile(JoinPath(root, "metadata.jsonl"), meta).ok());
}

// Every batch of one epoch, or the first error.
Result<std::vector<std::vector<uint8_t>>> LoadEpoch(const LoaderOptions& o) {
  DOCFEED_ASSIGN_OR_RETURN(std::unique_ptr<Loader> loader, Loader::Create(o));
  std::vector<std::vector<uint8_t>> out;
  while (true) {
    DOCFEED_ASSIGN_OR_RETURN(Batch b, loader->Next());
    if (!b.valid()) return out;
    const auto* px = static_cast<const uint8_t*>(b.pixels());
    out.emplace_back(px, px + b.pixel_bytes());
  }
}

TEST(LoaderFaultTest, EveryReadFaultIsAnErrorNamingTheFile) {
  testing::TempDir dir;
  WriteFolder(Env::Default(), dir.Join("src"));
  PackOptions p;
  p.source = dir.Join("src");
  p.output = dir.Join("out");
  p.threads = 1;
  ASSERT_TRUE(Pack(p).ok());
  const auto expected = LoadEpoch(SmallLoader(p.output, nullptr));
  ASSERT_TRUE(expected.ok()) << expected.status().ToString();

  FaultInjectionEnv env(Env::Default());
  const LoaderOptions o = SmallLoader(p.output, &env);
  const testing::IoCounts io = testing::CountIo(env, [&] { return LoadEpoch(o).status(); });
  EXPECT_EQ(io.writes, 0u);
  ASSERT_GE(io.reads, 3u);  // manifest, index, data file
  // Samples are read with positioned reads, each one counted; the last few may be the epoch
  // look-ahead's (reads of the next epoch, timing-dependent), whose failure this epoch never
  // sees: such a run must still give exactly the expected batches.
  size_t failed = 0;
  testing::SweepReadFaults(env, io.reads, [&](RF, uint64_t, const std::string& where) {
    const auto got = LoadEpoch(o);
    if (got.ok()) {
      EXPECT_EQ(*got, *expected) << where;
      return;
    }
    ++failed;
    EXPECT_TRUE(Mentions(got.status(), BaseName(env.fault_path())))
        << where << " of " << env.fault_path() << ": " << got.status().ToString();
  });
  EXPECT_GE(failed, 2u * 3u);  // at least the manifest, index and data file opens, both faults
  env.Reset();
  const auto again = LoadEpoch(o);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *expected);
}

TEST(MemEnvRoundTrip, PackVerifyAndLoadWithoutTouchingTheDisk) {
  MemEnv mem;
  WriteFolder(&mem, "/src");
  PackOptions p;
  p.source = "/src";
  p.output = "/out";
  p.threads = 1;
  p.env = &mem;
  Result<PackSummary> packed = Pack(p);
  ASSERT_TRUE(packed.ok()) << packed.status().ToString();
  EXPECT_EQ(packed->samples, 3u);
  EXPECT_FALSE(PathExists("/out/docfeed.json"));  // not on the real disk
  EXPECT_TRUE(VerifyDataset("/out", &mem).ok());
  EXPECT_FALSE(VerifyDataset("/out").ok());  // the POSIX env has no /out
  const auto epoch = LoadEpoch(SmallLoader("/out", &mem));
  ASSERT_TRUE(epoch.ok()) << epoch.status().ToString();
  EXPECT_EQ(epoch->size(), 2u);  // 3 samples in batches of 2
}

}  // namespace
}  // namespace docfeed::internal
