#include "pack/remote_output.h"

#include <atomic>
#include <cstdlib>

#include "base/file.h"

namespace docfeed::internal {

std::string DefaultStagingRoot() {
  const char* tmp = std::getenv("TMPDIR");
  return tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
}

Result<S3UploadSummary> WriteToRemote(Env* local, const std::string& url, bool overwrite,
                                      const std::string& staging_root,
                                      const std::function<Status(const std::string&)>& write,
                                      const std::function<Status(RemoteEnv*, const S3UploadOptions&,
                                                                 S3UploadSummary*)>& before_files) {
  RemoteEnv* remote = RemoteEnv::Default();
  // Refused before any work: a missing bucket, refused credentials, something already there.
  DOCFEED_RETURN_IF_ERROR(CheckS3Output(remote, url, overwrite));
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
                            " (set DOCFEED_STAGING_DIR to a directory with "
                            "room for the dataset)");
  }
  const std::string dataset = JoinPath(staging, "dataset");
  Status written = write(dataset);
  if (!written.ok()) {
    local->RemoveAll(staging).IgnoreError();
    return written;
  }
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
  Result<S3UploadSummary> uploaded = S3UploadSummary{};
  if (before_files == nullptr) {
    uploaded = UploadDataset(remote, local, dataset, url, options);
  } else {
    const HttpCounters& c = remote->client().counters();
    const uint64_t sent0 = c.sent_bytes.load(), requests0 = c.requests.load(),
                   retries0 = c.retries.load();
    S3UploadSummary& s = *uploaded;
    Status status = PrepareS3Output(remote, url, options, &s);
    if (status.ok()) status = before_files(remote, options, &s);
    if (status.ok()) status = UploadFiles(remote, local, dataset, url, options, &s);
    s.sent_bytes = c.sent_bytes.load() - sent0;
    s.requests = c.requests.load() - requests0;
    s.retries = c.retries.load() - retries0;
    if (!status.ok()) uploaded = status;
  }
  local->RemoveAll(staging).IgnoreError();
  if (!uploaded.ok()) return uploaded.status().WithContext("uploading to " + url);
  return uploaded;
}

}  // namespace docfeed::internal
