// `docfeed pack` of a Hugging Face dataset on disk whose images are an `Image` column: what
// `Dataset.save_to_disk` writes (a Dataset, or a DatasetDict with one directory per split), e.g.
// after `load_dataset("imagefolder", ...)` or of a Hub dataset such as CORD.
//
// Each split is a SampleSource: one sample per row, in row order over the split's data files
// (state.json order). The `image` column's `bytes` are the stored image (read with a positioned
// read of exactly their range in the data file when the sample is encoded; the listing never
// holds image bytes), its `path` is kept as the stored name, and every other column is kept with
// its Arrow type and Hugging Face feature (a List(Image) of pages or a second Image column
// too, its bytes carried as they are, not decoded) (format/arrow_cell.h: native docfeed columns
// where the feature is a plain Value or List of one, the source's own type otherwise: ClassLabel,
// int32, nested structs...). A `path`-only cell (no bytes) is read from `image_root` when one is
// given, confined to it like an image folder's files; otherwise the row is a bad sample.
//
// Thread safety: ReadImage may be called concurrently (positioned reads of files opened once).
#ifndef DOCFEED_PACK_SAVED_DATASET_SOURCE_H_
#define DOCFEED_PACK_SAVED_DATASET_SOURCE_H_

#include <memory>
#include <string>
#include <vector>

#include "base/env.h"
#include "docfeed/pack.h"
#include "docfeed/status.h"
#include "migrate/source.h"
#include "pack/packer.h"

namespace docfeed::internal {

// The name of the column holding the images, in the source and in docfeed's output.
inline constexpr char kSourceImageColumn[] = "image";

struct SavedSourceOptions {
  std::string image_root;        // where `path`-only cells are read from; "" refuses them
  bool follow_symlinks = false;  // image_root: read through symlinks leading outside it
  bool first_page_only = false;  // a List(Image) column's documents: only their first page
  Env* env = nullptr;            // Env::Default() when null; must outlive the source
};

// Public (docfeed/pack.h); defined in saved_dataset_source.cc.
using docfeed::IsSavedImageDataset;

// The Arrow files `load_dataset` leaves in its cache for one dataset: a directory with
// dataset_info.json (naming the builder and the splits) and, per split, BUILDER-SPLIT.arrow or
// BUILDER-SPLIT-NNNNN-of-MMMMM.arrow. True for a directory without state.json that holds
// dataset_info.json and .arrow files (decided from the names only).
bool IsDatasetsCache(const std::string& path, Env* env = nullptr);

// Its splits, in dataset_info.json order, each with its data files in shard order. Errors name
// dataset_info.json and the field, or the split whose files are missing or out of sequence.
Result<migrate::SavedDataset> OpenDatasetsCache(const std::string& path, Env* env = nullptr);

// A split of a saved dataset or of a cache (`split.name` is its name in errors, "" for a
// Dataset) as a SampleSource. Errors name the file, and the row of a malformed cell: no
// `image` column or one that is not an Image feature (Unsupported, saying what to do), a column
// with no Hugging Face feature, data files whose schemas differ, a compressed record batch
// (Unsupported: datasets never writes them), an Arrow stream the reader refuses.
Result<std::unique_ptr<SampleSource>> OpenSavedSplitSource(const migrate::SplitSource& split,
                                                           const SavedSourceOptions& options);

}  // namespace docfeed::internal

#endif  // DOCFEED_PACK_SAVED_DATASET_SOURCE_H_
