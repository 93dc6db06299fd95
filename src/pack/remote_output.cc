#include "pack/remote_output.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <utility>
#include <vector>

#include "base/file.h"
#include "format/dataset.h"
#include "format/manifest.h"
#include "format/verify.h"

namespace docfeed::internal {

std::string DefaultStagingRoot() {
  const char* tmp = std::getenv("TMPDIR");
  return tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
}

namespace {

// DOCFEED_STAGING_DIR/docfeed-upload-PID-N (else under `staging_root`), made empty.
Result<std::string> MakeStagingDirectory(Env* local, const std::string& url,
                                         const std::string& staging_root) {
  const char* configured = std::getenv("DOCFEED_STAGING_DIR");
  const std::string root =
      configured != nullptr && *configured != '\0' ? std::string(configured) : staging_root;
  static std::atomic<uint64_t> counter{0};
  const std::string staging =
      JoinPath(root, "docfeed-upload-" + std::to_string(CurrentProcessId()) + "-" +
                         std::to_string(counter++));
  DOCFEED_RETURN_IF_ERROR(local->RemoveAll(staging));
  Status made = local->CreateDirectory(staging);
  if (!made.ok()) {
    return made.WithContext("staging " + url +
                            " (set DOCFEED_STAGING_DIR to a directory with room for the "
                            "dataset's index and two data files)");
  }
  return staging;
}

S3UploadOptions UploadOptions(bool overwrite) {
  S3UploadOptions options;
  options.overwrite = overwrite;
  // DOCFEED_UPLOAD_PART_MB: the multipart part size (16; S3's minimum 5 is enforced).
  if (const char* mb = std::getenv("DOCFEED_UPLOAD_PART_MB"); mb != nullptr) {
    const long long value = std::atoll(mb);
    if (value > 0) options.part_bytes = static_cast<uint64_t>(value) << 20;
  }
  // DOCFEED_COPY_PART_MB: the largest object copied server-side (5120, S3's limit; the tests
  // lower it to copy one through this process).
  if (const char* mb = std::getenv("DOCFEED_COPY_PART_MB"); mb != nullptr) {
    const long long value = std::atoll(mb);
    if (value > 0) options.copy_part_bytes = static_cast<uint64_t>(value) << 20;
  }
  return options;
}

// The client's request counters, for the summary of what one call sent.
struct CounterMark {
  explicit CounterMark(RemoteEnv* remote)
      : c(remote->client().counters()),
        sent(c.sent_bytes.load()),
        requests(c.requests.load()),
        retries(c.retries.load()) {}
  void AddTo(S3UploadSummary* s) const {
    s->sent_bytes = c.sent_bytes.load() - sent;
    s->requests = c.requests.load() - requests;
    s->retries = c.retries.load() - retries;
  }
  const HttpCounters& c;
  uint64_t sent, requests, retries;
};

}  // namespace

Result<S3UploadSummary> WriteToRemote(Env* local, const std::string& url, bool overwrite,
                                      const std::string& staging_root,
                                      const std::function<Status(const std::string&)>& write,
                                      const std::function<Status(RemoteEnv*, const S3UploadOptions&,
                                                                 S3UploadSummary*)>& before_files) {
  RemoteEnv* remote = RemoteEnv::Default();
  // Refused before any work: a missing bucket, refused credentials, something already there.
  DOCFEED_RETURN_IF_ERROR(CheckS3Output(remote, url, overwrite));
  DOCFEED_ASSIGN_OR_RETURN(const std::string staging,
                           MakeStagingDirectory(local, url, staging_root));
  const std::string dataset = JoinPath(staging, "dataset");
  Status written = write(dataset);
  if (!written.ok()) {
    local->RemoveAll(staging).IgnoreError();
    return written;
  }
  const S3UploadOptions options = UploadOptions(overwrite);
  Result<S3UploadSummary> uploaded = S3UploadSummary{};
  if (before_files == nullptr) {
    uploaded = UploadDataset(remote, local, dataset, url, options);
  } else {
    const CounterMark mark(remote);
    S3UploadSummary& s = *uploaded;
    Status status = PrepareS3Output(remote, url, options, &s);
    if (status.ok()) status = before_files(remote, options, &s);
    if (status.ok()) status = UploadFiles(remote, local, dataset, url, options, &s);
    mark.AddTo(&s);
    if (!status.ok()) uploaded = status;
  }
  local->RemoveAll(staging).IgnoreError();
  if (!uploaded.ok()) return uploaded.status().WithContext("uploading to " + url);
  return uploaded;
}

namespace {

// The DataFileSink of StreamToRemote: each data file the pack closes goes up as
// URL/OWN/data-NNNNN.arrow on a thread of its own while the next one is written, then is
// removed from the staging directory. One upload at a time: Take waits for the previous one,
// so the staging directory holds at most the file going up and the one being written.
class StreamedDataFiles final : public DataFileSink {
 public:
  StreamedDataFiles(RemoteEnv* remote, Env* local, std::string url, std::string own,
                    S3UploadOptions options)
      : remote_(remote),
        local_(local),
        url_(std::move(url)),
        own_(std::move(own)),
        options_(std::move(options)) {}
  ~StreamedDataFiles() override { Wait().IgnoreError(); }

  Status Take(const FileEntry& entry, const std::string& path) override {
    // On disk now: this file, and the previous one if it is still going up.
    staged_peak_bytes_ = std::max(staged_peak_bytes_, held_bytes_ + entry.size_bytes);
    DOCFEED_RETURN_IF_ERROR(Wait());
    const std::string url = ObjectUrl(entries_.size());
    entries_.push_back(entry);
    held_bytes_ = entry.size_bytes;
    sending_ = std::async(std::launch::async, [this, path, url]() -> Status {
      DOCFEED_RETURN_IF_ERROR(UploadFile(remote_, local_, path, url, options_, &sent_));
      return local_->RemoveFile(path);
    });
    return Status::Ok();
  }

  Status Flush() override { return Wait(); }

  // Waits for the upload in flight; its error, if it failed.
  Status Wait() {
    if (!sending_.valid()) return Status::Ok();
    Status sent = sending_.get();
    if (!sent.ok()) return sent.WithContext("uploading to " + url_);
    held_bytes_ = 0;
    return Status::Ok();
  }

  // The object holding the data file of this size and checksum, or "" if none was taken.
  std::string ObjectFor(const FileEntry& f) const {
    for (size_t k = 0; k < entries_.size(); ++k) {
      if (entries_[k].size_bytes == f.size_bytes && entries_[k].xxh3 == f.xxh3) {
        return ObjectUrl(k);
      }
    }
    return "";
  }

  // Removes every object sent, and aborts the multipart uploads left below them (a retried
  // CreateMultipartUpload whose first answer was lost leaves one); the first failure is
  // returned, after trying the rest when `best_effort`.
  Status RemoveObjects(bool best_effort) {
    Status first;
    for (size_t k = 0; k < entries_.size(); ++k) {
      Status removed = DeleteObject(remote_, ObjectUrl(k));
      if (!removed.ok() && first.ok()) first = removed;
      if (!removed.ok() && !best_effort) return first;
    }
    Status aborted = AbortUploadsInProgress(remote_, JoinPath(url_, own_)).status();
    return first.ok() ? aborted : first;
  }

  // The entries of the data files taken (checked by the writer before it gave them).
  const std::vector<FileEntry>& entries() const { return entries_; }
  // Data files sent, and the most of their bytes held in the staging directory at once.
  uint64_t files() const { return entries_.size(); }
  uint64_t staged_peak_bytes() const { return staged_peak_bytes_; }

 private:
  // The object of the k-th data file taken: URL/OWN/data-K.arrow.
  std::string ObjectUrl(size_t k) const {
    char name[32];
    std::snprintf(name, sizeof(name), "data-%05zu.arrow", k);
    return JoinPath(url_, own_ + name);
  }

  RemoteEnv* remote_;
  Env* local_;
  const std::string url_;
  const std::string own_;
  const S3UploadOptions options_;
  std::vector<FileEntry> entries_;  // the k-th went up as ObjectUrl(k)
  std::future<Status> sending_;
  uint64_t held_bytes_ = 0;  // the file going up, until it is removed
  uint64_t staged_peak_bytes_ = 0;
  S3UploadSummary sent_;  // written by the thread of sending_; not reported (the objects go)
};

// Every dataset directory below `dir` (relative; "" for `dir` itself): those holding a manifest.
Result<std::vector<std::string>> StagedDatasets(Env* local, const std::string& dir) {
  DOCFEED_ASSIGN_OR_RETURN(std::vector<TreeEntry> files, local->ListTree(dir));
  std::vector<std::string> found;
  for (const TreeEntry& e : files) {
    if (BaseName(e.path) == kManifestFileName) found.push_back(ParentPath(e.path));
  }
  return found;
}

// After the pack, before anything at the URL changes: each staged dataset verified without its
// data files (the writer checked each one before it was sent).
Status VerifyStaged(Env* local, const std::vector<std::string>& datasets,
                    const std::string& dataset, const StreamedDataFiles& sent) {
  for (const std::string& relative : datasets) {
    const std::string dir = relative.empty() ? dataset : JoinPath(dataset, relative);
    DOCFEED_RETURN_IF_ERROR(VerifyDatasetWithDataSent(dir, local, sent.entries())
                                .WithContext("verifying the packed output"));
  }
  return Status::Ok();
}

// The sent objects copied to the names each staged manifest gives them, inside the store.
Status PlaceDataObjects(RemoteEnv* remote, Env* local, const std::vector<std::string>& datasets,
                        const std::string& dataset, const std::string& url,
                        const StreamedDataFiles& sent, const S3UploadOptions& options,
                        S3UploadSummary* summary) {
  for (const std::string& relative : datasets) {
    const std::string dir = relative.empty() ? dataset : JoinPath(dataset, relative);
    const std::string target = relative.empty() ? url : JoinPath(url, relative);
    DOCFEED_ASSIGN_OR_RETURN(std::string text,
                             local->ReadTextFile(JoinPath(dir, kManifestFileName)));
    DOCFEED_ASSIGN_OR_RETURN(Manifest manifest, DecodeManifest(text, dir));
    std::vector<ObjectCopy> copies;
    for (const FileEntry& f : manifest.data_files) {
      const std::string from = sent.ObjectFor(f);
      if (from.empty()) {
        return InternalError(JoinPath(dir, f.name) + " was not sent while the pack ran");
      }
      copies.push_back({from, f.name, f.size_bytes});
    }
    DOCFEED_RETURN_IF_ERROR(CopyObjects(remote, copies, target, options, summary));
  }
  return Status::Ok();
}

}  // namespace

Result<S3UploadSummary> StreamToRemote(
    Env* local, const std::string& url, bool overwrite,
    const std::function<Status(const std::string&, DataFileSink*)>& write) {
  RemoteEnv* remote = RemoteEnv::Default();
  DOCFEED_RETURN_IF_ERROR(CheckS3Output(remote, url, overwrite));
  DOCFEED_ASSIGN_OR_RETURN(const std::string staging,
                           MakeStagingDirectory(local, url, DefaultStagingRoot()));
  S3UploadOptions options = UploadOptions(overwrite);
  options.own_keys = BaseName(staging) + "/";  // docfeed-upload-PID-N/data-NNNNN.arrow
  const CounterMark mark(remote);
  StreamedDataFiles sent(remote, local, url, options.own_keys, options);
  const std::string dataset = JoinPath(staging, "dataset");
  Status status = write(dataset, &sent);  // an upload's failure comes back through Take
  Status waited = sent.Wait();
  if (status.ok()) status = waited;
  Result<std::vector<std::string>> datasets = StagedDatasets(local, dataset);
  if (status.ok()) status = datasets.status();
  if (status.ok()) status = VerifyStaged(local, *datasets, dataset, sent);
  S3UploadSummary summary;
  if (status.ok()) {
    // The dataset goes up: the URL made ready (an old dataset stays readable until here), the
    // data objects put in place, the sent ones removed, then the staged index and small files,
    // manifests last.
    status = PrepareS3Output(remote, url, options, &summary);
    if (status.ok()) {
      status = PlaceDataObjects(remote, local, *datasets, dataset, url, sent, options, &summary);
    }
    if (status.ok()) status = sent.RemoveObjects(/*best_effort=*/false);
    if (status.ok()) status = UploadFiles(remote, local, dataset, url, options, &summary);
    if (!status.ok()) status = status.WithContext("uploading to " + url);
  }
  if (!status.ok()) sent.RemoveObjects(/*best_effort=*/true).IgnoreError();
  local->RemoveAll(staging).IgnoreError();
  DOCFEED_RETURN_IF_ERROR(status);
  mark.AddTo(&summary);
  summary.streamed_files = sent.files();
  summary.staged_peak_bytes = sent.staged_peak_bytes();
  return summary;
}

}  // namespace docfeed::internal
