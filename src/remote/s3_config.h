// S3 settings resolved the way the AWS CLI and SDKs resolve them, from the standard variables and
// the shared files, so a user's existing setup works unchanged:
//
//   profile      AWS_PROFILE, else "default"
//   credentials  AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY (+ AWS_SESSION_TOKEN), else the
//                profile's section of the credentials file (AWS_SHARED_CREDENTIALS_FILE, else
//                ~/.aws/credentials: [NAME]), else the command in the config file's
//                `credential_process` (AWS_CONFIG_FILE, else ~/.aws/config: [profile NAME],
//                [default]; run by RemoteEnv, credential_process.h), else the config file's own
//                keys; none: requests go unsigned
//   region       AWS_REGION, else AWS_DEFAULT_REGION, else the profile's `region`, else us-east-1
//   endpoint     AWS_ENDPOINT_URL_S3, else AWS_ENDPOINT_URL, else the profile's `endpoint_url`;
//                none: AWS itself (virtual-hosted https://BUCKET.s3.REGION.amazonaws.com)
//   roles        a profile with role_arn: its source's credentials (source_profile, itself
//                possibly a role; or credential_source = Environment) assume the role through
//                STS AssumeRole (assume_role.h) and its temporary credentials sign the requests
//   addressing   path-style (ENDPOINT/BUCKET/KEY) whenever an endpoint is configured, as the
//                S3-compatible servers (MinIO, SeaweedFS, Ceph) expect
//
// The environment is read through a lookup function so tests can pass their own.
#ifndef DOCFEED_REMOTE_S3_CONFIG_H_
#define DOCFEED_REMOTE_S3_CONFIG_H_

#include <functional>
#include <initializer_list>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/env.h"
#include "docfeed/status.h"

namespace docfeed::internal {

// One AssumeRole call for a profile's role_arn (botocore's AssumeRoleProvider; assume_role.h).
struct AssumeRoleConfig {
  std::string role_arn;
  std::string session_name;  // role_session_name; empty: "docfeed-SECONDS" at each call
  std::string external_id;   // empty: none
  int duration_seconds = 3600;
  std::string where;  // the profile's file and section, for errors
};

struct S3Config {
  std::string profile;  // the profile the settings came from
  std::string access_key_id;
  std::string secret_access_key;
  std::string session_token;
  // The profile's credential_process command line, when the credentials come from it (the keys
  // above are then empty: RemoteEnv runs it).
  std::string credential_process;
  // Where the credentials came from ("environment", "PATH [NAME]"), for error messages; empty
  // when there are none (unsigned requests).
  std::string credentials_source;
  std::string region;
  std::string endpoint_url;  // without a trailing '/'; empty: AWS
  bool path_style = false;
  // The PEM file of certificate authorities for an https endpoint: AWS_CA_BUNDLE, else the
  // profile's ca_bundle; empty: not set.
  std::string ca_bundle;

  // A profile's role chain: the credentials above (its source) assume roles[0], whose
  // credentials assume roles[1], and so on; the last role's credentials sign the requests.
  // Empty: the credentials above sign them.
  std::vector<AssumeRoleConfig> roles;
  // Where AssumeRole goes (with roles): AWS_ENDPOINT_URL_STS, else AWS_ENDPOINT_URL, else the
  // profile's endpoint_url, else https://sts.REGION.amazonaws.com.
  std::string sts_endpoint_url;

  bool has_credentials() const { return !access_key_id.empty() || !credential_process.empty(); }
};

// Returns the value of an environment variable, or null when unset.
using EnvLookup = std::function<const char*(const char*)>;

// The process environment (std::getenv).
EnvLookup ProcessEnvironment();

// The value of the first variable of `names` that is set and not empty; "" when none is.
std::string FirstSet(const EnvLookup& lookup, std::initializer_list<const char*> names);

// Resolves the settings above. Files are read through `env` (Env::Default() when null); a file
// that does not exist is skipped, as the CLI does.
// Errors: InvalidArgument naming the file and line for a malformed line, or for a named profile
// (AWS_PROFILE) found in neither file; the access key without its secret (or the reverse) in the
// environment or in a profile; an endpoint that is not an http(s) URL. Read errors of an existing
// file name it.
Result<S3Config> ResolveS3Config(const EnvLookup& lookup, Env* env = nullptr);

// One INI file as the AWS CLI parses its shared files: sections of `key = value` lines, '#' and
// ';' comment lines, indented continuation lines (nested settings such as `s3 =`, kept as the
// key's raw value). Section names are as written ("profile dev", "default").
using IniFile = std::map<std::string, std::map<std::string, std::string>>;
Result<IniFile> ParseIni(std::string_view text, const std::string& path);

}  // namespace docfeed::internal

#endif  // DOCFEED_REMOTE_S3_CONFIG_H_
