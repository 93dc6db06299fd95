// The write side of s3://: a finished dataset directory on local disk copied to
// s3://BUCKET/PREFIX/ so that a reader sees either no dataset or the complete one.
//
//   CheckS3Output(url)        before any work: the bucket answers, the prefix is empty (or, with
//                             overwrite, holds only a docfeed dataset's objects)
//   UploadDataset(dir, url)   every file but the manifests first (one PUT each, or a multipart
//                             upload for files above part_bytes, its parts in parallel), then
//                             each docfeed.json, then dataset_dict.json: the objects a reader
//                             opens by are written last
//
// A multipart upload that fails is aborted (best effort); one left by a killed process is
// invisible (it is no object) and S3 removes it by a lifecycle rule
// (AbortIncompleteMultipartUpload). Objects written before a failure stay, without a manifest:
// nothing opens them, and a later upload with overwrite removes them first. Every request is
// retried as the read side's are (retry.h); an upload's body goes with its Content-MD5 and
// (signed) its SHA-256, which the server checks against what arrives (a damaged body is
// refused and sent again), and each object's size is checked with a HEAD once written.
//
// The RemoteEnv itself stays read-only (its NewWritableFile is Unsupported): these calls send
// whole objects and parts through its client.
#ifndef DOCFEED_REMOTE_S3_UPLOAD_H_
#define DOCFEED_REMOTE_S3_UPLOAD_H_

#include <cstdint>
#include <string>
#include <vector>

#include "base/env.h"
#include "docfeed/status.h"
#include "remote/remote_env.h"

namespace docfeed::internal {

struct S3UploadOptions {
  // Files above this size go in a multipart upload of parts this size (the last one smaller);
  // S3 requires parts of at least 5 MiB but the last, and at most 10000 parts.
  uint64_t part_bytes = uint64_t{16} << 20;
  int threads = 4;  // parts in flight at once
  // Replace what is at the prefix when it is a docfeed dataset or what an interrupted upload of
  // one left; refused for anything else.
  bool overwrite = false;
  // CopyObject: an object up to this size is one server-side copy (S3 copies at most 5 GiB in one
  // request); a larger one goes through this process (CopyObject below).
  uint64_t copy_part_bytes = uint64_t{5} << 30;
  // Keys below the URL that start with this (non-empty) are this upload's own, written before
  // the URL was made ready (pack's streamed data files): PrepareS3Output neither counts nor
  // removes them.
  std::string own_keys;
};

struct S3UploadSummary {
  uint64_t objects = 0;            // objects written
  uint64_t dataset_bytes = 0;      // their bytes (the local dataset's size)
  uint64_t sent_bytes = 0;         // request bodies sent, retries included
  uint64_t requests = 0;           // HTTP requests, retries included
  uint64_t retries = 0;            // attempts repeated after a transient failure
  uint64_t multipart_uploads = 0;  // files sent in parts
  uint64_t parts = 0;
  uint64_t replaced_objects = 0;  // removed first (overwrite)
  uint64_t aborted_uploads = 0;   // multipart uploads in progress below the prefix (overwrite)
  uint64_t copied_objects = 0;    // of `objects`, copied inside the store (CopyObject)
  uint64_t streamed_objects = 0;  // of `objects`, copied through this process (over 5 GiB)
  // pack's streamed data files (pack/remote_output.h StreamToRemote): how many went up while
  // the pack ran, and the most of their bytes held in the staging directory at once.
  uint64_t streamed_files = 0;
  uint64_t staged_peak_bytes = 0;
};

// True for a key (relative to the dataset's prefix) that a docfeed dataset or DatasetDict holds:
// data-*.arrow, dataset_info.json, state.json, docfeed.index, docfeed.json, rejects.jsonl,
// dataset_dict.json, tokenizer/..., and those one split directory down (pack's sent data
// files, docfeed-upload-PID-N/data-K.arrow, among them).
bool IsDatasetObjectKey(const std::string& relative_key);

// Checks, before anything is written, that `url` (s3://BUCKET/PREFIX) can receive a dataset:
// errors name the URL. The bucket must exist (NotFound otherwise) and the credentials be
// accepted; the prefix must hold nothing (AlreadyExists, saying what to do), or with overwrite
// only dataset objects (IsDatasetObjectKey; FailedPrecondition naming the first other key).
// Keys starting with `own_keys` (non-empty) are left out (S3UploadOptions::own_keys).
Status CheckS3Output(RemoteEnv* remote, const std::string& url, bool overwrite,
                     const std::string& own_keys = "");

// Uploads every file below the local directory `dir` (read through `local`) to `url`, manifests
// last (above). With overwrite, the dataset objects already at `url` are removed first, its
// manifests first of all, and the multipart uploads in progress below it aborted. On failure the
// error names the object's URL; nothing written since opens as a dataset.
Result<S3UploadSummary> UploadDataset(RemoteEnv* remote, Env* local, const std::string& dir,
                                      const std::string& url, const S3UploadOptions& options);

// UploadDataset in its two steps, for a caller that writes objects of its own in between (merge
// copies the parts' data files server-side): PrepareS3Output checks the URL (CheckS3Output) and,
// with overwrite, removes what is there (manifests first) and aborts the uploads in progress;
// UploadFiles sends the files below `dir`, manifests last. Both add to `summary`.
Status PrepareS3Output(RemoteEnv* remote, const std::string& url, const S3UploadOptions& options,
                       S3UploadSummary* summary);
Status UploadFiles(RemoteEnv* remote, Env* local, const std::string& dir, const std::string& url,
                   const S3UploadOptions& options, S3UploadSummary* summary);

// A copy of the object `from` (`size` bytes) to `to`, both s3:// URLs of the same endpoint: up
// to options.copy_part_bytes one server-side CopyObject (no byte passes through this process; a
// 200 whose body is an <Error> is a failure); a larger object through this process, its ranges
// read (ranged GETs) and sent as the parts of a multipart upload (aborted on failure). The
// copy's size is checked with a HEAD. Errors name both URLs. Adds to `summary`.
Status CopyObject(RemoteEnv* remote, const std::string& from, const std::string& to, uint64_t size,
                  const S3UploadOptions& options, S3UploadSummary* summary);

// An object copied inside the store to `name` below an output URL (CopyObjects).
struct ObjectCopy {
  std::string from;  // s3:// URL
  std::string name;  // relative to the output URL
  uint64_t size = 0;
};

// CopyObject of each of `copies` to `output`/name, options.threads at a time; the first failure
// stops the rest and is returned. Adds to `summary`.
Status CopyObjects(RemoteEnv* remote, const std::vector<ObjectCopy>& copies,
                   const std::string& output, const S3UploadOptions& options,
                   S3UploadSummary* summary);

// One local file to one object: a PUT, or a multipart upload (aborted on failure) above
// options.part_bytes. Adds to `summary`.
Status UploadFile(RemoteEnv* remote, Env* local, const std::string& path, const std::string& url,
                  const S3UploadOptions& options, S3UploadSummary* summary);

// Aborts every multipart upload in progress below `url` (ListMultipartUploads, then
// AbortMultipartUpload each): what killed uploads left. Returns how many. Only for a prefix this
// process is about to replace: it also aborts a concurrent writer's uploads there.
Result<uint64_t> AbortUploadsInProgress(RemoteEnv* remote, const std::string& url);

// DELETE of one object (S3 answers 204 whether it existed or not).
Status DeleteObject(RemoteEnv* remote, const std::string& url);

}  // namespace docfeed::internal

#endif  // DOCFEED_REMOTE_S3_UPLOAD_H_
