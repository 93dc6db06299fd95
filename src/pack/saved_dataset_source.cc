#include "pack/saved_dataset_source.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>

#include "base/file.h"
#include "base/json.h"
#include "base/mutex.h"
#include "codec/codec.h"
#include "format/arrow_cell.h"
#include "format/arrow_column.h"
#include "format/parquet/reader.h"
#include "format/row_values.h"
#include "migrate/source.h"
#include "migrate/source_stream.h"
#include "pack/document_pages.h"

namespace docfeed::internal {
namespace {

using arrow::ArrayView;
using arrow::Field;
using arrow::TypeId;
using migrate::SourceStream;

// Decoded row groups kept for ReadImage: at least two, more while they fit this budget.
constexpr uint64_t kImageCacheBytes = uint64_t{256} << 20;

// Where one sample's image bytes are.
struct ImageRange {
  uint32_t file = 0;       // index into the split's data files
  uint64_t offset = 0;     // Arrow: in that file; Parquet: the row group
  uint64_t length = 0;     // Arrow: the bytes; Parquet: the row in the row group
  bool path_only = false;  // no bytes: read relative_path under image_root
};

// A Parquet row group's image column, decoded for ReadImage, shared by the encode workers.
struct DecodedImages {
  parquet::RowGroupBatch batch;  // the image column only
  uint64_t bytes = 0;            // its binary values, for the cache's budget
};

// How errors name row `row` (0-based over the split) of `file`.
std::string RowName(const std::string& file, int64_t row) {
  return file + " row " + std::to_string(row);
}

bool IsImageStruct(const Field& f) {
  return f.type == TypeId::kStruct && f.children.size() == 2 &&
         arrow::IsBinaryLike(f.children[0].type) && f.children[0].name == "bytes" &&
         arrow::IsBinaryLike(f.children[1].type) && f.children[1].name == "path";
}

// The Hugging Face features of a data file: its schema's "huggingface" metadata, which
// `datasets` writes into every Arrow and Parquet file it saves; else the split's
// dataset_info.json. A Parquet file written by other tools has neither: its column `image`, if it
// is an Image's struct<bytes, path>, is taken as one, and the other columns have no feature
// (kept when docfeed has a native type for them).
Result<Json> Features(Env* env, const arrow::Schema& schema, const std::string& file,
                      const std::string& dir, bool parquet) {
  if (std::optional<Json> features = migrate::HfFeatures(schema)) return *features;
  if (schema.FindMetadata("huggingface") != nullptr) {
    return CorruptionError(file + ": its schema's huggingface metadata has no info.features");
  }
  if (parquet) {
    Json features = Json::object();
    for (const Field& f : schema.fields) {
      if (f.name == kSourceImageColumn && IsImageStruct(f)) {
        features[f.name] = Json{{"_type", "Image"}};
      }
    }
    return features;
  }
  const std::string info_path = JoinPath(dir, "dataset_info.json");
  DOCFEED_ASSIGN_OR_RETURN(Json info, migrate::ReadJsonFile(env, info_path));
  if (!info.is_object() || !info.contains("features") || !info["features"].is_object()) {
    return CorruptionError(info_path + ": field features is missing or not an object");
  }
  return info["features"];
}

bool IsImageFeature(const Json& feature) {
  return feature.is_object() && feature.contains("_type") && feature["_type"] == "Image";
}

// True for a feature that holds images below its top level (List(Image), a struct with one).
bool HoldsImages(const Json& feature) {
  if (IsImageFeature(feature)) return true;
  if (feature.is_object()) {
    for (const auto& [key, value] : feature.items()) {
      if (HoldsImages(value)) return true;
    }
  }
  if (feature.is_array()) {
    for (const Json& value : feature) {
      if (HoldsImages(value)) return true;
    }
  }
  return false;
}

// True for a List / Sequence of Image feature (datasets 4+ spells it {"_type": "List",
// "feature": ...}, 3.x "Sequence", and a bare JSON list [feature] is the older spelling).
bool IsImageListFeature(const Json& feature) {
  if (feature.is_array()) return feature.size() == 1 && IsImageFeature(feature[0]);
  return feature.is_object() && feature.contains("_type") &&
         (feature["_type"] == "List" || feature["_type"] == "Sequence") &&
         feature.contains("feature") && IsImageFeature(feature["feature"]) &&
         (!feature.contains("length") || feature["length"] == -1);
}

bool IsImageList(const Field& f) {
  return (f.type == TypeId::kList || f.type == TypeId::kLargeList) && f.children.size() == 1 &&
         IsImageStruct(f.children[0]);
}

// The columns of a split: where the images are and how every other column is kept.
struct Layout {
  size_t image = 0;          // the `image` column, or the List(Image) column with `pages`
  bool pages = false;        // one sample per page of a List(Image) column (multi-page documents)
  std::vector<size_t> kept;  // schema index of each column below
  std::vector<ColumnSpec> columns;  // in schema order; with `pages`, then `page` and `pages`
};

Result<Layout> InspectColumns(const arrow::Schema& schema, const Json& features,
                              const std::string& file, const std::set<std::string>& force_arrow) {
  Layout layout;
  const auto named_image =
      std::find_if(schema.fields.begin(), schema.fields.end(),
                   [](const Field& f) { return f.name == kSourceImageColumn; });
  std::vector<size_t> page_lists;  // List(Image) columns
  for (size_t i = 0; i < schema.fields.size(); ++i) {
    const Field& f = schema.fields[i];
    if (features.contains(f.name) && IsImageListFeature(features[f.name]) && IsImageList(f)) {
      page_lists.push_back(i);
    }
  }
  if (named_image == schema.fields.end() && page_lists.size() == 1) {
    // A document per row, its pages a List(Image): one sample per page.
    layout.image = page_lists[0];
    layout.pages = true;
    for (size_t i = 0; i < schema.fields.size(); ++i) {
      const Field& f = schema.fields[i];
      if (i == layout.image) continue;
      if (f.name == kPageColumn || f.name == kPagesColumn) {
        return UnsupportedError(file + ": column '" + f.name +
                                "' clashes with the page number "
                                "docfeed adds to each page of '" +
                                schema.fields[i].name + "'s documents; rename it");
      }
      const Json* feature = features.contains(f.name) ? &features[f.name] : nullptr;
      Result<ColumnSpec> spec = KeptColumn(f, feature, force_arrow.count(f.name) > 0);
      if (!spec.ok()) return spec.status().WithContext(file);
      layout.kept.push_back(i);
      layout.columns.push_back(std::move(spec).value());
    }
    layout.columns.push_back({kPageColumn, ColumnType::kInt64});
    layout.columns.push_back({kPagesColumn, ColumnType::kInt64});
    return layout;
  }
  if (named_image == schema.fields.end()) {
    std::string other;
    for (const Field& f : schema.fields) {
      if (other.empty() && features.contains(f.name) && IsImageFeature(features[f.name])) {
        other = f.name;
      }
    }
    if (other.empty() && page_lists.size() > 1) {
      return UnsupportedError(file + ": no column 'image', and several List(Image) columns ('" +
                              schema.fields[page_lists[0]].name + "', '" +
                              schema.fields[page_lists[1]].name +
                              "'...): keep the one whose pages are the samples (remove_columns)");
    }
    return UnsupportedError(file + ": no column 'image' to take the images from; " +
                            (other.empty() ? "it has no Image column"
                                           : "its Image column is '" + other +
                                                 "': rename it (dataset.rename_column(\"" + other +
                                                 "\", \"image\")) and save it again"));
  }
  for (size_t i = 0; i < schema.fields.size(); ++i) {
    const Field& f = schema.fields[i];
    const Json* feature = features.contains(f.name) ? &features[f.name] : nullptr;
    if (f.name == kSourceImageColumn) {
      if (feature == nullptr || !IsImageFeature(*feature)) {
        return UnsupportedError(file + ": column 'image' is not an Image feature (" +
                                (feature != nullptr ? feature->dump() : "no feature") +
                                "); docfeed stores its images in a column of that name");
      }
      if (!IsImageStruct(f)) {
        return CorruptionError(file + ": column 'image' is " + arrow::TypeToString(f) +
                               ", not an Image's struct<bytes: binary, path: string>");
      }
      layout.image = i;
      continue;
    }
    // Any other column, images in it or not (a List(Image) of a document's pages, a second
    // Image column), is kept as it is: its bytes are carried, not decoded.
    Result<ColumnSpec> spec = KeptColumn(f, feature, force_arrow.count(f.name) > 0);
    if (!spec.ok()) return spec.status().WithContext(file);
    layout.kept.push_back(i);
    layout.columns.push_back(std::move(spec).value());
  }
  return layout;
}

// True when `value` of a native list column has a null item (docfeed's native lists hold
// none; such a column is kept as an Arrow column instead).
bool HasNullItem(const ArrayView& column, int64_t row, ColumnType type) {
  if (type != ColumnType::kInt64List && type != ColumnType::kFloat64List &&
      type != ColumnType::kStringList) {
    return false;
  }
  if (column.IsNull(row) || column.children[0].null_count == 0) return false;
  const auto [first, last] = column.GetListRange(row);
  for (int64_t i = first; i < last; ++i) {
    if (column.children[0].IsNull(i)) return true;
  }
  return false;
}

class SavedSplitSource final : public SampleSource {
 public:
  SavedSplitSource(const migrate::SplitSource& split, SavedSourceOptions options)
      : split_(split), dir_(split.dir), name_(split.name), options_(std::move(options)) {}

  // Lists every row; restarts once per native list column found to hold a null item.
  Status List(const std::vector<std::string>& files) {
    Env* env = EnvOrDefault(options_.env);
    for (;;) {
      folder_ = ImageFolder();
      folder_.root = dir_;
      ranges_.clear();
      rows_.clear();
      std::string demote;
      DOCFEED_RETURN_IF_ERROR(ListOnce(env, files, &demote));
      if (demote.empty()) break;
      force_arrow_.insert(demote);
    }
    if (!split_.parquet) {
      for (const std::string& f : files) {
        DOCFEED_ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> file,
                                 env->NewRandomAccessFile(f));
        files_.push_back(std::move(file));
      }
    }
    return Status::Ok();
  }

  const ImageFolder& listing() const override { return folder_; }

  Result<std::vector<uint8_t>> ReadImage(size_t i) override {
    const ImageRange& r = ranges_[i];
    const uint64_t limit = DecodeLimits().max_input_bytes;
    if (r.path_only) {
      return EnvOrDefault(options_.env)
          ->ReadFile(JoinPath(options_.image_root, folder_.samples[i].relative_path), limit);
    }
    if (split_.parquet) return ReadParquetImage(r, limit);
    if (r.length > limit) return TooLarge(r.length, limit);
    std::vector<uint8_t> bytes(static_cast<size_t>(r.length));
    DOCFEED_RETURN_IF_ERROR(files_[r.file]->ReadAt(r.offset, bytes));
    return bytes;
  }

  std::string Where(size_t i) const override {
    const auto& [file, row] = rows_[i];
    const SourceSample& s = folder_.samples[i];
    return RowName(data_files_[file], row) + PageName(s.page, s.pages);
  }

  // " page K of N (column 'X')" for a page of a List(Image) column's document, else "".
  std::string PageName(int32_t page, int32_t pages) const {
    if (page == 0) return "";
    return " page " + std::to_string(page) + " of " + std::to_string(pages) + " (column '" +
           page_column_ + "')";
  }

  std::string Name() const override {
    return name_.empty() ? "dataset " + dir_ : "split '" + name_ + "' (" + dir_ + ")";
  }

 private:
  Status ListOnce(Env* env, const std::vector<std::string>& files, std::string* demote) {
    data_files_ = files;
    layout_.reset();
    first_schema_.reset();
    confine_.reset();
    parquet_.clear();
    if (!options_.image_root.empty()) {
      DOCFEED_ASSIGN_OR_RETURN(std::string real_root, env->RealPath(options_.image_root));
      confine_ = std::make_unique<Confinement>(env, options_.image_root, real_root,
                                               options_.follow_symlinks);
      real_root_ = real_root;
    }
    split_row_ = 0;
    for (size_t f = 0; f < files.size(); ++f) {
      DOCFEED_RETURN_IF_ERROR(split_.parquet ? ListParquetFile(env, f, demote)
                                             : ListArrowFile(env, f, demote));
      if (!demote->empty()) return Status::Ok();
    }
    return Status::Ok();
  }

  // The first file's columns decide the layout; every later file must have the same.
  Status CheckColumns(Env* env, const arrow::Schema& schema, size_t f) {
    const std::string& file = data_files_[f];
    if (!layout_) {
      DOCFEED_ASSIGN_OR_RETURN(Json features, Features(env, schema, file, dir_, split_.parquet));
      DOCFEED_ASSIGN_OR_RETURN(Layout l, InspectColumns(schema, features, file, force_arrow_));
      layout_ = std::move(l);
      first_schema_ = schema;
      folder_.columns = layout_->columns;
    } else if (!SameColumns(schema, *first_schema_)) {
      return CorruptionError(file + ": its columns differ from those of " + data_files_[0]);
    }
    return Status::Ok();
  }

  // Lists the rows of one batch; `locate` gives the image range of a row whose bytes are there.
  template <typename Locate>
  Status ListBatch(const std::vector<ArrayView>& columns, int64_t rows, size_t f,
                   std::string* demote, Locate&& locate) {
    const Layout& layout = *layout_;
    for (int64_t row = 0; row < rows; ++row, ++split_row_) {
      for (size_t c = 0; c < layout.kept.size(); ++c) {
        if (HasNullItem(columns[layout.kept[c]], row, layout.columns[c].type)) {
          *demote = layout.columns[c].name;
          return Status::Ok();
        }
      }
      DOCFEED_RETURN_IF_ERROR(AddRow(columns, row, f, locate));
    }
    return Status::Ok();
  }

  Status ListArrowFile(Env* env, size_t f, std::string* demote) {
    const std::string& file = data_files_[f];
    DOCFEED_ASSIGN_OR_RETURN(SourceStream stream, SourceStream::Open(env, file, file));
    DOCFEED_RETURN_IF_ERROR(CheckColumns(env, stream.schema(), f));
    stream.set_deferred_buffer(
        layout_->pages
            ? migrate::ListStructChildDataBuffer(stream.schema(), layout_->image, /*child=*/0)
            : migrate::StructChildDataBuffer(stream.schema(), layout_->image, /*child=*/0));
    arrow::RecordBatch batch;
    for (;;) {
      DOCFEED_ASSIGN_OR_RETURN(bool more, stream.Next(&batch));
      if (!more) break;
      if (!stream.batch_deferred()) {
        return UnsupportedError(file + ": record batch " + std::to_string(batch.batch_index) +
                                " is compressed; docfeed reads the uncompressed Arrow files "
                                "datasets writes (save it again with datasets)");
      }
      DOCFEED_RETURN_IF_ERROR(
          ListBatch(batch.columns, batch.num_rows, f, demote,
                    [&](int64_t, std::span<const uint8_t> cell, ImageRange* range) -> Status {
                      DOCFEED_ASSIGN_OR_RETURN(range->offset, stream.FileOffset(cell));
                      range->length = cell.size();
                      return Status::Ok();
                    }));
      if (!demote->empty()) return Status::Ok();
    }
    return Status::Ok();
  }

  Status ListParquetFile(Env* env, size_t f, std::string* demote) {
    const std::string& file = data_files_[f];
    DOCFEED_ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> handle,
                             env->NewRandomAccessFile(file));
    DOCFEED_ASSIGN_OR_RETURN(parquet::FileReader reader,
                             parquet::FileReader::Open(std::move(handle), file));
    DOCFEED_RETURN_IF_ERROR(CheckColumns(env, reader.schema(), f));
    std::vector<size_t> all(reader.schema().fields.size());
    for (size_t i = 0; i < all.size(); ++i) all[i] = i;
    for (int g = 0; g < reader.num_row_groups(); ++g) {
      parquet::RowGroupBatch batch;
      DOCFEED_RETURN_IF_ERROR(reader.ReadRowGroup(g, all, &batch));
      DOCFEED_RETURN_IF_ERROR(
          ListBatch(batch.columns, batch.num_rows, f, demote,
                    [&](int64_t row, std::span<const uint8_t>, ImageRange* range) -> Status {
                      range->offset = static_cast<uint64_t>(g);
                      range->length = static_cast<uint64_t>(row);
                      return Status::Ok();
                    }));
      if (!demote->empty()) return Status::Ok();
    }
    parquet_.push_back(std::make_unique<parquet::FileReader>(std::move(reader)));
    return Status::Ok();
  }

  static Status TooLarge(uint64_t bytes, uint64_t limit) {
    return ResourceExhaustedError("the image is " + std::to_string(bytes) +
                                  " bytes, more than the decoders' limit of " +
                                  std::to_string(limit));
  }

  // Sample bytes from a Parquet file: its row group's image column, decoded once and kept while
  // the workers, which take samples in about their order, still need it.
  Result<std::vector<uint8_t>> ReadParquetImage(const ImageRange& r, uint64_t limit) {
    DOCFEED_ASSIGN_OR_RETURN(std::shared_ptr<const DecodedImages> images,
                             ImagesOf(r.file, static_cast<int>(r.offset)));
    const ArrayView& bytes = ImageStructs(images->batch.columns[0]).children[0];
    const auto index = static_cast<int64_t>(r.length);
    if (index >= bytes.length)
      return CorruptionError("the image column changed since it was listed");
    const std::span<const uint8_t> cell = bytes.GetBinary(index);
    if (cell.size() > limit) return TooLarge(cell.size(), limit);
    return std::vector<uint8_t>(cell.begin(), cell.end());
  }

  Result<std::shared_ptr<const DecodedImages>> ImagesOf(uint32_t file, int group) {
    const std::pair<uint32_t, int> key(file, group);
    {
      MutexLock lock(&cache_mu_);
      for (;;) {
        auto it = cache_.find(key);
        if (it == cache_.end()) break;
        if (it->second.images) {
          it->second.last_use = ++cache_clock_;
          return it->second.images;
        }
        cache_cv_.Wait(&cache_mu_);  // another worker is decoding it
      }
      cache_[key].last_use = ++cache_clock_;  // claimed: decoding
    }
    auto images = std::make_shared<DecodedImages>();
    const size_t image[] = {layout_->image};
    Status s = parquet_[file]->ReadRowGroup(group, image, &images->batch);
    if (s.ok()) images->bytes = ImageStructs(images->batch.columns[0]).children[0].values.size();
    MutexLock lock(&cache_mu_);
    if (!s.ok()) {
      cache_.erase(key);
      cache_cv_.SignalAll();
      return s;
    }
    CacheEntry& entry = cache_[key];
    entry.images = images;
    cache_bytes_ += images->bytes;
    // Evicts the least recently used decoded groups beyond the budget, keeping two.
    while (cache_.size() > 2 && cache_bytes_ > kImageCacheBytes) {
      auto oldest = cache_.end();
      for (auto it = cache_.begin(); it != cache_.end(); ++it) {
        if (it->second.images && it->first != key &&
            (oldest == cache_.end() || it->second.last_use < oldest->second.last_use)) {
          oldest = it;
        }
      }
      if (oldest == cache_.end()) break;
      cache_bytes_ -= oldest->second.images->bytes;
      cache_.erase(oldest);
    }
    cache_cv_.SignalAll();
    return std::shared_ptr<const DecodedImages>(images);
  }

  static bool SameColumns(const arrow::Schema& a, const arrow::Schema& b) {
    if (a.fields.size() != b.fields.size()) return false;
    for (size_t i = 0; i < a.fields.size(); ++i) {
      if (a.fields[i].name != b.fields[i].name || !arrow::SameType(a.fields[i], b.fields[i])) {
        return false;
      }
    }
    return true;
  }

  // The Image structs of the image column: the column itself, or its lists' items.
  const ArrayView& ImageStructs(const ArrayView& column) const {
    return layout_->pages ? column.children[0] : column;
  }

  template <typename Locate>
  Status AddRow(const std::vector<ArrayView>& columns, int64_t row, size_t file, Locate& locate) {
    const Layout& layout = *layout_;
    const int64_t split_row = split_row_;
    const std::string where = RowName(data_files_[file], split_row);
    std::vector<Value> values;
    values.reserve(layout.columns.size());
    for (size_t c = 0; c < layout.kept.size(); ++c) {
      values.push_back(ReadCell(columns[layout.kept[c]], row, layout.columns[c]));
    }
    const ArrayView& image = columns[layout.image];
    if (!layout.pages) {
      return AddImage(image, row, std::move(values), file, where, 0, 0, locate);
    }
    const std::string column = "'" + image.field->name + "'";
    if (image.IsNull(row) || image.GetListRange(row).first == image.GetListRange(row).second) {
      // Still one sample, rejected: nothing is dropped without a word.
      values.push_back(Value());
      values.push_back(int64_t{0});
      AddSample(std::move(values), file, ImageRange{},
                InvalidArgumentError(where + ": the document in column " + column +
                                     (image.IsNull(row) ? " is null" : " has no pages")),
                "", 0, 0);
      return Status::Ok();
    }
    const auto [first, last] = image.GetListRange(row);
    const int64_t count = options_.first_page_only ? 1 : last - first;
    for (int64_t k = 0; k < count; ++k) {
      std::vector<Value> page_values = values;
      page_values.push_back(int64_t{k + 1});
      page_values.push_back(int64_t{last - first});
      page_column_ = image.field->name;
      const std::string page_where =
          where + PageName(static_cast<int32_t>(k + 1), static_cast<int32_t>(last - first));
      DOCFEED_RETURN_IF_ERROR(AddImage(image.children[0], first + k, std::move(page_values), file,
                                       page_where, static_cast<int32_t>(k + 1),
                                       static_cast<int32_t>(last - first), locate));
    }
    return Status::Ok();
  }

  // One sample from item `index` of `structs`, an array of Image struct<bytes, path>.
  template <typename Locate>
  Status AddImage(const ArrayView& structs, int64_t index, std::vector<Value> values, size_t file,
                  const std::string& where, int32_t page, int32_t pages, Locate& locate) {
    const Confinement* confine = confine_.get();
    ImageRange range;
    range.file = static_cast<uint32_t>(file);
    std::string path;
    Status problem;
    const bool null_image = structs.IsNull(index);
    const ArrayView& bytes = structs.children[0];
    const ArrayView& name = structs.children[1];
    if (!null_image && !name.IsNull(index)) path = std::string(name.GetString(index));
    if (null_image) {
      problem = InvalidArgumentError(where + ": the image is null");
    } else if (!bytes.IsNull(index) && !bytes.GetBinary(index).empty()) {
      DOCFEED_RETURN_IF_ERROR(locate(index, bytes.GetBinary(index), &range));
    } else if (path.empty()) {
      problem = InvalidArgumentError(where + ": the image has neither bytes nor a path");
    } else if (confine == nullptr) {
      problem = InvalidArgumentError(where + ": the image has no bytes, only the path \"" + path +
                                     "\"; pass --image-root DIR to read such images from DIR");
    } else {
      range.path_only = true;
      problem = ResolvePath(*confine, &path).WithContext(where);
    }
    AddSample(std::move(values), file, range, std::move(problem), std::move(path), page, pages);
    return Status::Ok();
  }

  void AddSample(std::vector<Value> values, size_t file, const ImageRange& range, Status problem,
                 std::string path, int32_t page, int32_t pages) {
    SourceSample sample;
    sample.values = std::move(values);
    sample.relative_path = std::move(path);
    sample.problem = std::move(problem);
    sample.row = split_row_;
    sample.page = page;
    sample.pages = pages;
    folder_.samples.push_back(std::move(sample));
    ranges_.push_back(range);
    rows_.emplace_back(file, split_row_);
  }

  // A path-only cell's file, relative to the image root: a relative path as it is, an absolute
  // one only if it lies under the root (as given, or its real path). Then confined like an image
  // folder's files.
  Status ResolvePath(const Confinement& confine, std::string* path) const {
    std::string relative = *path;
    if (!relative.empty() && relative.front() == '/') {
      bool under = false;
      for (std::string root : {confine.root(), real_root_}) {
        while (root.size() > 1 && root.back() == '/') root.pop_back();
        if (!under && relative.compare(0, root.size() + 1, root + "/") == 0) {
          relative = relative.substr(root.size() + 1);
          under = true;
        }
      }
      if (!under) {
        return InvalidArgumentError("the image's path \"" + *path +
                                    "\" is not under --image-root " + confine.root());
      }
    }
    if (!IsSafeRelativePath(relative)) {
      return InvalidArgumentError("the image's path \"" + *path +
                                  "\" must be a relative path inside --image-root");
    }
    DOCFEED_RETURN_IF_ERROR(confine.Check(relative));
    *path = relative;
    return Status::Ok();
  }

  struct CacheEntry {
    std::shared_ptr<const DecodedImages> images;  // null while a worker decodes it
    uint64_t last_use = 0;
  };

  const migrate::SplitSource split_;
  std::string dir_;
  std::string name_;
  SavedSourceOptions options_;
  // Listing state (List()).
  std::optional<Layout> layout_;
  std::optional<arrow::Schema> first_schema_;
  std::unique_ptr<Confinement> confine_;
  int64_t split_row_ = 0;
  std::set<std::string> force_arrow_;  // native list columns seen with a null item
  std::string real_root_;              // options_.image_root's real path
  ImageFolder folder_;
  std::vector<ImageRange> ranges_;
  std::vector<std::pair<size_t, int64_t>> rows_;  // (file, row over the split) per sample
  std::string page_column_;                       // the List(Image) column with layout_->pages
  std::vector<std::string> data_files_;
  std::vector<std::unique_ptr<RandomAccessFile>> files_;       // Arrow
  std::vector<std::unique_ptr<parquet::FileReader>> parquet_;  // Parquet
  Mutex cache_mu_;
  CondVar cache_cv_;
  std::map<std::pair<uint32_t, int>, CacheEntry> cache_ DOCFEED_GUARDED_BY(cache_mu_);
  uint64_t cache_bytes_ DOCFEED_GUARDED_BY(cache_mu_) = 0;
  uint64_t cache_clock_ DOCFEED_GUARDED_BY(cache_mu_) = 0;
};

}  // namespace

Result<std::unique_ptr<SampleSource>> OpenSavedSplitSource(const migrate::SplitSource& split,
                                                           const SavedSourceOptions& options) {
  auto source = std::make_unique<SavedSplitSource>(split, options);
  DOCFEED_RETURN_IF_ERROR(source->List(split.data_files));
  return std::unique_ptr<SampleSource>(std::move(source));
}

bool IsDatasetsCache(const std::string& path, Env* env) {
  env = EnvOrDefault(env);
  // Decided from names only: a file that cannot be read is then an error of the pack, never a
  // reason to read the directory as something else.
  if (!env->IsDirectory(path) || env->PathExists(JoinPath(path, "state.json")) ||
      !env->PathExists(JoinPath(path, "dataset_info.json"))) {
    return false;
  }
  Result<std::vector<std::string>> names = env->ListDirectory(path);
  if (!names.ok()) return false;
  return std::any_of(names->begin(), names->end(), [](const std::string& n) {
    return n.size() > 6 && n.compare(n.size() - 6, 6, ".arrow") == 0;
  });
}

Result<migrate::SavedDataset> OpenDatasetsCache(const std::string& path, Env* env) {
  env = EnvOrDefault(env);
  const std::string info_path = JoinPath(path, "dataset_info.json");
  DOCFEED_ASSIGN_OR_RETURN(Json info, migrate::ReadJsonFile(env, info_path));
  if (!info.is_object() || !info.contains("builder_name") || !info["builder_name"].is_string() ||
      !info.contains("splits") || !info["splits"].is_object() || info["splits"].empty()) {
    return CorruptionError(info_path + ": fields builder_name and splits are missing or empty");
  }
  const std::string builder = info["builder_name"].get<std::string>();
  DOCFEED_ASSIGN_OR_RETURN(std::vector<std::string> names, env->ListDirectory(path));
  std::set<std::string> files(names.begin(), names.end());
  migrate::SavedDataset saved;
  saved.root = path;
  saved.is_dict = true;
  for (const auto& [split_name, _] : info["splits"].items()) {
    migrate::SplitSource split;
    split.name = split_name;
    split.dir = path;
    const std::string stem = builder + "-" + split_name;
    if (files.count(stem + ".arrow") > 0) {
      split.data_files.push_back(JoinPath(path, stem + ".arrow"));
    } else {
      // Sharded: -00000-of-0000N, every shard present.
      for (const std::string& f : files) {
        if (f.rfind(stem + "-00000-of-", 0) != 0 || f.size() != stem.size() + 20 ||
            f.compare(f.size() - 6, 6, ".arrow") != 0) {
          continue;
        }
        const std::string count = f.substr(stem.size() + 10, 5);
        const int shards = std::atoi(count.c_str());
        for (int i = 0; i < shards; ++i) {
          char name[32];
          std::snprintf(name, sizeof(name), "-%05d-of-%s.arrow", i, count.c_str());
          if (files.count(stem + name) == 0) {
            return NotFoundError(path + ": split '" + split_name + "' misses its shard " + stem +
                                 name);
          }
          split.data_files.push_back(JoinPath(path, stem + name));
        }
      }
    }
    if (split.data_files.empty()) {
      return NotFoundError(info_path + " lists split '" + split_name + "', but " + path +
                           " holds no " + stem + ".arrow");
    }
    for (const std::string& f : split.data_files) {
      DOCFEED_ASSIGN_OR_RETURN(uint64_t bytes, env->FileSize(f));
      split.file_bytes.push_back(bytes);
      saved.total_bytes += bytes;
    }
    saved.splits.push_back(std::move(split));
  }
  return saved;
}

}  // namespace docfeed::internal

namespace docfeed {

bool IsSavedImageDataset(const std::string& path, Env* env) {
  env = internal::EnvOrDefault(env);
  const bool cache = internal::IsDatasetsCache(path, env);
  if (!cache && !IsSavedDataset(path, env)) return false;
  Result<internal::migrate::SavedDataset> saved =
      cache ? internal::OpenDatasetsCache(path, env)
            : internal::migrate::OpenSavedDataset(path, env);
  if (!saved.ok() || saved->splits.empty()) return false;
  Result<Json> info = internal::migrate::ReadJsonFile(
      env, internal::JoinPath(saved->splits[0].dir, "dataset_info.json"));
  if (!info.ok() || !info->is_object() || !info->contains("features") ||
      !(*info)["features"].is_object()) {
    return false;
  }
  // Any column holding images (so that pack can say what to do with one it does not take),
  // unless the processor tensors of a migration are there.
  const Json& features = (*info)["features"];
  return internal::HoldsImages(features) && !features.contains("pixel_values");
}

}  // namespace docfeed
