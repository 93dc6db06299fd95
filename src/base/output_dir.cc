#include "base/output_dir.h"

#include <cctype>
#include <utility>
#include <vector>

#include "base/file.h"

namespace docfeed::internal {
namespace {

// True for `BaseName(output) + tag + digits`.
bool IsLeftoverName(const std::string& name, const std::string& prefix) {
  if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) return false;
  for (size_t i = prefix.size(); i < name.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(name[i]))) return false;
  }
  return true;
}

// The fallback of PlaceOutput where the file system cannot exchange two paths.
Status ReplaceByTwoRenames(Env* env, const std::string& work, const std::string& output) {
  const std::string old = TempSibling(output, "old");
  DOCFEED_RETURN_IF_ERROR(env->RenameNoReplace(output, old));
  Status placed = env->RenameNoReplace(work, output);
  if (!placed.ok()) {
    Status restored = env->RenameNoReplace(old, output);
    if (!restored.ok()) {
      return placed.WithContext("the old " + output + " could not be put back (" +
                                restored.ToString() + "); it is at " + old +
                                " and the next run to " + output + " restores it");
    }
    return placed;
  }
  // OUT is the new output from here on: a leftover OUT.old-PID is removed by the next run.
  env->RemoveAll(old).IgnoreError();
  return Status::Ok();
}

}  // namespace

std::string OutputLockPath(const std::string& output) { return output + ".lock"; }

std::string TempSibling(const std::string& output, const char* tag) {
  return output + "." + tag + "-" + std::to_string(CurrentProcessId());
}

Result<OutputLock> OutputLock::Acquire(Env* env, const std::string& output) {
  // The directories above the output, made as `mkdir -p` would (datasets' save_to_disk does
  // too): the lock file and the work directory are their children.
  std::vector<std::string> missing;
  for (std::string dir = ParentPath(output); !env->PathExists(dir);) {
    missing.push_back(dir);
    std::string up = ParentPath(dir);
    if (up == dir) break;  // "." or "/" that the Env does not know: the CreateDirectory errs
    dir = std::move(up);
  }
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
    DOCFEED_RETURN_IF_ERROR(env->CreateDirectory(*it));
  }
  OutputLock held;
  held.env_ = env;
  DOCFEED_ASSIGN_OR_RETURN(held.lock_, env->LockFile(OutputLockPath(output)));
  CleanLeftovers(env, output);
  return held;
}

Status OutputLock::Release() {
  if (lock_ == nullptr) return Status::Ok();
  return env_->UnlockFile(std::move(lock_));
}

void CleanLeftovers(Env* env, const std::string& output) {
  const std::string parent = ParentPath(output);
  const std::string base = BaseName(output);
  Result<std::vector<std::string>> names = env->ListDirectory(parent);
  if (!names.ok()) return;
  for (const std::string& name : *names) {
    const std::string path = JoinPath(parent, name);
    if (IsLeftoverName(name, base + ".old-") && !env->PathExists(output) &&
        env->RenameNoReplace(path, output).ok()) {
      continue;  // the old output of a replacement killed between its renames, back in place
    }
    if (IsLeftoverName(name, base + ".old-") || IsLeftoverName(name, base + ".partial-")) {
      env->RemoveAll(path).IgnoreError();
    }
  }
}

Status PlaceOutput(Env* env, const std::string& work, const std::string& output, bool overwrite,
                   const ReplaceCheck& check) {
  if (!overwrite || env->GetFileType(output) == FileType::kMissing) {
    Status renamed = env->RenameNoReplace(work, output);
    if (renamed.code() == StatusCode::kAlreadyExists) {
      return AlreadyExistsError(output + " appeared while this run was writing it; it was " +
                                "left as it is (pass --overwrite to replace it)");
    }
    return renamed;
  }
  DOCFEED_RETURN_IF_ERROR(check(output));
  Status swapped = env->ExchangePaths(work, output);
  if (swapped.ok()) {
    env->RemoveAll(work).IgnoreError();  // the old output; a leftover goes with the next run
    return Status::Ok();
  }
  if (swapped.code() != StatusCode::kUnsupported) return swapped;
  return ReplaceByTwoRenames(env, work, output);
}

}  // namespace docfeed::internal
