#include "format/verify.h"

#include <algorithm>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "base/file.h"
#include "base/hash.h"
#include "codec/codec.h"
#include "docfeed/remote.h"
#include "format/arrow/reader.h"
#include "format/dataset.h"
#include "format/index.h"
#include "format/manifest.h"
#include "format/row_values.h"

namespace docfeed::internal {
namespace {

std::string RegionName(const Region& r, size_t batch) {
  std::string range =
      " (bytes " + std::to_string(r.offset) + "-" + std::to_string(r.offset + r.length) + ")";
  switch (r.kind) {
    case Region::Kind::kSchema:
      return "schema message" + range;
    case Region::Kind::kEndOfStream:
      return "end-of-stream marker" + range;
    case Region::Kind::kBatch:
      return "record batch " + std::to_string(batch) + range + ", samples " +
             std::to_string(r.first_sample) + "-" + std::to_string(r.first_sample + r.num_rows - 1);
  }
  return "?";
}

class Verifier {
 public:
  Verifier(std::string dir, size_t max_problems, Env* env)
      : dir_(std::move(dir)), max_(max_problems), env_(env != nullptr ? env : EnvForPath(dir_)) {}

  // Data files checked one by one as they were written and sent away (CheckOneFile): Run()
  // does not read them; each one the manifest lists must be one of these, and its samples are
  // counted from the index.
  void DataFilesSent(const std::vector<FileEntry>* sent) { sent_ = sent; }

  // The checks Run() makes of data file `file_index`, against `records` (every sample's index
  // record so far); `manifest` holds the columns, the preprocessing and the file's entry.
  VerifyReport CheckOneFile(Manifest manifest, size_t file_index, const std::string& path,
                            std::span<const IndexRecord> records) {
    manifest_ = std::move(manifest);
    const RecordSpan index{records};
    seen_.assign(records.size(), 0);
    std::vector<uint8_t> bytes;
    const FileEntry& entry = manifest_.data_files[file_index];
    if (CheckWholeFile(ParentPath(path), env_, entry, &bytes) && !bytes.empty() && !Full()) {
      CheckDataFile(file_index, bytes, path, index);
    }
    for (const Region& r : entry.regions) {
      if (r.kind != Region::Kind::kBatch) continue;
      for (uint64_t id = r.first_sample; id < r.first_sample + r.num_rows && !Full(); ++id) {
        if (id < seen_.size() && seen_[id] != 1) {
          Problem(path + ": sample " + std::to_string(id) + " appears " +
                  std::to_string(seen_[id]) + " times (expected once)");
        }
      }
    }
    return report_;
  }

  Result<VerifyReport> Run() {
    std::string manifest_path = JoinPath(dir_, kManifestFileName);
    if (!env_->IsDirectory(dir_)) return NotFoundError(dir_ + " is not a directory");
    DOCFEED_ASSIGN_OR_RETURN(std::string text, env_->ReadTextFile(manifest_path));
    Result<Manifest> manifest = DecodeManifest(text, manifest_path);
    if (!manifest.ok()) {
      Problem(manifest.status().ToString());
      return report_;
    }
    manifest_ = std::move(manifest).value();
    for (const FileEntry& f : manifest_.other_files) CheckWholeFile(dir_, env_, f, nullptr);
    // Every file is read into memory, one at a time, not mapped: a file truncated while verify
    // runs is then a short read, not SIGBUS.
    std::string index_path = JoinPath(dir_, kIndexFileName);
    Result<std::vector<uint8_t>> index_bytes = env_->ReadFile(index_path);
    Result<IndexView> index = index_bytes.ok() ? IndexView::Open(*index_bytes, index_path)
                                               : Result<IndexView>(index_bytes.status());
    if (index.ok() && index->size() != manifest_.num_samples) {
      index = CorruptionError(index_path + ": " + std::to_string(index->size()) +
                              " samples, manifest says " + std::to_string(manifest_.num_samples));
    }
    if (index.ok()) seen_.assign(index->size(), 0);
    for (size_t i = 0; i < manifest_.data_files.size(); ++i) {
      std::vector<uint8_t> bytes;
      if (sent_ != nullptr) {
        if (index.ok()) CountSentFile(i, *index);
        continue;
      }
      const bool whole = CheckWholeFile(dir_, env_, manifest_.data_files[i], &bytes);
      if (whole && index.ok() && !bytes.empty() && !Full()) {
        CheckDataFile(i, bytes, JoinPath(dir_, manifest_.data_files[i].name), *index);
      }
    }
    if (!index.ok()) {
      Problem(index.status().ToString());
      return report_;
    }
    for (uint64_t id = 0; id < seen_.size() && !Full(); ++id) {
      if (seen_[id] != 1) {
        Problem("sample " + std::to_string(id) + " appears " + std::to_string(seen_[id]) +
                " times in the data files (expected once)");
      }
    }
    CheckTotals();
    return report_;
  }

 private:
  void Problem(std::string what) {
    if (report_.problems.size() >= max_) {
      report_.truncated = true;
      return;
    }
    report_.problems.push_back(std::move(what));
  }
  bool Full() const { return report_.truncated; }

  // Size and whole-file checksum; for an Arrow file that fails, names the damaged regions.
  // Returns whether the file could be read at its full size; then *kept (if given) holds it.
  bool CheckWholeFile(const std::string& dir, Env* env, const FileEntry& f,
                      std::vector<uint8_t>* kept) {
    std::string path = JoinPath(dir, f.name);
    Result<std::vector<uint8_t>> file = env->ReadFile(path);
    if (!file.ok()) {
      Problem(file.status().ToString());
      return false;
    }
    std::span<const uint8_t> bytes = *file;
    report_.bytes_checked += bytes.size();
    if (bytes.size() != f.size_bytes) {
      Problem(path + ": " + std::to_string(bytes.size()) + " bytes, the manifest says " +
              std::to_string(f.size_bytes) + " (truncated or extended)");
      return false;
    }
    if (Hash64(bytes) != f.xxh3) {
      if (f.regions.empty()) Problem(path + ": checksum mismatch (file modified)");
      size_t batch = 0;
      for (const Region& r : f.regions) {
        bool inside = r.offset <= bytes.size() && r.length <= bytes.size() - r.offset;
        if (!inside || Hash64(bytes.subspan(r.offset, r.length)) != r.xxh3) {
          Problem(path + ": checksum mismatch in " + RegionName(r, batch));
        }
        if (r.kind == Region::Kind::kBatch) ++batch;
      }
    }
    if (kept != nullptr) *kept = std::move(file).value();
    return true;
  }

  // Index records held in memory, read as an IndexView is.
  struct RecordSpan {
    std::span<const IndexRecord> records;
    uint64_t size() const { return records.size(); }
    IndexRecord Get(uint64_t i) const { return records[i]; }
  };

  // Data file `file_index`, sent away after CheckOneFile: it must be one of sent_ (same size,
  // checksum and regions), its samples' index records must point into its batches, and they are
  // counted as CheckDataFile counts them.
  void CountSentFile(size_t file_index, const IndexView& index) {
    const FileEntry& f = manifest_.data_files[file_index];
    const std::string path = JoinPath(dir_, f.name);
    auto same = [&](const FileEntry& s) {
      return s.size_bytes == f.size_bytes && s.xxh3 == f.xxh3 && s.regions == f.regions;
    };
    if (std::none_of(sent_->begin(), sent_->end(), same)) {
      Problem(path + ": not one of the data files checked as they were written (size " +
              std::to_string(f.size_bytes) + ", XXH3 " + Hex64(f.xxh3) + ")");
      return;
    }
    uint32_t batch = 0;
    for (const Region& r : f.regions) {
      if (r.kind != Region::Kind::kBatch) continue;
      for (uint64_t id = r.first_sample; id < r.first_sample + r.num_rows; ++id) {
        if (id >= index.size()) {
          Problem(path + ": sample " + std::to_string(id) + " is past the index");
          return;
        }
        ++seen_[id];
        const IndexRecord rec = index.Get(id);
        if (rec.file_index != file_index || rec.batch_index != batch ||
            rec.batch_offset != r.offset || rec.row != id - r.first_sample) {
          Problem(path + ": sample " + std::to_string(id) + ": index entry points elsewhere");
          return;
        }
        ++codec_counts_[std::string(StoredCodecName(static_cast<StoredCodec>(rec.codec)))];
        image_bytes_ += rec.image_length;
        ++report_.samples_checked;
      }
      ++batch;
    }
  }

  template <typename Index>
  void CheckDataFile(size_t file_index, std::span<const uint8_t> bytes, const std::string& path,
                     const Index& index) {
    Result<arrow::StreamReader> reader = arrow::StreamReader::Open(bytes, path);
    if (!reader.ok()) {
      Problem(reader.status().ToString());
      return;
    }
    const FileEntry& entry = manifest_.data_files[file_index];
    std::vector<const Region*> batch_regions;  // the manifest's batches, by batch index
    for (const Region& r : entry.regions) {
      if (r.kind == Region::Kind::kBatch) batch_regions.push_back(&r);
    }
    uint64_t rows = 0;
    for (uint32_t b = 0; !Full(); ++b) {
      arrow::RecordBatch batch;
      Result<bool> more = reader->Next(&batch);
      if (!more.ok()) {
        Problem(more.status().ToString());
        return;
      }
      if (!*more) break;
      const Region* region = b < batch_regions.size() ? batch_regions[b] : nullptr;
      CheckBatch(bytes.data(), file_index, b, region, batch, index);
      rows += static_cast<uint64_t>(batch.num_rows);
    }
    if (rows != entry.num_rows) {
      Problem(path + ": " + std::to_string(rows) + " rows, the manifest says " +
              std::to_string(entry.num_rows));
    }
  }

  // `region` is the manifest's entry for batch `b` (nullptr when the manifest lists fewer).
  template <typename Index>
  void CheckBatch(const uint8_t* file_base, size_t file_index, uint32_t b, const Region* region,
                  const arrow::RecordBatch& batch, const Index& index) {
    const std::string& name = manifest_.data_files[file_index].name;
    std::string where = JoinPath(dir_, name) + ": record batch " + std::to_string(b);
    if (region == nullptr || region->offset != batch.message_offset ||
        region->num_rows != static_cast<uint64_t>(batch.num_rows)) {
      Problem(where + ": does not match the manifest's batch list");
      return;
    }
    for (int64_t row = 0; row < batch.num_rows && !Full(); ++row) {
      uint64_t id = region->first_sample + static_cast<uint64_t>(row);
      if (id >= index.size()) {
        Problem(where + ": row " + std::to_string(row) + " maps to sample " + std::to_string(id) +
                ", past the index");
        return;
      }
      ++seen_[id];
      Status s = CheckSample(file_base, file_index, b, batch, row, index.Get(id));
      if (!s.ok())
        Problem(where + ", sample " + std::to_string(id) + ": " + std::string(s.message()));
    }
    report_.samples_checked += static_cast<uint64_t>(batch.num_rows);
  }

  Status CheckSample(const uint8_t* file_base, size_t file_index, uint32_t b,
                     const arrow::RecordBatch& batch, int64_t row, const IndexRecord& r) {
    if (r.file_index != file_index || r.batch_index != b || r.row != static_cast<uint64_t>(row) ||
        r.batch_offset != batch.message_offset) {
      return CorruptionError("index entry points elsewhere (file " + std::to_string(r.file_index) +
                             ", batch " + std::to_string(r.batch_index) + ", row " +
                             std::to_string(r.row) + ")");
    }
    DOCFEED_ASSIGN_OR_RETURN(std::span<const uint8_t> image, RowImage(batch, row));
    if (image.size() != r.image_length || Hash64(image) != r.image_hash) {
      return CorruptionError("image bytes do not match their checksum");
    }
    // With uncompressed bodies the views point into the mapped file, so the index's byte
    // range must be exactly where the Arrow value lies.
    if (!batch.compressed) {
      auto offset = static_cast<uint64_t>(image.data() - file_base);
      if (r.image_offset != offset) {
        return CorruptionError("index image offset " + std::to_string(r.image_offset) +
                               " does not point at the image bytes (at " + std::to_string(offset) +
                               ")");
      }
    }
    DOCFEED_RETURN_IF_ERROR(CheckStoredCodec(r.codec, image));
    DOCFEED_RETURN_IF_ERROR(CheckPreprocessed(r));
    DOCFEED_ASSIGN_OR_RETURN(const StoredGeometry geometry, GeometryOf(r, image));
    if (static_cast<uint32_t>(geometry.width) != r.width ||
        static_cast<uint32_t>(geometry.height) != r.height) {
      return CorruptionError("index geometry " + std::to_string(r.width) + "x" +
                             std::to_string(r.height) + " differs from the image's");
    }
    ++codec_counts_[std::string(StoredCodecName(static_cast<StoredCodec>(r.codec)))];
    image_bytes_ += r.image_length;
    DOCFEED_ASSIGN_OR_RETURN(
        std::vector<Value> values,
        RowValues(batch, row, manifest_.columns, manifest_.original_column.empty() ? 0 : 1));
    if (HashLabels(manifest_.columns, values) != r.label_hash) {
      return CorruptionError("labels do not match their checksum");
    }
    return Status::Ok();
  }

  struct StoredGeometry {
    int32_t width = 0;
    int32_t height = 0;
  };
  // The header's sides: a float PFM (stored patch rows) is validated whole by ViewPfm, since no
  // image decoder takes it; an image's header is probed.
  static Result<StoredGeometry> GeometryOf(const IndexRecord& r, std::span<const uint8_t> image) {
    if (r.codec == static_cast<uint8_t>(StoredCodec::kPfm)) {
      DOCFEED_ASSIGN_OR_RETURN(const FloatRowsView rows, ViewPfm(image));
      return StoredGeometry{rows.width, rows.height};
    }
    DOCFEED_ASSIGN_OR_RETURN(const ImageInfo info, ProbeImage(image));
    return StoredGeometry{info.width, info.height};
  }

  // Pix2Struct's patches form (docs/format.md, section 10): a PFM of at most max_patches rows of
  // 2 + 3 * ph * pw values, one channel, orientation 1.
  static Status CheckPix2StructPatches(const IndexRecord& r, const PreprocessInfo& p) {
    const uint64_t row_values = 2 + 3 * uint64_t{static_cast<uint32_t>(p.patch_height)} *
                                        static_cast<uint32_t>(p.patch_width);
    if (r.codec == static_cast<uint8_t>(StoredCodec::kPfm) && r.width == row_values &&
        r.height >= 1 && r.height <= static_cast<uint32_t>(p.max_patches) && r.channels == 1 &&
        (r.flags & 0xF) == 1) {
      return Status::Ok();
    }
    return CorruptionError(
        "stored " + std::string(StoredCodecName(static_cast<StoredCodec>(r.codec))) + " " +
        std::to_string(r.width) + "x" + std::to_string(r.height) + ", " +
        std::to_string(r.channels) + " channels, orientation " + std::to_string(r.flags & 0xF) +
        " is not Pix2Struct's stored patches (a pfm of 1 to " + std::to_string(p.max_patches) +
        " rows of " + std::to_string(row_values) + " values, 1 channel, orientation 1)");
  }

  // An Idefics3 prepared page (docs/format.md, section 10): whole tiles of max_image_size on each
  // side, a grid of at least two tiles above the global image's band (a grid of one is stored
  // as the one S x S tile, the only size without image splitting).
  static Status CheckIdefics3Page(const IndexRecord& r, const PreprocessInfo& p) {
    const auto s = static_cast<uint32_t>(p.max_image_size);
    const bool one_tile = r.width == s && r.height == s;
    const bool grid = p.do_image_splitting && r.width % s == 0 && r.height % s == 0 &&
                      r.width >= s && r.height >= 2 * s && !(r.width == s && r.height == 2 * s);
    if ((one_tile || grid) && (r.flags & 0xF) == 1 && (r.channels == 1 || r.channels == 3)) {
      return Status::Ok();
    }
    return CorruptionError(
        "stored page " + std::to_string(r.width) + "x" + std::to_string(r.height) + ", " +
        std::to_string(r.channels) + " channels, orientation " + std::to_string(r.flags & 0xF) +
        " is not an Idefics3 prepared page for max_image_size " + std::to_string(s) +
        (p.do_image_splitting ? " (sides multiples of it"
                              : " (" + std::to_string(s) + "x" + std::to_string(s) + " only") +
        ", 1 or 3 channels, orientation 1)");
  }

  // A preprocessed dataset (docs/format.md, section 10) stores PPM/PGM pages no larger than
  // the size the manifest says they were resized to, without a pending EXIF orientation.
  Status CheckPreprocessed(const IndexRecord& r) const {
    const PreprocessInfo& p = manifest_.preprocess;
    if (!p.preprocessed()) return Status::Ok();
    if (p.patches_form()) return CheckPix2StructPatches(r, p);
    if (r.codec != static_cast<uint8_t>(StoredCodec::kPpm)) {
      return CorruptionError("the manifest says the images were preprocessed, but this one is " +
                             std::string(StoredCodecName(static_cast<StoredCodec>(r.codec))) +
                             ", not the PPM/PGM that preprocessing stores");
    }
    if (p.preset == kPreprocessQwen2VL || p.preset == kPreprocessQwen25VL) {
      // smart_resize's output: whole merged patches on each side.
      const uint64_t factor =
          uint64_t{static_cast<uint32_t>(p.patch_size)} * static_cast<uint32_t>(p.merge_size);
      if (r.width == 0 || r.height == 0 || r.width % factor != 0 || r.height % factor != 0 ||
          (r.flags & 0xF) != 1 || (r.channels != 1 && r.channels != 3)) {
        return CorruptionError("stored page " + std::to_string(r.width) + "x" +
                               std::to_string(r.height) + ", " + std::to_string(r.channels) +
                               " channels, orientation " + std::to_string(r.flags & 0xF) +
                               " is not a smart_resize output (sides multiples of " +
                               std::to_string(factor) + ", 1 or 3 channels, orientation 1)");
      }
      return Status::Ok();
    }
    if (p.preset == kPreprocessIdefics3) return CheckIdefics3Page(r, p);
    if (p.preset == kPreprocessPix2Struct) {
      // The decoded page at the source's size: any size, no pending orientation.
      if ((r.flags & 0xF) != 1 || (r.channels != 1 && r.channels != 3)) {
        return CorruptionError("stored page " + std::to_string(r.width) + "x" +
                               std::to_string(r.height) + ", " + std::to_string(r.channels) +
                               " channels, orientation " + std::to_string(r.flags & 0xF) +
                               " is not a Pix2Struct prepared page (1 or 3 channels, "
                               "orientation 1)");
      }
      return Status::Ok();
    }
    if (r.width > static_cast<uint32_t>(p.width) || r.height > static_cast<uint32_t>(p.height) ||
        (r.flags & 0xF) != 1 || (r.channels != 1 && r.channels != 3)) {
      return CorruptionError("stored page " + std::to_string(r.width) + "x" +
                             std::to_string(r.height) + ", " + std::to_string(r.channels) +
                             " channels, orientation " + std::to_string(r.flags & 0xF) +
                             " is not a page preprocessed to at most " + std::to_string(p.width) +
                             "x" + std::to_string(p.height) + " (1 or 3 channels, orientation 1)");
    }
    return Status::Ok();
  }

  // The manifest's totals against what the samples hold.
  void CheckTotals() {
    const std::string manifest_path = JoinPath(dir_, kManifestFileName);
    const std::string stored = manifest_.preprocess.patches_form() ? "pfm" : "ppm";
    if (manifest_.preprocess.preprocessed() && manifest_.codec != stored) {
      Problem(manifest_path + ": field codec is \"" + manifest_.codec + "\", but a" +
              (stored == "pfm" ? " patches-form Pix2Struct" : " preprocessed") +
              " dataset stores " + stored);
    }
    if (report_.samples_checked != manifest_.num_samples || !report_.problems.empty()) return;
    std::map<std::string, uint64_t> claimed;
    for (const auto& [codec, n] : manifest_.stored_codecs) {
      if (n != 0) claimed[codec] = n;
    }
    if (claimed != codec_counts_) {
      std::string counted;
      for (const auto& [codec, n] : codec_counts_) counted += " " + codec + "=" + std::to_string(n);
      Problem(manifest_path + ": field stored_codecs does not match the samples (they hold" +
              counted + ")");
    }
    if (manifest_.stored_image_bytes != image_bytes_) {
      Problem(manifest_path + ": field stored_image_bytes is " +
              std::to_string(manifest_.stored_image_bytes) + ", the samples hold " +
              std::to_string(image_bytes_));
    }
  }

  std::string dir_;
  size_t max_;
  Env* env_;
  const std::vector<FileEntry>* sent_ = nullptr;  // DataFilesSent
  VerifyReport report_;
  Manifest manifest_;
  std::vector<uint32_t> seen_;
  std::map<std::string, uint64_t> codec_counts_;  // samples per StoredCodecName
  uint64_t image_bytes_ = 0;                      // sum of the samples' image_length
};

}  // namespace

Result<VerifyReport> VerifyDatasetReport(const std::string& dir, size_t max_problems, Env* env) {
  return Verifier(dir, max_problems, env).Run();
}

namespace {

Status Failed(const std::string& dir, const VerifyReport& report) {
  if (report.ok()) return Status::Ok();
  std::string message = dir + " failed verification:";
  for (const std::string& p : report.problems) message += "\n  " + p;
  return CorruptionError(message);
}

}  // namespace

Status VerifyDataset(const std::string& dir, Env* env) {
  DOCFEED_ASSIGN_OR_RETURN(VerifyReport report, VerifyDatasetReport(dir, 5, env));
  return Failed(dir, report);
}

Status VerifyDataFile(const Manifest& manifest, size_t file_index, const std::string& path,
                      std::span<const IndexRecord> records, Env* env) {
  Verifier verifier(ParentPath(path), 5, env);
  return Failed(path, verifier.CheckOneFile(manifest, file_index, path, records));
}

Status VerifyDatasetWithDataSent(const std::string& dir, Env* env,
                                 const std::vector<FileEntry>& sent) {
  Verifier verifier(dir, 5, env);
  verifier.DataFilesSent(&sent);
  DOCFEED_ASSIGN_OR_RETURN(VerifyReport report, verifier.Run());
  return Failed(dir, report);
}

}  // namespace docfeed::internal
