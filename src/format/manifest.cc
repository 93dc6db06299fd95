#include "format/manifest.h"

#include <cfloat>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "base/hash.h"
#include "base/json.h"
#include "format/arrow_column.h"

namespace docfeed::internal {
namespace {

// The checksum field is last; it is computed over the text with its value set to 16 zeros.
constexpr char kChecksumKey[] = "\"manifest_xxh3\": \"";
constexpr char kZeroHex[] = "0000000000000000";

const char* RegionKindName(Region::Kind kind) {
  switch (kind) {
    case Region::Kind::kSchema:
      return "schema";
    case Region::Kind::kBatch:
      return "batch";
    case Region::Kind::kEndOfStream:
      return "eos";
  }
  return "?";
}

Json FileToJson(const FileEntry& f) {
  Json j;
  j["name"] = f.name;
  j["size_bytes"] = f.size_bytes;
  j["xxh3"] = Hex64(f.xxh3);
  if (!f.regions.empty()) {
    j["num_rows"] = f.num_rows;
    Json regions = Json::array();
    for (const Region& r : f.regions) {
      Json jr;
      jr["kind"] = RegionKindName(r.kind);
      jr["offset"] = r.offset;
      jr["length"] = r.length;
      jr["xxh3"] = Hex64(r.xxh3);
      if (r.kind == Region::Kind::kBatch) {
        jr["first_sample"] = r.first_sample;
        jr["num_rows"] = r.num_rows;
      }
      regions.push_back(std::move(jr));
    }
    j["regions"] = std::move(regions);
  }
  return j;
}

Result<uint64_t> ParseHex64(const Json& j, const std::string& field) {
  if (!j.is_string() || j.get_ref<const std::string&>().size() != 16) {
    return CorruptionError("field " + field + " is not a 16-digit hex checksum");
  }
  const std::string& s = j.get_ref<const std::string&>();
  uint64_t v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v, 16);
  if (ec != std::errc() || ptr != s.data() + s.size()) {
    return CorruptionError("field " + field + " is not hex: " + s);
  }
  return v;
}

Result<Region::Kind> ParseRegionKind(const std::string& s) {
  if (s == "schema") return Region::Kind::kSchema;
  if (s == "batch") return Region::Kind::kBatch;
  if (s == "eos") return Region::Kind::kEndOfStream;
  return CorruptionError("unknown region kind " + s);
}

Result<FileEntry> FileFromJson(const Json& j, const std::string& where) {
  FileEntry f;
  f.name = j.at("name").get<std::string>();
  f.size_bytes = j.at("size_bytes").get<uint64_t>();
  DOCFEED_ASSIGN_OR_RETURN(f.xxh3, ParseHex64(j.at("xxh3"), where + ".xxh3"));
  if (j.contains("regions")) {
    f.num_rows = j.at("num_rows").get<uint64_t>();
    for (const Json& jr : j.at("regions")) {
      Region r;
      DOCFEED_ASSIGN_OR_RETURN(r.kind, ParseRegionKind(jr.at("kind").get<std::string>()));
      r.offset = jr.at("offset").get<uint64_t>();
      r.length = jr.at("length").get<uint64_t>();
      DOCFEED_ASSIGN_OR_RETURN(r.xxh3, ParseHex64(jr.at("xxh3"), where + ".regions.xxh3"));
      if (r.kind == Region::Kind::kBatch) {
        r.first_sample = jr.at("first_sample").get<uint64_t>();
        r.num_rows = jr.at("num_rows").get<uint64_t>();
      }
      f.regions.push_back(r);
    }
  }
  return f;
}

Result<ColumnType> ParseColumnType(const std::string& s) {
  for (ColumnType t : {ColumnType::kString, ColumnType::kInt64, ColumnType::kFloat64,
                       ColumnType::kBool, ColumnType::kInt64List, ColumnType::kFloat64List,
                       ColumnType::kStringList, ColumnType::kArrow}) {
    if (ColumnTypeName(t) == s) return t;
  }
  return CorruptionError("unknown column type " + s);
}

bool IsQwenPreprocess(const std::string& preset) {
  return preset == kPreprocessQwen2VL || preset == kPreprocessQwen25VL;
}

Json PreprocessToJson(const PreprocessInfo& p) {
  Json j;
  j["preset"] = p.preset;
  if (IsQwenPreprocess(p.preset)) {
    j["min_pixels"] = p.min_pixels;
    j["max_pixels"] = p.max_pixels;
    j["patch_size"] = p.patch_size;
    j["merge_size"] = p.merge_size;
  } else if (p.preset == kPreprocessPix2Struct) {
    // The page form (decoded page at its own size) records no size and no stored_form key, so
    // its manifests stay what they were before the patches form existed.
    if (p.patches_form()) {
      j["stored_form"] = p.stored_form;
      j["max_patches"] = p.max_patches;
      j["patch_height"] = p.patch_height;
      j["patch_width"] = p.patch_width;
    }
  } else if (p.preset == kPreprocessIdefics3) {
    j["longest_edge"] = p.longest_edge;
    j["max_image_size"] = p.max_image_size;
    j["do_image_splitting"] = p.do_image_splitting;
  } else {
    j["height"] = p.height;
    j["width"] = p.width;
    j["align_long_axis"] = p.align_long_axis;
  }
  j["hf_version"] = p.hf_version;
  j["backend"] = p.backend;
  return j;
}

}  // namespace

std::string PreprocessJsonText(const PreprocessInfo& p) { return PreprocessToJson(p).dump(); }

namespace {

// The smart_resize settings of a Qwen2-VL record (docs/format.md section 4).
Status QwenPreprocessFromJson(const Json& j, PreprocessInfo* p) {
  p->min_pixels = j.at("min_pixels").get<int64_t>();
  p->max_pixels = j.at("max_pixels").get<int64_t>();
  p->patch_size = j.at("patch_size").get<int32_t>();
  p->merge_size = j.at("merge_size").get<int32_t>();
  if (p->min_pixels < 1 || p->max_pixels < p->min_pixels || p->max_pixels > (int64_t{1} << 40) ||
      p->patch_size < 1 || p->patch_size > 1024 || p->merge_size < 1 || p->merge_size > 1024) {
    return CorruptionError("field preprocess: min_pixels " + std::to_string(p->min_pixels) +
                           ", max_pixels " + std::to_string(p->max_pixels) + ", patch_size " +
                           std::to_string(p->patch_size) + ", merge_size " +
                           std::to_string(p->merge_size) + " are not smart_resize settings");
  }
  return Status::Ok();
}

// The settings of an Idefics3 record (docs/format.md section 4): the bounds ValidateIdefics3Config
// enforces, and the PIL processors only.
Status Idefics3PreprocessFromJson(const Json& j, PreprocessInfo* p) {
  p->longest_edge = j.at("longest_edge").get<int32_t>();
  p->max_image_size = j.at("max_image_size").get<int32_t>();
  p->do_image_splitting = j.at("do_image_splitting").get<bool>();
  if (p->longest_edge < 1 || p->longest_edge > 8192 || p->max_image_size < 1 ||
      p->max_image_size > 8192) {
    return CorruptionError("field preprocess: longest_edge " + std::to_string(p->longest_edge) +
                           ", max_image_size " + std::to_string(p->max_image_size) +
                           " are not Idefics3 settings (each 1..8192)");
  }
  if (j.contains("hf_version")) p->hf_version = j.at("hf_version").get<int32_t>();
  if (j.contains("backend")) p->backend = j.at("backend").get<std::string>();
  if (p->hf_version != 4 && p->hf_version != 5) {
    return UnsupportedError("field preprocess.hf_version: " + std::to_string(p->hf_version) +
                            " (this docfeed knows 4 and 5)");
  }
  if (p->backend != "pil") {
    return UnsupportedError("field preprocess.backend: \"" + p->backend +
                            "\" with preset idefics3 (only \"pil\": the Idefics3 preset reproduces "
                            "the PIL processors)");
  }
  return Status::Ok();
}

Json PdfToJson(const PdfRenderInfo& p) {
  Json j;
  j["dpi"] = p.dpi;
  j["pages"] = p.first_page_only ? "first" : "all";
  j["renderer"] = p.renderer;
  return j;
}

Result<PdfRenderInfo> PdfFromJson(const Json& j) {
  PdfRenderInfo p;
  p.dpi = j.at("dpi").get<int32_t>();
  const std::string pages = j.at("pages").get<std::string>();
  p.renderer = j.at("renderer").get<std::string>();
  if (p.dpi < 1) return CorruptionError("field pdf.dpi: " + std::to_string(p.dpi));
  if (pages != "all" && pages != "first") {
    return CorruptionError("field pdf.pages: \"" + pages + "\" (expected \"all\" or \"first\")");
  }
  p.first_page_only = pages == "first";
  return p;
}

Json PartToJson(const PartInfo& p) {
  Json j;
  j["index"] = p.index;
  j["count"] = p.count;
  j["source_samples"] = p.source_samples;
  j["first"] = p.first;
  j["end"] = p.end;
  j["source_xxh3"] = Hex64(p.source_xxh3);
  j["settings"] = Json::parse(p.settings);
  return j;
}

Result<PartInfo> PartFromJson(const Json& j) {
  PartInfo p;
  p.index = j.at("index").get<uint32_t>();
  p.count = j.at("count").get<uint32_t>();
  p.source_samples = j.at("source_samples").get<uint64_t>();
  p.first = j.at("first").get<uint64_t>();
  p.end = j.at("end").get<uint64_t>();
  DOCFEED_ASSIGN_OR_RETURN(p.source_xxh3, ParseHex64(j.at("source_xxh3"), "part.source_xxh3"));
  if (!j.at("settings").is_object()) return CorruptionError("field part.settings: not an object");
  p.settings = j.at("settings").dump();
  if (p.count == 0 || p.index >= p.count || p.first > p.end || p.end > p.source_samples) {
    return CorruptionError("field part: part " + std::to_string(p.index) + " of " +
                           std::to_string(p.count) + " holding [" + std::to_string(p.first) + ", " +
                           std::to_string(p.end) + ") of " + std::to_string(p.source_samples) +
                           " samples");
  }
  return p;
}

// Pix2Struct's stored form: absent or "page" = the prepared page (manifests written before the
// patches form existed have no key); "patches" needs max_patches and both patch sides, in the
// bounds of ValidatePix2StructConfig.
Status Pix2StructFormFromJson(const Json& j, PreprocessInfo* p) {
  if (!j.contains("stored_form")) return Status::Ok();
  const std::string form = j.at("stored_form").get<std::string>();
  if (form == kStoredFormPage) {
    if (j.contains("max_patches") || j.contains("patch_height") || j.contains("patch_width")) {
      return CorruptionError(
          "field preprocess: max_patches and the patch size belong to stored_form \"patches\", "
          "not \"page\"");
    }
    return Status::Ok();  // recorded as "" like a manifest without the key: one page form
  }
  if (form != kStoredFormPatches) {
    return UnsupportedError("field preprocess.stored_form: \"" + form +
                            "\" (this docfeed knows \"page\" and \"patches\")");
  }
  for (const char* key : {"max_patches", "patch_height", "patch_width"}) {
    if (!j.contains(key)) {
      return CorruptionError(std::string("field preprocess: stored_form \"patches\" without ") +
                             key);
    }
  }
  p->stored_form = form;
  p->max_patches = j.at("max_patches").get<int32_t>();
  p->patch_height = j.at("patch_height").get<int32_t>();
  p->patch_width = j.at("patch_width").get<int32_t>();
  if (p->max_patches < 1 || p->max_patches > 65536 || p->patch_height < 1 ||
      p->patch_height > 256 || p->patch_width < 1 || p->patch_width > 256) {
    return CorruptionError("field preprocess: max_patches " + std::to_string(p->max_patches) +
                           " (1..65536) or patch size " + std::to_string(p->patch_height) + "x" +
                           std::to_string(p->patch_width) + " (1..256 a side) out of range");
  }
  return Status::Ok();
}

Result<PreprocessInfo> PreprocessFromJson(const Json& j) {
  PreprocessInfo p;
  p.preset = j.at("preset").get<std::string>();
  if (IsQwenPreprocess(p.preset)) {
    DOCFEED_RETURN_IF_ERROR(QwenPreprocessFromJson(j, &p));
    if (j.contains("hf_version")) p.hf_version = j.at("hf_version").get<int32_t>();
    if (j.contains("backend")) p.backend = j.at("backend").get<std::string>();
    if ((p.hf_version != 4 && p.hf_version != 5) ||
        (p.backend != "pil" && (p.backend != "torchvision" || p.hf_version != 5))) {
      return UnsupportedError("field preprocess: hf_version " + std::to_string(p.hf_version) +
                              " with backend \"" + p.backend +
                              "\" (known: 4 or 5 with \"pil\", 5 with \"torchvision\")");
    }
    return p;
  }
  if (p.preset == kPreprocessIdefics3) {
    DOCFEED_RETURN_IF_ERROR(Idefics3PreprocessFromJson(j, &p));
    return p;
  }
  if (p.preset == kPreprocessPix2Struct) {
    if (j.contains("hf_version")) p.hf_version = j.at("hf_version").get<int32_t>();
    if (j.contains("backend")) p.backend = j.at("backend").get<std::string>();
    if ((p.hf_version != 4 && p.hf_version != 5) || p.backend != "pil") {
      return UnsupportedError("field preprocess: hf_version " + std::to_string(p.hf_version) +
                              " with backend \"" + p.backend +
                              "\" for preset pix2struct (known: 4 or 5 with \"pil\")");
    }
    DOCFEED_RETURN_IF_ERROR(Pix2StructFormFromJson(j, &p));
    return p;
  }
  if (j.contains("stored_form")) {
    return UnsupportedError("field preprocess.stored_form: preset " + p.preset +
                            " has one stored form (stored_form is pix2struct's)");
  }
  p.height = j.at("height").get<int32_t>();
  p.width = j.at("width").get<int32_t>();
  p.align_long_axis = j.at("align_long_axis").get<bool>();
  // Absent in manifests written before transformers 5 existed for docfeed: 4.x / pil.
  if (j.contains("hf_version")) p.hf_version = j.at("hf_version").get<int32_t>();
  if (j.contains("backend")) p.backend = j.at("backend").get<std::string>();
  if (p.hf_version != 4 && p.hf_version != 5) {
    return UnsupportedError("field preprocess.hf_version: " + std::to_string(p.hf_version) +
                            " (this docfeed knows 4 and 5)");
  }
  if (p.backend != "pil" && (p.backend != "torchvision" || p.hf_version != 5)) {
    return UnsupportedError("field preprocess.backend: \"" + p.backend + "\" with hf_version " +
                            std::to_string(p.hf_version) +
                            " (known: \"pil\", and \"torchvision\" with hf_version 5)");
  }
  if (p.preset != kPreprocessDonut && p.preset != kPreprocessNougat) {
    return UnsupportedError(
        "field preprocess.preset: unknown preprocessing \"" + p.preset +
        "\" (this docfeed knows \"donut\", \"nougat\", \"qwen2-vl\", \"qwen2.5-vl\", "
        "\"idefics3\" and \"pix2struct\")");
  }
  if (p.preset == kPreprocessNougat && p.backend != "pil") {
    return UnsupportedError("field preprocess.backend: \"" + p.backend +
                            "\" with preset nougat (only \"pil\": the Nougat preset reproduces "
                            "the PIL processors)");
  }
  if (p.height < 1 || p.height > 65535 || p.width < 1 || p.width > 65535) {
    return CorruptionError("field preprocess: size " + std::to_string(p.height) + "x" +
                           std::to_string(p.width) + " is outside 1..65535");
  }
  return p;
}

Json NormalizationToJson(const NormalizationInfo& n) {
  Json j;
  j["mean"] = n.mean;
  j["std"] = n.std;
  // Omitted for numpy's arithmetic, so datasets migrated before it existed read back equal.
  if (n.backend != "pil") j["backend"] = n.backend;
  return j;
}

// Three finite numbers; for `std` also non-zero in float32 (the loader divides by float32(std)).
Result<std::array<double, 3>> ParseTriple(const Json& j, const std::string& field, bool divisor) {
  if (!j.is_array() || j.size() != 3) {
    return CorruptionError("field " + field + " is not a list of 3 numbers (R, G, B)");
  }
  std::array<double, 3> out{};
  for (size_t c = 0; c < 3; ++c) {
    if (!j[c].is_number()) return CorruptionError("field " + field + " holds a non-number");
    out[c] = j[c].get<double>();
    // Range first: converting a double beyond float's range to float is undefined.
    const bool in_range = std::isfinite(out[c]) && std::fabs(out[c]) <= FLT_MAX;
    if (!in_range || (divisor && static_cast<float>(out[c]) == 0.0f)) {
      return CorruptionError("field " + field + "[" + std::to_string(c) + "] = " + j[c].dump() +
                             " is not " + (divisor ? "a finite non-zero" : "a finite") + " number");
    }
  }
  return out;
}

Result<NormalizationInfo> NormalizationFromJson(const Json& j) {
  NormalizationInfo n;
  DOCFEED_ASSIGN_OR_RETURN(n.mean, ParseTriple(j.at("mean"), "normalization.mean", false));
  DOCFEED_ASSIGN_OR_RETURN(n.std, ParseTriple(j.at("std"), "normalization.std", true));
  if (j.contains("backend")) n.backend = j.at("backend").get<std::string>();
  if (n.backend != "pil" && n.backend != "torchvision") {
    return UnsupportedError("field normalization.backend: \"" + n.backend +
                            "\" (this docfeed knows \"pil\" and \"torchvision\")");
  }
  return n;
}

Result<Manifest> ManifestFromJson(const Json& j) {
  Manifest m;
  m.format_version = j.at("format_version").get<int>();
  if (m.format_version != kFormatVersion) {
    return UnsupportedError("format_version " + std::to_string(m.format_version) +
                            ", this docfeed reads " + std::to_string(kFormatVersion));
  }
  m.created_by = j.at("created_by").get<std::string>();
  m.num_samples = j.at("num_samples").get<uint64_t>();
  for (const Json& c : j.at("columns")) {
    ColumnSpec spec;
    spec.name = c.at("name").get<std::string>();
    DOCFEED_ASSIGN_OR_RETURN(spec.type, ParseColumnType(c.at("type").get<std::string>()));
    if (spec.type == ColumnType::kArrow) {
      const std::string where = "column \"" + spec.name + "\" field arrow";
      DOCFEED_ASSIGN_OR_RETURN(spec.arrow, FieldFromJson(c.at("arrow"), where));
      if (spec.arrow.name != spec.name) {
        return CorruptionError(where + ": names \"" + spec.arrow.name + "\"");
      }
      if (!c.at("feature").is_object()) {
        return CorruptionError("column \"" + spec.name + "\": feature is not an object");
      }
      spec.feature = c.at("feature").dump();
    }
    m.columns.push_back(std::move(spec));
  }
  m.label_column = j.at("label_column").get<std::string>();
  m.codec = j.at("codec").get<std::string>();
  m.jpeg_quality = j.at("jpeg_quality").get<int>();
  m.compression = j.at("compression").get<std::string>();
  m.stored_codecs = j.at("stored_codecs").get<std::map<std::string, uint64_t>>();
  m.source_bytes = j.at("source_bytes").get<uint64_t>();
  m.stored_image_bytes = j.at("stored_image_bytes").get<uint64_t>();
  m.rejected = j.at("rejected").get<uint64_t>();
  if (j.contains("preprocess")) {
    DOCFEED_ASSIGN_OR_RETURN(m.preprocess, PreprocessFromJson(j.at("preprocess")));
  }
  if (j.contains("normalization")) {
    DOCFEED_ASSIGN_OR_RETURN(m.normalization, NormalizationFromJson(j.at("normalization")));
  }
  if (j.contains("original_column")) {
    m.original_column = j.at("original_column").get<std::string>();
  }
  if (j.contains("chat_labels")) {
    const Json& chat = j.at("chat_labels");
    if (!chat.is_object()) return CorruptionError("chat_labels is not a JSON object");
    m.chat_labels = chat.dump();
  }
  if (j.contains("pdf")) {
    DOCFEED_ASSIGN_OR_RETURN(m.pdf, PdfFromJson(j.at("pdf")));
  }
  if (j.contains("part")) {
    DOCFEED_ASSIGN_OR_RETURN(m.part, PartFromJson(j.at("part")));
  }
  if (j.contains("merged")) {
    m.merged.parts = j.at("merged").at("parts").get<uint32_t>();
    DOCFEED_ASSIGN_OR_RETURN(m.merged.parts_xxh3,
                             ParseHex64(j.at("merged").at("parts_xxh3"), "merged.parts_xxh3"));
  }
  for (const Json& f : j.at("data_files")) {
    DOCFEED_ASSIGN_OR_RETURN(FileEntry e, FileFromJson(f, "data_files"));
    m.data_files.push_back(std::move(e));
  }
  for (const Json& f : j.at("other_files")) {
    DOCFEED_ASSIGN_OR_RETURN(FileEntry e, FileFromJson(f, "other_files"));
    m.other_files.push_back(std::move(e));
  }
  return m;
}

}  // namespace

std::string Hex64(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string EncodeManifest(const Manifest& m) {
  Json j;
  j["format"] = "docfeed";
  j["format_version"] = m.format_version;
  j["created_by"] = m.created_by;
  j["num_samples"] = m.num_samples;
  j["image_column"] = kImageColumn;
  Json columns = Json::array();
  for (const ColumnSpec& c : m.columns) {
    Json column = {{"name", c.name}, {"type", std::string(ColumnTypeName(c.type))}};
    if (c.type == ColumnType::kArrow) {
      column["arrow"] = FieldToJson(c.arrow);
      column["feature"] = Json::parse(c.feature);
    }
    columns.push_back(std::move(column));
  }
  j["columns"] = std::move(columns);
  j["label_column"] = m.label_column;
  j["codec"] = m.codec;
  j["jpeg_quality"] = m.jpeg_quality;
  j["compression"] = m.compression;
  j["stored_codecs"] = m.stored_codecs;
  j["source_bytes"] = m.source_bytes;
  j["stored_image_bytes"] = m.stored_image_bytes;
  j["rejected"] = m.rejected;
  // These fields are omitted when unset (original images, default normalization, no original
  // column, no PDF), so such manifests read as before.
  if (m.preprocess.preprocessed()) j["preprocess"] = PreprocessToJson(m.preprocess);
  if (m.normalization) j["normalization"] = NormalizationToJson(*m.normalization);
  if (!m.original_column.empty()) j["original_column"] = m.original_column;
  if (!m.chat_labels.empty()) j["chat_labels"] = Json::parse(m.chat_labels);
  if (m.pdf.rendered()) j["pdf"] = PdfToJson(m.pdf);
  if (m.part.is_part()) j["part"] = PartToJson(m.part);
  if (m.merged.merged()) {
    j["merged"] = {{"parts", m.merged.parts}, {"parts_xxh3", Hex64(m.merged.parts_xxh3)}};
  }
  Json data = Json::array();
  for (const FileEntry& f : m.data_files) data.push_back(FileToJson(f));
  j["data_files"] = std::move(data);
  Json other = Json::array();
  for (const FileEntry& f : m.other_files) other.push_back(FileToJson(f));
  j["other_files"] = std::move(other);
  j["manifest_xxh3"] = kZeroHex;
  std::string text = j.dump(1) + "\n";
  size_t at = text.rfind(kChecksumKey);
  std::string digest = Hex64(Hash64({reinterpret_cast<const uint8_t*>(text.data()), text.size()}));
  text.replace(at + sizeof(kChecksumKey) - 1, 16, digest);
  return text;
}

Result<Manifest> DecodeManifest(const std::string& text, const std::string& name) {
  size_t at = text.rfind(kChecksumKey);
  if (at == std::string::npos || at + sizeof(kChecksumKey) - 1 + 16 > text.size()) {
    return CorruptionError(name + ": no manifest_xxh3 field");
  }
  size_t value_at = at + sizeof(kChecksumKey) - 1;
  std::string zeroed = text;
  zeroed.replace(value_at, 16, kZeroHex);
  uint64_t actual = Hash64({reinterpret_cast<const uint8_t*>(zeroed.data()), zeroed.size()});
  if (text.compare(value_at, 16, Hex64(actual)) != 0) {
    return CorruptionError(name + ": manifest checksum mismatch (the manifest was modified)");
  }
  Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return CorruptionError(name + ": not valid JSON");
  try {
    Result<Manifest> m = ManifestFromJson(j);
    if (!m.ok()) return m.status().WithContext(name);
    return m;
  } catch (const Json::exception& e) {
    return CorruptionError(name + ": " + e.what());
  }
}

std::string PickLabelColumn(const std::vector<ColumnSpec>& columns) {
  // An "arrow" column (kept as the source had it) has no label length.
  for (const char* preferred : {"labels", "ground_truth"}) {
    for (const ColumnSpec& c : columns) {
      if (c.name == preferred && c.type != ColumnType::kArrow) return c.name;
    }
  }
  for (const ColumnSpec& c : columns) {
    if (c.type == ColumnType::kString || c.type == ColumnType::kInt64List) return c.name;
  }
  return "";
}

}  // namespace docfeed::internal
