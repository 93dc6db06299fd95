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

// Runs `body(fault, j, where)` once for every read index j < `reads` and each read fault (EIO,
// a short read), with `env` reset and armed to fail read j; `where` names the case for messages.
inline void SweepReadFaults(
    FaultInjectionEnv& env, uint64_t reads,
    const std::function<void(FaultInjectionEnv::ReadFault, uint64_t, const std::string&)>& body) {
  using RF = FaultInjectionEnv::ReadFault;
  for (RF fault : {RF::kIOError, RF::kShortRead}) {
    for (uint64_t j = 0; j < reads; ++j) {
      env.Reset();
      env.FailRead(j, fault);
      body(fault, j, std::string(ReadFaultName(fault)) + " at read " + std::to_string(j));
    }
  }
}

// The same for every write index i < `writes` and each write fault (EIO, ENOSPC).
inline void SweepWriteFaults(
    FaultInjectionEnv& env, uint64_t writes,
    const std::function<void(FaultInjectionEnv::WriteFault, uint64_t, const std::string&)>& body) {
  using WF = FaultInjectionEnv::WriteFault;
  for (WF fault : {WF::kIOError, WF::kNoSpace}) {
    for (uint64_t i = 0; i < writes; ++i) {
      env.Reset();
      env.FailWrite(i, fault);
      body(fault, i, std::string(WriteFaultName(fault)) + " at write " + std::to_string(i));
    }
  }
}

inline StatusCode WriteFaultCode(FaultInjectionEnv::WriteFault f) {
  return f == FaultInjectionEnv::WriteFault::kNoSpace ? StatusCode::kResourceExhausted
                                                      : StatusCode::kIOError;
}

}  // namespace docfeed::testing

#endif  // DOCFEED_TESTS_TESTING_FAULT_SWEEP_H_
