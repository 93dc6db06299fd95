// `docfeed pack` of Parquet: one file, or a folder in the layouts of the Hugging Face Hub, whose
// `image` column holds the images (an Image feature's struct<bytes, path>, as `datasets` writes
// it with `to_parquet` and `push_to_hub`). The rows are then packed exactly as those of a
// `save_to_disk` dataset (saved_dataset_source.h: same columns kept, same errors), read with
// docfeed's Parquet reader (format/parquet/reader.h).
//
// Splits of a folder (the Hub's conventions, as `datasets.load_dataset` resolves them for the
// common layouts; docs/format.md section 15):
//   1. a file named SPLIT-NNNNN-of-MMMMM... (`push_to_hub`: data/train-00000-of-00004.parquet);
//   2. otherwise a file in a directory named after a split keyword (the Hub's Parquet export,
//      default/train/0000.parquet), or whose name starts with one (train.parquet, test-x.parquet);
//      the keywords map to train (train, training), validation (validation, valid, val, dev) and
//      test (test, testing, eval, evaluation);
//   3. any other Parquet file belongs to "train".
// The folder's Parquet files are those whose content starts with PAR1, found up to four
// directories deep (hidden ones skipped); a file named *.parquet that does not is an error.
// Splits come out train, validation, test, then the others by name; files within a split in
// name order. A single file is a Dataset (no split).
#ifndef DOCFEED_PACK_PARQUET_SOURCE_H_
#define DOCFEED_PACK_PARQUET_SOURCE_H_

#include <string>

#include "base/env.h"
#include "docfeed/status.h"
#include "migrate/source.h"

namespace docfeed::internal {

// True for a file that starts with PAR1 (or is named *.parquet and cannot be read: opening it
// says why), or a directory (not a save_to_disk dataset or an image folder with metadata.jsonl)
// holding such files and no images. An error when a directory of the tree cannot be listed.
Result<bool> IsParquetSource(const std::string& path, Env* env = nullptr);

// Its splits and files (SplitSource::parquet set). NotFound when a folder holds no Parquet file;
// Corruption naming a *.parquet file that is not Parquet.
Result<migrate::SavedDataset> OpenParquetDataset(const std::string& path, Env* env = nullptr);

}  // namespace docfeed::internal

#endif  // DOCFEED_PACK_PARQUET_SOURCE_H_
