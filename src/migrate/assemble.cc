#include "migrate/assemble.h"

#include <cstdio>

#include "base/file.h"
#include "base/hash.h"
#include "base/json.h"
#include "format/dataset.h"
#include "format/index.h"
#include "format/manifest.h"
#include "format/shard_writer.h"

namespace docfeed::internal::migrate {
namespace {

std::string DataFileName(size_t i, size_t n) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "data-%05zu-of-%05zu.arrow", i, n);
  return buf;
}

std::span<const uint8_t> Bytes(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

struct Piece {
  std::string dir;
  Manifest manifest;
  std::vector<IndexRecord> records;
};

Result<Piece> LoadPiece(Env* env, const std::string& dir) {
  Piece p;
  p.dir = dir;
  const std::string manifest_path = JoinPath(dir, kManifestFileName);
  DOCFEED_ASSIGN_OR_RETURN(std::string text, env->ReadTextFile(manifest_path));
  DOCFEED_ASSIGN_OR_RETURN(p.manifest, DecodeManifest(text, manifest_path));
  const std::string index_path = JoinPath(dir, kIndexFileName);
  DOCFEED_ASSIGN_OR_RETURN(std::vector<uint8_t> index_bytes, env->ReadFile(index_path));
  DOCFEED_ASSIGN_OR_RETURN(IndexView index, IndexView::Open(index_bytes, index_path));
  for (uint64_t i = 0; i < index.size(); ++i) p.records.push_back(index.Get(i));
  return p;
}

// Checks that `p` describes the same dataset shape as `first` (columns, Donut size).
Status CheckCompatible(const Piece& first, const Piece& p) {
  if (p.manifest.columns.size() != first.manifest.columns.size()) {
    return InvalidArgumentError(p.dir + ": columns differ from " + first.dir);
  }
  for (size_t i = 0; i < p.manifest.columns.size(); ++i) {
    const ColumnSpec& c = p.manifest.columns[i];
    const ColumnSpec& f = first.manifest.columns[i];
    if (c.name != f.name || c.type != f.type || c.feature != f.feature ||
        (c.type == ColumnType::kArrow && !arrow::SameType(c.arrow, f.arrow))) {
      return InvalidArgumentError(p.dir + ": columns differ from " + first.dir);
    }
  }
  const PreprocessInfo& a = first.manifest.preprocess;
  const PreprocessInfo& b = p.manifest.preprocess;
  if (a.preprocessed() && b.preprocessed() && !(a == b)) {
    return InvalidArgumentError(p.dir + ": tensors are " + std::to_string(b.height) + "x" +
                                std::to_string(b.width) + ", those of " + first.dir + " " +
                                std::to_string(a.height) + "x" + std::to_string(a.width) +
                                " (a docfeed dataset has one Donut size)");
  }
  return Status::Ok();
}

}  // namespace

Result<uint64_t> AssembleSplit(const std::vector<std::string>& piece_dirs,
                               const std::string& out_dir, const std::string& migration_json,
                               const NormalizationInfo& normalization, Env* env) {
  env = EnvOrDefault(env);
  std::vector<Piece> pieces;
  size_t total_files = 0;
  for (const std::string& dir : piece_dirs) {
    DOCFEED_ASSIGN_OR_RETURN(Piece p, LoadPiece(env, dir));
    if (!pieces.empty()) DOCFEED_RETURN_IF_ERROR(CheckCompatible(pieces.front(), p));
    total_files += p.manifest.data_files.size();
    pieces.push_back(std::move(p));
  }
  if (pieces.empty()) return InternalError("no pieces to assemble");
  DOCFEED_RETURN_IF_ERROR(env->CreateDirectory(out_dir));
  Manifest m;
  const Manifest& first = pieces.front().manifest;
  m.created_by = first.created_by;
  m.columns = first.columns;
  m.label_column = first.label_column;
  m.codec = first.codec;
  m.compression = first.compression;
  // Always recorded, also for Donut's default 0.5 / 0.5: the manifest says what the tensors were.
  m.normalization = normalization;
  std::vector<IndexRecord> records;
  for (const Piece& p : pieces) {
    const auto file_base = static_cast<uint32_t>(m.data_files.size());
    const uint64_t sample_base = m.num_samples;
    for (const FileEntry& f : p.manifest.data_files) {
      FileEntry moved = f;
      moved.name = DataFileName(m.data_files.size(), total_files);
      for (Region& r : moved.regions) r.first_sample += sample_base;
      DOCFEED_RETURN_IF_ERROR(env->Rename(JoinPath(p.dir, f.name), JoinPath(out_dir, moved.name)));
      m.data_files.push_back(std::move(moved));
    }
    for (IndexRecord r : p.records) {
      r.file_index += file_base;
      records.push_back(r);
    }
    if (!m.preprocess.preprocessed()) m.preprocess = p.manifest.preprocess;
    m.num_samples += p.manifest.num_samples;
    m.source_bytes += p.manifest.source_bytes;
    m.stored_image_bytes += p.manifest.stored_image_bytes;
    for (const auto& [codec, n] : p.manifest.stored_codecs) m.stored_codecs[codec] += n;
  }
  auto write_other = [&](const std::string& name, std::span<const uint8_t> bytes) -> Status {
    DOCFEED_RETURN_IF_ERROR(env->WriteFile(JoinPath(out_dir, name), bytes));
    m.other_files.push_back({name, bytes.size(), Hash64(bytes), 0, {}});
    return Status::Ok();
  };
  const std::vector<uint8_t> index = EncodeIndex(records);
  DOCFEED_RETURN_IF_ERROR(write_other(kIndexFileName, index));
  DOCFEED_ASSIGN_OR_RETURN(std::vector<uint8_t> info,
                           env->ReadFile(JoinPath(pieces.front().dir, "dataset_info.json")));
  DOCFEED_RETURN_IF_ERROR(write_other("dataset_info.json", info));
  // state.json is listed in its place but written after the manifest: it is what makes
  // datasets.load_from_disk accept the directory (as in the shard writer).
  const std::string state = DatasetStateJson(m.data_files, Hash64(index));
  m.other_files.push_back({"state.json", state.size(), Hash64(Bytes(state)), 0, {}});
  DOCFEED_RETURN_IF_ERROR(write_other(kMigrationFile, Bytes(migration_json)));
  DOCFEED_RETURN_IF_ERROR(
      env->WriteTextFile(JoinPath(out_dir, kManifestFileName), EncodeManifest(m)));
  DOCFEED_RETURN_IF_ERROR(env->WriteTextFile(JoinPath(out_dir, "state.json"), state));
  // The data files were verified piece by piece and only renamed since; re-hashing them would
  // map the whole output. Opening checks the new manifest, index and every file's schema.
  Result<std::unique_ptr<Dataset>> opened = Dataset::Open(out_dir, env);
  if (!opened.ok()) return opened.status().WithContext("checking the assembled " + out_dir);
  if ((*opened)->size() != m.num_samples) return InternalError(out_dir + ": sample count differs");
  uint64_t bytes = 0;
  for (const FileEntry& f : m.data_files) bytes += f.size_bytes;
  for (const FileEntry& f : m.other_files) bytes += f.size_bytes;
  return bytes;
}

}  // namespace docfeed::internal::migrate
