// S3 credentials from a role: a profile's `role_arn`, assumed through STS AssumeRole with the
// credentials of its source (s3_config.h resolves the chain), as the AWS CLI and SDKs do
// (botocore's AssumeRoleProvider; "Use an IAM role in the AWS CLI", AWS CLI User Guide).
//
// The call (AWS STS API Reference, AssumeRole): POST ENDPOINT/ with the form body
//
//   Action=AssumeRole&Version=2011-06-15&RoleArn=...&RoleSessionName=...&DurationSeconds=...
//   [&ExternalId=...]
//
// signed with SigV4 for service "sts" in the profile's region; the answer's
// <Credentials><AccessKeyId>, <SecretAccessKey>, <SessionToken>, <Expiration> are temporary
// credentials. A chain (a role whose source is a role) calls once per role, each call signed
// with the previous one's credentials. RefreshingCredentials (credential_process.h) calls again
// before they expire, for files already open too.
#ifndef DOCFEED_REMOTE_ASSUME_ROLE_H_
#define DOCFEED_REMOTE_ASSUME_ROLE_H_

#include <memory>
#include <string>

#include "docfeed/status.h"
#include "remote/credential_process.h"
#include "remote/http_client.h"
#include "remote/s3_config.h"

namespace docfeed::internal {

// The form body of one AssumeRole call (values percent-encoded); an empty session name becomes
// "docfeed-" followed by the Unix time in seconds.
std::string AssumeRoleBody(const AssumeRoleConfig& role);

// The temporary credentials in an AssumeRole answer (its one
// <AssumeRoleResult><Credentials>). Corruption naming `what` when that element is not there
// exactly once, a credential is missing or the Expiration is not an ISO 8601 time.
Result<ProcessCredentials> ParseAssumeRoleResponse(std::string_view xml, const std::string& what);

// Assumes `role` at `sts_url` (S3Config::sts_endpoint_url) with `source`'s credentials, trusting
// `ca_file` for https (empty: the system's store). Errors name the profile's file and section,
// the role and the URL: the server's refusal (InvalidArgument with its HTTP status, code and
// message: an unknown role, a caller the role does not trust), or the HTTP client's error after
// its retries.
Result<ProcessCredentials> AssumeRole(HttpClient* client, const std::string& sts_url,
                                      const AssumeRoleConfig& role, const HttpSigning& source,
                                      const std::string& ca_file);

// `config`'s credentials (a profile with roles): the chain's source (its keys, or its
// credential_process run with `process_timeout`), then every role in order. The credentials of
// the last role.
Result<ProcessCredentials> AssumeRoleChain(HttpClient* client, const S3Config& config,
                                           const std::string& ca_file,
                                           std::chrono::milliseconds process_timeout);

}  // namespace docfeed::internal

#endif  // DOCFEED_REMOTE_ASSUME_ROLE_H_
