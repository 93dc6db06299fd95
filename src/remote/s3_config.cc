#include "remote/s3_config.h"

#include <algorithm>
#include <cstdlib>
#include <vector>

#include "remote/url.h"

namespace docfeed::internal {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

std::string Get(const EnvLookup& lookup, const char* name) {
  const char* value = lookup(name);
  return value != nullptr ? std::string(value) : std::string();
}

// ~/.aws/NAME, or the file a variable names; "" when neither can be found (no HOME).
std::string SharedFilePath(const EnvLookup& lookup, const char* variable, const char* name) {
  std::string path = Get(lookup, variable);
  if (!path.empty()) {
    if (path.starts_with("~/")) path = Get(lookup, "HOME") + path.substr(1);
    return path;
  }
  const std::string home = Get(lookup, "HOME");
  return home.empty() ? "" : home + "/.aws/" + name;
}

// The file parsed, or an empty one when it does not exist (the CLI's behaviour).
Result<IniFile> LoadIni(const std::string& path, Env* env) {
  if (path.empty() || env->GetFileType(path) == FileType::kMissing) return IniFile();
  DOCFEED_ASSIGN_OR_RETURN(std::string text, env->ReadTextFile(path));
  return ParseIni(text, path);
}

struct Files {
  std::string credentials_path, config_path;
  IniFile credentials, config;
};

// The profile's settings: the credentials file's [NAME] over the config file's section
// ([profile NAME], or [default] for the default profile, which the CLI also accepts as
// [profile default]).
const std::map<std::string, std::string>* ConfigSection(const Files& f,
                                                        const std::string& profile) {
  auto it = f.config.find("profile " + profile);
  if (it == f.config.end() && profile == "default") it = f.config.find("default");
  return it == f.config.end() ? nullptr : &it->second;
}

// The credentials file's [NAME] (null when absent).
const std::map<std::string, std::string>* CredentialsSection(const Files& f,
                                                             const std::string& profile) {
  auto it = f.credentials.find(profile);
  return it == f.credentials.end() ? nullptr : &it->second;
}

bool ProfileExists(const Files& f, const std::string& profile) {
  return CredentialsSection(f, profile) != nullptr || ConfigSection(f, profile) != nullptr;
}

std::string Setting(const std::map<std::string, std::string>* section, const char* key) {
  if (section == nullptr) return "";
  auto it = section->find(key);
  return it == section->end() ? "" : std::string(Trim(it->second));
}

Status CheckPair(const S3Config& c, const std::string& where) {
  if (c.access_key_id.empty() != c.secret_access_key.empty()) {
    return InvalidArgumentError(where + " sets " +
                                (c.access_key_id.empty() ? "a secret access key without an "
                                                           "access key id"
                                                         : "an access key id without its secret "
                                                           "access key"));
  }
  return Status::Ok();
}

// Profile `name`'s own credentials: the credentials file's [NAME] keys, else the config file's
// credential_process, else that section's keys (botocore's order); none is not an error here.
Status ResolveProfileKeys(const Files& f, const std::string& name, S3Config* c) {
  const std::map<std::string, std::string>* section = CredentialsSection(f, name);
  std::string where = f.credentials_path + " [" + name + "]";
  if (Setting(section, "aws_access_key_id").empty()) {
    section = ConfigSection(f, name);
    where = f.config_path + " [profile " + name + "]";
    c->credential_process = Setting(section, "credential_process");
    if (!c->credential_process.empty()) {
      c->credentials_source = where + " credential_process";
      return Status::Ok();
    }
  }
  c->access_key_id = Setting(section, "aws_access_key_id");
  c->secret_access_key = Setting(section, "aws_secret_access_key");
  c->session_token = Setting(section, "aws_session_token");
  DOCFEED_RETURN_IF_ERROR(CheckPair(*c, where));
  if (c->has_credentials()) {
    c->credentials_source = where;
  } else if (!Setting(section, "sso_session").empty() ||
             !Setting(section, "sso_start_url").empty()) {
    // Not an anonymous profile: its credentials come from `aws sso login`'s token cache, which
    // docfeed does not read. The AWS CLI hands them over as a credential_process.
    return UnsupportedError(where +
                            " is an IAM Identity Center (SSO) profile, whose token cache docfeed "
                            "does not read; add credential_process = aws configure "
                            "export-credentials --profile " +
                            name + " --format process");
  }
  return Status::Ok();
}

// Profile `name`'s credentials: when it names a role (role_arn, in the config file's section or
// the credentials file's), the credentials of its source followed by that role (botocore's
// AssumeRoleProvider: a source_profile, itself possibly a role, or credential_source =
// Environment); else its own keys. `chain` holds the profiles whose role is being resolved.
Status ResolveProfile(const Files& f, const std::string& name, std::vector<std::string>* chain,
                      S3Config* c) {
  const std::map<std::string, std::string>* section = ConfigSection(f, name);
  std::string where = f.config_path + " [profile " + name + "]";
  if (Setting(section, "role_arn").empty()) {
    section = CredentialsSection(f, name);
    where = f.credentials_path + " [" + name + "]";
  }
  AssumeRoleConfig role;
  role.role_arn = Setting(section, "role_arn");
  if (role.role_arn.empty()) return ResolveProfileKeys(f, name, c);
  role.where = where;
  const std::string source_profile = Setting(section, "source_profile");
  const std::string credential_source = Setting(section, "credential_source");
  if (!Setting(section, "mfa_serial").empty()) {
    return UnsupportedError(where +
                            " sets mfa_serial: a role that needs an MFA code typed in "
                            "is not supported (docfeed runs unattended); use a "
                            "credential_process that caches the session");
  }
  if (source_profile.empty() == credential_source.empty()) {
    if (!Setting(section, "web_identity_token_file").empty()) {
      return UnsupportedError(where +
                              " sets web_identity_token_file: AssumeRoleWithWebIdentity "
                              "is not read; use a credential_process");
    }
    return InvalidArgumentError(where + " sets role_arn with " +
                                (source_profile.empty()
                                     ? "neither source_profile nor credential_source"
                                     : "both source_profile and credential_source") +
                                "; it needs exactly one");
  }
  chain->push_back(name);
  if (!credential_source.empty()) {
    if (credential_source != "Environment") {
      return UnsupportedError(where + " sets credential_source = " + credential_source +
                              ": only Environment is read (not instance or container metadata)");
    }
    // The environment's keys would have been used before any profile: there are none.
    return InvalidArgumentError(where +
                                " sets credential_source = Environment, but "
                                "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not set");
  }
  if (source_profile == name) {
    // A role whose source is its own profile's keys (the CLI allows it).
    DOCFEED_RETURN_IF_ERROR(ResolveProfileKeys(f, name, c));
  } else if (std::find(chain->begin(), chain->end(), source_profile) != chain->end()) {
    return InvalidArgumentError(where + ": source_profile " + source_profile +
                                " leads back to itself (a loop of roles)");
  } else if (!ProfileExists(f, source_profile)) {
    return InvalidArgumentError(where + ": source_profile " + source_profile + " is in neither " +
                                f.credentials_path + " nor " + f.config_path);
  } else {
    DOCFEED_RETURN_IF_ERROR(ResolveProfile(f, source_profile, chain, c));
  }
  if (!c->has_credentials()) {
    return InvalidArgumentError(where + ": source_profile " + source_profile +
                                " has no credentials to assume role " + role.role_arn + " with");
  }
  role.session_name = Setting(section, "role_session_name");
  role.external_id = Setting(section, "external_id");
  const std::string duration = Setting(section, "duration_seconds");
  if (!duration.empty()) {
    char* end = nullptr;
    const long seconds = std::strtol(duration.c_str(), &end, 10);
    if (*end != '\0' || seconds < 900 || seconds > 43200) {
      return InvalidArgumentError(where + " sets duration_seconds = " + duration +
                                  ", not a number of seconds from 900 to 43200");
    }
    role.duration_seconds = static_cast<int>(seconds);
  }
  c->credentials_source =
      where + " role_arn " + role.role_arn + " (from " + c->credentials_source + ")";
  c->roles.push_back(std::move(role));
  return Status::Ok();
}

Status ResolveCredentials(const EnvLookup& lookup, const Files& f, S3Config* c) {
  c->access_key_id = Get(lookup, "AWS_ACCESS_KEY_ID");
  c->secret_access_key = Get(lookup, "AWS_SECRET_ACCESS_KEY");
  if (!c->access_key_id.empty() || !c->secret_access_key.empty()) {
    DOCFEED_RETURN_IF_ERROR(CheckPair(*c, "the environment (AWS_ACCESS_KEY_ID)"));
    c->session_token = Get(lookup, "AWS_SESSION_TOKEN");
    c->credentials_source = "the environment (AWS_ACCESS_KEY_ID)";
    return Status::Ok();
  }
  std::vector<std::string> chain;
  return ResolveProfile(f, c->profile, &chain, c);
}

// A service's endpoint as configured, without a trailing '/': `service_variable`
// (AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL_STS), else AWS_ENDPOINT_URL, else the profile's
// endpoint_url; "" when none is. Errors name where a value that is not an http(s) URL came from.
Result<std::string> ConfiguredEndpoint(const EnvLookup& lookup, const Files& f,
                                       const std::string& profile, const char* service_variable) {
  std::string where;
  std::string url;
  for (const char* variable : {service_variable, "AWS_ENDPOINT_URL"}) {
    url = Get(lookup, variable);
    where = variable;
    if (!url.empty()) break;
  }
  if (url.empty()) {
    url = Setting(ConfigSection(f, profile), "endpoint_url");
    where = f.config_path + " [profile " + profile + "] endpoint_url";
  }
  while (!url.empty() && url.back() == '/') url.pop_back();
  if (!url.empty() && !url.starts_with("http://") && !url.starts_with("https://")) {
    return InvalidArgumentError(where + " is \"" + url + "\", not an http:// or https:// URL");
  }
  return url;
}

Status ResolveEndpoint(const EnvLookup& lookup, const Files& f, S3Config* c) {
  DOCFEED_ASSIGN_OR_RETURN(c->endpoint_url,
                           ConfiguredEndpoint(lookup, f, c->profile, "AWS_ENDPOINT_URL_S3"));
  c->path_style = !c->endpoint_url.empty();
  return Status::Ok();
}

// Where AssumeRole goes: the configured endpoint (a server such as SeaweedFS answers STS on its
// S3 port), else AWS's regional STS endpoint.
Status ResolveStsEndpoint(const EnvLookup& lookup, const Files& f, S3Config* c) {
  if (c->roles.empty()) return Status::Ok();
  DOCFEED_ASSIGN_OR_RETURN(c->sts_endpoint_url,
                           ConfiguredEndpoint(lookup, f, c->profile, "AWS_ENDPOINT_URL_STS"));
  if (c->sts_endpoint_url.empty()) {
    c->sts_endpoint_url = "https://sts." + c->region + ".amazonaws.com";
  }
  return Status::Ok();
}

}  // namespace

std::string FirstSet(const EnvLookup& lookup, std::initializer_list<const char*> names) {
  for (const char* name : names) {
    std::string value = Get(lookup, name);
    if (!value.empty()) return value;
  }
  return "";
}

EnvLookup ProcessEnvironment() {
  return [](const char* name) { return std::getenv(name); };
}

Result<IniFile> ParseIni(std::string_view text, const std::string& path) {
  IniFile ini;
  std::map<std::string, std::string>* section = nullptr;
  std::string* last_value = nullptr;  // what an indented continuation line belongs to
  size_t line_no = 0;
  while (!text.empty()) {
    const size_t end = text.find('\n');
    const std::string_view raw = text.substr(0, end);
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    ++line_no;
    const std::string_view line = Trim(raw);
    if (line.empty() || line.front() == '#' || line.front() == ';') continue;
    const bool indented = raw.front() == ' ' || raw.front() == '\t';
    if (indented && last_value != nullptr) {
      *last_value += "\n" + std::string(line);
      continue;
    }
    if (line.front() == '[' && line.back() == ']') {
      section = &ini[std::string(Trim(line.substr(1, line.size() - 2)))];
      last_value = nullptr;
      continue;
    }
    const size_t eq = line.find('=');
    if (section == nullptr || eq == std::string_view::npos) {
      return InvalidArgumentError(path + ":" + std::to_string(line_no) + ": " +
                                  (section == nullptr ? "a setting before any [section]"
                                                      : "not a [section] or key = value line"));
    }
    last_value = &(*section)[std::string(Trim(line.substr(0, eq)))];
    *last_value = std::string(Trim(line.substr(eq + 1)));
  }
  return ini;
}

Result<S3Config> ResolveS3Config(const EnvLookup& lookup, Env* env) {
  env = EnvOrDefault(env);
  S3Config c;
  const std::string named = Get(lookup, "AWS_PROFILE");
  c.profile = named.empty() ? "default" : named;
  Files f;
  f.credentials_path = SharedFilePath(lookup, "AWS_SHARED_CREDENTIALS_FILE", "credentials");
  f.config_path = SharedFilePath(lookup, "AWS_CONFIG_FILE", "config");
  DOCFEED_ASSIGN_OR_RETURN(f.credentials, LoadIni(f.credentials_path, env));
  DOCFEED_ASSIGN_OR_RETURN(f.config, LoadIni(f.config_path, env));
  if (!named.empty() && !ProfileExists(f, c.profile)) {
    return InvalidArgumentError("AWS_PROFILE names profile \"" + c.profile +
                                "\", which is in neither " + f.credentials_path + " nor " +
                                f.config_path);
  }
  DOCFEED_RETURN_IF_ERROR(ResolveCredentials(lookup, f, &c));
  c.region = FirstSet(lookup, {"AWS_REGION", "AWS_DEFAULT_REGION"});
  if (c.region.empty()) c.region = Setting(ConfigSection(f, c.profile), "region");
  if (c.region.empty()) c.region = "us-east-1";
  DOCFEED_RETURN_IF_ERROR(ResolveEndpoint(lookup, f, &c));
  DOCFEED_RETURN_IF_ERROR(ResolveStsEndpoint(lookup, f, &c));
  c.ca_bundle = FirstSet(lookup, {"AWS_CA_BUNDLE"});
  if (c.ca_bundle.empty()) c.ca_bundle = Setting(ConfigSection(f, c.profile), "ca_bundle");
  return c;
}

}  // namespace docfeed::internal
