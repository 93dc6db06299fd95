// The file-system seam's internal view: docfeed/env.h's types under docfeed::internal, and the
// helpers components use with them. Implementations: posix/env_posix.cc (Env::Default(), the
// only place with OS calls), mem_env.h (in memory), fault_env.h (errors, short reads, ENOSPC and
// crashes for tests).
#ifndef DOCFEED_BASE_ENV_H_
#define DOCFEED_BASE_ENV_H_

#include <cstdint>
#include <string>

#include "docfeed/env.h"
#include "docfeed/status.h"

namespace docfeed::internal {

using docfeed::Env;
using docfeed::MappedFile;
using docfeed::RandomAccessFile;
using docfeed::WritableFile;

// `env` if not null, else Env::Default(): what components do with the `Env* env = nullptr`
// member of their options.
inline Env* EnvOrDefault(Env* env) { return env != nullptr ? env : Env::Default(); }

using docfeed::FileLock;
using docfeed::FileType;
using docfeed::kDefaultMaxReadBytes;
using docfeed::TreeEntry;

// The error an Env returns for a short read of `path`.
Status ShortReadError(const std::string& path, uint64_t offset, uint64_t wanted, uint64_t got);
// The error an Env returns when a read finds `type` (not a regular file) at `path`.
Status NotRegularFileError(const std::string& path, FileType type);
// The error an Env returns when `path` holds more than `max_bytes` bytes (`size_bytes` or more).
Status FileTooLargeError(const std::string& path, uint64_t size_bytes, uint64_t max_bytes);

}  // namespace docfeed::internal

#endif  // DOCFEED_BASE_ENV_H_
