// docfeed/merge.h: the parts of a split pack joined into one dataset (src/pack/README.md, "Parts
// and merge"; docs/format.md section 16).
#include "docfeed/merge.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <thread>

#include "base/file.h"
#include "base/hash.h"
#include "base/mutex.h"
#include "base/output_dir.h"
#include "format/dataset.h"
#include "format/index.h"
#include "format/manifest.h"
#include "format/shard_writer.h"
#include "format/verify.h"
#include "pack/part.h"
#include "pack/remote_output.h"
#include "remote/url.h"

namespace docfeed::internal {
namespace {

constexpr uint64_t kNoReadLimit = std::numeric_limits<uint64_t>::max();
constexpr size_t kCopyChunkBytes = 8u << 20;
constexpr char kDatasetInfoFile[] = "dataset_info.json";
constexpr char kStateFile[] = "state.json";

struct Part {
  std::string dir;
  Manifest manifest;
  uint64_t manifest_hash = 0;  // of the manifest text: identifies this part in `merged`
};

std::span<const uint8_t> Bytes(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

std::string PartName(const PartInfo& p) {
  return std::to_string(p.index) + "/" + std::to_string(p.count);
}

std::string DataFileName(size_t i, size_t n) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "data-%05zu-of-%05zu.arrow", i, n);
  return buf;
}

Result<Part> LoadPart(Env* env, const std::string& dir) {
  Part p;
  p.dir = dir;
  const std::string path = JoinPath(dir, kManifestFileName);
  Result<std::string> text = env->ReadTextFile(path);
  if (!text.ok() && text.status().code() == StatusCode::kNotFound) {
    return NotFoundError("part " + dir + " has no " + kManifestFileName +
                         ": no part is there, or its pack or upload did not finish (pack it "
                         "again)");
  }
  if (!text.ok()) return text.status().WithContext("part " + dir);
  Result<Manifest> manifest = DecodeManifest(*text, path);
  if (!manifest.ok()) return manifest.status().WithContext("part " + dir);
  p.manifest = std::move(manifest).value();
  p.manifest_hash = Hash64(Bytes(*text));
  if (!p.manifest.part.is_part()) {
    return InvalidArgumentError(dir + " is not a part of a split pack (its manifest has no " +
                                "part record; pack the parts with --part I/N)");
  }
  return p;
}

// The file of `p`'s manifest named `name` (other_files), or null.
const FileEntry* FindOther(const Part& p, const std::string& name) {
  for (const FileEntry& f : p.manifest.other_files) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

bool IsShared(const std::string& name) {  // copied from part 0: the tokenizer's files
  return name != kIndexFileName && name != kDatasetInfoFile && name != kStateFile &&
         name != kRejectsFileName;
}

// The first manifest field in which `p` differs from `first` that decides the stored rows.
std::string ManifestDifference(const Part& first, const Part& p) {
  const Manifest& a = first.manifest;
  const Manifest& b = p.manifest;
  if (a.columns.size() != b.columns.size()) return "columns";
  for (size_t i = 0; i < a.columns.size(); ++i) {
    const ColumnSpec& x = a.columns[i];
    const ColumnSpec& y = b.columns[i];
    if (x.name != y.name || x.type != y.type || x.feature != y.feature ||
        (x.type == ColumnType::kArrow && !arrow::SameType(x.arrow, y.arrow))) {
      return "columns (column " + std::to_string(i) + ": " + x.name + " vs " + y.name + ")";
    }
  }
  if (a.label_column != b.label_column) return "label_column";
  if (a.codec != b.codec) return "codec (" + a.codec + " vs " + b.codec + ")";
  if (a.jpeg_quality != b.jpeg_quality) return "jpeg_quality";
  if (a.compression != b.compression) {
    return "compression (" + a.compression + " vs " + b.compression + ")";
  }
  if (!(a.preprocess == b.preprocess)) return "preprocess";
  if (a.normalization != b.normalization) return "normalization";
  if (a.original_column != b.original_column) return "original_column";
  if (a.chat_labels != b.chat_labels) return "chat_labels";
  if (!(a.pdf == b.pdf)) return "pdf";
  for (const FileEntry& f : a.other_files) {
    if (f.name == kDatasetInfoFile || IsShared(f.name)) {
      const FileEntry* g = FindOther(p, f.name);
      if (g == nullptr || g->xxh3 != f.xxh3 || g->size_bytes != f.size_bytes) return f.name;
    }
  }
  for (const FileEntry& g : b.other_files) {
    if (IsShared(g.name) && FindOther(first, g.name) == nullptr) return g.name;
  }
  return "";
}

// The parts of one split pack, in part order: same N, source and settings, each index once.
Status OrderParts(std::vector<Part>& parts) {
  std::stable_sort(parts.begin(), parts.end(), [](const Part& x, const Part& y) {
    return x.manifest.part.index < y.manifest.part.index;
  });
  const Part& first = parts.front();
  for (size_t i = 1; i < parts.size(); ++i) {
    const Part& p = parts[i];
    PartInfo same_place = p.manifest.part;  // compared but for where the part lies
    same_place.index = first.manifest.part.index;
    same_place.first = first.manifest.part.first;
    same_place.end = first.manifest.part.end;
    std::string diff = PartDifference(first.manifest.part, same_place);
    if (diff.empty()) diff = ManifestDifference(first, p);
    if (!diff.empty()) {
      return InvalidArgumentError("part " + p.dir + " does not belong with part " + first.dir +
                                  ": its " + diff + " differs (" + first.dir + " vs " + p.dir +
                                  ")");
    }
    if (p.manifest.part.index == parts[i - 1].manifest.part.index) {
      return InvalidArgumentError("part " + PartName(p.manifest.part) +
                                  " is given twice: " + parts[i - 1].dir + " and " + p.dir);
    }
  }
  const uint32_t count = first.manifest.part.count;
  for (uint32_t k = 0; k < count; ++k) {
    if (k >= parts.size() || parts[k].manifest.part.index != k) {
      return InvalidArgumentError("part " + std::to_string(k) + "/" + std::to_string(count) +
                                  " is missing (" + std::to_string(parts.size()) + " of " +
                                  std::to_string(count) + " parts given)");
    }
    const uint64_t expect_first = k == 0 ? 0 : parts[k - 1].manifest.part.end;
    if (parts[k].manifest.part.first != expect_first) {
      return CorruptionError("part " + parts[k].dir + ": its slice starts at " +
                             std::to_string(parts[k].manifest.part.first) + ", not " +
                             std::to_string(expect_first));
    }
  }
  return Status::Ok();
}

Status CopyFile(Env* env, const std::string& from, const std::string& to) {
  DOCFEED_ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> in, env->NewRandomAccessFile(from));
  DOCFEED_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> out, env->NewWritableFile(to));
  std::vector<uint8_t> buffer(std::min<uint64_t>(kCopyChunkBytes, in->size_bytes()));
  for (uint64_t at = 0; at < in->size_bytes();) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(buffer.size(), in->size_bytes() - at));
    DOCFEED_RETURN_IF_ERROR(in->ReadAt(at, {buffer.data(), n}));
    DOCFEED_RETURN_IF_ERROR(out->Append({buffer.data(), n}));
    at += n;
  }
  DOCFEED_RETURN_IF_ERROR(out->Sync());
  return out->Close();
}

// A hard link where the file system allows one, else a copy (another file system: EXDEV).
Status LinkOrCopy(Env* env, const std::string& from, const std::string& to, MergeSummary* s) {
  Status linked = env->LinkFile(from, to);
  if (linked.ok()) {
    ++s->linked_files;
    return linked;
  }
  if (linked.code() != StatusCode::kUnsupported) return linked;
  ++s->copied_files;
  return CopyFile(env, from, to);
}

// The bytes of `p`'s file `name`, checked against its manifest entry.
Result<std::vector<uint8_t>> ReadChecked(Env* env, const Part& p, const std::string& name) {
  const FileEntry* entry = FindOther(p, name);
  if (entry == nullptr) {
    return CorruptionError("part " + p.dir + ": its manifest does not list " + name);
  }
  DOCFEED_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes,
                           env->ReadFile(JoinPath(p.dir, name), kNoReadLimit));
  if (bytes.size() != entry->size_bytes || Hash64(bytes) != entry->xxh3) {
    return CorruptionError("part " + p.dir + ": " + name +
                           " does not match its manifest checksum (the part is damaged)");
  }
  return bytes;
}

Status CreateParents(Env* env, const std::string& dir, const std::string& name) {
  for (size_t slash = name.find('/'); slash != std::string::npos;
       slash = name.find('/', slash + 1)) {
    DOCFEED_RETURN_IF_ERROR(env->CreateDirectory(JoinPath(dir, name.substr(0, slash))));
  }
  return Status::Ok();
}

// Puts a part's data file (`from`, `size` bytes) in the merged output under `name`.
using PlaceDataFile =
    std::function<Status(const std::string& from, const std::string& name, uint64_t size)>;

// The parts' data files (placed by `place`) and index records (read through `env`), numbered on
// through the parts.
Status MergeDataFiles(Env* env, const std::vector<Part>& parts, const PlaceDataFile& place,
                      Manifest* m, std::vector<IndexRecord>* records) {
  size_t total_files = 0;
  for (const Part& p : parts) total_files += p.manifest.data_files.size();
  for (const Part& p : parts) {
    const auto file_base = static_cast<uint32_t>(m->data_files.size());
    const uint64_t sample_base = m->num_samples;
    for (const FileEntry& f : p.manifest.data_files) {
      FileEntry moved = f;
      moved.name = DataFileName(m->data_files.size(), total_files);
      for (Region& r : moved.regions) r.first_sample += sample_base;
      DOCFEED_RETURN_IF_ERROR(place(JoinPath(p.dir, f.name), moved.name, f.size_bytes));
      m->data_files.push_back(std::move(moved));
    }
    DOCFEED_ASSIGN_OR_RETURN(std::vector<uint8_t> index, ReadChecked(env, p, kIndexFileName));
    DOCFEED_ASSIGN_OR_RETURN(IndexView view,
                             IndexView::Open(index, JoinPath(p.dir, kIndexFileName)));
    if (view.size() != p.manifest.num_samples) {
      return CorruptionError("part " + p.dir + ": its index holds " + std::to_string(view.size()) +
                             " samples, its manifest " + std::to_string(p.manifest.num_samples));
    }
    for (uint64_t i = 0; i < view.size(); ++i) {
      IndexRecord r = view.Get(i);
      r.file_index += file_base;
      records->push_back(r);
    }
    m->num_samples += p.manifest.num_samples;
    m->source_bytes += p.manifest.source_bytes;
    m->stored_image_bytes += p.manifest.stored_image_bytes;
    m->rejected += p.manifest.rejected;
    for (const auto& [codec, n] : p.manifest.stored_codecs) m->stored_codecs[codec] += n;
  }
  return Status::Ok();
}

// Writes the merged dataset into `dir` (which exists and is empty; written through `env`): data
// files (by `place`), index, dataset_info.json, the shared files (tokenizer/), rejects, manifest,
// and state.json last. The parts are read through `parts_env`.
Status WriteMerged(Env* parts_env, Env* env, const std::vector<Part>& parts,
                   const MergeInfo& merged, const std::string& dir, const PlaceDataFile& place,
                   MergeSummary* s) {
  const Part& first = parts.front();
  Manifest m = first.manifest;
  m.num_samples = m.source_bytes = m.stored_image_bytes = m.rejected = 0;
  m.stored_codecs.clear();
  m.data_files.clear();
  m.other_files.clear();
  m.part = {};
  m.merged = merged;
  std::vector<IndexRecord> records;
  DOCFEED_RETURN_IF_ERROR(MergeDataFiles(parts_env, parts, place, &m, &records));
  auto write_other = [&](const std::string& name, std::span<const uint8_t> bytes) -> Status {
    DOCFEED_RETURN_IF_ERROR(CreateParents(env, dir, name));
    DOCFEED_RETURN_IF_ERROR(env->WriteFile(JoinPath(dir, name), bytes));
    m.other_files.push_back({name, bytes.size(), Hash64(bytes), 0, {}});
    return Status::Ok();
  };
  const std::vector<uint8_t> index = EncodeIndex(records);
  DOCFEED_RETURN_IF_ERROR(write_other(kIndexFileName, index));
  DOCFEED_ASSIGN_OR_RETURN(std::vector<uint8_t> info,
                           ReadChecked(parts_env, first, kDatasetInfoFile));
  DOCFEED_RETURN_IF_ERROR(write_other(kDatasetInfoFile, info));
  // Listed in its place, written after the manifest: it makes datasets.load_from_disk accept
  // the directory (as in the shard writer).
  const std::string state = DatasetStateJson(m.data_files, Hash64(index));
  m.other_files.push_back({kStateFile, state.size(), Hash64(Bytes(state)), 0, {}});
  for (const FileEntry& f : first.manifest.other_files) {
    if (!IsShared(f.name)) continue;
    DOCFEED_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, ReadChecked(parts_env, first, f.name));
    DOCFEED_RETURN_IF_ERROR(write_other(f.name, bytes));
  }
  std::vector<uint8_t> rejects;
  for (const Part& p : parts) {
    if (FindOther(p, kRejectsFileName) == nullptr) continue;
    DOCFEED_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes,
                             ReadChecked(parts_env, p, kRejectsFileName));
    rejects.insert(rejects.end(), bytes.begin(), bytes.end());
  }
  if (!rejects.empty()) DOCFEED_RETURN_IF_ERROR(write_other(kRejectsFileName, rejects));
  DOCFEED_RETURN_IF_ERROR(env->WriteTextFile(JoinPath(dir, kManifestFileName), EncodeManifest(m)));
  DOCFEED_RETURN_IF_ERROR(env->WriteTextFile(JoinPath(dir, kStateFile), state));
  s->samples = m.num_samples;
  s->rejected = m.rejected;
  s->data_files = m.data_files.size();
  for (const FileEntry& f : m.data_files) s->output_bytes += f.size_bytes;
  for (const FileEntry& f : m.other_files) s->output_bytes += f.size_bytes;
  return Status::Ok();
}

// The merged output failed verification: the part whose bytes are damaged, if one is.
Status NameDamagedPart(Env* env, const std::vector<Part>& parts, const Status& failure) {
  for (const Part& p : parts) {
    Status verified = VerifyDataset(p.dir, env);
    if (!verified.ok()) {
      return CorruptionError("part " + p.dir + " (" + PartName(p.manifest.part) +
                             ") is damaged: " + verified.ToString());
    }
  }
  return failure.WithContext("verifying the merged output");
}

// OUT exists: kept when it is this very merge and verifies; otherwise refused.
Result<MergeSummary> KeepCompleteMerge(Env* env, const std::string& output,
                                       const MergeInfo& merged) {
  const std::string path = JoinPath(output, kManifestFileName);
  Result<std::string> text = env->ReadTextFile(path);
  Result<Manifest> m = text.ok() ? DecodeManifest(*text, path) : Result<Manifest>(text.status());
  if (!m.ok() || !(m->merged == merged)) {
    return AlreadyExistsError(output +
                              " already exists (and is not a merge of these parts); pass "
                              "--overwrite to replace it");
  }
  Status verified = VerifyDataset(output, env);
  if (!verified.ok()) {
    return CorruptionError(output + " is a merge of these parts but fails verification: " +
                           verified.ToString() + "; pass --overwrite to merge again");
  }
  MergeSummary s;
  s.already_complete = true;
  s.parts = merged.parts;
  s.samples = m->num_samples;
  s.rejected = m->rejected;
  s.data_files = m->data_files.size();
  for (const FileEntry& f : m->data_files) s.output_bytes += f.size_bytes;
  for (const FileEntry& f : m->other_files) s.output_bytes += f.size_bytes;
  return s;
}

Result<std::vector<Part>> LoadParts(Env* env, const std::vector<std::string>& dirs) {
  if (dirs.empty()) return InvalidArgumentError("merge needs the part directories");
  std::vector<Part> parts;
  for (const std::string& dir : dirs) {
    DOCFEED_ASSIGN_OR_RETURN(Part p, LoadPart(env, dir));
    parts.push_back(std::move(p));
  }
  DOCFEED_RETURN_IF_ERROR(OrderParts(parts));
  return parts;
}

MergeInfo MergeRecord(const std::vector<Part>& parts) {
  Hasher64 h;
  for (const Part& p : parts) {
    h.Update(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(&p.manifest_hash),
                                      sizeof(p.manifest_hash)));
  }
  return {static_cast<uint32_t>(parts.size()), h.Digest()};
}

// Writes, verifies and places the merge. REQUIRES: the caller holds OUT's lock.
Status WriteAndPlace(Env* env, const std::vector<Part>& parts, const MergeOptions& options,
                     const std::string& output, MergeSummary* s) {
  const std::string tmp = TempSibling(output, "partial");
  DOCFEED_RETURN_IF_ERROR(env->RemoveAll(tmp));
  DOCFEED_RETURN_IF_ERROR(env->CreateDirectory(tmp));
  auto link = [&](const std::string& from, const std::string& name, uint64_t) {
    return LinkOrCopy(env, from, JoinPath(tmp, name), s);
  };
  Status status = WriteMerged(env, env, parts, MergeRecord(parts), tmp, link, s);
  if (status.ok()) {
    // Every byte of every part's data file is hashed here (the links share them).
    Status verified = VerifyDataset(tmp, env);
    if (!verified.ok()) status = NameDamagedPart(env, parts, verified);
  }
  if (status.ok()) {
    status = PlaceOutput(env, tmp, output, options.overwrite, [env](const std::string& path) {
      return CheckReplaceableOutput(path, /*allow_dict=*/false, env);
    });
  }
  if (!status.ok()) env->RemoveAll(tmp).IgnoreError();
  return status;
}

Result<MergeSummary> MergeParts(const MergeOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  Env* env = EnvOrDefault(options.env);
  std::string output = options.output;
  while (output.size() > 1 && output.back() == '/') output.pop_back();
  if (output.empty()) return InvalidArgumentError("no output directory given (-o OUT)");
  DOCFEED_ASSIGN_OR_RETURN(std::vector<Part> parts, LoadParts(env, options.parts));
  if (options.overwrite) {
    DOCFEED_RETURN_IF_ERROR(CheckReplaceableOutput(output, /*allow_dict=*/false, env));
  }
  DOCFEED_ASSIGN_OR_RETURN(OutputLock lock, OutputLock::Acquire(env, output));
  Result<MergeSummary> result = MergeSummary{};
  if (env->PathExists(output) && !options.overwrite) {
    result = KeepCompleteMerge(env, output, MergeRecord(parts));
  } else {
    MergeSummary s;
    s.parts = static_cast<uint32_t>(parts.size());
    Status status = WriteAndPlace(env, parts, options, output, &s);
    result = status.ok() ? Result<MergeSummary>(s) : Result<MergeSummary>(status);
  }
  lock.Release().IgnoreError();
  if (result.ok()) {
    result->seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  return result;
}

// -o s3://...: the merge made in a staging directory next to the first part (so that its data
// files are hard links), then uploaded (remote_output.h).
// The upload's counts in `summary`, and its seconds: the upload's since `written` (when the
// staged dataset was complete), the whole run's since `start`.
void RecordUpload(const S3UploadSummary& uploaded, std::chrono::steady_clock::time_point start,
                  std::chrono::steady_clock::time_point written, MergeSummary* summary) {
  const auto now = std::chrono::steady_clock::now();
  summary->uploaded_objects = uploaded.objects;
  summary->uploaded_bytes = uploaded.sent_bytes;
  summary->upload_requests = uploaded.requests;
  summary->upload_retries = uploaded.retries;
  summary->upload_seconds = std::chrono::duration<double>(now - written).count();
  summary->seconds = std::chrono::duration<double>(now - start).count();
}

Result<MergeSummary> MergeToRemote(const MergeOptions& options) {
  if (options.parts.empty()) return InvalidArgumentError("no parts given to merge");
  const auto start = std::chrono::steady_clock::now();
  auto written = start;
  MergeSummary summary;
  const std::string first = options.parts[0];
  std::string root = ParentPath(first.ends_with('/') ? first.substr(0, first.size() - 1) : first);
  if (root.empty()) root = ".";
  DOCFEED_ASSIGN_OR_RETURN(
      S3UploadSummary uploaded,
      WriteToRemote(EnvOrDefault(options.env), options.output, options.overwrite, root,
                    [&](const std::string& local) -> Status {
                      MergeOptions staged = options;
                      staged.output = local;
                      staged.overwrite = false;
                      DOCFEED_ASSIGN_OR_RETURN(summary, MergeParts(staged));
                      written = std::chrono::steady_clock::now();
                      return Status::Ok();
                    }));
  RecordUpload(uploaded, start, written, &summary);
  return summary;
}

// Parts and output on s3://: the merge made inside the store. The parts' manifests, indexes and
// small files are read through the RemoteEnv (no data object is read); the merged index,
// dataset_info.json, tokenizer/, rejects and manifest are written to a local staging directory;
// then the output prefix is made ready, the parts' data objects copied there server-side under
// their merged names (CopyObject), and the staged files uploaded, manifests last.
// A rerun finding this merge at the output keeps it when it verifies (KeepCompleteMerge through
// the RemoteEnv); a dataset's objects without a manifest (a merge cut before it) are replaced.
Result<MergeSummary> MergeRemoteParts(const MergeOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  const auto local_part = std::find_if(options.parts.begin(), options.parts.end(),
                                       [](const std::string& p) { return !IsRemotePath(p); });
  if (local_part != options.parts.end()) {
    const auto remote_part = std::find_if(options.parts.begin(), options.parts.end(),
                                          [](const std::string& p) { return IsRemotePath(p); });
    return InvalidArgumentError("the parts of a merge are all local or all s3://; " + *local_part +
                                " is local and " + *remote_part + " is not");
  }
  RemoteEnv* remote = RemoteEnv::Default();
  std::string output = options.output;
  while (output.size() > 1 && output.back() == '/') output.pop_back();
  DOCFEED_ASSIGN_OR_RETURN(std::vector<Part> parts, LoadParts(remote, options.parts));
  const MergeInfo record = MergeRecord(parts);
  bool replace = options.overwrite;
  if (!options.overwrite) {
    Status empty = CheckS3Output(remote, output, /*overwrite=*/false);
    if (empty.code() != StatusCode::kAlreadyExists) DOCFEED_RETURN_IF_ERROR(empty);
    if (!empty.ok()) {
      if (remote->PathExists(JoinPath(output, kManifestFileName))) {
        Result<MergeSummary> kept = KeepCompleteMerge(remote, output, record);
        if (kept.ok()) {
          kept->seconds =
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        }
        return kept;
      }
      replace = true;
    }
  }
  MergeSummary summary;
  summary.parts = static_cast<uint32_t>(parts.size());
  std::vector<ObjectCopy> copies;
  auto written = start;
  DOCFEED_ASSIGN_OR_RETURN(
      S3UploadSummary uploaded,
      WriteToRemote(
          EnvOrDefault(options.env), output, replace, DefaultStagingRoot(),
          [&](const std::string& local) -> Status {
            Env* env = EnvOrDefault(options.env);
            DOCFEED_RETURN_IF_ERROR(env->CreateDirectory(local));
            auto note = [&](const std::string& from, const std::string& name, uint64_t size) {
              copies.push_back({from, name, size});
              return Status::Ok();
            };
            DOCFEED_RETURN_IF_ERROR(WriteMerged(remote, env, parts, record, local, note, &summary));
            written = std::chrono::steady_clock::now();
            return Status::Ok();
          },
          [&](RemoteEnv* r, const S3UploadOptions& o, S3UploadSummary* s) {
            return CopyObjects(r, copies, output, o, s);
          }));
  summary.server_copied_files = uploaded.copied_objects;
  summary.copied_files = uploaded.streamed_objects;
  RecordUpload(uploaded, start, written, &summary);
  return summary;
}

bool AnyRemote(const std::vector<std::string>& paths) {
  return std::any_of(paths.begin(), paths.end(),
                     [](const std::string& p) { return IsRemotePath(p); });
}

}  // namespace
}  // namespace docfeed::internal

namespace docfeed {

Result<MergeSummary> Merge(const MergeOptions& options) {
  const bool remote_parts = internal::AnyRemote(options.parts);
  if (internal::IsRemotePath(options.output)) {
    return remote_parts ? internal::MergeRemoteParts(options) : internal::MergeToRemote(options);
  }
  if (remote_parts) {
    return UnsupportedError(
        "merge of parts on s3:// writes to an s3:// output (-o s3://BUCKET/PREFIX: the data "
        "objects are copied inside the store); a local output needs local parts");
  }
  return internal::MergeParts(options);
}

}  // namespace docfeed
