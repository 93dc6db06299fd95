// How pack, migrate and synth write a directory output OUT: one writer at a time, work in a
// sibling, and a placement that never removes what the run did not create.
//
//   OutputLock::Acquire(env, OUT)   makes the directories above OUT that are missing (mkdir
//                                   -p), takes OUT.lock (Env::LockFile) for the whole run: a
//                                   second writer of the same OUT, in any process, fails at once;
//                                   then cleans what killed runs left (CleanLeftovers)
//   ... the run writes its work directory (OUT.partial-PID, or migrate's resumable OUT.partial)
//   PlaceOutput(env, work, OUT, ...) moves the finished work to OUT
//   OutputLock::Release()           removes OUT.lock
//
// Without overwrite, placement is a no-replace rename: anything that appeared at OUT during the
// run (a user's directory, another tool's output) stays as it is and the run fails naming it.
// With overwrite, what is at OUT must pass the caller's check (a docfeed dataset, an empty
// directory: the caller says) right before it is replaced, and the replacement is one atomic
// exchange where the file system has one, so OUT is the old or the new output at every instant.
#ifndef DOCFEED_BASE_OUTPUT_DIR_H_
#define DOCFEED_BASE_OUTPUT_DIR_H_

#include <functional>
#include <memory>
#include <string>

#include "base/env.h"
#include "docfeed/status.h"

namespace docfeed::internal {

// The lock file of output `output`: `output` + ".lock".
std::string OutputLockPath(const std::string& output);

// A held OUT.lock. Move-only; destroying it releases the lock but leaves the file (a later run
// takes it), Release() also removes it. Not thread-safe.
class OutputLock {
 public:
  // Takes the lock of `output` (FailedPrecondition naming the lock file when another run holds
  // it), then CleanLeftovers.
  static Result<OutputLock> Acquire(Env* env, const std::string& output);

  OutputLock() = default;
  OutputLock(OutputLock&&) noexcept = default;
  OutputLock& operator=(OutputLock&&) noexcept = default;
  ~OutputLock() = default;

  Status Release();

 private:
  Env* env_ = nullptr;
  std::unique_ptr<FileLock> lock_;
};

// `output` + "." + tag + "-" + this process's id: OUT.partial-PID, OUT.old-PID.
std::string TempSibling(const std::string& output, const char* tag);

// Cleans what runs killed while writing `output` left next to it. REQUIRES: the caller holds
// `output`'s lock, so no live docfeed run owns any of them. Removes every OUT.partial-N and
// OUT.old-N (N digits), except that an OUT.old-N with nothing at OUT, the old output of a run
// killed between the two renames of a replacement without exchange, is put back at OUT.
// Best effort: what cannot be removed stays for a later run.
void CleanLeftovers(Env* env, const std::string& output);

// Accepts (OK) or refuses (an error naming `path` and what is there) the replacement of what is
// at `path` by --overwrite.
using ReplaceCheck = std::function<Status(const std::string& path)>;

// Moves the finished directory `work` to `output`. REQUIRES: the caller holds `output`'s lock.
// - Nothing at `output`, or !overwrite: a no-replace rename; AlreadyExists naming `output` when
//   something is there (it appeared during the run when the caller checked at the start).
// - overwrite and something at `output`: `check(output)` first; then an atomic exchange, after
//   which the old output (now at `work`) is removed, best effort. Where the file system cannot
//   exchange: `output` is renamed to OUT.old-PID, `work` to `output`, and OUT.old-PID removed; if
//   the second rename fails the old output is renamed back, and if even that fails the error
//   says where it lies (CleanLeftovers puts it back on the next run).
Status PlaceOutput(Env* env, const std::string& work, const std::string& output, bool overwrite,
                   const ReplaceCheck& check);

}  // namespace docfeed::internal

#endif  // DOCFEED_BASE_OUTPUT_DIR_H_
