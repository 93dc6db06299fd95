#include "pack/part.h"

#include <charconv>
#include <string_view>

#include "base/file.h"
#include "base/hash.h"
#include "base/json.h"
#include "format/manifest.h"
#include "format/value.h"
#include "format/verify.h"
#include "pack/packer.h"

namespace docfeed::internal {
namespace {

template <typename T>
void Put(Hasher64& h, T v) {
  h.Update(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(&v), sizeof(v)));
}

void PutText(Hasher64& h, std::string_view text) {
  Put<uint64_t>(h, text.size());
  h.Update(text);
}

Result<uint32_t> ParseCount(std::string_view text, const std::string& whole) {
  uint32_t v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size()) {
    return InvalidArgumentError("--part " + whole + ": expected I/N, e.g. 0/4 (parts 0 to 3)");
  }
  return v;
}

const char* PagesName(PackPages pages) {
  switch (pages) {
    case PackPages::kAll:
      return "all";
    case PackPages::kFirst:
      return "1";
    case PackPages::kAuto:
      break;
  }
  return "auto";
}

Json PreprocessSettings(const PreprocessInfo& p) {
  if (!p.preprocessed()) return nullptr;
  Json s = {{"preset", p.preset},         {"height", p.height},
            {"width", p.width},           {"align_long_axis", p.align_long_axis},
            {"hf_version", p.hf_version}, {"backend", p.backend},
            {"min_pixels", p.min_pixels}, {"max_pixels", p.max_pixels},
            {"patch_size", p.patch_size}, {"merge_size", p.merge_size}};
  // Only in Idefics3's, so the parts other presets packed before these existed still merge.
  if (p.preset == kPreprocessIdefics3) {
    s["longest_edge"] = p.longest_edge;
    s["max_image_size"] = p.max_image_size;
    s["do_image_splitting"] = p.do_image_splitting;
  }
  // Only in Pix2Struct's patches form, so page-form parts packed before it existed still merge.
  if (p.patches_form()) {
    s["stored_form"] = p.stored_form;
    s["max_patches"] = p.max_patches;
    s["patch_height"] = p.patch_height;
    s["patch_width"] = p.patch_width;
  }
  return s;
}

// The options that decide the stored rows (the manifest records some of them too; merge compares
// those as well).
Json Settings(const PackOptions& o) {
  Json s;
  s["codec"] = std::string(CodecChoiceName(o.encode.codec));
  s["jpeg_quality"] = o.encode.codec == CodecChoice::kJpeg ? o.encode.jpeg_quality : 0;
  s["preprocess"] = PreprocessSettings(o.encode.preprocess);
  s["keep_original"] = o.encode.keep_original;
  s["compression"] = o.compression;
  s["validate"] = o.encode.validation == ValidationMode::kStructure ? "structure" : "full";
  s["strict"] = o.strict;
  s["skip_bad"] = o.skip_bad;
  s["follow_symlinks"] = o.follow_symlinks;
  s["pages"] = PagesName(o.documents.pages);
  s["dpi"] = o.documents.dpi;
  s["split"] = o.split;
  if (o.labels.tokenizer_dir.empty()) {
    s["labels"] = nullptr;
  } else {
    const LabelOptions& l = o.labels;
    s["labels"] = {{"target_field", l.target_field},
                   {"task_token", l.target.start_token},
                   {"prompt_end_token", l.target.prompt_end_token},
                   {"recipe", l.target.recipe == TargetRecipe::kDonut ? "donut" : "notebook"},
                   {"max_length", l.max_length},
                   {"pad_to_max_length", l.pad_to_max_length},
                   {"strict", l.strict}};
  }
  return s;
}

}  // namespace

Result<PackPart> ParsePackPart(const std::string& text) {
  const size_t slash = text.find('/');
  if (slash == std::string::npos) {
    return InvalidArgumentError("--part " + text + ": expected I/N, e.g. 0/4 (parts 0 to 3)");
  }
  PackPart part;
  DOCFEED_ASSIGN_OR_RETURN(part.index, ParseCount(std::string_view(text).substr(0, slash), text));
  DOCFEED_ASSIGN_OR_RETURN(part.count, ParseCount(std::string_view(text).substr(slash + 1), text));
  if (part.count == 0 || part.count > kMaxParts || part.index >= part.count) {
    return InvalidArgumentError("--part " + text + ": I must be 0..N-1 and N 1.." +
                                std::to_string(kMaxParts));
  }
  return part;
}

PartSlice SliceOf(uint64_t total, const PackPart& part) {
  // floor(i * total / n) without overflow: total = q n + r, so i total / n = i q + i r / n,
  // and i r < n * n fits in 64 bits for n <= kMaxParts.
  auto bound = [&](uint64_t i) {
    const uint64_t n = part.count;
    return i * (total / n) + i * (total % n) / n;
  };
  return {bound(part.index), bound(uint64_t{part.index} + 1)};
}

uint64_t ListingHash(const ImageFolder& listing) {
  Hasher64 h;
  Put<uint64_t>(h, listing.columns.size());
  for (const ColumnSpec& c : listing.columns) {
    PutText(h, c.name);
    Put<uint8_t>(h, static_cast<uint8_t>(c.type));
    PutText(h, c.feature);
  }
  Put<uint64_t>(h, listing.samples.size());
  for (const SourceSample& s : listing.samples) {
    PutText(h, s.relative_path);
    Put<int64_t>(h, s.line);
    Put<int64_t>(h, s.row);
    Put<int32_t>(h, s.page);
    Put<int32_t>(h, s.pages);
    Put<uint8_t>(h, s.problem.ok() ? 0 : 1);
    // A bad row may have no values; HashLabels needs one per column.
    Put<uint64_t>(
        h, s.values.size() == listing.columns.size() ? HashLabels(listing.columns, s.values) : 0);
  }
  return h.Digest();
}

PartInfo MakePartInfo(const PackOptions& options, const ImageFolder& listing) {
  PartInfo info;
  info.index = options.part.index;
  info.count = options.part.count;
  info.source_samples = listing.samples.size();
  const PartSlice slice = SliceOf(info.source_samples, options.part);
  info.first = slice.first;
  info.end = slice.end;
  info.source_xxh3 = ListingHash(listing);
  info.settings = Settings(options).dump();
  return info;
}

std::string PartDifference(const PartInfo& a, const PartInfo& b) {
  auto differ = [](const std::string& field, const auto& x, const auto& y) {
    return field + " (" + x + " vs " + y + ")";
  };
  if (a.count != b.count) {
    return differ("count", std::to_string(a.count), std::to_string(b.count));
  }
  if (a.source_samples != b.source_samples || a.source_xxh3 != b.source_xxh3) {
    return differ("source",
                  std::to_string(a.source_samples) + " samples, listing " + Hex64(a.source_xxh3),
                  std::to_string(b.source_samples) + " samples, listing " + Hex64(b.source_xxh3));
  }
  if (a.settings != b.settings) {
    const Json x = Json::parse(a.settings);
    const Json y = Json::parse(b.settings);
    for (const auto& [key, value] : x.items()) {
      if (!y.contains(key) || y.at(key) != value) {
        return differ("settings." + key, value.dump(), y.contains(key) ? y.at(key).dump() : "-");
      }
    }
    for (const auto& [key, value] : y.items()) {
      if (!x.contains(key)) return differ("settings." + key, std::string("-"), value.dump());
    }
  }
  if (a.index != b.index) {
    return differ("index", std::to_string(a.index), std::to_string(b.index));
  }
  if (a.first != b.first || a.end != b.end) {
    return differ("slice", std::to_string(a.first) + ".." + std::to_string(a.end),
                  std::to_string(b.first) + ".." + std::to_string(b.end));
  }
  return "";
}

Result<PackSummary> KeepCompletePart(Env* env, const std::string& output, const PartInfo& want) {
  const std::string again = "; pass --overwrite to pack it again";
  const std::string manifest_path = JoinPath(output, kManifestFileName);
  Result<std::string> text = env->ReadTextFile(manifest_path);
  Result<Manifest> manifest =
      text.ok() ? DecodeManifest(*text, manifest_path) : Result<Manifest>(text.status());
  if (!manifest.ok()) {
    return AlreadyExistsError(output + " already exists and is not a docfeed part (" +
                              manifest.status().ToString() + ")" + again);
  }
  if (!manifest->part.is_part()) {
    return AlreadyExistsError(output + " already exists and is a whole dataset, not part " +
                              std::to_string(want.index) + "/" + std::to_string(want.count) +
                              again);
  }
  const std::string diff = PartDifference(manifest->part, want);
  if (!diff.empty()) {
    return AlreadyExistsError(output + " already exists and holds another part: its " + diff +
                              " (it vs this run)" + again);
  }
  Status verified = VerifyDataset(output, env);
  if (!verified.ok()) {
    return CorruptionError(output + " holds part " + std::to_string(want.index) + "/" +
                           std::to_string(want.count) +
                           " but fails verification: " + verified.ToString() + again);
  }
  PackSummary s;
  s.already_complete = true;
  s.samples = manifest->num_samples;
  s.rejected = manifest->rejected;
  s.source_bytes = manifest->source_bytes;
  s.stored_image_bytes = manifest->stored_image_bytes;
  s.stored_codecs = manifest->stored_codecs;
  for (const FileEntry& f : manifest->data_files) {
    s.data_files.push_back(f.name);
    s.output_bytes += f.size_bytes;
  }
  for (const FileEntry& f : manifest->other_files) s.output_bytes += f.size_bytes;
  return s;
}

}  // namespace docfeed::internal
