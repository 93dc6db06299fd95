#include "pack/tar_source.h"

#include <archive.h>
#include <archive_entry.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "base/file.h"
#include "codec/codec.h"
#include "format/arrow_column.h"
#include "pack/image_folder.h"

namespace docfeed::internal {
namespace {

constexpr char kKeyColumn[] = "__key__";
constexpr char kUrlColumn[] = "__url__";
constexpr size_t kReadChunk = 1 << 16;

// A member of a shard: where it is and what it is.
struct Member {
  std::string key;
  std::string extension;  // lower-case, without the leading '.'
  std::string name;       // the full path in the archive
};

// key and extension of an archive path, as WebDataset splits them.
Member SplitName(const std::string& path) {
  Member m;
  m.name = path;
  const size_t slash = path.rfind('/');
  const size_t base = slash == std::string::npos ? 0 : slash + 1;
  const size_t dot = path.find('.', base);
  m.key = path.substr(0, dot);
  if (dot != std::string::npos) {
    m.extension = path.substr(dot + 1);
    std::transform(m.extension.begin(), m.extension.end(), m.extension.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  }
  return m;
}

bool IsImageExtension(const std::string& ext) {
  static constexpr std::array<const char*, 11> kImages = {
      "jpg", "jpeg", "png", "webp", "tif", "tiff", "ppm", "pgm", "pnm", "gif", "bmp"};
  return std::any_of(kImages.begin(), kImages.end(), [&](const char* e) { return ext == e; });
}

enum class ValueKind { kText, kInteger, kBinary };

ValueKind KindOf(const std::string& ext) {
  if (ext == "txt" || ext == "text" || ext == "json") return ValueKind::kText;
  if (ext == "cls" || ext == "cls2" || ext == "index") return ValueKind::kInteger;
  return ValueKind::kBinary;
}

ColumnSpec ColumnFor(const std::string& name, ValueKind kind) {
  if (kind == ValueKind::kText) return ColumnSpec(name, ColumnType::kString);
  if (kind == ValueKind::kInteger) return ColumnSpec(name, ColumnType::kInt64);
  ColumnSpec spec(name, ColumnType::kArrow);
  spec.arrow = arrow::MakeField(name, arrow::TypeId::kBinary);
  spec.feature = R"({"dtype":"binary","_type":"Value"})";
  return spec;
}

// One shard read front to back through libarchive (tar, optionally gzip-compressed), with the
// file's bytes pulled through an Env's RandomAccessFile.
class ShardReader {
 public:
  ShardReader() = default;
  ShardReader(const ShardReader&) = delete;
  ShardReader& operator=(const ShardReader&) = delete;
  ~ShardReader() { Close(); }

  Status Open(Env* env, const std::string& path) {
    Close();
    path_ = path;
    offset_ = 0;
    DOCFEED_ASSIGN_OR_RETURN(file_, env->NewRandomAccessFile(path));
    archive_ = archive_read_new();
    if (archive_ == nullptr) return ResourceExhaustedError(path + ": libarchive: no memory");
    archive_read_support_filter_gzip(archive_);
    archive_read_support_format_tar(archive_);
    if (archive_read_open2(archive_, this, nullptr, &ShardReader::Read, nullptr, nullptr) !=
        ARCHIVE_OK) {
      return Error("not a tar archive");
    }
    return Status::Ok();
  }

  // The next regular file's name and size; nullopt at the end of the archive. Directories and
  // other entry types are passed over.
  Result<std::optional<std::pair<std::string, int64_t>>> Next() {
    for (;;) {
      archive_entry* entry = nullptr;
      const int r = archive_read_next_header(archive_, &entry);
      if (r == ARCHIVE_EOF) return std::optional<std::pair<std::string, int64_t>>();
      if (r != ARCHIVE_OK && r != ARCHIVE_WARN) return Error("a header");
      if (archive_entry_filetype(entry) != AE_IFREG) continue;
      const char* name = archive_entry_pathname(entry);
      return std::optional(std::make_pair(std::string(name != nullptr ? name : ""),
                                          static_cast<int64_t>(archive_entry_size(entry))));
    }
  }

  // The current member's bytes (at most `limit`).
  Result<std::vector<uint8_t>> Data(const std::string& member, int64_t size, uint64_t limit) {
    if (size < 0 || static_cast<uint64_t>(size) > limit) {
      return ResourceExhaustedError(path_ + ": member " + member + " is " + std::to_string(size) +
                                    " bytes, more than the limit of " + std::to_string(limit));
    }
    std::vector<uint8_t> out(static_cast<size_t>(size));
    size_t done = 0;
    while (done < out.size()) {
      const la_ssize_t n = archive_read_data(archive_, out.data() + done, out.size() - done);
      if (n < 0) return Error("member " + member);
      if (n == 0) return Error("member " + member + " (it ends early)");
      done += static_cast<size_t>(n);
    }
    return out;
  }

  Status Skip(const std::string& member) {
    if (archive_read_data_skip(archive_) != ARCHIVE_OK) return Error("member " + member);
    return Status::Ok();
  }

 private:
  static la_ssize_t Read(archive* a, void* self, const void** buffer) {
    auto* r = static_cast<ShardReader*>(self);
    const uint64_t size = r->file_->size_bytes();
    const uint64_t n = std::min<uint64_t>(kReadChunk, size - std::min(size, r->offset_));
    r->buffer_.resize(kReadChunk);
    Status read = r->file_->ReadAt(r->offset_, std::span<uint8_t>(r->buffer_.data(), n));
    if (!read.ok()) {
      archive_set_error(a, EIO, "%s", std::string(read.message()).c_str());
      return -1;
    }
    r->offset_ += n;
    *buffer = r->buffer_.data();
    return static_cast<la_ssize_t>(n);
  }

  Status Error(const std::string& what) const {
    const char* why = archive_error_string(archive_);
    return CorruptionError(path_ + ": cannot read " + what + ": " +
                           (why != nullptr ? why : "corrupt or truncated archive"));
  }

  void Close() {
    if (archive_ != nullptr) archive_read_free(archive_);
    archive_ = nullptr;
  }

  std::string path_;
  std::unique_ptr<RandomAccessFile> file_;
  archive* archive_ = nullptr;
  std::vector<uint8_t> buffer_;
  uint64_t offset_ = 0;
};

// Where a sample's image is: its shard and the index of its member among the shard's regular
// files.
struct ImageMember {
  size_t shard = 0;
  int64_t member = -1;  // -1: the sample has no image
};

class TarSource final : public SampleSource {
 public:
  TarSource(std::string root, std::vector<std::string> shards, Env* env)
      : root_(std::move(root)), shards_(std::move(shards)), env_(env) {}

  Status List() {
    folder_.root = root_;
    folder_.columns = {ColumnSpec(kKeyColumn, ColumnType::kString),
                       ColumnSpec(kUrlColumn, ColumnType::kString)};
    const uint64_t limit = DecodeLimits().max_input_bytes;
    for (size_t s = 0; s < shards_.size(); ++s) {
      ShardReader reader;
      DOCFEED_RETURN_IF_ERROR(reader.Open(env_, shards_[s]));
      std::vector<std::pair<Member, int64_t>> group;  // the current sample's members
      std::vector<std::optional<std::vector<uint8_t>>> values;
      member_sample_.emplace_back();
      for (int64_t index = 0;; ++index) {
        DOCFEED_ASSIGN_OR_RETURN(auto next, reader.Next());
        Member m = next ? SplitName(next->first) : Member();
        if (!group.empty() && (!next || m.key != group.front().first.key)) {
          DOCFEED_RETURN_IF_ERROR(AddSample(s, group, values));
          group.clear();
          values.clear();
        }
        if (!next) break;
        member_sample_[s].push_back(-1);
        // Images are read when they are encoded; a second image or a member with no extension
        // makes the sample bad, so neither is kept.
        if (IsImageExtension(m.extension) || m.extension.empty()) {
          DOCFEED_RETURN_IF_ERROR(reader.Skip(m.name));
          values.emplace_back();
        } else {
          DOCFEED_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes,
                                   reader.Data(m.name, next->second, limit));
          values.emplace_back(std::move(bytes));
        }
        group.emplace_back(std::move(m), index);
      }
    }
    return Status::Ok();
  }

  const ImageFolder& listing() const override { return folder_; }

  Result<std::vector<uint8_t>> ReadImage(size_t i) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (served_.empty()) {  // a bad sample's image is never asked for
      served_.resize(images_.size());
      for (size_t k = 0; k < images_.size(); ++k) served_[k] = !folder_.samples[k].problem.ok();
    }
    served_[i] = true;
    if (auto cached = cache_.find(i); cached != cache_.end()) {
      if (!cached->second.ok()) {
        const Status error = cached->second.status();
        cache_.erase(cached);
        return error;
      }
      std::vector<uint8_t> bytes = std::move(cached->second.value());
      cache_.erase(cached);
      return bytes;
    }
    const ImageMember target = images_[i];
    if (target.member < 0) return InvalidArgumentError("the sample has no image member");
    Result<std::vector<uint8_t>> bytes = StreamTo(target);
    // After an error the archive's state is unknown: the next call starts the shard again.
    if (!bytes.ok()) stream_open_ = false;
    return bytes;
  }

  std::string Where(size_t i) const override { return where_[i]; }

  std::string Name() const override { return "WebDataset shards " + root_; }

 private:
  // Streams from where the last call stopped (or the shard's start) to `target`'s member and
  // returns its bytes; images of samples not asked for yet that it passes are kept in cache_.
  Result<std::vector<uint8_t>> StreamTo(const ImageMember& target) {
    if (!stream_open_ || stream_shard_ > target.shard ||
        (stream_shard_ == target.shard && stream_member_ > target.member)) {
      DOCFEED_RETURN_IF_ERROR(OpenStream(target.shard));
    }
    const uint64_t limit = DecodeLimits().max_input_bytes;
    for (;;) {
      DOCFEED_ASSIGN_OR_RETURN(auto next, stream_.Next());
      const std::vector<int64_t>& samples = member_sample_[stream_shard_];
      if (!next || stream_member_ >= static_cast<int64_t>(samples.size())) {
        if (next || stream_shard_ >= target.shard) {
          return CorruptionError(shards_[stream_shard_] +
                                 ": the archive changed while it was packed (its members differ "
                                 "from those listed)");
        }
        DOCFEED_RETURN_IF_ERROR(OpenStream(stream_shard_ + 1));
        continue;
      }
      const int64_t member = stream_member_++;
      const int64_t sample = samples[static_cast<size_t>(member)];
      if (stream_shard_ == target.shard && member == target.member) {
        return stream_.Data(next->first, next->second, limit);
      }
      const auto other = static_cast<size_t>(sample);
      if (sample >= 0 && !served_[other] && cache_.count(other) == 0) {
        // An image not asked for yet, passed over on the way: the encoder asks for images
        // nearly in order, so it is asked for soon (the cache holds about one window). An
        // error reading it is kept for it, and the stream starts again.
        const auto kept = cache_.emplace(other, stream_.Data(next->first, next->second, limit));
        if (!kept.first->second.ok()) {
          DOCFEED_RETURN_IF_ERROR(OpenStream(target.shard));
        }
        continue;
      }
      DOCFEED_RETURN_IF_ERROR(stream_.Skip(next->first));
    }
  }

  Status OpenStream(size_t shard) {
    DOCFEED_RETURN_IF_ERROR(stream_.Open(env_, shards_[shard]));
    stream_open_ = true;
    stream_shard_ = shard;
    stream_member_ = 0;
    return Status::Ok();
  }

  // The column of `name` (made on first sight); Corruption when `kind` disagrees with it.
  Result<size_t> Column(const std::string& name, ValueKind kind, const std::string& where) {
    for (size_t c = 0; c < folder_.columns.size(); ++c) {
      if (folder_.columns[c].name != name) continue;
      if (folder_.columns[c].type != ColumnFor(name, kind).type) {
        return CorruptionError(where + ": column '" + name + "' changes type");
      }
      return c;
    }
    if (name == "image" || name == "original") {
      return InvalidArgumentError(where + ": a member extension '" + name +
                                  "' would be a column named like docfeed's image columns");
    }
    folder_.columns.push_back(ColumnFor(name, kind));
    for (SourceSample& s : folder_.samples) s.values.emplace_back();  // null for earlier rows
    return folder_.columns.size() - 1;
  }

  Status AddSample(size_t shard, const std::vector<std::pair<Member, int64_t>>& group,
                   std::vector<std::optional<std::vector<uint8_t>>>& values) {
    const std::string url = RelativeTo(shards_[shard]);
    const std::string& key = group.front().first.key;
    SourceSample sample;
    sample.row = static_cast<int64_t>(folder_.samples.size());
    ImageMember image{shard, -1};
    std::vector<std::pair<size_t, Value>> cells;
    std::string problem;
    for (size_t k = 0; k < group.size(); ++k) {
      const Member& m = group[k].first;
      const std::string where = url + ": member " + m.name;
      if (IsImageExtension(m.extension) && image.member < 0) {
        image.member = group[k].second;
        sample.relative_path = m.name;
        continue;
      }
      if (!values[k]) {
        if (problem.empty()) {
          problem = "member " + m.name +
                    (m.extension.empty() ? " has no extension to name its column"
                                         : " is a second image of the sample");
        }
        continue;
      }
      const ValueKind kind = KindOf(m.extension);
      DOCFEED_ASSIGN_OR_RETURN(size_t column, Column(m.extension, kind, where));
      std::vector<uint8_t>& bytes = *values[k];
      std::string text(bytes.begin(), bytes.end());
      if (kind == ValueKind::kText) {
        if (FirstInvalidUtf8(text) != std::string_view::npos && problem.empty()) {
          problem = "member " + m.name + " is not UTF-8 text";
        }
        cells.emplace_back(column, Value(std::move(text)));
      } else if (kind == ValueKind::kInteger) {
        int64_t n = 0;
        const char* begin = text.data();
        const char* end = text.data() + text.size();
        while (end > begin && (end[-1] == '\n' || end[-1] == ' ' || end[-1] == '\r')) --end;
        const auto [ptr, ec] = std::from_chars(begin, end, n);
        if (ec != std::errc() || ptr != end || begin == end) {
          if (problem.empty()) problem = "member " + m.name + " is not a decimal integer";
        } else {
          cells.emplace_back(column, Value(n));
        }
      } else {
        // Binary: the cell encoding of a binary value is its length and bytes.
        std::string encoded(8, '\0');
        const uint64_t length = bytes.size();
        std::memcpy(encoded.data(), &length, 8);
        encoded += text;
        cells.emplace_back(column, Value(std::move(encoded)));
      }
    }
    sample.values.assign(folder_.columns.size(), Value());
    sample.values[0] = key;
    sample.values[1] = url;
    for (auto& [column, value] : cells) sample.values[column] = std::move(value);
    const std::string where = root_ == shards_[shard] ? shards_[shard] : JoinPath(root_, url);
    std::string name = where + ": sample " + key;
    if (image.member >= 0) name += " (" + sample.relative_path + ")";
    if (image.member < 0 && problem.empty()) {
      std::string members;
      for (const auto& [m, _] : group) members += (members.empty() ? "" : ", ") + m.name;
      problem = "has no image member (its members: " + members + ")";
    }
    if (!problem.empty()) sample.problem = InvalidArgumentError(name + ": " + problem);
    if (image.member >= 0) {
      member_sample_[shard][static_cast<size_t>(image.member)] =
          static_cast<int64_t>(folder_.samples.size());
    }
    folder_.samples.push_back(std::move(sample));
    images_.push_back(image);
    where_.push_back(std::move(name));
    return Status::Ok();
  }

  std::string RelativeTo(const std::string& shard) const {
    if (shard == root_) {
      const size_t slash = shard.rfind('/');
      return slash == std::string::npos ? shard : shard.substr(slash + 1);
    }
    return shard.substr(root_.size() + (root_.back() == '/' ? 0 : 1));
  }

  std::string root_;
  std::vector<std::string> shards_;
  Env* env_;
  ImageFolder folder_;
  std::vector<ImageMember> images_;                  // per sample
  std::vector<std::string> where_;                   // per sample
  std::vector<std::vector<int64_t>> member_sample_;  // per shard, per member: sample or -1

  std::mutex mu_;  // guards the stream and the cache below
  ShardReader stream_;
  bool stream_open_ = false;
  size_t stream_shard_ = 0;
  int64_t stream_member_ = 0;
  std::map<size_t, Result<std::vector<uint8_t>>> cache_;
  std::vector<bool> served_;  // per sample: ReadImage was called for it
};

// True when the first bytes are gzip's magic number or a tar header with a valid checksum
// (POSIX ustar and GNU tar; the checksum is the sum of the header's bytes with its own field
// read as spaces).
bool LooksLikeTar(Env* env, const std::string& path) {
  Result<std::unique_ptr<RandomAccessFile>> file = env->NewRandomAccessFile(path);
  if (!file.ok() || (*file)->size_bytes() < 2) return false;
  std::array<uint8_t, 512> header{};
  const uint64_t n = std::min<uint64_t>(header.size(), (*file)->size_bytes());
  if (!(*file)->ReadAt(0, std::span<uint8_t>(header.data(), n)).ok()) return false;
  if (header[0] == 0x1f && header[1] == 0x8b) return true;
  if (n < 512 || header[0] == 0) return false;
  uint64_t sum = 0;
  for (size_t i = 0; i < 512; ++i) sum += (i >= 148 && i < 156) ? ' ' : header[i];
  uint64_t stored = 0;
  size_t i = 148;
  while (i < 156 && header[i] == ' ') ++i;
  for (; i < 156 && header[i] >= '0' && header[i] <= '7'; ++i)
    stored = stored * 8 + (header[i] - '0');
  return stored == sum;
}

// The shards of `path`: itself, or a directory's regular files sorted by name.
Result<std::vector<std::string>> Shards(Env* env, const std::string& path) {
  if (!env->IsDirectory(path)) return std::vector<std::string>{path};
  DOCFEED_ASSIGN_OR_RETURN(std::vector<std::string> names, env->ListDirectory(path));
  std::sort(names.begin(), names.end());
  std::vector<std::string> shards;
  for (const std::string& name : names) {
    const std::string full = JoinPath(path, name);
    if (env->GetFileType(full) == FileType::kRegular) shards.push_back(full);
  }
  return shards;
}

}  // namespace

bool IsTarSource(const std::string& path, Env* env) {
  env = EnvOrDefault(env);
  Result<std::vector<std::string>> shards = Shards(env, path);
  if (!shards.ok() || shards->empty()) return false;
  return std::all_of(shards->begin(), shards->end(),
                     [env](const std::string& s) { return LooksLikeTar(env, s); });
}

Result<std::unique_ptr<SampleSource>> OpenTarSource(const std::string& path, Env* env) {
  env = EnvOrDefault(env);
  DOCFEED_ASSIGN_OR_RETURN(std::vector<std::string> shards, Shards(env, path));
  if (shards.empty()) return InvalidArgumentError(path + " holds no tar shards");
  auto source = std::make_unique<TarSource>(path, std::move(shards), env);
  DOCFEED_RETURN_IF_ERROR(source->List());
  return std::unique_ptr<SampleSource>(std::move(source));
}

}  // namespace docfeed::internal
