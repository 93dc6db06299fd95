// HTTP(S) GET and HEAD over libcurl, with SigV4 signing (curl's CURLOPT_AWS_SIGV4), byte
// ranges, retries with backoff and jitter (retry.h) and per-request timeouts.
//
// Threading: every method may be called from any number of threads at once. Each request takes
// a curl easy handle from a pool and puts it back afterwards, so connections (and TLS sessions)
// are reused across requests of one thread and of successive threads. A later batch interface
// (many ranges at once) belongs on curl's multi interface over the same pool.
//
// Throttling: each server (scheme, host and port) gets a ConcurrencyLimiter
// (concurrency_limiter.h). Until a server answers 503 or 429 it changes nothing; after that,
// every attempt to that server waits for a slot under a limit that halves on throttling and
// grows back while the server keeps up.
#ifndef DOCFEED_REMOTE_HTTP_CLIENT_H_
#define DOCFEED_REMOTE_HTTP_CLIENT_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/mutex.h"
#include "docfeed/status.h"
#include "remote/concurrency_limiter.h"
#include "remote/retry.h"

namespace docfeed::internal {

// How a request is signed: AWS Signature V4 for S3 ("aws:amz:REGION:s3").
struct HttpSigning {
  std::string region;
  std::string access_key_id;
  std::string secret_access_key;
  std::string session_token;   // sent as x-amz-security-token when set
  std::string service = "s3";  // the SigV4 service name ("sts" for AssumeRole)
};

struct HttpRequest {
  bool head = false;  // HEAD instead of GET
  // "PUT", "POST" or "DELETE" (the S3 write side, s3_upload.h); empty: GET, or HEAD when `head`.
  std::string method;
  // What PUT and POST send (not copied: it must outlive Perform), with its Content-MD5; signed
  // requests also carry its SHA-256 as x-amz-content-sha256. The server checks what arrives
  // against them (AWS both; SeaweedFS the MD5 only) and refuses a damaged body.
  std::span<const uint8_t> upload;
  // Further "Name: value" headers, signed with the rest (S3's x-amz-copy-source of a copy).
  std::vector<std::string> headers;
  std::string url;   // what is fetched
  std::string name;  // how errors name it (the s3:// URL the user wrote); `url` when empty
  std::shared_ptr<const HttpSigning> signing;  // null: unsigned
  // Not OK: the credentials to sign with could not be had (RequestFor); Perform returns this
  // and sends nothing.
  Status signing_error;
  // https: a PEM file of the certificate authorities to trust instead of the system's store
  // (RemoteTarget::ca_file); empty: the system's.
  std::string ca_file;
  // A ranged GET of [offset, offset + length) into the caller's buffer (HttpClient::Perform's
  // `into`, exactly `length` bytes); otherwise the whole body, of at most max_body_bytes.
  bool ranged = false;
  uint64_t offset = 0;
  uint64_t length = 0;
  uint64_t max_body_bytes = uint64_t{1} << 30;
};

struct HttpResponse {
  long status = 0;
  std::vector<uint8_t> body;  // whole GETs with a 2xx status; the error document otherwise
  // HEAD and whole GETs: Content-Length (-1 when the server sent none). Ranged GETs: the
  // object's total size from Content-Range (-1 when not given).
  int64_t size_bytes = -1;
  // Ranged GETs: the bytes written to `into`; fewer than asked when the object ends inside the
  // range (a short read for the caller to report).
  uint64_t received_bytes = 0;
  std::string etag;           // the ETag header as sent (quotes included); "" when none
  std::string last_modified;  // the Last-Modified header as sent; "" when none
};

struct HttpOptions {
  RetryPolicy retry;
  int64_t connect_timeout_ms = 10000;
  // The whole request, transfer included; 0: none. Transfers slower than 1 KiB/s for
  // low_speed_seconds are abandoned (and retried) regardless.
  int64_t timeout_ms = 300000;
  int64_t low_speed_seconds = 30;
  // Lower the concurrency to a server that throttles (concurrency_limiter.h); false: only the
  // retries' backoff (the throttled answers are still counted).
  bool adaptive_concurrency = true;
  int max_concurrency_limit = 64;  // a limit grown past this is dropped
};

// Counters over the client's life (all requests, all threads).
struct HttpCounters {
  std::atomic<uint64_t> requests{0};     // attempts sent, retries included
  std::atomic<uint64_t> connections{0};  // new connections opened (the rest reused one)
  std::atomic<uint64_t> bytes{0};        // body bytes of successful responses
  std::atomic<uint64_t> sent_bytes{0};   // request bodies sent (PUT, POST), retries included
  std::atomic<uint64_t> retries{0};
  std::atomic<uint64_t> errors{0};            // requests that failed for good (after their retries)
  std::atomic<uint64_t> throttled{0};         // attempts answered 503 or 429
  std::atomic<uint64_t> throttle_waits{0};    // attempts that waited for a limiter's slot
  std::atomic<uint64_t> throttle_wait_ns{0};  // their time waiting
};

class HttpClient {
 public:
  explicit HttpClient(HttpOptions options = {});
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // Sends `request`, retrying transient failures (connection errors and resets, timeouts,
  // truncated bodies, retryable statuses). Returns the final response whatever its status (a
  // 404 is a response, not an error), with a ranged GET's bytes in `into` (REQUIRES:
  // into.size() == request.length) when the status is 206 or 200.
  // Errors: IOError naming the request's name, the range, and the last failure (curl's error
  // or the HTTP status with the server's error code) once the retry policy gives up;
  // ResourceExhausted for a whole body past max_body_bytes; Unsupported when a server answers
  // a range request with another range or the whole object.
  Result<HttpResponse> Perform(const HttpRequest& request, std::span<uint8_t> into = {});

  const HttpCounters& counters() const { return counters_; }
  const HttpOptions& options() const { return options_; }
  // The lowest concurrency limit set for any server so far; 0 when none throttled.
  int min_concurrency_limit() const DOCFEED_EXCLUDES(limiters_mu_);

 private:
  class HandlePool;
  struct Attempt;

  // The limiter of the server `url` names (created at its first request).
  ConcurrencyLimiter& LimiterFor(const std::string& url) DOCFEED_EXCLUDES(limiters_mu_);

  Attempt PerformOnce(const HttpRequest& request, std::span<uint8_t> into,
                      const std::string& payload_sha256, const std::string& content_md5);

  HttpOptions options_;
  std::unique_ptr<HandlePool> pool_;
  HttpCounters counters_;
  mutable Mutex limiters_mu_;
  // By "scheme://host:port"; never erased, so references stay valid.
  std::map<std::string, std::unique_ptr<ConcurrencyLimiter>> limiters_
      DOCFEED_GUARDED_BY(limiters_mu_);
};

// "GET NAME (bytes A-B)" / "HEAD NAME" / "PUT NAME": how messages name a request.
std::string DescribeRequest(const HttpRequest& request);

}  // namespace docfeed::internal

#endif  // DOCFEED_REMOTE_HTTP_CLIENT_H_
