// pack and merge with `-o s3://BUCKET/PREFIX`: the output is written, verified and placed in a
// local staging directory exactly as a local OUT is (same bytes, same checks), then uploaded to
// the URL with the manifests last (remote/s3_upload.h), and the staging directory removed.
//
//   WriteToRemote(url, overwrite, staging_root, write)
//     CheckS3Output(url)                   bucket, credentials, an empty prefix: before any work
//     write(STAGING/dataset)               the local pack or merge
//     UploadDataset(STAGING/dataset, url)  data files, index, ..., docfeed.json last
//                                          (before_files, if given, between its two steps)
//     RemoveAll(STAGING)                   also on failure
//
// The staging directory is `<root>/docfeed-upload-<pid>-<n>`; the root is DOCFEED_STAGING_DIR
// when set, else the caller's (pack: TMPDIR or /tmp; merge: the first part's parent, so that its
// data files are hard links to the parts'). It needs room for the dataset; a killed run leaves
// it behind (nothing else removes it).
#ifndef DOCFEED_PACK_REMOTE_OUTPUT_H_
#define DOCFEED_PACK_REMOTE_OUTPUT_H_

#include <functional>
#include <string>

#include "base/env.h"
#include "docfeed/status.h"
#include "remote/s3_upload.h"

namespace docfeed::internal {

// TMPDIR, else /tmp: where pack stages an s3:// output (unless DOCFEED_STAGING_DIR is set).
std::string DefaultStagingRoot();

// Runs `write(local_output)` for a fresh local path inside a staging directory under
// DOCFEED_STAGING_DIR or `staging_root`, then uploads what it wrote to `url` (an s3:// URL).
// Errors name the URL (the upload's) or come from `write`. REQUIRES: IsRemotePath(url).
// `local` is where the staging directory is made and read back from.
// `before_files`, when given, runs once the URL is ready (checked, and with overwrite emptied)
// and before the staged files go up: merge copies the parts' data objects there server-side.
Result<S3UploadSummary> WriteToRemote(
    Env* local, const std::string& url, bool overwrite, const std::string& staging_root,
    const std::function<Status(const std::string&)>& write,
    const std::function<Status(RemoteEnv*, const S3UploadOptions&, S3UploadSummary*)>&
        before_files = nullptr);

}  // namespace docfeed::internal

#endif  // DOCFEED_PACK_REMOTE_OUTPUT_H_
