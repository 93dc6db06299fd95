// pack and merge with `-o s3://BUCKET/PREFIX`. merge (WriteToRemote): the output is written,
// verified and placed in a local staging directory exactly as a local OUT is (same bytes, same
// checks), then uploaded to the URL with the manifests last (remote/s3_upload.h), and the
// staging directory removed. pack (StreamToRemote, below) sends its data files as it writes them.
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
#include "format/shard_writer.h"
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

// pack -o s3://: `write(local_output, sink)` packs into a fresh local path inside a staging
// directory as WriteToRemote's `write` does, handing each data file to `sink` as soon as it is
// closed (PackOptions::data_sink). The sink sends it up as URL/docfeed-upload-PID-N/data-K.arrow
// on a thread of its own while the next one is written, and removes it locally: the staging
// directory holds the data file being written and the one going up, never the dataset.
//
//   CheckS3Output(url)                    before any work
//   write(STAGING/dataset, sink)          the pack; data files go up as they close
//   VerifyDatasetWithDataSent             the staged manifest and index, without the data files
//                                         (each checked by the writer before it was sent)
//   PrepareS3Output(url)                  checked again; with overwrite the old dataset removed
//                                         (it stays readable while the pack runs)
//   CopyObjects(url/SPLIT/data-*-of-*)    the sent files copied to their names in the staged
//                                         manifests, inside the store
//   DeleteObject(docfeed-upload-...)      the sent files removed
//   UploadFiles(STAGING/dataset)          index and small files, manifests last
//
// On failure the sent files are removed (best effort) and the error names the URL; a killed run
// leaves its sent files and staging directory, which a later --overwrite (or aws s3 rm) removes.
Result<S3UploadSummary> StreamToRemote(
    Env* local, const std::string& url, bool overwrite,
    const std::function<Status(const std::string&, DataFileSink*)>& write);

}  // namespace docfeed::internal

#endif  // DOCFEED_PACK_REMOTE_OUTPUT_H_
