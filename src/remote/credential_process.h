// S3 credentials from an external command: a profile's `credential_process` setting, as the AWS
// CLI and SDKs run it ("Sourcing credentials with an external process", AWS CLI User Guide).
//
// The command line is split into words as a POSIX shell would split it, without running a shell
// (no variables, globs or pipes; botocore uses shlex.split the same way), and the program is
// looked up on PATH. It runs with the process's environment, stdin from /dev/null, and must
// print one JSON object on stdout and exit 0:
//
//   {"Version": 1, "AccessKeyId": "...", "SecretAccessKey": "...",
//    "SessionToken": "..." (optional), "Expiration": "2026-12-04T12:00:00Z" (optional)}
//
// Credentials without an Expiration are used for the life of the process. Credentials with one
// are run for again once less than 15 minutes of them remain (the SDKs' advisory window; at most
// one run a minute there); if that run fails they stay in use until 10 minutes remain (the SDKs'
// mandatory window), after which requests fail with the run's error. A training job that holds a
// dataset open for hours thus keeps signing with valid credentials.
#ifndef DOCFEED_REMOTE_CREDENTIAL_PROCESS_H_
#define DOCFEED_REMOTE_CREDENTIAL_PROCESS_H_

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/mutex.h"
#include "base/thread_annotations.h"
#include "docfeed/status.h"
#include "remote/http_client.h"

namespace docfeed::internal {

using SystemTime = std::chrono::system_clock::time_point;

// What one run printed.
struct ProcessCredentials {
  std::string access_key_id;
  std::string secret_access_key;
  std::string session_token;             // empty: none
  std::optional<SystemTime> expiration;  // none: never expires
};

// What a request in `region` signs with, from these credentials.
inline HttpSigning SigningOf(const ProcessCredentials& c, const std::string& region) {
  return HttpSigning{region, c.access_key_id, c.secret_access_key, c.session_token};
}

// The words of a command line as a POSIX shell splits them: blanks separate words; '...' keeps
// everything literally; "..." keeps everything but \" \\ \$ \` (backslash-escaped); a backslash
// outside quotes escapes the next character. InvalidArgument on an unterminated quote or an
// empty command.
Result<std::vector<std::string>> SplitCommandLine(std::string_view command);

// An ISO 8601 / RFC 3339 time in UTC or with an offset: 2026-12-04T12:00:00Z,
// 2026-12-04T12:00:00.123Z, 2026-12-04T14:00:00+02:00. InvalidArgument otherwise.
Result<SystemTime> ParseIso8601(std::string_view text);

// The JSON a credential_process printed; errors (InvalidArgument) name `what` (the setting and
// where it is) and the field: not JSON, Version not 1, a missing or non-string key, a bad
// Expiration.
Result<ProcessCredentials> ParseCredentialProcessOutput(std::string_view json,
                                                        const std::string& what);

// Runs `command` (see above) and parses what it printed. Errors name `what`: a command that
// cannot be started, one that exits non-zero or is killed (with the first 1 KiB of its stderr),
// one still running after `timeout` (killed; IOError), more than 1 MiB of output, bad JSON.
Result<ProcessCredentials> RunCredentialProcess(const std::string& command, const std::string& what,
                                                std::chrono::milliseconds timeout);

// Expiring credentials from some source (a credential_process, an assumed role: assume_role.h),
// shared by every file opened with them and refreshed as the header says. Thread-safe; one
// fetch at a time.
class RefreshingCredentials {
 public:
  using Fetch = std::function<Result<ProcessCredentials>()>;

  // `fetch` gets fresh credentials (its errors name their source); `what` names the source in
  // this class's own errors; requests are signed for `region`. `clock` gives the time (tests
  // move it); empty: the system clock.
  RefreshingCredentials(Fetch fetch, std::string what, std::string region,
                        std::function<SystemTime()> clock = {});

  // The credentials to sign a request with now, fetching them when there are none yet or they
  // are due for refresh.
  Result<std::shared_ptr<const HttpSigning>> Current();

  // How many times `fetch` has run (tests).
  int runs() const;

 private:
  const Fetch fetch_;
  const std::string what_;
  const std::string region_;
  const std::function<SystemTime()> clock_;
  mutable Mutex mu_;
  std::shared_ptr<const HttpSigning> current_ DOCFEED_GUARDED_BY(mu_);
  std::optional<SystemTime> expiration_ DOCFEED_GUARDED_BY(mu_);
  SystemTime last_run_ DOCFEED_GUARDED_BY(mu_);
  int runs_ DOCFEED_GUARDED_BY(mu_) = 0;
};

// The credentials of one credential_process for one region.
class CredentialProcessSource : public RefreshingCredentials {
 public:
  // `what` names the setting in errors ("~/.aws/config [profile dev] credential_process").
  CredentialProcessSource(const std::string& command, const std::string& what, std::string region,
                          std::chrono::milliseconds timeout, std::function<SystemTime()> clock = {})
      : RefreshingCredentials(
            [command, what, timeout] { return RunCredentialProcess(command, what, timeout); }, what,
            std::move(region), std::move(clock)) {}
};

}  // namespace docfeed::internal

#endif  // DOCFEED_REMOTE_CREDENTIAL_PROCESS_H_
