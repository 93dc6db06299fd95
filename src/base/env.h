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

// The error an Env returns for a short read of `path`.
Status ShortReadError(const std::string& path, uint64_t offset, uint64_t wanted, uint64_t got);

}  // namespace docfeed::internal

#endif  // DOCFEED_BASE_ENV_H_
