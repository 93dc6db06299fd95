// Merging the parts of a split pack (`docfeed merge PARTS... -o OUT`; docs/format.md section 16).
//
// `docfeed pack SRC --part I/N` (docfeed/pack.h PackOptions::part_index / part_count) packs a
// contiguous slice of the source's samples into a complete dataset; Merge joins the N parts into
// the dataset a single `docfeed pack SRC` writes: the same sample ids in the same order, the same
// rows and the same image bytes (the data files are cut at other places). The parts' data files
// are not copied where the file system allows: OUT's data files are hard links to them (Env::
// LinkFile), else (another file system) copies. The index, rejects and manifest are written anew,
// with sample ids and file numbers running on through the parts.
//
// The output appears atomically, as a pack's does: OUT.lock is held, everything is written to
// OUT.partial-PID, the result is verified (every checksum, which covers every byte of every part's
// data files) and only then renamed to OUT, so a merge that fails or is killed leaves OUT as it
// was. A rerun finding OUT already made from the same parts (the manifest's `merged` record)
// verifies it and keeps it (MergeSummary::already_complete).
//
// Errors: InvalidArgument when the parts do not make one dataset, naming the part and the field
// (a different source, settings, columns, codec, N...; a part missing or given twice; a directory
// that is not a part); Corruption naming the part when one is damaged; NotFound for a part
// directory without a manifest; AlreadyExists when OUT exists (and is not this merge) without
// overwrite; FailedPrecondition when another run holds OUT.lock; IoError from the file system.
//
// Thread safety: Merge is reentrant for distinct outputs.
#ifndef DOCFEED_MERGE_H_
#define DOCFEED_MERGE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "docfeed/env.h"
#include "docfeed/status.h"

namespace docfeed {

struct MergeOptions {
  std::vector<std::string> parts;  // the part directories, in any order (ordered by their index)
  std::string output;              // the dataset directory to create
  bool overwrite = false;          // replace an existing docfeed dataset (or empty directory)
  // Every file is read and written through this Env (Env::Default() when null); not owned, must
  // outlive the call.
  Env* env = nullptr;
};

struct MergeSummary {
  uint32_t parts = 0;
  uint64_t samples = 0;
  uint64_t rejected = 0;
  uint64_t data_files = 0;
  uint64_t linked_files = 0;  // data files hard-linked to the parts' (no bytes copied)
  uint64_t copied_files = 0;  // data files copied (the parts lie on another file system)
  // Parts and output on s3://: data files copied inside the object store (CopyObject), none
  // read or uploaded by this process; copied_files counts those over 5 GiB, copied through it.
  uint64_t server_copied_files = 0;
  uint64_t output_bytes = 0;      // every file of the output directory
  bool already_complete = false;  // OUT already was this merge, verified: nothing was written
  double seconds = 0;
  // With an s3:// output: as PackSummary's (the merge is made in a local staging directory,
  // hard links to the parts' data files where it can, then uploaded).
  uint64_t uploaded_objects = 0;
  uint64_t uploaded_bytes = 0;
  uint64_t upload_requests = 0;
  uint64_t upload_retries = 0;
  double upload_seconds = 0;
};

Result<MergeSummary> Merge(const MergeOptions& options);

}  // namespace docfeed

#endif  // DOCFEED_MERGE_H_
