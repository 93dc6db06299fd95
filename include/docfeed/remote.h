// Remote datasets: the Env for a path, local or a URL (s3://BUCKET/KEY, http://, https://), and
// the counters of the remote reads. Everything that takes a dataset path (Loader, DatasetReader,
// ReadDatasetInfo, VerifyDataset, InspectDataset) picks its Env with EnvForPath when given none,
// so a URL works wherever a path does for reading. S3 settings come from the standard AWS
// variables and files (AWS_PROFILE, AWS_ACCESS_KEY_ID, ~/.aws/credentials, AWS_REGION,
// AWS_ENDPOINT_URL, ...); see src/remote/README.md.
#ifndef DOCFEED_REMOTE_H_
#define DOCFEED_REMOTE_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "docfeed/env.h"

namespace docfeed {

// True when `path` is a URL docfeed reads remotely (s3://, http://, https://).
bool IsRemotePath(std::string_view path);

// Env::Default() for a local path; for a URL the process-wide remote Env (read-only: writes,
// renames and locks fail with Unsupported naming the URL). Never null, never destroyed.
Env* EnvForPath(const std::string& path);

// What the process-wide remote Env has done so far (all threads).
struct RemoteStats {
  uint64_t requests = 0;     // HTTP requests sent, retries included
  uint64_t connections = 0;  // connections opened; the other requests reused a kept-alive one
  uint64_t bytes = 0;        // body bytes received in successful responses
  uint64_t retries = 0;      // attempts repeated after a transient failure
  uint64_t errors = 0;       // requests that failed for good
  // Adaptive concurrency (src/remote/concurrency_limiter.h): attempts a server answered 503 or
  // 429 (throttled), attempts that waited for a slot under a lowered limit and their waiting
  // time, and the lowest limit set (0: none, no server throttled).
  uint64_t throttled = 0;
  uint64_t throttle_waits = 0;
  uint64_t throttle_wait_ns = 0;
  uint64_t min_concurrency = 0;
};
RemoteStats GetRemoteStats();

}  // namespace docfeed

#endif  // DOCFEED_REMOTE_H_
