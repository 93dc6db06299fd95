// `docfeed pack` of WebDataset shards: tar files (plain or gzip-compressed) whose members are
// grouped into samples by key, as the `webdataset` library and the Hub's large document sets
// lay them out (e.g. 0001.jpg + 0001.json + 0001.txt is one sample).
//
// A member's key is its path up to the first '.' of its file name and its extension the rest,
// lower-cased ("dir/0001.seg.png" -> key "dir/0001", extension "seg.png"); consecutive members
// with the same key form one sample (WebDataset's grouping: a key that comes back later is a new
// sample). The sample's image is its first member whose extension is an image's (jpg, jpeg,
// png, webp, tif, tiff, ppm, pgm, pnm, gif, bmp; the format itself is then sniffed from the
// bytes). Every other member becomes a column named by its extension: `txt`, `text`, `json`
// (the text as a string, e.g. a Donut ground truth), `cls`, `cls2`, `index` (a decimal integer,
// int64), anything else binary. Two more columns name where the sample came from: `__key__`
// and `__url__` (the shard's path relative to SRC), as `datasets`' webdataset loader gives them.
//
// SRC is one shard, or a directory whose regular files (sorted by name, not recursing) are all
// shards; both recognised from the bytes (a tar header's checksum, or gzip's magic number).
// Reading is sequential, as tar allows: the listing streams every shard once, keeping the column
// values and no image; images are then streamed again in sample order (the encoder asks for them
// nearly in order; the few asked out of order wait in a small cache).
//
// Thread safety: ReadImage may be called concurrently (one mutex per source).
#ifndef DOCFEED_PACK_TAR_SOURCE_H_
#define DOCFEED_PACK_TAR_SOURCE_H_

#include <memory>
#include <string>

#include "base/env.h"
#include "docfeed/status.h"
#include "pack/packer.h"

namespace docfeed::internal {

// True when `path` is a tar shard (plain or gzip) or a directory holding only such shards (at
// least one), judged from the first bytes of each file.
bool IsTarSource(const std::string& path, Env* env = nullptr);

// The samples of the shards at `path`. Errors name the shard and member: a truncated or corrupt
// archive (Corruption), a member larger than the decoders' limit (ResourceExhausted), column
// values whose types disagree. A sample with no image member, or a `cls` that is not an integer,
// is listed with its problem (a bad sample: --skip-bad rejects it).
Result<std::unique_ptr<SampleSource>> OpenTarSource(const std::string& path, Env* env = nullptr);

}  // namespace docfeed::internal

#endif  // DOCFEED_PACK_TAR_SOURCE_H_
