#include "remote/http_client.h"

#include <curl/curl.h>
#include <openssl/evp.h>
#include <strings.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstring>
#include <mutex>
#include <random>
#include <thread>

#include "base/check.h"
#include "base/mutex.h"
#include "remote/s3_xml.h"
#include "remote/url.h"

namespace docfeed::internal {
namespace {

// SHA-256 of an empty body: what SigV4's x-amz-content-sha256 is for GET and HEAD. S3 requires
// the header on every signed request; curl signs it when it is present.
constexpr char kEmptyBodySha256[] =
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
// An error document is kept for the message only.
constexpr size_t kMaxErrorBodyBytes = 64 * 1024;
// Idle handles kept for reuse; more threads than this still work, their handles are closed.
constexpr size_t kMaxIdleHandles = 64;

void InitCurlOnce() {
  static std::once_flag once;
  std::call_once(once, [] { DOCFEED_CHECK(curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK); });
}

// Transport failures that another attempt may not meet: refused or reset connections, timeouts,
// a body cut short (CURLE_PARTIAL_FILE: fewer bytes than Content-Length), TLS handshakes
// interrupted.
bool IsRetryableCurlCode(CURLcode code) {
  switch (code) {
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_PARTIAL_FILE:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
      return true;
    default:
      return false;
  }
}

// Lowercase hex SHA-256 of `bytes`: the x-amz-content-sha256 of a signed upload.
std::string Sha256Hex(std::span<const uint8_t> bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  DOCFEED_CHECK(EVP_Digest(bytes.data(), bytes.size(), digest, &size, EVP_sha256(), nullptr) == 1);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < size; ++i) {
    out += kHex[digest[i] >> 4];
    out += kHex[digest[i] & 15];
  }
  return out;
}

// Base64 of the MD5 of `bytes`: an upload's Content-MD5, which S3-compatible servers check (and
// some check instead of x-amz-content-sha256).
std::string Md5Base64(std::span<const uint8_t> bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  DOCFEED_CHECK(EVP_Digest(bytes.data(), bytes.size(), digest, &size, EVP_md5(), nullptr) == 1);
  unsigned char text[4 * ((EVP_MAX_MD_SIZE + 2) / 3) + 1];
  const int length = EVP_EncodeBlock(text, digest, static_cast<int>(size));
  return std::string(reinterpret_cast<const char*>(text), static_cast<size_t>(length));
}

uint64_t RandomBits() {
  thread_local std::mt19937_64 generator{std::random_device{}()};
  return generator();
}

// What one transfer received, filled by the callbacks below.
struct Transfer {
  CURL* handle = nullptr;
  const HttpRequest* request = nullptr;
  std::span<uint8_t> into;               // ranged GETs
  std::vector<uint8_t>* body = nullptr;  // whole GETs and error documents
  std::span<const uint8_t> upload;       // PUT and POST bodies
  uint64_t sent = 0;
  uint64_t received = 0;
  long status = 0;
  std::string content_range;
  std::string etag;
  std::string last_modified;
  enum class Abort { kNone, kTooLarge, kOverlong, kIgnoredRange } abort = Abort::kNone;
};

std::string_view TrimHeaderValue(std::string_view v) {
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == '\r' || v.back() == '\n' || v.back() == ' '))
    v.remove_suffix(1);
  return v;
}

size_t OnHeader(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const std::string_view line(data, size * count);
  constexpr std::string_view kContentRange = "content-range:";
  constexpr std::string_view kEtag = "etag:";
  constexpr std::string_view kLastModified = "last-modified:";
  if (line.starts_with("HTTP/")) {  // a new response (after a 100 Continue, say)
    t->content_range.clear();
    t->etag.clear();
    t->last_modified.clear();
    t->status = 0;
  } else if (line.size() > kLastModified.size() &&
             strncasecmp(line.data(), kLastModified.data(), kLastModified.size()) == 0) {
    t->last_modified = std::string(TrimHeaderValue(line.substr(kLastModified.size())));
  } else if (line.size() > kEtag.size() &&
             strncasecmp(line.data(), kEtag.data(), kEtag.size()) == 0) {
    t->etag = std::string(TrimHeaderValue(line.substr(kEtag.size())));
  } else if (line.size() > kContentRange.size() &&
             strncasecmp(line.data(), kContentRange.data(), kContentRange.size()) == 0) {
    t->content_range = std::string(TrimHeaderValue(line.substr(kContentRange.size())));
  }
  return size * count;
}

// Feeds an upload's body to curl (from the start again when curl rewinds it).
size_t OnRead(char* buffer, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t n = std::min<size_t>(size * count, t->upload.size() - t->sent);
  std::memcpy(buffer, t->upload.data() + t->sent, n);
  t->sent += n;
  return n;
}

int OnSeek(void* user, curl_off_t offset, int origin) {
  auto* t = static_cast<Transfer*>(user);
  if (origin != SEEK_SET || offset < 0 || static_cast<uint64_t>(offset) > t->upload.size()) {
    return CURL_SEEKFUNC_CANTSEEK;
  }
  t->sent = static_cast<uint64_t>(offset);
  return CURL_SEEKFUNC_OK;
}

// Writes a 2xx body where it belongs, refusing more than was asked for.
size_t OnBody(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t bytes = size * count;
  if (t->status == 0) curl_easy_getinfo(t->handle, CURLINFO_RESPONSE_CODE, &t->status);
  if (t->status < 200 || t->status >= 300) {
    const size_t keep =
        std::min(bytes, kMaxErrorBodyBytes - std::min(kMaxErrorBodyBytes, t->body->size()));
    t->body->insert(t->body->end(), data, data + keep);
    return bytes;
  }
  if (t->request->ranged) {
    if (t->status == 200 && t->request->offset != 0) {
      t->abort = Transfer::Abort::kIgnoredRange;
      return 0;
    }
    if (t->received + bytes > t->into.size()) {
      t->abort = Transfer::Abort::kOverlong;
      return 0;
    }
    std::memcpy(t->into.data() + t->received, data, bytes);
  } else {
    if (t->received + bytes > t->request->max_body_bytes) {
      t->abort = Transfer::Abort::kTooLarge;
      return 0;
    }
    t->body->insert(t->body->end(), data, data + bytes);
  }
  t->received += bytes;
  return bytes;
}

// "bytes FIRST-LAST/TOTAL" (TOTAL may be '*'); false when it is not that.
bool ParseContentRange(std::string_view v, uint64_t* first, uint64_t* last, int64_t* total) {
  if (!v.starts_with("bytes ")) return false;
  v.remove_prefix(6);
  const size_t dash = v.find('-'), slash = v.find('/');
  if (dash == std::string_view::npos || slash == std::string_view::npos || slash < dash) {
    return false;
  }
  auto number = [](std::string_view s, uint64_t* out) {
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
    return ec == std::errc() && end == s.data() + s.size() && !s.empty();
  };
  uint64_t t = 0;
  const std::string_view total_text = v.substr(slash + 1);
  *total = total_text == "*" ? -1 : (number(total_text, &t) ? static_cast<int64_t>(t) : -2);
  return number(v.substr(0, dash), first) && number(v.substr(dash + 1, slash - dash - 1), last) &&
         *total != -2;
}

// A ranged GET's answer: 206 with the Content-Range asked for (or one ending early at the
// object's end: a short read for the caller), or 200 with the whole object when the range starts
// at 0 (servers may ignore Range; the object then fits in the range). A body shorter than its
// headers promise is a retryable `failure`.
Status CheckRangeAnswer(const HttpRequest& r, const Transfer& t, long status,
                        int64_t content_length, int64_t* total, std::string* failure) {
  uint64_t expected = t.received;
  if (status == 206) {
    uint64_t first = 0, last = 0;
    if (!ParseContentRange(t.content_range, &first, &last, total) || first != r.offset ||
        last < first || last >= r.offset + r.length) {
      return UnsupportedError(DescribeRequest(r) + ": the server answered with Content-Range \"" +
                              t.content_range + "\"");
    }
    expected = last - first + 1;
  } else if (status == 200) {
    *total = content_length;
    if (content_length >= 0) expected = static_cast<uint64_t>(content_length);
  } else {
    return UnsupportedError(DescribeRequest(r) + ": HTTP " + std::to_string(status) +
                            " to a range request");
  }
  if (t.received != expected) {
    *failure = "truncated body: " + std::to_string(t.received) + " of " + std::to_string(expected) +
               " bytes";
  }
  return Status::Ok();
}

std::string Seconds(std::chrono::steady_clock::duration d) {
  const double s = std::chrono::duration<double>(d).count();
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f s", s);
  return text;
}

}  // namespace

// Idle easy handles; a handle keeps its connection cache across curl_easy_reset.
class HttpClient::HandlePool {
 public:
  ~HandlePool() {
    for (CURL* h : idle_) curl_easy_cleanup(h);
  }
  CURL* Acquire() {
    {
      MutexLock lock(&mu_);
      if (!idle_.empty()) {
        CURL* h = idle_.back();
        idle_.pop_back();
        return h;
      }
    }
    CURL* h = curl_easy_init();
    DOCFEED_CHECK(h != nullptr);
    return h;
  }
  void Release(CURL* h) {
    curl_easy_reset(h);
    {
      MutexLock lock(&mu_);
      if (idle_.size() < kMaxIdleHandles) {
        idle_.push_back(h);
        return;
      }
    }
    curl_easy_cleanup(h);
  }

 private:
  Mutex mu_;
  std::vector<CURL*> idle_ DOCFEED_GUARDED_BY(mu_);
};

struct HttpClient::Attempt {
  HttpResponse response;
  Status error;         // final: no retry helps
  std::string failure;  // retryable: what went wrong this time
};

std::string DescribeRequest(const HttpRequest& r) {
  const std::string method = !r.method.empty() ? r.method : r.head ? "HEAD" : "GET";
  std::string out = method + " " + (r.name.empty() ? r.url : r.name);
  if (r.ranged) {
    out += " (bytes " + std::to_string(r.offset) + "-" +
           std::to_string(r.offset + r.length - (r.length > 0 ? 1 : 0)) + ")";
  }
  return out;
}

HttpClient::HttpClient(HttpOptions options)
    : options_(std::move(options)), pool_(std::make_unique<HandlePool>()) {
  InitCurlOnce();
}

HttpClient::~HttpClient() = default;

namespace {

// Sets everything a request needs on a freshly reset handle; `headers` receives the list the
// handle points to (freed by the caller after the transfer).
void Configure(CURL* h, const HttpRequest& r, const HttpOptions& o, Transfer* t, char* errbuf,
               const std::string& payload_sha256, const std::string& content_md5,
               curl_slist** headers) {
  curl_easy_setopt(h, CURLOPT_URL, r.url.c_str());
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);  // no SIGALRM from resolver timeouts in threads
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(o.connect_timeout_ms));
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(o.timeout_ms));
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1024L);
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, static_cast<long>(o.low_speed_seconds));
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, OnHeader);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, t);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, OnBody);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, t);
  if (r.head) curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
  if (r.method == "PUT" || r.method == "POST") {
    // An upload (PUT) renamed when it is a POST, so both send `upload` with its Content-Length.
    curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(h, CURLOPT_READFUNCTION, OnRead);
    curl_easy_setopt(h, CURLOPT_READDATA, t);
    curl_easy_setopt(h, CURLOPT_SEEKFUNCTION, OnSeek);
    curl_easy_setopt(h, CURLOPT_SEEKDATA, t);
    curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(r.upload.size()));
    if (r.method == "POST") curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, "POST");
  } else if (!r.method.empty()) {
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, r.method.c_str());
  }
  if (!content_md5.empty()) {
    *headers = curl_slist_append(*headers, ("Content-MD5: " + content_md5).c_str());
  }
  for (const std::string& header : r.headers) {
    *headers = curl_slist_append(*headers, header.c_str());
  }
  if (!r.ca_file.empty()) curl_easy_setopt(h, CURLOPT_CAINFO, r.ca_file.c_str());
  std::string range;
  if (r.ranged) {
    range = std::to_string(r.offset) + "-" + std::to_string(r.offset + r.length - 1);
    curl_easy_setopt(h, CURLOPT_RANGE, range.c_str());  // copied by curl
  }
  if (r.signing != nullptr) {
    const HttpSigning& s = *r.signing;
    const std::string provider = "aws:amz:" + s.region + ":" + s.service;
    curl_easy_setopt(h, CURLOPT_AWS_SIGV4, provider.c_str());
    curl_easy_setopt(h, CURLOPT_USERNAME, s.access_key_id.c_str());
    curl_easy_setopt(h, CURLOPT_PASSWORD, s.secret_access_key.c_str());
    *headers = curl_slist_append(*headers, ("x-amz-content-sha256: " + payload_sha256).c_str());
    if (!s.session_token.empty()) {
      *headers = curl_slist_append(*headers, ("x-amz-security-token: " + s.session_token).c_str());
    }
  }
  if (*headers != nullptr) curl_easy_setopt(h, CURLOPT_HTTPHEADER, *headers);
}

}  // namespace

HttpClient::Attempt HttpClient::PerformOnce(const HttpRequest& r, std::span<uint8_t> into,
                                            const std::string& payload_sha256,
                                            const std::string& content_md5) {
  Attempt a;
  Transfer t;
  t.handle = pool_->Acquire();
  t.request = &r;
  t.into = into;
  t.body = &a.response.body;
  t.upload = r.upload;
  char errbuf[CURL_ERROR_SIZE] = {0};
  curl_slist* headers = nullptr;
  Configure(t.handle, r, options_, &t, errbuf, payload_sha256, content_md5, &headers);
  const CURLcode rc = curl_easy_perform(t.handle);
  counters_.requests.fetch_add(1, std::memory_order_relaxed);
  counters_.sent_bytes.fetch_add(t.sent, std::memory_order_relaxed);
  a.response.etag = std::move(t.etag);
  a.response.last_modified = std::move(t.last_modified);
  curl_easy_getinfo(t.handle, CURLINFO_RESPONSE_CODE, &a.response.status);
  curl_off_t content_length = -1;
  curl_easy_getinfo(t.handle, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &content_length);
  long connects = 0;
  curl_easy_getinfo(t.handle, CURLINFO_NUM_CONNECTS, &connects);
  counters_.connections.fetch_add(static_cast<uint64_t>(connects), std::memory_order_relaxed);
  curl_slist_free_all(headers);
  pool_->Release(t.handle);
  const std::string what = DescribeRequest(r);
  switch (t.abort) {
    case Transfer::Abort::kTooLarge:
      a.error = ResourceExhaustedError("cannot read " + (r.name.empty() ? r.url : r.name) +
                                       ": it holds more than the limit of " +
                                       std::to_string(r.max_body_bytes) + " bytes");
      return a;
    case Transfer::Abort::kOverlong:
    case Transfer::Abort::kIgnoredRange:
      a.error = UnsupportedError(what + ": the server answered HTTP " +
                                 std::to_string(a.response.status) +
                                 " with more bytes than the range asked for (it does not honour "
                                 "Range requests)");
      return a;
    case Transfer::Abort::kNone:
      break;
  }
  if (rc != CURLE_OK) {
    std::string message = "curl error " + std::to_string(static_cast<int>(rc)) + " (" +
                          curl_easy_strerror(rc) + (errbuf[0] ? std::string(": ") + errbuf : "") +
                          ")";
    if (rc == CURLE_PEER_FAILED_VERIFICATION || rc == CURLE_SSL_CACERT_BADFILE) {
      message += r.ca_file.empty()
                     ? "; trusted: the system's certificate authorities (AWS_CA_BUNDLE for s3://, "
                       "CURL_CA_BUNDLE or SSL_CERT_FILE name a PEM file of others)"
                     : "; trusted: the certificate authorities in " + r.ca_file;
    }
    if (IsRetryableCurlCode(rc)) {
      a.failure = std::move(message);
    } else {
      a.error = IOError(what + ": " + message);
    }
    return a;
  }
  const long status = a.response.status;
  if (IsRetryableHttpStatus(status) || (status == 400 && !r.upload.empty())) {
    const std::string summary = ErrorSummary(
        {reinterpret_cast<const char*>(a.response.body.data()), a.response.body.size()});
    // An upload the server received damaged (its Content-MD5 or SHA-256 does not match) is sent
    // again; other 400s are final.
    const bool damaged =
        summary.starts_with("BadDigest") || summary.starts_with("XAmzContentSHA256Mismatch");
    if (status != 400 || damaged) {
      a.failure = "HTTP " + std::to_string(status) + (summary.empty() ? "" : " " + summary);
      return a;
    }
  }
  if (status < 200 || status >= 300 || r.head || !r.method.empty()) {
    a.response.size_bytes = static_cast<int64_t>(content_length);
    return a;
  }
  counters_.bytes.fetch_add(t.received, std::memory_order_relaxed);
  if (!r.ranged) {
    a.response.size_bytes = static_cast<int64_t>(content_length);
    if (content_length >= 0 && t.received != static_cast<uint64_t>(content_length)) {
      a.failure = "truncated body: " + std::to_string(t.received) + " of " +
                  std::to_string(content_length) + " bytes (Content-Length)";
    }
    return a;
  }
  a.response.received_bytes = t.received;
  a.error = CheckRangeAnswer(r, t, status, static_cast<int64_t>(content_length),
                             &a.response.size_bytes, &a.failure);
  return a;
}

Result<HttpResponse> HttpClient::Perform(const HttpRequest& request, std::span<uint8_t> into) {
  DOCFEED_CHECK(!request.ranged || into.size() == request.length);
  DOCFEED_RETURN_IF_ERROR(request.signing_error);
  const auto start = std::chrono::steady_clock::now();
  // S3 requires the header on every signed request; for an upload it is checked against the body.
  const std::string payload_sha256 = request.signing == nullptr || request.upload.empty()
                                         ? std::string(kEmptyBodySha256)
                                         : Sha256Hex(request.upload);
  const std::string content_md5 = request.upload.empty() ? "" : Md5Base64(request.upload);
  int64_t waited_ms = 0;
  ConcurrencyLimiter& limiter = LimiterFor(request.url);
  for (int attempt = 1;; ++attempt) {
    int64_t slot_wait_ns = 0;
    const ConcurrencyLimiter::Ticket ticket = limiter.Acquire(&slot_wait_ns);
    if (slot_wait_ns > 0) {
      counters_.throttle_waits.fetch_add(1, std::memory_order_relaxed);
      counters_.throttle_wait_ns.fetch_add(static_cast<uint64_t>(slot_wait_ns),
                                           std::memory_order_relaxed);
    }
    Attempt a = PerformOnce(request, into, payload_sha256, content_md5);
    const long status = a.response.status;
    const bool throttled = status == 503 || status == 429;
    if (throttled) counters_.throttled.fetch_add(1, std::memory_order_relaxed);
    limiter.Release(ticket, throttled    ? ConcurrencyLimiter::Outcome::kThrottled
                            : status > 0 ? ConcurrencyLimiter::Outcome::kServed
                                         : ConcurrencyLimiter::Outcome::kNoAnswer);
    if (!a.error.ok()) {
      counters_.errors.fetch_add(1, std::memory_order_relaxed);
      return a.error;
    }
    if (a.failure.empty()) return std::move(a.response);
    const int64_t delay_ms = BackoffDelayMs(options_.retry, attempt - 1, RandomBits());
    if (attempt >= options_.retry.max_attempts || waited_ms + delay_ms > options_.retry.budget_ms) {
      counters_.errors.fetch_add(1, std::memory_order_relaxed);
      return IOError(DescribeRequest(request) + ": " + a.failure + " (gave up after " +
                     std::to_string(attempt) + " attempt(s) in " +
                     Seconds(std::chrono::steady_clock::now() - start) + "; " + request.url + ")");
    }
    counters_.retries.fetch_add(1, std::memory_order_relaxed);
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    waited_ms += delay_ms;
  }
}

ConcurrencyLimiter& HttpClient::LimiterFor(const std::string& url) {
  // The server: "scheme://host[:port]" (a URL that does not parse is its own server).
  Result<RemoteUrl> parsed = ParseRemoteUrl(url);
  const std::string server =
      !parsed.ok() ? url
                   : (parsed->scheme == RemoteUrl::Scheme::kHttps ? "https://" : "http://") +
                         parsed->authority;
  MutexLock lock(&limiters_mu_);
  std::unique_ptr<ConcurrencyLimiter>& limiter = limiters_[server];
  if (limiter == nullptr) {
    limiter = std::make_unique<ConcurrencyLimiter>(options_.max_concurrency_limit,
                                                   options_.adaptive_concurrency);
  }
  return *limiter;
}

int HttpClient::min_concurrency_limit() const {
  MutexLock lock(&limiters_mu_);
  int lowest = 0;
  for (const auto& [server, limiter] : limiters_) {
    const int m = limiter->min_limit();
    if (m > 0) lowest = lowest == 0 ? m : std::min(lowest, m);
  }
  return lowest;
}

}  // namespace docfeed::internal
