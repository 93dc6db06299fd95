#include "remote/remote_env.h"

#include <algorithm>
#include <charconv>
#include <utility>

#include "remote/url.h"

namespace docfeed::internal {
namespace {

Status ReadOnlyError(const std::string& path, const char* what) {
  return UnsupportedError(
      std::string("cannot ") + what + " " + path +
      ": the remote Env is read-only (`docfeed pack` and `merge -o s3://` upload "
      "a finished dataset; http(s):// cannot be written)");
}

}  // namespace

HttpRequest RequestFor(const RemoteTarget& t, std::string url, std::string name) {
  HttpRequest request;
  request.url = std::move(url);
  request.name = std::move(name);
  request.signing = t.signing;
  if (t.refreshed_signing != nullptr) {
    Result<std::shared_ptr<const HttpSigning>> now = t.refreshed_signing->Current();
    if (now.ok()) {
      request.signing = std::move(now).value();
    } else {
      request.signing_error = now.status();
    }
  }
  request.ca_file = t.ca_file;
  return request;
}

Status ResponseError(const HttpRequest& request, const HttpResponse& r, const RemoteTarget& t) {
  const std::string summary =
      ErrorSummary({reinterpret_cast<const char*>(r.body.data()), r.body.size()});
  std::string answer = "HTTP " + std::to_string(r.status) + (summary.empty() ? "" : " " + summary);
  if (t.http_url != t.name) answer += "; " + request.url;
  const std::string what = DescribeRequest(request);
  if (r.status == 404 || r.status == 410)
    return NotFoundError(what + ": not found (" + answer + ")");
  if (t.s3 && (r.status == 401 || r.status == 403)) {
    const std::string creds = t.credentials_source.empty()
                                  ? "no credentials configured, the request was unsigned"
                                  : "credentials from " + t.credentials_source;
    return IOError(what + ": access denied (" + answer + "; " + creds + ")");
  }
  return IOError(what + ": " + answer);
}

namespace {

// The object URL of an S3 key: path-style under a configured endpoint, else AWS's virtual-hosted
// form (path-style for bucket names with dots, which TLS certificates of *.s3 do not cover).
void S3Urls(const S3Config& c, const RemoteUrl& u, RemoteTarget* t) {
  const std::string key = UriEncode(u.path, /*keep_slash=*/true);
  if (!c.endpoint_url.empty()) {
    t->list_url = c.endpoint_url + "/" + u.authority;
  } else if (u.authority.find('.') != std::string::npos) {
    t->list_url = "https://s3." + c.region + ".amazonaws.com/" + u.authority;
  } else {
    t->list_url = "https://" + u.authority + ".s3." + c.region + ".amazonaws.com";
  }
  t->http_url = t->list_url + "/" + key;
}

int64_t NonNegative(const EnvLookup& lookup, const char* name, int64_t fallback) {
  const char* text = lookup(name);
  if (text == nullptr) return fallback;
  int64_t value = 0;
  const std::string_view s(text);
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  return ec == std::errc() && end == s.data() + s.size() && value >= 0 ? value : fallback;
}

// A RandomAccessFile over ranged GETs; the size is the HEAD's at open.
class RemoteFile : public RandomAccessFile {
 public:
  RemoteFile(RemoteEnv* env, RemoteTarget target, uint64_t size_bytes)
      : env_(env), target_(std::move(target)), size_bytes_(size_bytes) {}
  Status ReadAt(uint64_t offset, std::span<uint8_t> out) const override {
    return env_->ReadRange(target_, offset, out);
  }
  uint64_t size_bytes() const override { return size_bytes_; }
  const std::string& path() const override { return target_.name; }

 private:
  RemoteEnv* env_;
  RemoteTarget target_;
  uint64_t size_bytes_;
};

// The whole object in memory: MapFile's Region for an Env that has nothing to map.
class HeapRegion : public MappedFile::Region {
 public:
  explicit HeapRegion(std::vector<uint8_t> bytes) : bytes_(std::move(bytes)) {}
  std::span<const uint8_t> bytes() const override { return bytes_; }
  void DropPages(uint64_t, uint64_t) const override {}

 private:
  std::vector<uint8_t> bytes_;
};

std::string WithSlash(const std::string& s) { return s.empty() || s.back() == '/' ? s : s + "/"; }

}  // namespace

HttpOptions HttpOptionsFromEnvironment(const EnvLookup& lookup) {
  HttpOptions o;
  o.retry.max_attempts = static_cast<int>(std::max<int64_t>(
      1, NonNegative(lookup, "DOCFEED_REMOTE_MAX_ATTEMPTS", o.retry.max_attempts)));
  o.retry.budget_ms = NonNegative(lookup, "DOCFEED_REMOTE_RETRY_BUDGET_MS", o.retry.budget_ms);
  o.retry.base_delay_ms =
      NonNegative(lookup, "DOCFEED_REMOTE_BASE_DELAY_MS", o.retry.base_delay_ms);
  o.timeout_ms = NonNegative(lookup, "DOCFEED_REMOTE_TIMEOUT_MS", o.timeout_ms);
  o.adaptive_concurrency = NonNegative(lookup, "DOCFEED_REMOTE_ADAPTIVE_CONCURRENCY", 1) != 0;
  return o;
}

RemoteEnv::RemoteEnv(RemoteEnvOptions options)
    : options_(std::move(options)), client_(options_.http) {}

RemoteEnv::~RemoteEnv() = default;

RemoteEnv* RemoteEnv::Default() {
  static RemoteEnv* const env = [] {
    RemoteEnvOptions o;
    o.http = HttpOptionsFromEnvironment(o.lookup);
    return new RemoteEnv(std::move(o));
  }();
  return env;
}

Result<RemoteTarget> RemoteEnv::Resolve(const std::string& url) {
  DOCFEED_ASSIGN_OR_RETURN(RemoteUrl u, ParseRemoteUrl(url));
  RemoteTarget t;
  t.name = url;
  t.ca_file = FirstSet(options_.lookup, {"CURL_CA_BUNDLE", "SSL_CERT_FILE"});
  if (u.scheme != RemoteUrl::Scheme::kS3) {
    t.http_url = url;
    return t;
  }
  t.s3 = true;
  t.key = u.path;
  Result<S3Config> config = ResolveS3Config(options_.lookup, options_.config_env);
  if (!config.ok()) {
    return InvalidArgumentError(url + ": S3 settings: " + std::string(config.status().message()));
  }
  if (!config->ca_bundle.empty()) t.ca_file = config->ca_bundle;
  S3Urls(*config, u, &t);
  if (!config->credential_process.empty() || !config->roles.empty()) {
    t.refreshed_signing = RefreshingSource(*config, t.ca_file);
    Result<std::shared_ptr<const HttpSigning>> now = t.refreshed_signing->Current();
    if (!now.ok()) return InvalidArgumentError(url + ": " + std::string(now.status().message()));
    t.signing = std::move(now).value();
    t.credentials_source = config->credentials_source;
  } else if (config->has_credentials()) {
    t.signing = std::make_shared<HttpSigning>(HttpSigning{
        config->region, config->access_key_id, config->secret_access_key, config->session_token});
    t.credentials_source = config->credentials_source;
  }
  return t;
}

std::shared_ptr<RefreshingCredentials> RemoteEnv::RefreshingSource(const S3Config& config,
                                                                   const std::string& ca_file) {
  // The profile is in `credentials_source` (the config file and section, the roles).
  std::string key = config.credentials_source + '\n' + config.credential_process + '\n' +
                    config.region + '\n' + config.sts_endpoint_url + '\n' + ca_file;
  for (const AssumeRoleConfig& role : config.roles) {
    key += '\n' + role.role_arn + ' ' + role.session_name + ' ' + role.external_id + ' ' +
           std::to_string(role.duration_seconds);
  }
  MutexLock lock(&refreshing_sources_mu_);
  std::shared_ptr<RefreshingCredentials>& source = refreshing_sources_[key];
  if (source != nullptr) return source;
  if (config.roles.empty()) {
    source = std::make_shared<CredentialProcessSource>(config.credential_process,
                                                       config.credentials_source, config.region,
                                                       options_.credential_process_timeout);
  } else {
    source = std::make_shared<RefreshingCredentials>(
        [this, config, ca_file] {
          return AssumeRoleChain(&client_, config, ca_file, options_.credential_process_timeout);
        },
        config.credentials_source, config.region);
  }
  return source;
}

RemoteStats RemoteEnv::stats() const {
  const HttpCounters& c = client_.counters();
  RemoteStats s;
  s.requests = c.requests.load();
  s.connections = c.connections.load();
  s.bytes = c.bytes.load();
  s.retries = c.retries.load();
  s.errors = c.errors.load();
  s.throttled = c.throttled.load();
  s.throttle_waits = c.throttle_waits.load();
  s.throttle_wait_ns = c.throttle_wait_ns.load();
  s.min_concurrency = static_cast<uint64_t>(client_.min_concurrency_limit());
  return s;
}

Result<HttpResponse> RemoteEnv::Head(const RemoteTarget& t, const std::string& url) {
  HttpRequest request = RequestFor(t, url, url == t.http_url ? t.name : url);
  request.head = true;
  return client_.Perform(request);
}

Status RemoteEnv::ReadRange(const RemoteTarget& t, uint64_t offset, std::span<uint8_t> out) {
  if (out.empty()) return Status::Ok();
  HttpRequest request = RequestFor(t, t.http_url, t.name);
  request.ranged = true;
  request.offset = offset;
  request.length = out.size();
  DOCFEED_ASSIGN_OR_RETURN(HttpResponse r, client_.Perform(request, out));
  if (r.status == 416) return ShortReadError(t.name, offset, out.size(), 0);
  if (r.status < 200 || r.status >= 300) return ResponseError(request, r, t);
  if (r.received_bytes != out.size()) {
    return ShortReadError(t.name, offset, out.size(), r.received_bytes);
  }
  return Status::Ok();
}

Result<std::vector<uint8_t>> RemoteEnv::ReadFile(const std::string& path, uint64_t max_bytes) {
  DOCFEED_ASSIGN_OR_RETURN(RemoteTarget t, Resolve(path));
  HttpRequest request = RequestFor(t, t.http_url, t.name);
  request.max_body_bytes = max_bytes;
  DOCFEED_ASSIGN_OR_RETURN(HttpResponse r, client_.Perform(request));
  if (r.status < 200 || r.status >= 300) return ResponseError(request, r, t);
  return std::move(r.body);
}

Status RemoteEnv::ReadAt(const std::string& path, uint64_t offset, std::span<uint8_t> out) {
  DOCFEED_ASSIGN_OR_RETURN(RemoteTarget t, Resolve(path));
  return ReadRange(t, offset, out);
}

Result<MappedFile> RemoteEnv::MapFile(const std::string& path) {
  DOCFEED_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, ReadFile(path, kDefaultMaxReadBytes));
  return MappedFile(path, std::make_unique<HeapRegion>(std::move(bytes)));
}

Result<HttpResponse> RemoteEnv::ObjectHead(const RemoteTarget& t) {
  DOCFEED_ASSIGN_OR_RETURN(HttpResponse r, Head(t, t.http_url));
  HttpRequest request;
  request.head = true;
  request.url = t.http_url;
  request.name = t.name;
  if (r.status < 200 || r.status >= 300) return ResponseError(request, r, t);
  if (r.size_bytes < 0) {
    return UnsupportedError("HEAD " + t.name + ": the server sent no Content-Length");
  }
  return r;
}

Result<uint64_t> RemoteEnv::ObjectSize(const RemoteTarget& t) {
  DOCFEED_ASSIGN_OR_RETURN(HttpResponse r, ObjectHead(t));
  return static_cast<uint64_t>(r.size_bytes);
}

Result<uint64_t> RemoteEnv::FileSize(const std::string& path) {
  DOCFEED_ASSIGN_OR_RETURN(RemoteTarget t, Resolve(path));
  return ObjectSize(t);
}

Result<std::unique_ptr<RandomAccessFile>> RemoteEnv::NewRandomAccessFile(const std::string& path) {
  return NewRandomAccessFile(path, nullptr);
}

Result<std::unique_ptr<RandomAccessFile>> RemoteEnv::NewRandomAccessFile(const std::string& path,
                                                                         std::string* version) {
  DOCFEED_ASSIGN_OR_RETURN(RemoteTarget t, Resolve(path));
  DOCFEED_ASSIGN_OR_RETURN(HttpResponse head, ObjectHead(t));
  const auto size_bytes = static_cast<uint64_t>(head.size_bytes);
  if (version != nullptr) {
    version->clear();
    if (!head.etag.empty() || !head.last_modified.empty()) {
      *version = t.http_url + "\n" + std::to_string(size_bytes) + "\n" + head.etag + "\n" +
                 head.last_modified;
    }
  }
  return std::unique_ptr<RandomAccessFile>(new RemoteFile(this, std::move(t), size_bytes));
}

Result<S3ListPage> RemoteEnv::ListPage(const RemoteTarget& t, const std::string& prefix,
                                       bool delimited, int max_keys, const std::string& token) {
  // Parameters in canonical (sorted) order and encoded as SigV4 encodes them, so the signed
  // query is the one sent.
  std::string query;
  if (!token.empty()) query += "continuation-token=" + UriEncode(token, false) + "&";
  if (delimited) query += "delimiter=%2F&";
  query +=
      "list-type=2&max-keys=" + std::to_string(max_keys) + "&prefix=" + UriEncode(prefix, false);
  HttpRequest request = RequestFor(t, t.list_url + "/?" + query,
                                   t.name + " (ListObjectsV2 prefix \"" + prefix + "\")");
  request.max_body_bytes = 64 << 20;
  DOCFEED_ASSIGN_OR_RETURN(HttpResponse r, client_.Perform(request));
  if (r.status < 200 || r.status >= 300) return ResponseError(request, r, t);
  return ParseListObjectsV2({reinterpret_cast<const char*>(r.body.data()), r.body.size()},
                            request.name);
}

Status RemoteEnv::ListAll(const RemoteTarget& t, const std::string& prefix, bool delimited,
                          std::vector<std::pair<std::string, uint64_t>>* objects,
                          std::vector<std::string>* prefixes) {
  std::string token;
  do {
    DOCFEED_ASSIGN_OR_RETURN(S3ListPage page, ListPage(t, prefix, delimited, 1000, token));
    for (auto& [key, size] : page.objects) {
      if (key.size() > prefix.size()) objects->emplace_back(key.substr(prefix.size()), size);
    }
    for (const std::string& p : page.common_prefixes) {
      std::string name = p.substr(std::min(prefix.size(), p.size()));
      while (!name.empty() && name.back() == '/') name.pop_back();
      if (!name.empty()) prefixes->push_back(std::move(name));
    }
    token = page.truncated ? page.next_token : "";
  } while (!token.empty());
  return Status::Ok();
}

Result<std::vector<std::string>> RemoteEnv::ListDirectory(const std::string& dir) {
  DOCFEED_ASSIGN_OR_RETURN(RemoteTarget t, Resolve(dir));
  if (!t.s3) {
    return UnsupportedError("cannot list " + dir +
                            ": an HTTP server has no listing docfeed can "
                            "read (use s3:// or name the files)");
  }
  std::vector<std::pair<std::string, uint64_t>> objects;
  std::vector<std::string> names;
  DOCFEED_RETURN_IF_ERROR(ListAll(t, WithSlash(t.key), true, &objects, &names));
  for (auto& [name, size] : objects) names.push_back(std::move(name));
  return names;
}

Result<std::vector<TreeEntry>> RemoteEnv::ListTree(const std::string& root) {
  DOCFEED_ASSIGN_OR_RETURN(RemoteTarget t, Resolve(root));
  if (!t.s3) {
    return UnsupportedError("cannot list " + root +
                            ": an HTTP server has no listing docfeed can "
                            "read (use s3:// or name the files)");
  }
  std::vector<std::pair<std::string, uint64_t>> objects;
  std::vector<std::string> unused;
  DOCFEED_RETURN_IF_ERROR(ListAll(t, WithSlash(t.key), false, &objects, &unused));
  std::vector<TreeEntry> entries;
  for (auto& [key, size] : objects) {
    if (key.back() == '/') continue;  // a "folder" marker object, as consoles create them
    entries.push_back({std::move(key), FileType::kRegular, FileType::kMissing});
  }
  std::sort(entries.begin(), entries.end(),
            [](const TreeEntry& a, const TreeEntry& b) { return a.path < b.path; });
  return entries;
}

Result<bool> RemoteEnv::HasChildren(const RemoteTarget& t) {
  if (t.s3) {
    DOCFEED_ASSIGN_OR_RETURN(S3ListPage page, ListPage(t, WithSlash(t.key), true, 1, ""));
    return !page.objects.empty() || !page.common_prefixes.empty();
  }
  const std::string url = WithSlash(t.http_url);
  DOCFEED_ASSIGN_OR_RETURN(HttpResponse r, Head(t, url));
  if (r.status == 404 || r.status == 410) return false;
  if ((r.status >= 200 && r.status < 300) || r.status == 403) return true;
  HttpRequest request;
  request.head = true;
  request.url = url;
  return ResponseError(request, r, t);
}

// An object is kRegular; a prefix with something below it kDirectory; nothing kMissing. When the
// server answers with an error (access denied, a network failure after retries), the answer is
// kOther: present but unknown, so that the caller's next read meets the error with its cause
// rather than reporting a missing file.
FileType RemoteEnv::GetFileType(const std::string& path) {
  Result<RemoteTarget> t = Resolve(path);
  if (!t.ok()) return FileType::kOther;
  if (!t->http_url.ends_with('/') && !(t->s3 && t->key.empty())) {
    Result<HttpResponse> r = Head(*t, t->http_url);
    if (!r.ok()) return FileType::kOther;
    if (r->status >= 200 && r->status < 300) return FileType::kRegular;
    const bool redirect = r->status >= 300 && r->status < 400;  // nginx: /dir -> /dir/
    if (r->status != 404 && r->status != 410 && !redirect) return FileType::kOther;
  }
  Result<bool> children = HasChildren(*t);
  if (!children.ok()) return FileType::kOther;
  return *children ? FileType::kDirectory : FileType::kMissing;
}

bool RemoteEnv::PathExists(const std::string& path) {
  return GetFileType(path) != FileType::kMissing;
}

// True also when the server answers with an error: the caller's reads below the path then
// report it (a wrong secret is "access denied naming the URL", not "not a directory").
bool RemoteEnv::IsDirectory(const std::string& path) {
  Result<RemoteTarget> t = Resolve(path);
  if (!t.ok()) return true;
  Result<bool> children = HasChildren(*t);
  return !children.ok() || *children;
}

Result<std::string> RemoteEnv::RealPath(const std::string& path) {
  DOCFEED_RETURN_IF_ERROR(ParseRemoteUrl(path).status());
  return path;  // a URL names itself; there are no links to resolve
}

Result<std::unique_ptr<WritableFile>> RemoteEnv::NewWritableFile(const std::string& path) {
  return ReadOnlyError(path, "write");
}
Status RemoteEnv::Rename(const std::string& from, const std::string& to) {
  return ReadOnlyError(from + " to " + to, "rename");
}
Status RemoteEnv::RenameNoReplace(const std::string& from, const std::string& to) {
  return ReadOnlyError(from + " to " + to, "rename");
}
Status RemoteEnv::ExchangePaths(const std::string& a, const std::string& b) {
  return ReadOnlyError(a + " and " + b, "exchange");
}
Status RemoteEnv::CreateDirectory(const std::string& path) {
  return ReadOnlyError(path, "create directory");
}
Status RemoteEnv::RemoveFile(const std::string& path) { return ReadOnlyError(path, "remove"); }
Status RemoteEnv::RemoveAll(const std::string& path) { return ReadOnlyError(path, "remove"); }
Result<std::unique_ptr<FileLock>> RemoteEnv::LockFile(const std::string& path) {
  return ReadOnlyError(path, "lock");
}
Status RemoteEnv::UnlockFile(std::unique_ptr<FileLock> lock) {
  return ReadOnlyError(lock ? lock->path() : std::string("(no lock)"), "unlock");
}

}  // namespace docfeed::internal
