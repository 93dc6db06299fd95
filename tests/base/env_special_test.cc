// The Env's guards (issue #14): whole-file reads of regular files only and within a size
// limit, found without blocking on a FIFO; the no-replace rename; ListTree's entry types; file
// locks within one process and across processes. POSIX and MemEnv where both apply.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <string>
#include <vector>

#include "base/env.h"
#include "base/file.h"
#include "base/mem_env.h"
#include "testing/temp_dir.h"

namespace docfeed::internal {
namespace {

bool Mentions(const Status& s, std::string_view what) {
  return s.message().find(what) != std::string_view::npos;
}

// Runs `read` on another thread; if it is still blocked after a few seconds (the bug: a FIFO
// waited on for a writer), opens the FIFO's write end so the read returns, and fails.
Status ReadWithoutBlocking(const std::string& fifo, std::function<Status()> read) {
  std::future<Status> done = std::async(std::launch::async, std::move(read));
  if (done.wait_for(std::chrono::seconds(5)) == std::future_status::ready) return done.get();
  ADD_FAILURE() << "the read of " << fifo << " blocked waiting for a writer";
  Env::Default()->WriteTextFile(fifo, "").IgnoreError();  // unblocks the reader's open
  done.get().IgnoreError();
  return InternalError("blocked");
}

TEST(PosixEnvGuardTest, AFifoIsRefusedWithoutWaitingForAWriter) {
  testing::TempDir dir;
  const std::string fifo = dir.Join("pipe.png");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  Env* env = Env::Default();
  std::vector<Status> results;
  results.push_back(ReadWithoutBlocking(fifo, [&] { return env->ReadFile(fifo).status(); }));
  results.push_back(ReadWithoutBlocking(fifo, [&] { return env->MapFile(fifo).status(); }));
  std::vector<uint8_t> out(4);
  results.push_back(ReadWithoutBlocking(fifo, [&] { return env->ReadAt(fifo, 0, out); }));
  for (const Status& s : results) {
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
    EXPECT_TRUE(Mentions(s, fifo) && Mentions(s, "FIFO")) << s.ToString();
  }
}

TEST(PosixEnvGuardTest, DevicesAndDirectoriesAreRefusedBeforeAnyRead) {
  testing::TempDir dir;
  Env* env = Env::Default();
  const std::string link = dir.Join("zero.jpg");
  ASSERT_EQ(::symlink("/dev/zero", link.c_str()), 0);  // the metadata row
  for (const std::string& path : {std::string("/dev/zero"), link}) {
    Status s = env->ReadFile(path).status();
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
    EXPECT_TRUE(Mentions(s, path) && Mentions(s, "character device")) << s.ToString();
  }
  Status s = env->ReadFile(dir.path()).status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  EXPECT_TRUE(Mentions(s, "directory")) << s.ToString();
}

TEST(PosixEnvGuardTest, ReadFileStopsAtItsSizeLimit) {
  testing::TempDir dir;
  Env* env = Env::Default();
  const std::string path = dir.Join("f");
  ASSERT_TRUE(env->WriteTextFile(path, std::string(1000, 'x')).ok());
  EXPECT_EQ(env->ReadFile(path, 1000)->size(), 1000u);
  Status s = env->ReadFile(path, 999).status();
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted) << s.ToString();
  EXPECT_TRUE(Mentions(s, path) && Mentions(s, "limit of 999 bytes")) << s.ToString();
  // A file whose size stat does not report (procfs says 0) is cut at the limit as it is read.
  s = env->ReadFile("/proc/self/maps", 10).status();
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted) << s.ToString();
  EXPECT_TRUE(env->ReadFile("/proc/self/maps").ok());
}

TEST(PosixEnvGuardTest, ListTreeReportsEveryKindOfEntry) {
  testing::TempDir dir;
  Env* env = Env::Default();
  ASSERT_TRUE(env->CreateDirectory(dir.Join("sub")).ok());
  ASSERT_TRUE(env->WriteTextFile(dir.Join("sub/a.png"), "a").ok());
  ASSERT_EQ(::mkfifo(dir.Join("fifo").c_str(), 0644), 0);
  ASSERT_EQ(::symlink("sub/a.png", dir.Join("to_file").c_str()), 0);
  ASSERT_EQ(::symlink("sub", dir.Join("to_dir").c_str()), 0);
  ASSERT_EQ(::symlink("nowhere", dir.Join("dangling").c_str()), 0);
  Result<std::vector<TreeEntry>> tree = env->ListTree(dir.path());
  ASSERT_TRUE(tree.ok()) << tree.status().ToString();
  std::vector<std::string> seen;
  for (const TreeEntry& e : *tree) {
    seen.push_back(e.path + ":" + FileTypeName(e.type) + ">" + FileTypeName(e.target));
  }
  EXPECT_EQ(seen, (std::vector<std::string>{
                      "dangling:symbolic link>missing file", "fifo:FIFO>missing file",
                      "sub/a.png:regular file>missing file", "to_dir:symbolic link>directory",
                      "to_file:symbolic link>regular file"}));
  EXPECT_EQ(*env->ListFilesRecursive(dir.path()),
            (std::vector<std::string>{"sub/a.png", "to_file"}));
  EXPECT_EQ(env->GetFileType(dir.Join("to_dir")), FileType::kSymlink);
  EXPECT_EQ(env->GetFileType(dir.Join("none")), FileType::kMissing);
}

void ExpectNoReplaceRename(Env* env, const std::string& root) {
  ASSERT_TRUE(env->CreateDirectory(JoinPath(root, "new")).ok());
  ASSERT_TRUE(env->WriteTextFile(JoinPath(root, "new/x"), "new").ok());
  ASSERT_TRUE(env->CreateDirectory(JoinPath(root, "user")).ok());
  ASSERT_TRUE(env->WriteTextFile(JoinPath(root, "user/notes.txt"), "mine").ok());
  ASSERT_TRUE(env->CreateDirectory(JoinPath(root, "empty")).ok());
  ASSERT_TRUE(env->WriteTextFile(JoinPath(root, "file"), "f").ok());
  for (const char* target : {"user", "empty", "file"}) {
    Status s = env->RenameNoReplace(JoinPath(root, "new"), JoinPath(root, target));
    EXPECT_EQ(s.code(), StatusCode::kAlreadyExists) << target << ": " << s.ToString();
    EXPECT_TRUE(Mentions(s, JoinPath(root, target))) << s.ToString();
  }
  EXPECT_EQ(*env->ReadTextFile(JoinPath(root, "user/notes.txt")), "mine");
  EXPECT_EQ(*env->ReadTextFile(JoinPath(root, "new/x")), "new");
  ASSERT_TRUE(env->RenameNoReplace(JoinPath(root, "new"), JoinPath(root, "placed")).ok());
  EXPECT_EQ(*env->ReadTextFile(JoinPath(root, "placed/x")), "new");
}

TEST(PosixEnvGuardTest, RenameNoReplaceNeverReplaces) {
  testing::TempDir dir;
  ExpectNoReplaceRename(Env::Default(), dir.path());
}

TEST(MemEnvGuardTest, RenameNoReplaceNeverReplaces) {
  MemEnv env;
  ASSERT_TRUE(env.CreateDirectory("/r").ok());
  ExpectNoReplaceRename(&env, "/r");
}

TEST(MemEnvGuardTest, ReadsRefuseDirectoriesAndStopAtTheLimit) {
  MemEnv env;
  ASSERT_TRUE(env.CreateDirectory("/d").ok());
  ASSERT_TRUE(env.WriteTextFile("/d/f", "12345").ok());
  EXPECT_EQ(env.ReadFile("/d").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(env.MapFile("/d").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(env.ReadFile("/d/f", 4).status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(env.ReadFile("/d/f", 5)->size(), 5u);
}

void ExpectExclusiveLock(Env* env, const std::string& path) {
  Result<std::unique_ptr<FileLock>> first = env->LockFile(path);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  Status second = env->LockFile(path).status();
  EXPECT_EQ(second.code(), StatusCode::kFailedPrecondition) << second.ToString();
  EXPECT_TRUE(Mentions(second, path)) << second.ToString();
  ASSERT_TRUE(env->UnlockFile(std::move(first).value()).ok());
  EXPECT_FALSE(env->PathExists(path));  // UnlockFile removes the file
  {
    Result<std::unique_ptr<FileLock>> again = env->LockFile(path);
    ASSERT_TRUE(again.ok()) << again.status().ToString();
  }  // destroyed without UnlockFile: released, the file stays
  EXPECT_TRUE(env->PathExists(path));
  EXPECT_TRUE(env->LockFile(path).ok());
}

TEST(PosixEnvGuardTest, LockFileIsExclusiveWithinAProcess) {
  testing::TempDir dir;
  ExpectExclusiveLock(Env::Default(), dir.Join("out.lock"));
}

TEST(MemEnvGuardTest, LockFileIsExclusive) {
  MemEnv env;
  ExpectExclusiveLock(&env, "/out.lock");
}

TEST(PosixEnvGuardTest, LockFileIsExclusiveAcrossProcessesAndNamesTheHolder) {
  testing::TempDir dir;
  const std::string path = dir.Join("out.lock");
  Result<std::unique_ptr<FileLock>> held = Env::Default()->LockFile(path);
  ASSERT_TRUE(held.ok()) << held.status().ToString();
  const pid_t child = ::fork();
  if (child == 0) {
    Status s = Env::Default()->LockFile(path).status();
    const bool named = Mentions(s, "pid " + std::to_string(::getppid()));
    ::_exit(s.code() == StatusCode::kFailedPrecondition && named ? 0 : 1);
  }
  int wstatus = 0;
  ASSERT_EQ(::waitpid(child, &wstatus, 0), child);
  EXPECT_TRUE(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0);
  ASSERT_TRUE(Env::Default()->UnlockFile(std::move(held).value()).ok());
}

}  // namespace
}  // namespace docfeed::internal
