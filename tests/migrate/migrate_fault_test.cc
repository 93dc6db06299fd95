// Fault injection through the Env seam for the migration: an I/O error or ENOSPC at every write,
// an I/O error or short read at every read, and a crash at every write of a small float32
// save_to_disk dataset, in a MemEnv (the migration goes through the Env entirely, and a MemEnv has
// no fsync to wait for, which keeps the ~500 runs fast) wrapped by FaultInjectionEnv. A failed run
// may leave OUT.partial (the resume directory, by design), never anything at OUT that opens as a
// dataset, and the next run must succeed and clean it up.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/fault_env.h"
#include "base/file.h"
#include "base/mem_env.h"
#include "format/arrow/builder.h"
#include "format/arrow/writer.h"
#include "format/dataset.h"
#include "format/verify.h"
#include "imaging/donut.h"
#include "imaging/normalize.h"
#include "migrate/migrate.h"
#include "tensor_column.h"
#include "testing/fault_sweep.h"

namespace docfeed::internal::migrate {
namespace {

using testing::Entries;
using testing::HasManifest;
using testing::Mentions;
using RF = FaultInjectionEnv::ReadFault;
using WF = FaultInjectionEnv::WriteFault;

constexpr int kH = 8;
constexpr int kW = 6;
constexpr int kRows = 3;

// Row i: a (kH - 2 * (i % 2)) x kW page of non-zero pixels, padded centred with 0, normalized
// with Donut's default mean/std, as float32 C x H x W.
std::vector<float> Tensor(int i) {
  Image page{kW, kH - 2 * (i % 2), 3, {}};
  for (int p = 0; p < page.width * page.height * 3; ++p) {
    page.pixels.push_back(static_cast<uint8_t>(1 + (i * 31 + p * 7) % 255));
  }
  Image padded{kW, kH, 3, std::vector<uint8_t>(kH * kW * 3)};
  const PadOffsets off{(kH - page.height) / 2, 0};
  EXPECT_TRUE(DonutPad(ViewOf(page), off, MutableViewOf(padded)).ok());
  std::vector<float> chw(3 * kH * kW);
  const NormalizeTable table = MakeNormalizeTable(DonutConfig{}).value();
  EXPECT_TRUE(
      Normalize(ViewOf(padded), table, OutputLayout::kChw, DType::kFloat32, chw.data()).ok());
  return chw;
}

void WriteSource(Env* env, const std::string& dir) {
  using arrow::MakeField;
  using arrow::MakeList;
  using arrow::TypeId;
  arrow::Schema schema;
  schema.fields.push_back(MakeList(
      "pixel_values", MakeList("item", MakeList("item", MakeField("item", TypeId::kFloat32)))));
  schema.fields.push_back(MakeField("target_sequence", TypeId::kString));
  ASSERT_TRUE(env->CreateDirectory(dir).ok());
  const std::string name = "data-00000-of-00001.arrow";
  auto writer =
      arrow::StreamWriter::Create(JoinPath(dir, name), schema, arrow::Compression::kNone, env);
  ASSERT_TRUE(writer.ok());
  std::vector<arrow::ArrayBuilder> b = arrow::ArrayBuilder::ForSchema(schema);
  for (int r = 0; r < kRows; ++r) {
    const std::vector<float> t = Tensor(r);
    ASSERT_TRUE(AppendChwTensor(b[0], t, kH, kW).ok());
    ASSERT_TRUE(b[1].AppendString("<s>" + std::to_string(r) + "</s>").ok());
    if (r == 0 || r == kRows - 1) {
      ASSERT_TRUE(writer->WriteBatch(b).ok());
      for (auto& col : b) col.Reset();
    }
  }
  ASSERT_TRUE(writer->Close().ok());
  ASSERT_TRUE(env->WriteTextFile(JoinPath(dir, "state.json"),
                                 "{\"_data_files\": [{\"filename\": \"" + name + "\"}]}")
                  .ok());
  ASSERT_TRUE(env->WriteTextFile(JoinPath(dir, "dataset_info.json"), "{}").ok());
}

class MigrateFaultTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(mem_.CreateDirectory(kRoot).ok());
    WriteSource(&mem_, JoinPath(kRoot, "src"));
    options_.source = JoinPath(kRoot, "src");
    options_.output = JoinPath(kRoot, "out");
    options_.threads = 1;
    options_.env = &env_;
  }

  Status Run(const MigrateOptions& o) { return Migrate(o).status(); }

  // A normal run after a failed one: succeeds, leaves a verified dataset and nothing else.
  void ExpectRecovery(const std::string& where) {
    env_.Reset();
    MigrateOptions again = options_;
    again.overwrite = true;
    Status s = Run(again);
    ASSERT_TRUE(s.ok()) << where << ": the next run failed: " << s.ToString();
    Status v = VerifyDataset(options_.output, &mem_);
    EXPECT_TRUE(v.ok()) << where << ": " << v.ToString();
    EXPECT_EQ(Dataset::Open(options_.output, &mem_).value()->size(), uint64_t{kRows}) << where;
    EXPECT_EQ(Entries(kRoot, &mem_), (std::vector<std::string>{"out", "src"})) << where;
    ASSERT_TRUE(mem_.RemoveAll(options_.output).ok());
  }

  static constexpr char kRoot[] = "/mem";
  MemEnv mem_;
  FaultInjectionEnv env_{&mem_};
  MigrateOptions options_;
};

TEST_F(MigrateFaultTest, EveryWriteErrorFailsCleanlyAndTheNextRunRecovers) {
  const testing::IoCounts io = testing::CountIo(env_, [&] { return Run(options_); });
  ASSERT_GT(io.writes, 10u);
  ASSERT_TRUE(mem_.RemoveAll(options_.output).ok());
  testing::SweepWriteFaults(env_, io.writes, [&](WF fault, uint64_t i, const std::string& where) {
    Status s = Run(options_);
    if (s.ok()) {
      // Only the clean-up after OUT was placed may fail without failing the run (its note says
      // so): OUT is then complete, and the leftover OUT.partial is the next run's to remove.
      EXPECT_EQ(i, io.writes - 1) << where;
      EXPECT_TRUE(VerifyDataset(options_.output, &mem_).ok()) << where;
      ExpectRecovery(where);
      return;
    }
    EXPECT_EQ(s.code(), testing::WriteFaultCode(fault)) << where << ": " << s.ToString();
    EXPECT_TRUE(Mentions(s, "injected at write " + std::to_string(i))) << s.ToString();
    EXPECT_TRUE(Mentions(s, BaseName(env_.fault_path()))) << where << ": " << s.ToString();
    EXPECT_FALSE(HasManifest(options_.output, &mem_)) << where;
    ExpectRecovery(where);
  });
}

TEST_F(MigrateFaultTest, EveryReadErrorOrShortReadFailsClearlyOrStillVerifies) {
  const testing::IoCounts io = testing::CountIo(env_, [&] { return Run(options_); });
  ASSERT_GT(io.reads, 5u);
  ASSERT_TRUE(mem_.RemoveAll(options_.output).ok());
  testing::SweepReadFaults(env_, io.reads, [&](RF fault, uint64_t, const std::string& where) {
    Status s = Run(options_);
    if (s.ok()) {
      Status v = VerifyDataset(options_.output, &mem_);
      EXPECT_TRUE(v.ok()) << where << ": passed, but " << v.ToString();
      ASSERT_TRUE(mem_.RemoveAll(options_.output).ok());
      return;
    }
    EXPECT_FALSE(s.message().empty()) << where;
    if (fault == RF::kIOError) {
      EXPECT_TRUE(Mentions(s, BaseName(env_.fault_path()))) << where << ": " << s.ToString();
    }
    EXPECT_FALSE(HasManifest(options_.output, &mem_)) << where << ": " << s.ToString();
    ExpectRecovery(where);
  });
}

TEST_F(MigrateFaultTest, ACrashAtEveryWriteLeavesNothingOrTheCompleteDatasetAndTheNextRunWorks) {
  const testing::IoCounts io = testing::CountIo(env_, [&] { return Run(options_); });
  ASSERT_TRUE(mem_.RemoveAll(options_.output).ok());
  for (uint64_t i = 0; i < io.writes; ++i) {
    const std::string where = "crash at write " + std::to_string(i);
    env_.Reset();
    env_.CrashAfterWrites(i);
    Status s = Run(options_);
    if (s.ok()) {
      EXPECT_EQ(i, io.writes - 1) << where << ": only the best-effort clean-up may be cut";
    } else {
      EXPECT_TRUE(Mentions(s, "simulated crash")) << where << ": " << s.ToString();
    }
    if (mem_.PathExists(options_.output)) {
      Status v = VerifyDataset(options_.output, &mem_);
      EXPECT_TRUE(v.ok()) << where << ": " << v.ToString();
    }
    ExpectRecovery(where);
  }
}

}  // namespace
}  // namespace docfeed::internal::migrate
