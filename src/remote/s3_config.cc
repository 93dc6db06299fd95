#include "remote/s3_config.h"

#include <cstdlib>

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

Status ResolveCredentials(const EnvLookup& lookup, const Files& f, S3Config* c) {
  c->access_key_id = Get(lookup, "AWS_ACCESS_KEY_ID");
  c->secret_access_key = Get(lookup, "AWS_SECRET_ACCESS_KEY");
  if (!c->access_key_id.empty() || !c->secret_access_key.empty()) {
    DOCFEED_RETURN_IF_ERROR(CheckPair(*c, "the environment (AWS_ACCESS_KEY_ID)"));
    c->session_token = Get(lookup, "AWS_SESSION_TOKEN");
    c->credentials_source = "the environment (AWS_ACCESS_KEY_ID)";
    return Status::Ok();
  }
  auto cred = f.credentials.find(c->profile);
  const std::map<std::string, std::string>* section =
      cred != f.credentials.end() ? &cred->second : nullptr;
  std::string where = f.credentials_path + " [" + c->profile + "]";
  if (Setting(section, "aws_access_key_id").empty()) {
    section = ConfigSection(f, c->profile);
    where = f.config_path + " [profile " + c->profile + "]";
    // botocore's order: the credentials file, then credential_process, then the config file's
    // own keys.
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
  if (c->has_credentials()) c->credentials_source = where;
  return Status::Ok();
}

Status ResolveEndpoint(const EnvLookup& lookup, const Files& f, S3Config* c) {
  c->endpoint_url = FirstSet(lookup, {"AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"});
  std::string where = "AWS_ENDPOINT_URL";
  if (c->endpoint_url.empty()) {
    c->endpoint_url = Setting(ConfigSection(f, c->profile), "endpoint_url");
    where = f.config_path + " [profile " + c->profile + "] endpoint_url";
  }
  while (!c->endpoint_url.empty() && c->endpoint_url.back() == '/') c->endpoint_url.pop_back();
  if (c->endpoint_url.empty()) return Status::Ok();
  if (!c->endpoint_url.starts_with("http://") && !c->endpoint_url.starts_with("https://")) {
    return InvalidArgumentError(where + " is \"" + c->endpoint_url +
                                "\", not an http:// or https:// URL");
  }
  c->path_style = true;
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
  if (!named.empty() && f.credentials.count(c.profile) == 0 &&
      ConfigSection(f, c.profile) == nullptr) {
    return InvalidArgumentError("AWS_PROFILE names profile \"" + c.profile +
                                "\", which is in neither " + f.credentials_path + " nor " +
                                f.config_path);
  }
  DOCFEED_RETURN_IF_ERROR(ResolveCredentials(lookup, f, &c));
  c.region = FirstSet(lookup, {"AWS_REGION", "AWS_DEFAULT_REGION"});
  if (c.region.empty()) c.region = Setting(ConfigSection(f, c.profile), "region");
  if (c.region.empty()) c.region = "us-east-1";
  DOCFEED_RETURN_IF_ERROR(ResolveEndpoint(lookup, f, &c));
  c.ca_bundle = FirstSet(lookup, {"AWS_CA_BUNDLE"});
  if (c.ca_bundle.empty()) c.ca_bundle = Setting(ConfigSection(f, c.profile), "ca_bundle");
  return c;
}

}  // namespace docfeed::internal
