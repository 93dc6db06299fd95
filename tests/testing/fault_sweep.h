// Helpers for the fault-injection tests: run a job through a FaultInjectionEnv once to count
// its I/O, then once per read or write index with a fault there, and judge what is left on disk.
#ifndef DOCFEED_TESTS_TESTING_FAULT_SWEEP_H_
#define DOCFEED_TESTS_TESTING_FAULT_SWEEP_H_

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "base/fault_env.h"
#include "base/file.h"
#include "format/manifest.h"

namespace docfeed::testing {

using internal::FaultInjectionEnv;

struct IoCounts {
  uint64_t reads = 0;
  uint64_t writes = 0;
};

// Runs `job` once with no fault and returns how many reads and writes it made.
inline IoCounts CountIo(FaultInjectionEnv& env, const std::function<Status()>& job) {
  env.Reset();
  Status s = job();
  EXPECT_TRUE(s.ok()) << s.ToString();
  return {env.reads(), env.writes()};
}

// The names in `dir`, sorted (empty if it cannot be listed).
inline std::vector<std::string> Entries(const std::string& dir,
                                        internal::Env* env = internal::Env::Default()) {
  Result<std::vector<std::string>> names = env->ListDirectory(dir);
  std::vector<std::string> out = names.ok() ? *names : std::vector<std::string>{};
  std::sort(out.begin(), out.end());
  return out;
}

// What a reader would take for a finished docfeed dataset: a directory with a manifest.
inline bool HasManifest(const std::string& dir, internal::Env* env = internal::Env::Default()) {
  return env->PathExists(internal::JoinPath(dir, internal::kManifestFileName));
}

inline bool Mentions(const Status& s, std::string_view what) {
  return s.message().find(what) != std::string_view::npos;
}

inline const char* WriteFaultName(FaultInjectionEnv::WriteFault f) {
  return f == FaultInjectionEnv::WriteFault::kNoSpace ? "ENOSPC" : "EIO";
}

inline const char* ReadFaultName(FaultInjectionEnv::ReadFault f) {
  return f == FaultInjectionEnv::ReadFault::kShortRead ? "short read" : "EIO";
}

inline StatusCode WriteFaultCode(FaultInjectionEnv::WriteFault f) {
  return f == FaultInjectionEnv::WriteFault::kNoSpace ? StatusCode::kResourceExhausted
                                                      : StatusCode::kIOError;
}

}  // namespace docfeed::testing

#endif  // DOCFEED_TESTS_TESTING_FAULT_SWEEP_H_
