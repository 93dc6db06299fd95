#include "migrate/piece.h"

#include <cmath>
#include <cstdio>

#include "base/file.h"
#include "base/json.h"
#include "codec/codec.h"
#include "format/arrow/reader.h"
#include "format/manifest.h"
#include "format/shard_writer.h"
#include "format/verify.h"
#include "migrate/source_stream.h"

namespace docfeed::internal::migrate {
namespace {

bool SameColumns(const SourceLayout& a, const SourceLayout& b) {
  if (a.float_type != b.float_type || a.columns.size() != b.columns.size()) return false;
  for (size_t i = 0; i < a.columns.size(); ++i) {
    if (a.columns[i].name != b.columns[i].name || a.columns[i].type != b.columns[i].type) {
      return false;
    }
  }
  return true;
}

bool IsGray(const uint8_t* pixels, const Box& box, int32_t width) {
  for (int32_t y = box.top; y < box.top + box.height; ++y) {
    const uint8_t* p =
        pixels +
        (static_cast<size_t>(y) * static_cast<size_t>(width) + static_cast<size_t>(box.left)) * 3;
    for (int32_t x = 0; x < box.width; ++x, p += 3) {
      if (p[0] != p[1] || p[0] != p[2]) return false;
    }
  }
  return true;
}

std::string FormatDouble(double v) {
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%.9g", v);
  return buf;
}

// Per-piece scratch state: buffers reused across rows, and the running PieceInfo.
class RowConverter {
 public:
  RowConverter(const PieceConfig& config, const SourceLayout& layout)
      : config_(config), layout_(layout) {}

  // Converts one row; its tensor values are fetched from `stream` first.
  Status Convert(const arrow::RecordBatch& batch, int64_t row, const std::string& path,
                 SourceStream& stream, SampleToWrite* sample, TensorRow* tensor);
  PieceInfo& info() { return info_; }

 private:
  Status Recover(const TensorRow& t);
  Status OffGridError(const RecoveryStats& s, int channel, const TensorRow& t) const;
  Box ChooseBox(const Box& tight) const;

  const PieceConfig& config_;
  const SourceLayout& layout_;
  PieceInfo info_;
  std::vector<uint8_t> rgb_;   // the recovered tensor, height x width x 3
  std::vector<uint8_t> gray_;  // the stored box as 1 channel, when gray
  std::vector<uint8_t> ppm_;
};

Status RowConverter::OffGridError(const RecoveryStats& s, int channel, const TensorRow& t) const {
  const auto y = s.first_off_grid / t.width;
  const auto x = s.first_off_grid % t.width;
  const GridInverter& inv = *config_.inverter;
  const double nearest = inv.GridValue(channel, layout_.float_type, s.first_off_grid_nearest);
  return InvalidArgumentError(
      "channel " + std::to_string(channel) + " at (y " + std::to_string(y) + ", x " +
      std::to_string(x) + ") holds " + FormatDouble(s.first_off_grid_value) + " (" +
      std::string(FloatTypeName(layout_.float_type)) + "), which is not on the " +
      inv.candidate().name + " normalization grid (nearest: uint8 " +
      std::to_string(s.first_off_grid_nearest) + " -> " + FormatDouble(nearest) +
      "; largest deviation in this row " + FormatDouble(s.max_deviation) + ", " +
      std::to_string(s.off_grid) +
      " value(s) off the grid). Pass --allow-lossy to store the nearest values, or --mean/--std "
      "for another normalization");
}

Status RowConverter::Recover(const TensorRow& t) {
  const size_t plane = static_cast<size_t>(t.height) * static_cast<size_t>(t.width);
  const size_t bytes = FloatTypeBytes(layout_.float_type);
  rgb_.resize(plane * 3);
  for (int c = 0; c < 3; ++c) {
    RecoveryStats s = config_.inverter->Recover(
        c, layout_.float_type, t.values.data() + static_cast<size_t>(c) * plane * bytes, plane,
        rgb_.data() + c, 3);
    if (s.off_grid > 0 && (!config_.allow_lossy || !std::isfinite(s.max_deviation))) {
      return OffGridError(s, c, t);  // NaN/infinity is no pixel, even with --allow-lossy
    }
    info_.off_grid += s.off_grid;
    info_.max_deviation = std::max(info_.max_deviation, s.max_deviation);
  }
  return Status::Ok();
}

Box RowConverter::ChooseBox(const Box& tight) const {
  const Box whole{0, 0, info_.height, info_.width};
  switch (config_.box) {
    case BoxPolicy::kKeep:
      return whole;
    case BoxPolicy::kTight:
      return tight.height > 0 ? tight : whole;
    case BoxPolicy::kCentred:
      break;
  }
  return CentredBox(tight, info_.height, info_.width);
}

Status RowConverter::Convert(const arrow::RecordBatch& batch, int64_t row, const std::string& path,
                             SourceStream& stream, SampleToWrite* sample, TensorRow* tensor) {
  const auto& column = batch.columns[static_cast<size_t>(layout_.pixel_column)];
  Result<TensorRow> t = ReadTensorRow(column, row, layout_.float_type);
  if (!t.ok()) return t.status().WithContext("column '" + config_.pixel_column + "'");
  DOCFEED_ASSIGN_OR_RETURN(t->values, stream.Fetch(t->values));
  *tensor = *t;
  if (t->channels != 3) {
    return InvalidArgumentError("column '" + config_.pixel_column + "' holds " +
                                std::to_string(t->channels) +
                                " channels; Donut pixel_values have 3 (C x H x W)");
  }
  if (info_.rows == 0) {
    info_.height = t->height;
    info_.width = t->width;
  } else if (t->height != info_.height || t->width != info_.width) {
    return InvalidArgumentError("tensor is 3x" + std::to_string(t->height) + "x" +
                                std::to_string(t->width) + ", earlier rows are 3x" +
                                std::to_string(info_.height) + "x" + std::to_string(info_.width) +
                                " (a docfeed dataset has one Donut size)");
  }
  DOCFEED_RETURN_IF_ERROR(Recover(*t));
  const Box tight = TightContentBox(rgb_.data(), t->height, t->width, 3);
  const Box box = ChooseBox(tight);
  ImageView view{rgb_.data() + (static_cast<size_t>(box.top) * static_cast<size_t>(t->width) +
                                static_cast<size_t>(box.left)) *
                                   3,
                 box.width, box.height, 3, static_cast<ptrdiff_t>(t->width) * 3};
  const bool gray = IsGray(rgb_.data(), box, t->width);
  if (gray) {
    gray_.resize(static_cast<size_t>(box.width) * static_cast<size_t>(box.height));
    for (int32_t y = 0; y < box.height; ++y) {
      const uint8_t* src = view.data + y * view.stride_bytes;
      for (int32_t x = 0; x < box.width; ++x) {
        gray_[static_cast<size_t>(y) * static_cast<size_t>(box.width) + static_cast<size_t>(x)] =
            src[x * 3];
      }
    }
    view = ImageView{gray_.data(), box.width, box.height, 1, box.width};
  }
  DOCFEED_ASSIGN_OR_RETURN(ppm_, EncodePpm(view));
  DOCFEED_ASSIGN_OR_RETURN(sample->values, ReadKeptValues(batch, row, layout_));
  sample->image = ppm_;
  sample->path = path;
  sample->codec = StoredCodec::kPpm;
  sample->width = static_cast<uint32_t>(box.width);
  sample->height = static_cast<uint32_t>(box.height);
  sample->channels = gray ? 1 : 3;
  sample->orientation = 1;
  ++info_.rows;
  info_.cropped += (box.height != t->height || box.width != t->width) ? 1 : 0;
  info_.off_centre += (tight.height > 0 && !IsCentred(tight, t->height, t->width)) ? 1 : 0;
  info_.grayscale += gray ? 1 : 0;
  info_.boxes.push_back(
      {box.top, box.left, box.height, box.width, tight.top, tight.left, tight.height, tight.width});
  return Status::Ok();
}

Status ConvertBatches(SourceStream& stream, const PieceTask& task, RowConverter& converter,
                      ShardWriter& writer, const RowHook& after_row) {
  arrow::RecordBatch batch;
  int64_t rows_before = 0;
  while (true) {
    DOCFEED_ASSIGN_OR_RETURN(bool more, stream.Next(&batch));
    if (!more) return Status::Ok();
    for (int64_t row = 0; row < batch.num_rows; ++row) {
      SampleToWrite sample;
      TensorRow tensor;
      const std::string path = task.label + "#" + std::to_string(rows_before + row);
      Status status = converter.Convert(batch, row, path, stream, &sample, &tensor);
      if (status.ok()) status = writer.Add(sample);
      if (!status.ok()) {
        return status.WithContext(
            task.label + ": record batch " + std::to_string(batch.batch_index) + " row " +
            std::to_string(row) + " (row " + std::to_string(rows_before + row) + " of the file)");
      }
      DOCFEED_RETURN_IF_ERROR(after_row(tensor.values.size()));
    }
    rows_before += batch.num_rows;
  }
}

}  // namespace

std::string EncodePieceInfo(const PieceInfo& info) {
  Json j;
  j["rows"] = info.rows;
  j["height"] = info.height;
  j["width"] = info.width;
  j["off_grid"] = info.off_grid;
  j["max_deviation"] = info.max_deviation;
  j["cropped"] = info.cropped;
  j["off_centre"] = info.off_centre;
  j["grayscale"] = info.grayscale;
  j["boxes"] = info.boxes;
  return j.dump() + "\n";
}

Result<PieceInfo> DecodePieceInfo(const std::string& text, const std::string& name) {
  Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return CorruptionError(name + ": not a JSON object");
  try {
    PieceInfo info;
    info.rows = j.at("rows").get<uint64_t>();
    info.height = j.at("height").get<int32_t>();
    info.width = j.at("width").get<int32_t>();
    info.off_grid = j.at("off_grid").get<uint64_t>();
    info.max_deviation = j.at("max_deviation").get<double>();
    info.cropped = j.at("cropped").get<uint64_t>();
    info.off_centre = j.at("off_centre").get<uint64_t>();
    info.grayscale = j.at("grayscale").get<uint64_t>();
    info.boxes = j.at("boxes").get<std::vector<std::array<int32_t, 8>>>();
    if (info.boxes.size() != info.rows) return CorruptionError(name + ": boxes != rows");
    return info;
  } catch (const Json::exception& e) {
    return CorruptionError(name + ": " + e.what());
  }
}

Result<FileScan> ScanFile(const std::string& path, const std::string& label,
                          const std::string& pixel_column, const std::vector<std::string>& drop,
                          Env* env) {
  DOCFEED_ASSIGN_OR_RETURN(SourceStream stream, SourceStream::Open(EnvOrDefault(env), path, label));
  FileScan scan;
  DOCFEED_ASSIGN_OR_RETURN(scan.layout, InspectSchema(stream.schema(), label, pixel_column, drop));
  // Every batch is read and validated, all but its tensor values (which are not validated).
  stream.set_deferred_buffer(
      TensorValuesBuffer(stream.schema(), static_cast<size_t>(scan.layout.pixel_column)));
  arrow::RecordBatch batch;
  while (true) {
    DOCFEED_ASSIGN_OR_RETURN(bool more, stream.Next(&batch));
    if (!more) break;
    scan.rows += static_cast<uint64_t>(batch.num_rows);
  }
  return scan;
}

Status ProcessPiece(const PieceTask& task, const PieceConfig& config, const RowHook& after_row) {
  Env* env = EnvOrDefault(config.env);
  const std::string tmp = task.dir + ".tmp";
  DOCFEED_RETURN_IF_ERROR(env->RemoveAll(tmp));
  DOCFEED_RETURN_IF_ERROR(env->CreateDirectory(tmp));
  DOCFEED_ASSIGN_OR_RETURN(SourceStream stream, SourceStream::Open(env, task.input, task.label));
  DOCFEED_ASSIGN_OR_RETURN(
      SourceLayout layout,
      InspectSchema(stream.schema(), task.label, config.pixel_column, config.drop_columns));
  if (!SameColumns(layout, config.layout)) {
    return InvalidArgumentError(task.label +
                                ": its columns or tensor type differ from the split's first file");
  }
  ShardWriterOptions wopts;
  wopts.env = env;
  wopts.directory = tmp;
  wopts.columns = layout.columns;
  wopts.label_column = PickLabelColumn(layout.columns);
  wopts.compression = config.compression;
  wopts.max_file_bytes = config.max_file_bytes;
  // As `pack --preprocess`: one page per batch, so a random read decompresses one page.
  if (config.compression != "none") wopts.max_batch_rows = 1;
  DOCFEED_ASSIGN_OR_RETURN(std::unique_ptr<ShardWriter> writer, ShardWriter::Create(wopts));
  RowConverter converter(config, layout);
  stream.set_deferred_buffer(
      TensorValuesBuffer(stream.schema(), static_cast<size_t>(layout.pixel_column)));
  DOCFEED_RETURN_IF_ERROR(ConvertBatches(stream, task, converter, *writer, after_row));
  const PieceInfo& info = converter.info();
  Manifest manifest;
  manifest.codec = "ppm";
  manifest.source_bytes = stream.size_bytes();
  if (info.rows > 0) {
    // The stored pages are padded back and normalized at load time: the record names the
    // arithmetic the tensors were normalized with (a torchvision one only exists in 5.x).
    const bool torch = config.inverter->candidate().backend == DonutBackend::kTorchvision;
    manifest.preprocess = {kPreprocessDonut, info.height,
                           info.width,       false,
                           torch ? 5 : 4,    torch ? "torchvision" : "pil"};
  }
  DOCFEED_RETURN_IF_ERROR(writer->Finish(std::move(manifest)).status());
  // Verified here, piece by piece, so the check maps one piece's files at a time.
  DOCFEED_RETURN_IF_ERROR(
      VerifyDataset(tmp, env).WithContext("verifying the output of " + task.label));
  DOCFEED_RETURN_IF_ERROR(env->WriteTextFile(JoinPath(tmp, kPieceInfoFile), EncodePieceInfo(info)));
  DOCFEED_RETURN_IF_ERROR(env->RemoveAll(task.dir));
  return env->Rename(tmp, task.dir);
}

Result<PieceInfo> LoadFinishedPiece(const std::string& dir, Env* env) {
  env = EnvOrDefault(env);
  const std::string manifest_path = JoinPath(dir, kManifestFileName);
  DOCFEED_ASSIGN_OR_RETURN(std::string text, env->ReadTextFile(manifest_path));
  DOCFEED_ASSIGN_OR_RETURN(Manifest manifest, DecodeManifest(text, manifest_path));
  for (const FileEntry& f : manifest.data_files) {
    Result<uint64_t> size = env->FileSize(JoinPath(dir, f.name));
    if (!size.ok() || *size != f.size_bytes) {
      return NotFoundError(dir + ": data file " + f.name + " is missing or incomplete");
    }
  }
  const std::string info_path = JoinPath(dir, kPieceInfoFile);
  DOCFEED_ASSIGN_OR_RETURN(std::string info_text, env->ReadTextFile(info_path));
  DOCFEED_ASSIGN_OR_RETURN(PieceInfo info, DecodePieceInfo(info_text, info_path));
  if (info.rows != manifest.num_samples) {
    return CorruptionError(info_path + ": rows differ from the piece's manifest");
  }
  return info;
}

}  // namespace docfeed::internal::migrate
