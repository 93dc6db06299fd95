// RemoteEnv: docfeed's Env (include/docfeed/env.h) for s3:// and http(s):// URLs, read-only.
//
//   s3://BUCKET/KEY     S3 or an S3-compatible server, settings from the AWS variables and files
//                       (s3_config.h), requests signed with SigV4
//   http(s)://HOST/PATH a static file server answering HEAD and Range requests (nginx, a CDN)
//
// Reads: ReadFile is one GET; ReadAt and the RandomAccessFile's reads are ranged GETs (the
// file's size from a HEAD at open); MapFile reads the whole object into memory (at most
// kDefaultMaxReadBytes), as there is nothing to map. Listing and directories exist for S3 as key
// prefixes (ListObjectsV2); an HTTP server cannot list, so ListDirectory/ListTree of an http(s)
// URL are Unsupported. Every write, rename, delete and lock is Unsupported naming the URL.
//
// Settings are resolved for every whole-object call and at each NewRandomAccessFile (the file
// keeps what it was opened with), so changing AWS_PROFILE or the credentials applies to the next
// open, never to a file already open. Credentials from a credential_process are the exception
// that keeps them valid: the command runs once per (profile, command, region) for the life of the
// Env, and again before what it printed expires, for open files too; so do a profile's roles
// (assume_role.h), assumed once and again before their temporary credentials expire.
//
// Thread-safe: every method may be called from any thread (the HTTP client's handle pool).
#ifndef DOCFEED_REMOTE_REMOTE_ENV_H_
#define DOCFEED_REMOTE_REMOTE_ENV_H_

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/env.h"
#include "base/mutex.h"
#include "base/thread_annotations.h"
#include "docfeed/remote.h"
#include "remote/assume_role.h"
#include "remote/credential_process.h"
#include "remote/http_client.h"
#include "remote/s3_config.h"
#include "remote/s3_xml.h"

namespace docfeed::internal {

struct RemoteEnvOptions {
  HttpOptions http;
  EnvLookup lookup = ProcessEnvironment();  // where AWS_* variables are read
  // How long a profile's credential_process may run (credential_process.h) before it is killed.
  std::chrono::milliseconds credential_process_timeout{60000};
  Env* config_env = nullptr;  // reads ~/.aws/*; Env::Default() when null
};

// HttpOptions from the process environment: DOCFEED_REMOTE_MAX_ATTEMPTS,
// DOCFEED_REMOTE_TIMEOUT_MS (each request), DOCFEED_REMOTE_RETRY_BUDGET_MS (the waits between a
// request's attempts), DOCFEED_REMOTE_BASE_DELAY_MS, DOCFEED_REMOTE_ADAPTIVE_CONCURRENCY (0: do
// not lower the concurrency to a throttling server); unset or not a non-negative integer: the
// defaults of HttpOptions.
HttpOptions HttpOptionsFromEnvironment(const EnvLookup& lookup);

// What one URL resolves to under the current settings.
struct RemoteTarget {
  std::string name;      // the URL as given
  std::string http_url;  // what is fetched
  bool s3 = false;
  std::shared_ptr<const HttpSigning> signing;  // null: unsigned
  // Credentials that expire (a credential_process, an assumed role): each request signs with
  // their Current(), which replaces `signing` (what they were at open) as they are refreshed.
  std::shared_ptr<RefreshingCredentials> refreshed_signing;
  std::string credentials_source;  // S3Config's, for access-denied messages
  std::string list_url;            // s3: the bucket's URL, for ListObjectsV2
  std::string key;                 // s3: the object key
  // https: the PEM file of certificate authorities to trust; empty: the system's store. For
  // s3:// AWS_CA_BUNDLE or the profile's ca_bundle (S3Config), else, for both schemes,
  // CURL_CA_BUNDLE, then SSL_CERT_FILE.
  std::string ca_file;
};

// A request to `url` on behalf of target `t`: named `name` in errors, signed and trusting the
// certificate authorities as `t` was resolved (with its credential_process's current
// credentials; if they cannot be had, the request carries that error and Perform returns it).
HttpRequest RequestFor(const RemoteTarget& t, std::string url, std::string name);

// A final non-2xx response as the Env's error: NotFound for 404/410, "access denied" with where
// the credentials came from for S3's 401/403, IOError otherwise; naming the request and the
// server's answer (S3's error code and message).
Status ResponseError(const HttpRequest& request, const HttpResponse& r, const RemoteTarget& t);

class RemoteEnv : public Env {
 public:
  explicit RemoteEnv(RemoteEnvOptions options = {});
  ~RemoteEnv() override;

  // The process-wide instance (settings from the process environment). Never destroyed.
  static RemoteEnv* Default();

  Result<RemoteTarget> Resolve(const std::string& url);
  RemoteStats stats() const;
  // The client every request goes through (the write side, s3_upload.h, sends its own).
  HttpClient& client() { return client_; }

  // One ranged GET of `out.size()` bytes at `offset` (RemoteFile::ReadAt): exactly those bytes,
  // the Env's short read when the object ends first, or the mapped HTTP error.
  Status ReadRange(const RemoteTarget& target, uint64_t offset, std::span<uint8_t> out);

  using Env::ReadFile;
  Result<std::vector<uint8_t>> ReadFile(const std::string& path, uint64_t max_bytes) override;
  Status ReadAt(const std::string& path, uint64_t offset, std::span<uint8_t> out) override;
  Result<MappedFile> MapFile(const std::string& path) override;
  Result<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(const std::string& path) override;
  // The same, also saying which version of the object was opened (`version`): the URL fetched,
  // the size, the ETag and Last-Modified of the open's HEAD, one per line; "" when the server
  // sent neither validator (then nothing tells one version from another of the same size).
  Result<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(const std::string& path,
                                                                std::string* version);

  Result<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) override;
  Status Rename(const std::string& from, const std::string& to) override;
  Status RenameNoReplace(const std::string& from, const std::string& to) override;
  Status ExchangePaths(const std::string& a, const std::string& b) override;
  Status CreateDirectory(const std::string& path) override;
  Status RemoveFile(const std::string& path) override;
  Status RemoveAll(const std::string& path) override;

  Result<std::vector<std::string>> ListDirectory(const std::string& dir) override;
  Result<std::vector<TreeEntry>> ListTree(const std::string& root) override;
  FileType GetFileType(const std::string& path) override;
  bool PathExists(const std::string& path) override;
  bool IsDirectory(const std::string& path) override;
  Result<uint64_t> FileSize(const std::string& path) override;
  Result<std::string> RealPath(const std::string& path) override;

  Result<std::unique_ptr<FileLock>> LockFile(const std::string& path) override;
  Status UnlockFile(std::unique_ptr<FileLock> lock) override;

 private:
  // One page of ListObjectsV2 (`delimiter`: "/" or "") from `token` on.
  Result<S3ListPage> ListPage(const RemoteTarget& t, const std::string& prefix, bool delimited,
                              int max_keys, const std::string& token);
  // Every page: keys relative to `prefix`, and (delimited) the common prefixes' names.
  Status ListAll(const RemoteTarget& t, const std::string& prefix, bool delimited,
                 std::vector<std::pair<std::string, uint64_t>>* objects,
                 std::vector<std::string>* prefixes);
  Result<HttpResponse> Head(const RemoteTarget& t, const std::string& url);
  // The object's HEAD: a 2xx answer with a Content-Length; errors as ReadFile's.
  Result<HttpResponse> ObjectHead(const RemoteTarget& t);
  // The object's size from a HEAD (its Content-Length); errors as ReadFile's.
  Result<uint64_t> ObjectSize(const RemoteTarget& t);
  // Whether anything lies below the URL as a prefix (S3: a one-key listing; HTTP: the URL with
  // a trailing '/' served (2xx) or refused (403, nginx's answer for a directory without an
  // index)); an error is reported as such.
  Result<bool> HasChildren(const RemoteTarget& t);

  // The expiring credentials of these settings (a credential_process, or a role chain assumed
  // at its STS endpoint trusting `ca_file`), made at their first use and shared by every later
  // open with the same profile, command or roles, and region.
  std::shared_ptr<RefreshingCredentials> RefreshingSource(const S3Config& config,
                                                          const std::string& ca_file);

  RemoteEnvOptions options_;
  HttpClient client_;
  Mutex refreshing_sources_mu_;
  std::map<std::string, std::shared_ptr<RefreshingCredentials>> refreshing_sources_
      DOCFEED_GUARDED_BY(refreshing_sources_mu_);
};

}  // namespace docfeed::internal

#endif  // DOCFEED_REMOTE_REMOTE_ENV_H_
