#include "remote/s3_upload.h"

#include <algorithm>
#include <atomic>
#include <thread>
#include <utility>
#include <vector>

#include "base/file.h"
#include "base/mutex.h"
#include "remote/s3_xml.h"
#include "remote/url.h"

namespace docfeed::internal {
namespace {

constexpr uint64_t kMinPartBytes = uint64_t{5} << 20;  // S3's minimum, but for the last part
constexpr uint64_t kMaxParts = 10000;

std::string ObjectUrl(const std::string& url, const std::string& relative) {
  return url.ends_with('/') ? url + relative : url + "/" + relative;
}

std::span<const uint8_t> Bytes(const std::string& text) {
  return {reinterpret_cast<const uint8_t*>(text.data()), text.size()};
}

std::string BodyText(const HttpResponse& r) {
  return {reinterpret_cast<const char*>(r.body.data()), r.body.size()};
}

Result<RemoteTarget> ResolveS3(RemoteEnv* remote, const std::string& url) {
  DOCFEED_ASSIGN_OR_RETURN(RemoteTarget t, remote->Resolve(url));
  if (!t.s3) {
    return UnsupportedError(
        "cannot write " + url +
        ": docfeed writes datasets to s3:// only (an HTTP server is read-only)");
  }
  return t;
}

// Sends `request` and maps a non-2xx answer to the Env's error.
Result<HttpResponse> Send(RemoteEnv* remote, const RemoteTarget& t, const HttpRequest& request) {
  DOCFEED_ASSIGN_OR_RETURN(HttpResponse r, remote->client().Perform(request));
  if (r.status < 200 || r.status >= 300) return ResponseError(request, r, t);
  return r;
}

// The object's size once written, against the local file's: a server that stored something else
// is caught here rather than by the first reader.
Status CheckStoredSize(RemoteEnv* remote, const std::string& url, uint64_t expected) {
  DOCFEED_ASSIGN_OR_RETURN(uint64_t stored, remote->FileSize(url));
  if (stored != expected) {
    return IOError("uploaded " + url + " but the server holds " + std::to_string(stored) +
                   " bytes of " + std::to_string(expected));
  }
  return Status::Ok();
}

Status PutObject(RemoteEnv* remote, const RemoteTarget& t, std::span<const uint8_t> bytes) {
  HttpRequest request = RequestFor(t, t.http_url, t.name);
  request.method = "PUT";
  request.upload = bytes;
  return Send(remote, t, request).status();
}

// A 200 whose body is an S3 error document (CopyObject and CompleteMultipartUpload may answer
// so) as the failure it reports.
Status CheckNoErrorDocument(const HttpRequest& request, const HttpResponse& r) {
  const std::string body = BodyText(r);
  if (body.find("<Error>") != std::string::npos) {
    return IOError(DescribeRequest(request) + ": " + ErrorSummary(body));
  }
  return Status::Ok();
}

// One multipart upload, from CreateMultipartUpload to Complete, aborted when anything fails. Its
// parts are read from `path` through `local` (a local file; or an object through the RemoteEnv,
// CopyObject's copy of an object too large for one server-side copy).
class MultipartUpload {
 public:
  MultipartUpload(RemoteEnv* remote, Env* local, RemoteTarget target, std::string path,
                  uint64_t size, const S3UploadOptions& options)
      : remote_(remote),
        local_(local),
        t_(std::move(target)),
        path_(std::move(path)),
        size_(size),
        part_bytes_(std::max(options.part_bytes, (size + kMaxParts - 1) / kMaxParts)),
        threads_(std::max(1, options.threads)) {}

  Status Run(uint64_t* parts_sent) {
    DOCFEED_ASSIGN_OR_RETURN(upload_id_, Create());
    Status status = SendParts();
    if (status.ok()) status = Complete();
    if (!status.ok()) {
      // Best effort: what is not aborted stays invisible until a lifecycle rule removes it.
      Status aborted = Abort();
      if (!aborted.ok()) {
        return status.WithContext("the multipart upload " + upload_id_ + " could not be aborted (" +
                                  aborted.ToString() +
                                  "); it holds no object and a lifecycle rule "
                                  "(AbortIncompleteMultipartUpload) removes it");
      }
      return status;
    }
    *parts_sent = etags_.size();
    return Status::Ok();
  }

 private:
  std::string Query(const std::string& query) const { return t_.http_url + "?" + query; }
  std::string EncodedId() const { return UriEncode(upload_id_, false); }

  Result<std::string> Create() {
    // "uploads=": SigV4's canonical form of the valueless parameter, sent as it is signed.
    HttpRequest request = RequestFor(t_, Query("uploads="), t_.name + " (CreateMultipartUpload)");
    request.method = "POST";
    DOCFEED_ASSIGN_OR_RETURN(HttpResponse r, Send(remote_, t_, request));
    std::string id = XmlElementText(BodyText(r), "UploadId");
    if (id.empty()) {
      return IOError(DescribeRequest(request) + ": the answer has no UploadId (" +
                     ErrorSummary(BodyText(r)) + ")");
    }
    return id;
  }

  Status SendParts() {
    const uint64_t count = (size_ + part_bytes_ - 1) / part_bytes_;
    etags_.assign(count, "");
    std::atomic<uint64_t> next{0};
    std::atomic<bool> failed{false};
    Mutex mu;
    Status first_error;
    auto work = [&] {
      std::vector<uint8_t> buffer;
      for (uint64_t i = next++; i < count && !failed.load(); i = next++) {
        const uint64_t offset = i * part_bytes_;
        buffer.resize(std::min(part_bytes_, size_ - offset));
        Status status = local_->ReadAt(path_, offset, buffer);
        Result<std::string> etag =
            status.ok() ? SendPart(i + 1, buffer) : Result<std::string>(status);
        if (!etag.ok()) {
          MutexLock lock(&mu);
          if (first_error.ok()) first_error = etag.status();
          failed = true;
          return;
        }
        etags_[i] = *std::move(etag);  // each worker writes its own parts' slots
      }
    };
    std::vector<std::thread> workers;
    const uint64_t n = std::min<uint64_t>(static_cast<uint64_t>(threads_), count);
    for (uint64_t w = 1; w < n; ++w) workers.emplace_back(work);
    work();
    for (std::thread& w : workers) w.join();
    return first_error;
  }

  Result<std::string> SendPart(uint64_t number, std::span<const uint8_t> bytes) {
    HttpRequest request =
        RequestFor(t_, Query("partNumber=" + std::to_string(number) + "&uploadId=" + EncodedId()),
                   t_.name + " (part " + std::to_string(number) + ")");
    request.method = "PUT";
    request.upload = bytes;
    DOCFEED_ASSIGN_OR_RETURN(HttpResponse r, Send(remote_, t_, request));
    if (r.etag.empty()) return IOError(DescribeRequest(request) + ": the answer has no ETag");
    return r.etag;
  }

  Status Complete() {
    std::string xml = "<CompleteMultipartUpload>";
    for (size_t i = 0; i < etags_.size(); ++i) {
      xml += "<Part><PartNumber>" + std::to_string(i + 1) + "</PartNumber><ETag>" + etags_[i] +
             "</ETag></Part>";
    }
    xml += "</CompleteMultipartUpload>";
    HttpRequest request =
        RequestFor(t_, Query("uploadId=" + EncodedId()), t_.name + " (CompleteMultipartUpload)");
    request.method = "POST";
    request.upload = Bytes(xml);
    Result<HttpResponse> r = Send(remote_, t_, request);
    if (!r.ok()) {
      // A retry after a completion whose answer was lost finds the upload gone: the object is
      // there when its size is the file's.
      if (r.status().code() == StatusCode::kNotFound &&
          CheckStoredSize(remote_, t_.name, size_).ok()) {
        return Status::Ok();
      }
      return r.status();
    }
    // S3 may answer 200 and report a failure in the body.
    return CheckNoErrorDocument(request, *r);
  }

  Status Abort() {
    HttpRequest request =
        RequestFor(t_, Query("uploadId=" + EncodedId()), t_.name + " (AbortMultipartUpload)");
    request.method = "DELETE";
    return Send(remote_, t_, request).status();
  }

  RemoteEnv* remote_;
  Env* local_;
  RemoteTarget t_;
  std::string path_;
  uint64_t size_;
  uint64_t part_bytes_;
  int threads_;
  std::string upload_id_;
  std::vector<std::string> etags_;
};

bool IsDatasetFileName(const std::string& name) {
  static const char* const kNames[] = {"dataset_info.json", "state.json",    "docfeed.index",
                                       "docfeed.json",      "rejects.jsonl", "dataset_dict.json"};
  for (const char* n : kNames) {
    if (name == n) return true;
  }
  return name.starts_with("data-") && name.ends_with(".arrow");
}

// The manifests, that make a prefix open as a dataset: written last, removed first.
int WriteRank(const std::string& relative) {
  const std::string base = BaseName(relative);
  if (base == "dataset_dict.json") return 2;
  if (base == "docfeed.json") return 1;
  return 0;
}

}  // namespace

bool IsDatasetObjectKey(const std::string& key) {
  const size_t slash = key.find('/');
  if (slash == std::string::npos) return IsDatasetFileName(key);
  const std::string first = key.substr(0, slash), rest = key.substr(slash + 1);
  if (first == "tokenizer") return true;
  if (rest.find('/') == std::string::npos) return IsDatasetFileName(rest);  // a split's file
  return rest.starts_with("tokenizer/");
}

namespace {

// What is below `url`, less the keys starting with `own_keys` (non-empty).
Result<std::vector<TreeEntry>> ListOthers(RemoteEnv* remote, const std::string& url,
                                          const std::string& own_keys) {
  DOCFEED_ASSIGN_OR_RETURN(std::vector<TreeEntry> there, remote->ListTree(url));
  if (!own_keys.empty()) {
    std::erase_if(there, [&](const TreeEntry& e) { return e.path.starts_with(own_keys); });
  }
  return there;
}

}  // namespace

Status CheckS3Output(RemoteEnv* remote, const std::string& url, bool overwrite,
                     const std::string& own_keys) {
  DOCFEED_RETURN_IF_ERROR(ResolveS3(remote, url).status());
  Result<std::vector<TreeEntry>> there = ListOthers(remote, url, own_keys);
  if (!there.ok()) return there.status().WithContext("cannot write a dataset to " + url);
  if (there->empty()) return Status::Ok();
  if (!overwrite) {
    return AlreadyExistsError(url + " already holds " + std::to_string(there->size()) +
                              " object(s) (" + (*there)[0].path +
                              ", ...); pass --overwrite to replace a dataset there, or remove "
                              "them (aws s3 rm --recursive " +
                              url + ")");
  }
  for (const TreeEntry& e : *there) {
    if (!IsDatasetObjectKey(e.path)) {
      return FailedPreconditionError("--overwrite replaces a docfeed dataset, but " + url +
                                     " holds " + ObjectUrl(url, e.path) +
                                     ", which is not part of one; left as it is");
    }
  }
  return Status::Ok();
}

Result<uint64_t> AbortUploadsInProgress(RemoteEnv* remote, const std::string& url) {
  DOCFEED_ASSIGN_OR_RETURN(RemoteTarget t, ResolveS3(remote, url));
  const std::string prefix = t.key.empty() || t.key.ends_with('/') ? t.key : t.key + "/";
  std::vector<std::pair<std::string, std::string>> uploads;
  std::string key_marker, id_marker;
  for (bool more = true; more;) {
    // Parameters in SigV4's canonical (sorted) order, as listing sends them.
    std::string query;
    if (!key_marker.empty()) query += "key-marker=" + UriEncode(key_marker, false) + "&";
    query += "prefix=" + UriEncode(prefix, false) + "&";
    if (!id_marker.empty()) query += "upload-id-marker=" + UriEncode(id_marker, false) + "&";
    query += "uploads=";
    HttpRequest request = RequestFor(t, t.list_url + "/?" + query,
                                     url + " (ListMultipartUploads prefix \"" + prefix + "\")");
    DOCFEED_ASSIGN_OR_RETURN(HttpResponse r, Send(remote, t, request));
    DOCFEED_ASSIGN_OR_RETURN(S3UploadsPage page,
                             ParseListMultipartUploads(BodyText(r), request.name));
    for (auto& u : page.uploads) uploads.push_back(std::move(u));
    more = page.truncated;
    key_marker = page.next_key_marker;
    id_marker = page.next_upload_id_marker;
  }
  for (const auto& [key, id] : uploads) {
    const std::string object = ObjectUrl(url, key.substr(std::min(prefix.size(), key.size())));
    DOCFEED_ASSIGN_OR_RETURN(RemoteTarget o, ResolveS3(remote, object));
    HttpRequest request = RequestFor(o, o.http_url + "?uploadId=" + UriEncode(id, false),
                                     object + " (AbortMultipartUpload)");
    request.method = "DELETE";
    Result<HttpResponse> aborted = Send(remote, o, request);
    // Gone already (completed or aborted meanwhile): nothing to do.
    if (!aborted.ok() && aborted.status().code() != StatusCode::kNotFound) {
      return aborted.status();
    }
  }
  return uploads.size();
}

Status DeleteObject(RemoteEnv* remote, const std::string& url) {
  DOCFEED_ASSIGN_OR_RETURN(RemoteTarget t, ResolveS3(remote, url));
  HttpRequest request = RequestFor(t, t.http_url, t.name);
  request.method = "DELETE";
  return Send(remote, t, request).status();
}

Status UploadFile(RemoteEnv* remote, Env* local, const std::string& path, const std::string& url,
                  const S3UploadOptions& options, S3UploadSummary* summary) {
  DOCFEED_ASSIGN_OR_RETURN(RemoteTarget t, ResolveS3(remote, url));
  DOCFEED_ASSIGN_OR_RETURN(uint64_t size, local->FileSize(path));
  const uint64_t part_bytes = std::max(options.part_bytes, kMinPartBytes);
  if (size <= part_bytes) {
    DOCFEED_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, local->ReadFile(path, part_bytes));
    DOCFEED_RETURN_IF_ERROR(PutObject(remote, t, bytes));
  } else {
    S3UploadOptions o = options;
    o.part_bytes = part_bytes;
    uint64_t parts = 0;
    DOCFEED_RETURN_IF_ERROR(MultipartUpload(remote, local, t, path, size, o).Run(&parts));
    summary->multipart_uploads += 1;
    summary->parts += parts;
  }
  DOCFEED_RETURN_IF_ERROR(CheckStoredSize(remote, url, size));
  summary->objects += 1;
  summary->dataset_bytes += size;
  return Status::Ok();
}

Result<S3UploadSummary> UploadDataset(RemoteEnv* remote, Env* local, const std::string& dir,
                                      const std::string& url, const S3UploadOptions& options) {
  const HttpCounters& c = remote->client().counters();
  const uint64_t sent0 = c.sent_bytes.load(), requests0 = c.requests.load(),
                 retries0 = c.retries.load();
  S3UploadSummary summary;
  DOCFEED_RETURN_IF_ERROR(PrepareS3Output(remote, url, options, &summary));
  DOCFEED_RETURN_IF_ERROR(UploadFiles(remote, local, dir, url, options, &summary));
  summary.sent_bytes = c.sent_bytes.load() - sent0;
  summary.requests = c.requests.load() - requests0;
  summary.retries = c.retries.load() - retries0;
  return summary;
}

Status PrepareS3Output(RemoteEnv* remote, const std::string& url, const S3UploadOptions& options,
                       S3UploadSummary* summary) {
  DOCFEED_RETURN_IF_ERROR(CheckS3Output(remote, url, options.overwrite, options.own_keys));
  if (!options.overwrite) return Status::Ok();
  DOCFEED_ASSIGN_OR_RETURN(std::vector<TreeEntry> old, ListOthers(remote, url, options.own_keys));
  std::stable_sort(old.begin(), old.end(), [](const TreeEntry& a, const TreeEntry& b) {
    return WriteRank(a.path) > WriteRank(b.path);  // manifests first: the old dataset closes
  });
  for (const TreeEntry& e : old) {
    DOCFEED_RETURN_IF_ERROR(DeleteObject(remote, ObjectUrl(url, e.path)));
    summary->replaced_objects += 1;
  }
  // What killed uploads to this prefix left in progress (invisible, but stored and billed).
  DOCFEED_ASSIGN_OR_RETURN(uint64_t aborted, AbortUploadsInProgress(remote, url));
  summary->aborted_uploads += aborted;
  return Status::Ok();
}

Status UploadFiles(RemoteEnv* remote, Env* local, const std::string& dir, const std::string& url,
                   const S3UploadOptions& options, S3UploadSummary* summary) {
  DOCFEED_ASSIGN_OR_RETURN(std::vector<TreeEntry> files, local->ListTree(dir));
  for (const TreeEntry& e : files) {
    if (e.type != FileType::kRegular) {
      return FailedPreconditionError(JoinPath(dir, e.path) + " is a " + FileTypeName(e.type) +
                                     ", not a regular file; nothing was uploaded for it");
    }
  }
  std::stable_sort(files.begin(), files.end(), [](const TreeEntry& a, const TreeEntry& b) {
    return WriteRank(a.path) < WriteRank(b.path);
  });
  for (const TreeEntry& e : files) {
    DOCFEED_RETURN_IF_ERROR(
        UploadFile(remote, local, JoinPath(dir, e.path), ObjectUrl(url, e.path), options, summary));
  }
  return Status::Ok();
}

Status CopyObjects(RemoteEnv* remote, const std::vector<ObjectCopy>& copies,
                   const std::string& output, const S3UploadOptions& options,
                   S3UploadSummary* summary) {
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  Mutex mu;
  Status first_error;
  auto work = [&] {
    S3UploadSummary mine;
    for (size_t i = next++; i < copies.size() && !failed.load(); i = next++) {
      const ObjectCopy& c = copies[i];
      Status copied = CopyObject(remote, c.from, JoinPath(output, c.name), c.size, options, &mine);
      if (!copied.ok()) {
        failed = true;
        MutexLock lock(&mu);
        if (first_error.ok()) first_error = copied;
        break;
      }
    }
    MutexLock lock(&mu);
    summary->objects += mine.objects;
    summary->copied_objects += mine.copied_objects;
    summary->streamed_objects += mine.streamed_objects;
    summary->dataset_bytes += mine.dataset_bytes;
    summary->multipart_uploads += mine.multipart_uploads;
    summary->parts += mine.parts;
  };
  std::vector<std::thread> workers;
  const size_t n =
      std::min<size_t>(static_cast<size_t>(std::max(1, options.threads)), copies.size());
  for (size_t w = 1; w < n; ++w) workers.emplace_back(work);
  work();
  for (std::thread& w : workers) w.join();
  return first_error;
}

Status CopyObject(RemoteEnv* remote, const std::string& from, const std::string& to, uint64_t size,
                  const S3UploadOptions& options, S3UploadSummary* summary) {
  DOCFEED_ASSIGN_OR_RETURN(RemoteTarget t, ResolveS3(remote, to));
  DOCFEED_RETURN_IF_ERROR(ResolveS3(remote, from).status());
  DOCFEED_ASSIGN_OR_RETURN(RemoteUrl source, ParseRemoteUrl(from));
  if (size <= options.copy_part_bytes) {
    HttpRequest request = RequestFor(t, t.http_url, to + " (copied from " + from + ")");
    request.method = "PUT";
    request.headers = {"x-amz-copy-source: /" + source.authority + "/" +
                       UriEncode(source.path, /*keep_slash=*/true)};
    DOCFEED_ASSIGN_OR_RETURN(HttpResponse r, Send(remote, t, request));
    DOCFEED_RETURN_IF_ERROR(CheckNoErrorDocument(request, r));
    summary->copied_objects += 1;
  } else {
    // Through this process: ranged GETs of `from` as the parts of a multipart upload.
    // UploadPartCopy would copy it server-side, but its request carries x-amz-copy-source and
    // x-amz-copy-source-range, which curl before its fix (curl/curl pull request 14370, 2024;
    // Debian 12 has 7.88) signs in the wrong order (whole lines sorted, '-' before ':'), and
    // the server answers SignatureDoesNotMatch.
    S3UploadOptions o = options;
    o.part_bytes = std::max(options.part_bytes, kMinPartBytes);
    uint64_t parts = 0;
    DOCFEED_RETURN_IF_ERROR(MultipartUpload(remote, remote, t, from, size, o).Run(&parts));
    summary->multipart_uploads += 1;
    summary->parts += parts;
    summary->streamed_objects += 1;
  }
  DOCFEED_RETURN_IF_ERROR(CheckStoredSize(remote, to, size));
  summary->objects += 1;
  summary->dataset_bytes += size;
  return Status::Ok();
}

}  // namespace docfeed::internal
