#include "base/fault_env.h"

#include <algorithm>
#include <utility>

namespace docfeed::internal {
namespace {

bool IsAtOrBelow(const std::string& path, const std::string& dir) {
  return path == dir || (path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 &&
                         path[dir.size()] == '/');
}

Status CrashError(const std::string& what, const std::string& path) {
  return IOError("simulated crash: " + what + " " + path + " did not happen");
}

// A view of the first `size` bytes of another mapping.
class PrefixRegion : public MappedFile::Region {
 public:
  PrefixRegion(MappedFile file, size_t size) : file_(std::move(file)), size_(size) {}
  std::span<const uint8_t> bytes() const override { return file_.bytes().first(size_); }
  void DropPages(uint64_t offset, uint64_t length) const override {
    file_.DropPages(offset, length);
  }

 private:
  MappedFile file_;
  size_t size_;
};

}  // namespace

// A file of the wrapped Env whose reads are counted and can fail. Opened with a short-read
// fault it looks cut to half its size (as MapFile does); a short-read fault on one of its reads
// cuts that read in the middle, as if the file were truncated while it ran.
class FaultRandomAccessFile : public RandomAccessFile {
 public:
  FaultRandomAccessFile(FaultInjectionEnv* env, std::unique_ptr<RandomAccessFile> base,
                        uint64_t size)
      : env_(env), base_(std::move(base)), size_(size) {}
  Status ReadAt(uint64_t offset, std::span<uint8_t> out) const override {
    Status error;
    const auto outcome = env_->BeforeRead(path(), &error);
    if (outcome == FaultInjectionEnv::ReadOutcome::kFail) return error;
    uint64_t got = out.size();
    if (outcome == FaultInjectionEnv::ReadOutcome::kShort) got = out.size() / 2;
    if (offset + got > size_) got = offset >= size_ ? 0 : size_ - offset;
    if (got > 0) DOCFEED_RETURN_IF_ERROR(base_->ReadAt(offset, out.first(got)));
    if (got < out.size()) return ShortReadError(path(), offset, out.size(), got);
    return Status::Ok();
  }
  uint64_t size_bytes() const override { return size_; }
  const std::string& path() const override { return base_->path(); }

 private:
  FaultInjectionEnv* const env_;
  const std::unique_ptr<RandomAccessFile> base_;
  const uint64_t size_;
};

class FaultWritableFile : public WritableFile {
 public:
  FaultWritableFile(FaultInjectionEnv* env, std::unique_ptr<WritableFile> base,
                    std::shared_ptr<FaultInjectionEnv::Unsynced> unsynced)
      : env_(env), base_(std::move(base)), unsynced_(std::move(unsynced)) {}

  Status Append(std::span<const uint8_t> bytes) override {
    DOCFEED_RETURN_IF_ERROR(env_->BeforeWrite("append to", path()));
    return base_->Append(bytes);
  }
  Status Sync() override {
    DOCFEED_RETURN_IF_ERROR(env_->BeforeWrite("sync of", path()));
    DOCFEED_RETURN_IF_ERROR(base_->Sync());
    std::lock_guard<std::mutex> lock(env_->mu_);
    unsynced_->synced_bytes = base_->size_bytes();
    return Status::Ok();
  }
  Status Close() override {
    if (closed_) return Status::Ok();
    DOCFEED_RETURN_IF_ERROR(env_->BeforeWrite("close of", path()));
    DOCFEED_RETURN_IF_ERROR(base_->Close());
    closed_ = true;
    std::lock_guard<std::mutex> lock(env_->mu_);
    std::erase(env_->unsynced_, unsynced_);  // durable now
    return Status::Ok();
  }
  uint64_t size_bytes() const override { return base_->size_bytes(); }
  const std::string& path() const override { return base_->path(); }

 private:
  FaultInjectionEnv* env_;
  std::unique_ptr<WritableFile> base_;
  std::shared_ptr<FaultInjectionEnv::Unsynced> unsynced_;
  bool closed_ = false;
};

void FaultInjectionEnv::FailRead(uint64_t index, ReadFault fault) {
  std::lock_guard<std::mutex> lock(mu_);
  read_fault_index_ = index;
  read_fault_ = fault;
}

void FaultInjectionEnv::FailWrite(uint64_t index, WriteFault fault) {
  std::lock_guard<std::mutex> lock(mu_);
  write_fault_index_ = index;
  write_fault_ = fault;
}

void FaultInjectionEnv::CrashAfterWrites(uint64_t writes) {
  std::lock_guard<std::mutex> lock(mu_);
  crash_after_ = writes;
}

void FaultInjectionEnv::Reset() {
  std::lock_guard<std::mutex> lock(mu_);
  reads_ = writes_ = 0;
  read_fault_index_.reset();
  write_fault_index_.reset();
  crash_after_.reset();
  crashed_ = false;
  fault_path_.clear();
  unsynced_.clear();
}

std::string FaultInjectionEnv::fault_path() const {
  std::lock_guard<std::mutex> lock(mu_);
  return fault_path_;
}

uint64_t FaultInjectionEnv::reads() const {
  std::lock_guard<std::mutex> lock(mu_);
  return reads_;
}

uint64_t FaultInjectionEnv::writes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return writes_;
}

bool FaultInjectionEnv::crashed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return crashed_;
}

FaultInjectionEnv::ReadOutcome FaultInjectionEnv::BeforeRead(const std::string& path,
                                                             Status* error) {
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t index = reads_++;
  if (!read_fault_index_ || *read_fault_index_ != index) return ReadOutcome::kPass;
  fault_path_ = path;
  if (read_fault_ == ReadFault::kShortRead) return ReadOutcome::kShort;
  *error = IOError("cannot read " + path + ": Input/output error (injected at read " +
                   std::to_string(index) + ")");
  return ReadOutcome::kFail;
}

Status FaultInjectionEnv::BeforeWrite(const std::string& what, const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t index = writes_++;
  if (crashed_) return CrashError(what, path);
  if (crash_after_ && index >= *crash_after_) {
    crashed_ = true;
    fault_path_ = path;
    DropUnsyncedLocked();
    return CrashError(what, path);
  }
  if (write_fault_index_ && *write_fault_index_ == index) {
    fault_path_ = path;
    const std::string where = " (injected at write " + std::to_string(index) + ")";
    if (write_fault_ == WriteFault::kNoSpace) {
      return ResourceExhaustedError("cannot write " + path + ": No space left on device" + where);
    }
    return IOError(what + " " + path + ": Input/output error" + where);
  }
  return Status::Ok();
}

void FaultInjectionEnv::DropUnsyncedLocked() {
  for (const std::shared_ptr<Unsynced>& u : unsynced_) {
    if (!base_->PathExists(u->path) || base_->IsDirectory(u->path)) continue;
    Result<std::vector<uint8_t>> bytes = base_->ReadFile(u->path);
    if (!bytes.ok()) continue;
    bytes->resize(std::min<size_t>(bytes->size(), u->synced_bytes));
    base_->WriteFile(u->path, *bytes).IgnoreError();
  }
  unsynced_.clear();
}

Result<std::vector<uint8_t>> FaultInjectionEnv::ReadFile(const std::string& path,
                                                         uint64_t max_bytes) {
  Status error;
  ReadOutcome outcome = BeforeRead(path, &error);
  if (outcome == ReadOutcome::kFail) return error;
  DOCFEED_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, base_->ReadFile(path, max_bytes));
  if (outcome == ReadOutcome::kShort) bytes.resize(bytes.size() / 2);
  return bytes;
}

Status FaultInjectionEnv::ReadAt(const std::string& path, uint64_t offset, std::span<uint8_t> out) {
  Status error;
  ReadOutcome outcome = BeforeRead(path, &error);
  if (outcome == ReadOutcome::kFail) return error;
  if (outcome == ReadOutcome::kShort) {
    DOCFEED_ASSIGN_OR_RETURN(uint64_t size, base_->FileSize(path));
    const uint64_t cut = size / 2;
    if (offset + out.size() > cut) {
      const uint64_t got = offset >= cut ? 0 : cut - offset;
      if (got > 0) DOCFEED_RETURN_IF_ERROR(base_->ReadAt(path, offset, out.first(got)));
      return ShortReadError(path, offset, out.size(), got);
    }
  }
  return base_->ReadAt(path, offset, out);
}

Result<MappedFile> FaultInjectionEnv::MapFile(const std::string& path) {
  Status error;
  ReadOutcome outcome = BeforeRead(path, &error);
  if (outcome == ReadOutcome::kFail) return error;
  DOCFEED_ASSIGN_OR_RETURN(MappedFile file, base_->MapFile(path));
  if (outcome != ReadOutcome::kShort) return file;
  const size_t half = file.bytes().size() / 2;
  return MappedFile(path, std::make_unique<PrefixRegion>(std::move(file), half));
}

Result<std::unique_ptr<RandomAccessFile>> FaultInjectionEnv::NewRandomAccessFile(
    const std::string& path) {
  Status error;
  ReadOutcome outcome = BeforeRead(path, &error);
  if (outcome == ReadOutcome::kFail) return error;
  DOCFEED_ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> file,
                           base_->NewRandomAccessFile(path));
  const uint64_t size = file->size_bytes();
  return std::unique_ptr<RandomAccessFile>(std::make_unique<FaultRandomAccessFile>(
      this, std::move(file), outcome == ReadOutcome::kShort ? size / 2 : size));
}

Result<std::vector<std::string>> FaultInjectionEnv::ListDirectory(const std::string& dir) {
  Status error;
  if (BeforeRead(dir, &error) != ReadOutcome::kPass) {
    if (error.ok()) error = IOError("cannot list " + dir + ": Input/output error (injected)");
    return error;
  }
  return base_->ListDirectory(dir);
}

Result<std::vector<TreeEntry>> FaultInjectionEnv::ListTree(const std::string& root) {
  Status error;
  if (BeforeRead(root, &error) != ReadOutcome::kPass) {
    if (error.ok()) error = IOError("cannot list " + root + ": Input/output error (injected)");
    return error;
  }
  return base_->ListTree(root);
}

Result<uint64_t> FaultInjectionEnv::FileSize(const std::string& path) {
  Status error;
  if (BeforeRead(path, &error) != ReadOutcome::kPass) {
    if (error.ok()) error = IOError("cannot stat " + path + ": Input/output error (injected)");
    return error;
  }
  return base_->FileSize(path);
}

Result<std::unique_ptr<WritableFile>> FaultInjectionEnv::NewWritableFile(const std::string& path) {
  DOCFEED_RETURN_IF_ERROR(BeforeWrite("create", path));
  DOCFEED_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> base, base_->NewWritableFile(path));
  auto unsynced = std::make_shared<Unsynced>();
  unsynced->path = path;
  {
    std::lock_guard<std::mutex> lock(mu_);
    unsynced_.push_back(unsynced);
  }
  return std::unique_ptr<WritableFile>(
      std::make_unique<FaultWritableFile>(this, std::move(base), std::move(unsynced)));
}

Status FaultInjectionEnv::Rename(const std::string& from, const std::string& to) {
  DOCFEED_RETURN_IF_ERROR(BeforeWrite("rename " + from + " to", to));
  DOCFEED_RETURN_IF_ERROR(base_->Rename(from, to));
  std::lock_guard<std::mutex> lock(mu_);
  for (const std::shared_ptr<Unsynced>& u : unsynced_) {
    if (IsAtOrBelow(u->path, from)) u->path = to + u->path.substr(from.size());
  }
  return Status::Ok();
}

Status FaultInjectionEnv::RenameNoReplace(const std::string& from, const std::string& to) {
  DOCFEED_RETURN_IF_ERROR(BeforeWrite("rename " + from + " to", to));
  DOCFEED_RETURN_IF_ERROR(base_->RenameNoReplace(from, to));
  std::lock_guard<std::mutex> lock(mu_);
  for (const std::shared_ptr<Unsynced>& u : unsynced_) {
    if (IsAtOrBelow(u->path, from)) u->path = to + u->path.substr(from.size());
  }
  return Status::Ok();
}

Status FaultInjectionEnv::LinkFile(const std::string& from, const std::string& to) {
  // A link names a file that is already durable or tracked under `from`: nothing to follow.
  DOCFEED_RETURN_IF_ERROR(BeforeWrite("link " + from + " to", to));
  return base_->LinkFile(from, to);
}

Status FaultInjectionEnv::ExchangePaths(const std::string& a, const std::string& b) {
  DOCFEED_RETURN_IF_ERROR(BeforeWrite("exchange " + a + " and", b));
  DOCFEED_RETURN_IF_ERROR(base_->ExchangePaths(a, b));
  std::lock_guard<std::mutex> lock(mu_);
  for (const std::shared_ptr<Unsynced>& u : unsynced_) {
    if (IsAtOrBelow(u->path, a)) {
      u->path = b + u->path.substr(a.size());
    } else if (IsAtOrBelow(u->path, b)) {
      u->path = a + u->path.substr(b.size());
    }
  }
  return Status::Ok();
}

Status FaultInjectionEnv::CreateDirectory(const std::string& path) {
  DOCFEED_RETURN_IF_ERROR(BeforeWrite("create directory", path));
  return base_->CreateDirectory(path);
}

Status FaultInjectionEnv::RemoveFile(const std::string& path) {
  DOCFEED_RETURN_IF_ERROR(BeforeWrite("remove", path));
  DOCFEED_RETURN_IF_ERROR(base_->RemoveFile(path));
  std::lock_guard<std::mutex> lock(mu_);
  std::erase_if(unsynced_, [&](const auto& u) { return u->path == path; });
  return Status::Ok();
}

Status FaultInjectionEnv::RemoveAll(const std::string& path) {
  DOCFEED_RETURN_IF_ERROR(BeforeWrite("remove", path));
  DOCFEED_RETURN_IF_ERROR(base_->RemoveAll(path));
  std::lock_guard<std::mutex> lock(mu_);
  std::erase_if(unsynced_, [&](const auto& u) { return IsAtOrBelow(u->path, path); });
  return Status::Ok();
}

}  // namespace docfeed::internal
