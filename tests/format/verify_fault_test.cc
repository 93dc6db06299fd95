// Fault injection through the Env seam for `verify` and Dataset::Open: an I/O error or a short
// read (the file seen cut to half) at every read gives an error naming the file, never a crash
// and never a pass. Neither writes anything.
#include <gtest/gtest.h>

#include <string>

#include "base/fault_env.h"
#include "base/file.h"
#include "format/dataset.h"
#include "format/inspect.h"
#include "format/verify.h"
#include "pack/packer.h"
#include "pack/test_folder.h"
#include "testing/fault_sweep.h"
#include "testing/temp_dir.h"

namespace docfeed::internal {
namespace {

using testing::Mentions;
using RF = FaultInjectionEnv::ReadFault;

class VerifyFaultTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::MakeSmallFolder(dir_.Join("src"));
    PackOptions o;
    o.source = dir_.Join("src");
    o.output = out_;
    o.threads = 1;
    o.max_file_bytes = 600;  // several data files
    ASSERT_TRUE(Pack(o).ok());
  }

  testing::TempDir dir_;
  std::string out_ = dir_.Join("out");
  FaultInjectionEnv env_{Env::Default()};
};

TEST_F(VerifyFaultTest, EveryReadFaultIsAProblemNamingTheFile) {
  const testing::IoCounts io = testing::CountIo(env_, [&] { return VerifyDataset(out_, &env_); });
  EXPECT_EQ(io.writes, 0u);
  ASSERT_GT(io.reads, 5u);
  testing::SweepReadFaults(env_, io.reads, [&](RF, uint64_t, const std::string& where) {
    Status s = VerifyDataset(out_, &env_);
    ASSERT_FALSE(s.ok()) << where;
    EXPECT_TRUE(Mentions(s, BaseName(env_.fault_path())))
        << where << " of " << env_.fault_path() << ": " << s.ToString();
  });
}

TEST_F(VerifyFaultTest, EveryReadFaultWhileOpeningIsAnErrorNamingTheFile) {
  const testing::IoCounts io =
      testing::CountIo(env_, [&] { return Dataset::Open(out_, &env_).status(); });
  ASSERT_GT(io.reads, 3u);
  testing::SweepReadFaults(env_, io.reads, [&](RF fault, uint64_t j, const std::string& where) {
    Status s = Dataset::Open(out_, &env_).status();
    ASSERT_FALSE(s.ok()) << where;
    EXPECT_TRUE(Mentions(s, BaseName(env_.fault_path())))
        << where << " of " << env_.fault_path() << ": " << s.ToString();
    env_.Reset();
    env_.FailRead(j, fault);
    EXPECT_FALSE(InspectDataset(out_, &env_).ok()) << where;
  });
}

}  // namespace
}  // namespace docfeed::internal
