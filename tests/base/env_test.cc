// The Env seam: the POSIX env's short-read and error-code contracts, MemEnv's file system and
// FaultInjectionEnv's counting, faults and crash semantics.
#include "base/env.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "base/fault_env.h"
#include "base/file.h"
#include "base/mem_env.h"
#include "testing/temp_dir.h"

namespace docfeed::internal {
namespace {

std::string Text(std::span<const uint8_t> b) { return std::string(b.begin(), b.end()); }

bool Mentions(const Status& s, std::string_view what) {
  return s.message().find(what) != std::string_view::npos;
}

// --- POSIX --------------------------------------------------------------------------------

TEST(PosixEnvTest, ReadAtReadsTheRange) {
  testing::TempDir dir;
  Env* env = Env::Default();
  const std::string path = dir.Join("f");
  ASSERT_TRUE(env->WriteTextFile(path, "0123456789").ok());
  std::vector<uint8_t> out(4);
  ASSERT_TRUE(env->ReadAt(path, 3, out).ok());
  EXPECT_EQ(Text(out), "3456");
}

TEST(PosixEnvTest, ReadAtOnAFileTruncatedAfterItsSizeWasTakenIsAShortReadNamingIt) {
  testing::TempDir dir;
  Env* env = Env::Default();
  const std::string path = dir.Join("shrinks.bin");
  ASSERT_TRUE(env->WriteTextFile(path, std::string(1000, 'x')).ok());
  Result<uint64_t> size = env->FileSize(path);
  ASSERT_TRUE(size.ok());
  ASSERT_EQ(::truncate(path.c_str(), 600), 0);  // another process cuts the file
  std::vector<uint8_t> out(400);
  Status s = env->ReadAt(path, *size - 400, out);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kIOError);
  EXPECT_TRUE(Mentions(s, path)) << s.ToString();
  EXPECT_TRUE(Mentions(s, "short read")) << s.ToString();
  EXPECT_TRUE(Mentions(s, "0 of 400")) << s.ToString();
  // Partly inside: the bytes that exist are reported.
  s = env->ReadAt(path, 500, out);
  EXPECT_TRUE(Mentions(s, "100 of 400")) << s.ToString();
}

TEST(PosixEnvTest, MissingFilesAreNotFoundNamingThePath) {
  testing::TempDir dir;
  Env* env = Env::Default();
  const std::string path = dir.Join("missing");
  EXPECT_EQ(env->ReadFile(path).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(env->MapFile(path).status().code(), StatusCode::kNotFound);
  std::vector<uint8_t> out(1);
  Status s = env->ReadAt(path, 0, out);
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_TRUE(Mentions(s, path));
  EXPECT_EQ(env->RemoveFile(path).code(), StatusCode::kNotFound);
  EXPECT_TRUE(env->RemoveAll(path).ok());
}

TEST(PosixEnvTest, WritableFileSyncAndCloseMakeBytesVisible) {
  testing::TempDir dir;
  Env* env = Env::Default();
  const std::string path = dir.Join("w");
  Result<std::unique_ptr<WritableFile>> f = env->NewWritableFile(path);
  ASSERT_TRUE(f.ok());
  ASSERT_TRUE((*f)->Append(std::string_view("abc")).ok());
  ASSERT_TRUE((*f)->Sync().ok());
  EXPECT_EQ(*env->ReadTextFile(path), "abc");
  ASSERT_TRUE((*f)->Append(std::string_view("de")).ok());
  EXPECT_EQ((*f)->size_bytes(), 5u);
  ASSERT_TRUE((*f)->Close().ok());
  ASSERT_TRUE((*f)->Close().ok());  // idempotent
  EXPECT_EQ(*env->ReadTextFile(path), "abcde");
  ASSERT_TRUE(env->RemoveFile(path).ok());
  EXPECT_FALSE(env->PathExists(path));
}

TEST(PosixEnvTest, LinkFileSharesTheFileAndRefusesAnExistingTarget) {
  testing::TempDir dir;
  Env* env = Env::Default();
  const std::string a = dir.Join("a");
  const std::string b = dir.Join("b");
  ASSERT_TRUE(env->WriteTextFile(a, "shared bytes").ok());
  ASSERT_TRUE(env->LinkFile(a, b).ok());
  EXPECT_EQ(*env->ReadTextFile(b), "shared bytes");
  ASSERT_TRUE(env->RemoveFile(a).ok());  // the second name keeps the file
  EXPECT_EQ(*env->ReadTextFile(b), "shared bytes");
  ASSERT_TRUE(env->WriteTextFile(a, "other").ok());
  Status s = env->LinkFile(a, b);
  EXPECT_EQ(s.code(), StatusCode::kAlreadyExists) << s.ToString();
  EXPECT_EQ(*env->ReadTextFile(b), "shared bytes");
  s = env->LinkFile(dir.Join("missing"), dir.Join("c"));
  EXPECT_EQ(s.code(), StatusCode::kNotFound) << s.ToString();
  EXPECT_TRUE(Mentions(s, dir.Join("missing"))) << s.ToString();
}

TEST(PosixEnvTest, LinkFileAcrossFileSystemsIsUnsupportedSoCallersCopy) {
  // /dev/shm is a tmpfs on Linux, another file system than the temporary directory's disk; where
  // it is the same one (or absent) there is nothing to check.
  Env* env = Env::Default();
  testing::TempDir dir;
  const std::string a = dir.Join("a");
  ASSERT_TRUE(env->WriteTextFile(a, "x").ok());
  const std::string other = "/dev/shm/docfeed-link-test-" + std::to_string(::getpid());
  if (!env->IsDirectory("/dev/shm")) GTEST_SKIP() << "no /dev/shm";
  Status s = env->LinkFile(a, other);
  if (s.ok()) {
    ASSERT_TRUE(env->RemoveFile(other).ok());
    GTEST_SKIP() << "/dev/shm is on the same file system here";
  }
  EXPECT_EQ(s.code(), StatusCode::kUnsupported) << s.ToString();
  EXPECT_FALSE(env->PathExists(other));
}

TEST(PosixEnvTest, MappingSurvivesMovesAndDropPages) {
  testing::TempDir dir;
  const std::string path = dir.Join("m");
  ASSERT_TRUE(WriteTextFile(path, std::string(10000, 'q')).ok());
  Result<MappedFile> a = MappedFile::Open(path);
  ASSERT_TRUE(a.ok());
  const uint8_t* data = a->bytes().data();
  MappedFile b = std::move(*a);
  EXPECT_EQ(b.bytes().data(), data);
  b.DropPages(0, 10000);
  EXPECT_EQ(b.bytes()[9999], 'q');
  EXPECT_EQ(b.path(), path);
}

// --- MemEnv -------------------------------------------------------------------------------

TEST(MemEnvTest, FilesDirectoriesAndListings) {
  MemEnv env;
  EXPECT_EQ(env.NewWritableFile("/d/a").status().code(), StatusCode::kNotFound);  // no parent
  ASSERT_TRUE(env.CreateDirectory("/d").ok());
  ASSERT_TRUE(env.CreateDirectory("/d/sub").ok());
  ASSERT_TRUE(env.CreateDirectory("/d/sub").ok());  // exists: fine
  ASSERT_TRUE(env.WriteTextFile("/d/b.txt", "bb").ok());
  ASSERT_TRUE(env.WriteTextFile("/d/sub/a.txt", "a").ok());
  EXPECT_TRUE(env.IsDirectory("/d/sub"));
  EXPECT_FALSE(env.IsDirectory("/d/b.txt"));
  EXPECT_TRUE(env.PathExists("/d/b.txt"));
  EXPECT_EQ(*env.FileSize("/d/b.txt"), 2u);
  EXPECT_EQ(*env.ListFilesRecursive("/d"), (std::vector<std::string>{"b.txt", "sub/a.txt"}));
  std::vector<std::string> names = *env.ListDirectory("/d");
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"b.txt", "sub"}));
  EXPECT_EQ(env.ReadFile("/d/none").status().code(), StatusCode::kNotFound);
  std::vector<uint8_t> out(3);
  Status s = env.ReadAt("/d/b.txt", 0, out);
  EXPECT_EQ(s.code(), StatusCode::kIOError);
  EXPECT_TRUE(Mentions(s, "/d/b.txt"));
  ASSERT_TRUE(env.ReadAt("/d/b.txt", 1, std::span<uint8_t>(out).first(1)).ok());
  EXPECT_EQ(out[0], 'b');
}

TEST(MemEnvTest, RenameMovesTreesAtomicallyAndReplacesFiles) {
  MemEnv env;
  ASSERT_TRUE(env.CreateDirectory("/out.tmp").ok());
  ASSERT_TRUE(env.CreateDirectory("/out.tmp/x").ok());
  ASSERT_TRUE(env.WriteTextFile("/out.tmp/x/f", "data").ok());
  ASSERT_TRUE(env.Rename("/out.tmp", "/out").ok());
  EXPECT_FALSE(env.PathExists("/out.tmp"));
  EXPECT_EQ(*env.ReadTextFile("/out/x/f"), "data");
  ASSERT_TRUE(env.WriteTextFile("/g", "new").ok());
  ASSERT_TRUE(env.Rename("/g", "/out/x/f").ok());
  EXPECT_EQ(*env.ReadTextFile("/out/x/f"), "new");
  ASSERT_TRUE(env.CreateDirectory("/busy").ok());
  ASSERT_TRUE(env.WriteTextFile("/busy/k", "").ok());
  EXPECT_FALSE(env.Rename("/out", "/busy").ok());  // non-empty target directory
  ASSERT_TRUE(env.RemoveAll("/out").ok());
  EXPECT_FALSE(env.PathExists("/out/x/f"));
  EXPECT_TRUE(env.ListFilesRecursive("/").ok());
  EXPECT_EQ(*env.ListFilesRecursive("/"), (std::vector<std::string>{"busy/k"}));
}

TEST(MemEnvTest, MappingIsASnapshotThatOutlivesRewritesAndRemoval) {
  MemEnv env;
  ASSERT_TRUE(env.WriteTextFile("/f", "first").ok());
  Result<MappedFile> mapped = env.MapFile("/f");
  ASSERT_TRUE(mapped.ok());
  ASSERT_TRUE(env.WriteTextFile("/f", "second version").ok());
  Result<std::unique_ptr<WritableFile>> appender = env.NewWritableFile("/g");
  ASSERT_TRUE(appender.ok());
  ASSERT_TRUE((*appender)->Append(std::string_view("x")).ok());
  Result<MappedFile> g = env.MapFile("/g");
  ASSERT_TRUE((*appender)->Append(std::string_view("yz")).ok());
  ASSERT_TRUE((*appender)->Close().ok());
  ASSERT_TRUE(env.RemoveFile("/f").ok());
  EXPECT_EQ(Text(mapped->bytes()), "first");
  EXPECT_EQ(Text(g->bytes()), "x");
  EXPECT_EQ(*env.ReadTextFile("/g"), "xyz");
}

// --- FaultInjectionEnv --------------------------------------------------------------------

class FaultEnvTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(mem_.CreateDirectory("/d").ok()); }
  MemEnv mem_;
  FaultInjectionEnv env_{&mem_};
};

TEST_F(FaultEnvTest, CountsReadsAndWrites) {
  ASSERT_TRUE(env_.WriteTextFile("/d/a", "abc").ok());  // create, append, close
  EXPECT_EQ(env_.writes(), 3u);
  ASSERT_TRUE(env_.ReadFile("/d/a").ok());
  ASSERT_TRUE(env_.MapFile("/d/a").ok());
  ASSERT_TRUE(env_.ListDirectory("/d").ok());
  EXPECT_EQ(env_.reads(), 3u);
  ASSERT_TRUE(env_.Rename("/d/a", "/d/b").ok());
  ASSERT_TRUE(env_.RemoveAll("/d/b").ok());
  EXPECT_EQ(env_.writes(), 5u);
  env_.Reset();
  EXPECT_EQ(env_.reads() + env_.writes(), 0u);
}

TEST_F(FaultEnvTest, LinkFileIsACountedWriteAndMemEnvHasNoLinks) {
  ASSERT_TRUE(env_.WriteTextFile("/d/a", "abc").ok());
  env_.Reset();
  // MemEnv keeps the default: no links, so a caller copies.
  EXPECT_EQ(env_.LinkFile("/d/a", "/d/b").code(), StatusCode::kUnsupported);
  EXPECT_EQ(env_.writes(), 1u);
  env_.Reset();
  env_.FailWrite(0, FaultInjectionEnv::WriteFault::kIOError);
  Status s = env_.LinkFile("/d/a", "/d/b");
  EXPECT_EQ(s.code(), StatusCode::kIOError);
  EXPECT_TRUE(Mentions(s, "/d/b")) << s.ToString();
}

TEST_F(FaultEnvTest, FailsTheNthWriteWithIOErrorOrNoSpace) {
  env_.FailWrite(1, FaultInjectionEnv::WriteFault::kNoSpace);
  Status s = env_.WriteTextFile("/d/a", "abc");  // write 1 is the append
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  EXPECT_TRUE(Mentions(s, "No space left on device")) << s.ToString();
  EXPECT_TRUE(Mentions(s, "/d/a")) << s.ToString();
  env_.Reset();
  env_.FailWrite(0, FaultInjectionEnv::WriteFault::kIOError);
  s = env_.CreateDirectory("/d/x");
  EXPECT_EQ(s.code(), StatusCode::kIOError);
  EXPECT_FALSE(mem_.PathExists("/d/x"));           // never reached the wrapped env
  EXPECT_TRUE(env_.CreateDirectory("/d/x").ok());  // only that one write fails
}

TEST_F(FaultEnvTest, FailsTheNthReadOrShortensIt) {
  ASSERT_TRUE(mem_.WriteTextFile("/d/a", "abcdefgh").ok());
  env_.FailRead(1, FaultInjectionEnv::ReadFault::kIOError);
  EXPECT_TRUE(env_.ReadFile("/d/a").ok());
  Result<std::vector<uint8_t>> failed = env_.ReadFile("/d/a");
  EXPECT_EQ(failed.status().code(), StatusCode::kIOError);
  EXPECT_TRUE(Mentions(failed.status(), "/d/a"));
  env_.Reset();
  env_.FailRead(0, FaultInjectionEnv::ReadFault::kShortRead);
  EXPECT_EQ(Text(*env_.ReadFile("/d/a")), "abcd");
  env_.Reset();
  env_.FailRead(0, FaultInjectionEnv::ReadFault::kShortRead);
  EXPECT_EQ(Text(env_.MapFile("/d/a")->bytes()), "abcd");
  env_.Reset();
  env_.FailRead(0, FaultInjectionEnv::ReadFault::kShortRead);
  std::vector<uint8_t> out(4);
  Status s = env_.ReadAt("/d/a", 2, out);
  EXPECT_TRUE(Mentions(s, "short read of /d/a: 2 of 4")) << s.ToString();
}

TEST_F(FaultEnvTest, CrashDropsUnsyncedDataAndStopsEveryLaterMutation) {
  ASSERT_TRUE(env_.WriteTextFile("/d/done", "durable").ok());                 // writes 0-2, closed
  Result<std::unique_ptr<WritableFile>> f = env_.NewWritableFile("/d/open");  // 3
  ASSERT_TRUE(f.ok());
  ASSERT_TRUE((*f)->Append(std::string_view("synced")).ok());  // 4
  ASSERT_TRUE((*f)->Sync().ok());                              // 5
  ASSERT_TRUE((*f)->Append(std::string_view("+lost")).ok());   // 6
  ASSERT_TRUE(env_.Rename("/d/open", "/d/moved").ok());        // 7 (tracked across renames)
  env_.CrashAfterWrites(8);
  Status s = (*f)->Append(std::string_view("more"));  // 8: the crash
  EXPECT_TRUE(Mentions(s, "simulated crash")) << s.ToString();
  EXPECT_TRUE(env_.crashed());
  EXPECT_EQ(*mem_.ReadTextFile("/d/moved"), "synced");
  EXPECT_EQ(*mem_.ReadTextFile("/d/done"), "durable");
  EXPECT_TRUE(Mentions(env_.CreateDirectory("/d/y"), "simulated crash"));
  EXPECT_TRUE(Mentions(env_.RemoveAll("/d/done"), "simulated crash"));
  EXPECT_TRUE(Mentions(env_.Rename("/d/done", "/d/z"), "simulated crash"));
  EXPECT_TRUE(Mentions((*f)->Close(), "simulated crash"));
  EXPECT_FALSE(mem_.PathExists("/d/y"));
  EXPECT_TRUE(mem_.PathExists("/d/done"));
  EXPECT_TRUE(env_.ReadFile("/d/done").ok());  // reads still work after the crash
}

TEST(FaultEnvPosixTest, CrashTruncatesARealFileToItsLastSync) {
  testing::TempDir dir;
  FaultInjectionEnv env(Env::Default());
  const std::string path = dir.Join("f");
  Result<std::unique_ptr<WritableFile>> f = env.NewWritableFile(path);
  ASSERT_TRUE(f.ok());
  ASSERT_TRUE((*f)->Append(std::string(2 << 20, 'a')).ok());  // past the write buffer
  ASSERT_TRUE((*f)->Sync().ok());
  ASSERT_TRUE((*f)->Append(std::string(3 << 20, 'b')).ok());  // reaches the file, unsynced
  env.CrashAfterWrites(env.writes());
  EXPECT_FALSE((*f)->Close().ok());
  f->reset();
  EXPECT_EQ(*FileSize(path), uint64_t{2} << 20);
}

TEST(FaultEnvPosixTest, NoSpaceThroughAPackLikeWriteNamesTheFile) {
  testing::TempDir dir;
  FaultInjectionEnv env(Env::Default());
  for (uint64_t i = 0; i < 3; ++i) {
    env.Reset();
    env.FailWrite(i, FaultInjectionEnv::WriteFault::kNoSpace);
    Status s = env.WriteTextFile(dir.Join("out.json"), "{}");
    EXPECT_EQ(s.code(), StatusCode::kResourceExhausted) << i;
    EXPECT_TRUE(Mentions(s, dir.Join("out.json"))) << s.ToString();
  }
}

}  // namespace
}  // namespace docfeed::internal
