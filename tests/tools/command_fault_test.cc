// Fault injection through the Env seam for `docfeed preprocess` and `docfeed bench`, run through
// their command entry points (tools/docfeed/commands.h) with a FaultInjectionEnv over the real
// disk:
// - preprocess: an I/O error or ENOSPC at every write and a crash at every write leave OUT as it
//   was (an older file there) or the whole new file, never half of one; every read fault, and
//   every write fault, is exit 1 with an error naming the file;
// - bench (reads only): an I/O error or a short read at every read index is exit 1 naming the
//   file, or a complete run when the fault lands where the run does not need it; never a crash;
// - merge: an I/O error or ENOSPC at every write and every read fault is exit 1 naming the file
//   with no OUT; a crash at every write leaves no OUT or the complete merge, and the rerun works.
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "base/fault_env.h"
#include "base/file.h"
#include "codec/codec.h"
#include "commands.h"
#include "format/verify.h"
#include "pack/packer.h"
#include "pack/test_folder.h"
#include "testing/fault_sweep.h"
#include "testing/temp_dir.h"

namespace docfeed::internal {
namespace {

using testing::Entries;
using RF = FaultInjectionEnv::ReadFault;
using WF = FaultInjectionEnv::WriteFault;

// A command's exit code and what it printed to stderr.
struct Outcome {
  int rc = 0;
  std::string err;
};

Outcome RunCommand(int (*command)(const tools::Args&, Env*), const std::vector<std::string>& args,
                   Env* env) {
  const tools::Args views(args.begin(), args.end());
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  Outcome o;
  o.rc = command(views, env);
  o.err = ::testing::internal::GetCapturedStderr();
  ::testing::internal::GetCapturedStdout();
  return o;
}

bool Names(const Outcome& o, const std::string& what) {
  return o.err.find(what) != std::string::npos;
}

class PreprocessFaultTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::WriteBytes(image_, *EncodePng(testing::Gradient(40, 30, 3, 5)));
    args_ = {image_, "--preset", "donut", "--size", "32x24", "-o", out_};
    // The new output, from a clean run; then OUT is reset to an older file before each case.
    Outcome clean = RunCommand(tools::RunPreprocess, args_, Env::Default());
    ASSERT_EQ(clean.rc, 0) << clean.err;
    fresh_ = ReadFile(out_).value();
    ASSERT_GT(fresh_.size(), 128u);
  }

  void PutOldOutput() { ASSERT_TRUE(WriteTextFile(out_, "an older output").ok()); }

  // OUT is the older file or the whole new one, whatever happened.
  void ExpectOldOrNew(const std::string& where, bool allow_new) {
    Result<std::vector<uint8_t>> now = ReadFile(out_);
    ASSERT_TRUE(now.ok()) << where << ": OUT is gone: " << now.status().ToString();
    const std::string text(now->begin(), now->end());
    if (text == "an older output") return;
    EXPECT_TRUE(allow_new) << where << ": OUT changed although the run failed";
    EXPECT_EQ(*now, fresh_) << where << ": OUT is neither the old file nor the whole new one";
  }

  testing::TempDir dir_;
  const std::string image_ = dir_.Join("page.png");
  const std::string out_ = dir_.Join("out.npy");
  std::vector<std::string> args_;
  std::vector<uint8_t> fresh_;
  FaultInjectionEnv env_{Env::Default()};
};

TEST_F(PreprocessFaultTest, EveryWriteErrorFailsNamingTheFileAndLeavesTheOldOutput) {
  PutOldOutput();
  const testing::IoCounts io = testing::CountIo(env_, [&] {
    Outcome o = RunCommand(tools::RunPreprocess, args_, &env_);
    return o.rc == 0 ? Status::Ok() : InternalError(o.err);
  });
  ASSERT_GE(io.writes, 4u);  // create, append, sync, close, rename
  ASSERT_EQ(ReadFile(out_).value(), fresh_);
  testing::SweepWriteFaults(env_, io.writes, [&](WF fault, uint64_t, const std::string& where) {
    PutOldOutput();  // through the real Env: not counted, the armed fault stays
    Outcome o = RunCommand(tools::RunPreprocess, args_, &env_);
    EXPECT_EQ(o.rc, 1) << where << ": " << o.err;
    EXPECT_TRUE(Names(o, "out.npy")) << where << ": " << o.err;
    EXPECT_TRUE(Names(o, "injected at write")) << where << ": " << o.err;
    EXPECT_EQ(fault == WF::kNoSpace, Names(o, "No space left")) << where << ": " << o.err;
    ExpectOldOrNew(where, /*allow_new=*/false);
    EXPECT_EQ(Entries(dir_.path()), (std::vector<std::string>{"out.npy", "page.png"})) << where;
  });
}

TEST_F(PreprocessFaultTest, ACrashAtEveryWriteLeavesTheOldOutputOrTheWholeNewOne) {
  PutOldOutput();
  const testing::IoCounts io = testing::CountIo(env_, [&] {
    Outcome o = RunCommand(tools::RunPreprocess, args_, &env_);
    return o.rc == 0 ? Status::Ok() : InternalError(o.err);
  });
  for (uint64_t i = 0; i <= io.writes; ++i) {
    const std::string where = "crash at write " + std::to_string(i);
    PutOldOutput();
    env_.Reset();
    env_.CrashAfterWrites(i);
    Outcome o = RunCommand(tools::RunPreprocess, args_, &env_);
    EXPECT_EQ(o.rc, i < io.writes ? 1 : 0) << where << ": " << o.err;
    ExpectOldOrNew(where, /*allow_new=*/i >= io.writes);
    // A crash may leave OUT.partial (never OUT half-written); the next run replaces it.
    RemoveAll(out_ + ".partial").IgnoreError();
  }
}

TEST_F(PreprocessFaultTest, EveryReadFaultFailsNamingTheImageAndWritesNothing) {
  PutOldOutput();
  const testing::IoCounts io = testing::CountIo(env_, [&] {
    Outcome o = RunCommand(tools::RunPreprocess, args_, &env_);
    return o.rc == 0 ? Status::Ok() : InternalError(o.err);
  });
  ASSERT_GE(io.reads, 1u);
  testing::SweepReadFaults(env_, io.reads, [&](RF, uint64_t, const std::string& where) {
    PutOldOutput();
    Outcome o = RunCommand(tools::RunPreprocess, args_, &env_);
    EXPECT_EQ(o.rc, 1) << where << ": " << o.err;
    EXPECT_TRUE(Names(o, "page.png")) << where << ": " << o.err;
    ExpectOldOrNew(where, /*allow_new=*/false);
  });
}

class BenchFaultTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Pages only (no metadata.jsonl): the loader reads images, and bench takes no labels.
    ASSERT_TRUE(CreateDirectory(dir_.Join("src")).ok());
    for (int i = 0; i < 5; ++i) {
      testing::WriteBytes(dir_.Join("src/p" + std::to_string(i) + ".png"),
                          *EncodePng(testing::Gradient(40 + i, 30, 3, i)));
    }
    PackOptions o;
    o.source = dir_.Join("src");
    o.output = dataset_;
    o.threads = 1;
    ASSERT_TRUE(Pack(o).ok());
    // --size: the packed size would be read by ReadDatasetInfo, which takes no Env.
    args_ = {dataset_, "--threads",  "1", "--batch-size", "2", "--size",
             "32x24",  "--prefetch", "1", "--baseline",   "2", "--json"};
  }

  testing::TempDir dir_;
  const std::string dataset_ = dir_.Join("ds");
  std::vector<std::string> args_;
  FaultInjectionEnv env_{Env::Default()};
};

TEST_F(BenchFaultTest, EveryReadFaultIsAnErrorNamingTheFileNeverACrash) {
  const testing::IoCounts io = testing::CountIo(env_, [&] {
    Outcome o = RunCommand(tools::RunBench, args_, &env_);
    return o.rc == 0 ? Status::Ok() : InternalError(o.err);
  });
  ASSERT_GE(io.reads, 4u);
  EXPECT_EQ(io.writes, 0u) << "bench only reads";
  int failed = 0;
  testing::SweepReadFaults(env_, io.reads, [&](RF, uint64_t, const std::string& where) {
    Outcome o = RunCommand(tools::RunBench, args_, &env_);
    if (o.rc == 0) return;  // the fault hit a read the run could do without (look-ahead)
    ++failed;
    EXPECT_EQ(o.rc, 1) << where << ": " << o.err;
    EXPECT_TRUE(Names(o, dataset_)) << where << ": " << o.err;
    EXPECT_TRUE(Names(o, BaseName(env_.fault_path()))) << where << ": " << o.err;
  });
  EXPECT_GT(failed, static_cast<int>(io.reads) / 2) << "most faults must fail the run";
}

// docfeed merge through RunMerge(args, env): three parts of a small folder.
class MergeFaultTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::MakeSmallFolder(dir_.Join("src"));
    args_.clear();
    for (uint32_t i = 0; i < 3; ++i) {
      PackOptions o;
      o.source = dir_.Join("src");
      o.output = dir_.Join("part" + std::to_string(i));
      o.threads = 1;
      o.part = {i, 3};
      ASSERT_TRUE(Pack(o).ok());
      args_.push_back(o.output);
    }
    args_.insert(args_.end(), {"-o", out_});
  }

  Outcome Run() { return RunCommand(tools::RunMerge, args_, &env_); }

  // What is next to the parts besides them: OUT only if complete and verified.
  void ExpectNoOutputOrTheCompleteOne(const std::string& where) {
    for (const std::string& name : Entries(dir_.path())) {
      if (name == "src" || name.rfind("part", 0) == 0) continue;
      if (name == "out") {
        EXPECT_TRUE(VerifyDataset(out_).ok()) << where;
        continue;
      }
      // A crashed run's work directory is never one datasets.load_from_disk opens.
      ASSERT_NE(name.find("out.partial-"), std::string::npos) << where << ": " << name;
      if (!testing::HasManifest(dir_.Join(name))) {
        EXPECT_FALSE(PathExists(dir_.Join(name + "/state.json"))) << where << ": " << name;
      }
    }
  }

  testing::TempDir dir_;
  const std::string out_ = dir_.Join("out");
  std::vector<std::string> args_;
  FaultInjectionEnv env_{Env::Default()};
};

TEST_F(MergeFaultTest, EveryWriteErrorFailsNamingTheFileAndLeavesNoOutput) {
  const testing::IoCounts io = testing::CountIo(env_, [&] {
    Outcome o = Run();
    return o.rc == 0 ? Status::Ok() : InternalError(o.err);
  });
  ASSERT_GE(io.writes, 8u);
  ASSERT_TRUE(RemoveAll(out_).ok());
  testing::SweepWriteFaults(env_, io.writes, [&](WF fault, uint64_t, const std::string& where) {
    Outcome o = Run();
    EXPECT_EQ(o.rc, 1) << where << ": " << o.err;
    EXPECT_TRUE(Names(o, "injected at write")) << where << ": " << o.err;
    EXPECT_TRUE(Names(o, BaseName(env_.fault_path()))) << where << ": " << o.err;
    EXPECT_EQ(fault == WF::kNoSpace, Names(o, "No space left")) << where << ": " << o.err;
    EXPECT_FALSE(PathExists(out_)) << where;
    ExpectNoOutputOrTheCompleteOne(where);
  });
}

TEST_F(MergeFaultTest, ACrashAtEveryWriteLeavesNoOutputOrTheCompleteOneAndTheRerunWorks) {
  const testing::IoCounts io = testing::CountIo(env_, [&] {
    Outcome o = Run();
    return o.rc == 0 ? Status::Ok() : InternalError(o.err);
  });
  ASSERT_TRUE(RemoveAll(out_).ok());
  for (uint64_t i = 0; i <= io.writes; ++i) {
    const std::string where = "crash at write " + std::to_string(i);
    env_.Reset();
    env_.CrashAfterWrites(i);
    Outcome o = Run();
    EXPECT_EQ(o.rc, i < io.writes ? 1 : 0) << where << ": " << o.err;
    ExpectNoOutputOrTheCompleteOne(where);
    env_.Reset();
    Outcome again = Run();  // clears the leftovers, merges (or keeps the complete merge)
    ASSERT_EQ(again.rc, 0) << where << ": " << again.err;
    EXPECT_TRUE(VerifyDataset(out_).ok()) << where;
    EXPECT_EQ(Entries(dir_.path()),
              (std::vector<std::string>{"out", "part0", "part1", "part2", "src"}))
        << where;
    ASSERT_TRUE(RemoveAll(out_).ok());
  }
}

TEST_F(MergeFaultTest, EveryReadFaultFailsNamingTheFileAndLeavesNoOutput) {
  const testing::IoCounts io = testing::CountIo(env_, [&] {
    Outcome o = Run();
    return o.rc == 0 ? Status::Ok() : InternalError(o.err);
  });
  ASSERT_GE(io.reads, 6u);
  ASSERT_TRUE(RemoveAll(out_).ok());
  int failed = 0;
  testing::SweepReadFaults(env_, io.reads, [&](RF, uint64_t, const std::string& where) {
    Outcome o = Run();
    ExpectNoOutputOrTheCompleteOne(where);
    if (o.rc == 0) {  // the fault hit a read the run does without (the leftovers' listing)
      ASSERT_TRUE(RemoveAll(out_).ok());
      return;
    }
    ++failed;
    EXPECT_EQ(o.rc, 1) << where << ": " << o.err;
    EXPECT_TRUE(Names(o, BaseName(env_.fault_path()))) << where << ": " << o.err;
    EXPECT_FALSE(PathExists(out_)) << where;
  });
  EXPECT_GT(failed, static_cast<int>(io.reads)) << "most faults must fail the run";
}

}  // namespace
}  // namespace docfeed::internal
