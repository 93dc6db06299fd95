// Pack and PackFrom of docfeed/pack.h: the public options turned into internal::PackOptions, and
// a public SampleSource with its JSON-lines listing as an internal::SampleSource.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "docfeed/pack.h"
#include "pack/image_folder.h"
#include "pack/packer.h"

namespace docfeed {
namespace {

internal::CodecChoice ToInternal(PackCodec codec) {
  switch (codec) {
    case PackCodec::kPng:
      return internal::CodecChoice::kPng;
    case PackCodec::kWebp:
      return internal::CodecChoice::kWebp;
    case PackCodec::kJpeg:
      return internal::CodecChoice::kJpeg;
    case PackCodec::kKeep:
      break;
  }
  return internal::CodecChoice::kKeep;
}

internal::TargetRecipe ToInternal(LabelRecipe recipe) {
  return recipe == LabelRecipe::kDonut ? internal::TargetRecipe::kDonut
                                       : internal::TargetRecipe::kNotebook;
}

// Pix2Struct's stored form: the page (no settings recorded) or the patches with the settings
// they are made for (their bounds are checked when the preset is made, by Pack).
Status ToPix2StructForm(const PackPreprocess& o, internal::PreprocessInfo* p) {
  if (o.stored_form == internal::kStoredFormPage) return Status::Ok();
  if (o.stored_form != internal::kStoredFormPatches) {
    return InvalidArgumentError("stored form \"" + o.stored_form +
                                "\" is neither page nor patches");
  }
  p->stored_form = o.stored_form;
  p->max_patches = o.max_patches;
  p->patch_height = o.patch_height;
  p->patch_width = o.patch_width;
  return Status::Ok();
}

Result<internal::PackOptions> ToInternal(const PackOptions& o) {
  internal::PackOptions p;
  p.source = o.source;
  p.output = o.output;
  p.encode.codec = ToInternal(o.codec);
  p.encode.validation = o.validate == PackValidation::kStructure
                            ? internal::ValidationMode::kStructure
                        : o.validate == PackValidation::kAuto ? internal::ValidationMode::kAuto
                                                              : internal::ValidationMode::kFull;
  p.encode.jpeg_quality = o.jpeg_quality;
  p.encode.preprocess.preset = o.preprocess.preset;
  p.encode.preprocess.height = o.preprocess.height;
  p.encode.preprocess.width = o.preprocess.width;
  p.encode.preprocess.align_long_axis = o.preprocess.align_long_axis;
  p.encode.preprocess.hf_version = o.preprocess.hf_version;
  p.encode.preprocess.backend = o.preprocess.backend;
  if (o.preprocess.preset == kPackPresetQwen2VL || o.preprocess.preset == kPackPresetQwen25VL) {
    p.encode.preprocess.min_pixels = o.preprocess.min_pixels;
    p.encode.preprocess.max_pixels = o.preprocess.max_pixels;
    p.encode.preprocess.patch_size = o.preprocess.patch_size;
    p.encode.preprocess.merge_size = o.preprocess.merge_size;
  }
  if (o.preprocess.preset == kPackPresetIdefics3) {
    p.encode.preprocess.longest_edge = o.preprocess.longest_edge;
    p.encode.preprocess.max_image_size = o.preprocess.max_image_size;
    p.encode.preprocess.do_image_splitting = o.preprocess.do_image_splitting;
  }
  if (o.preprocess.preset == kPackPresetPix2Struct) {
    DOCFEED_RETURN_IF_ERROR(ToPix2StructForm(o.preprocess, &p.encode.preprocess));
  } else if (o.preprocess.stored_form != internal::kStoredFormPage) {
    return InvalidArgumentError(
        "stored_form \"" + o.preprocess.stored_form +
        "\" applies to --preprocess pix2struct, not " +
        (o.preprocess.preset.empty() ? std::string("original images") : o.preprocess.preset));
  }
  p.encode.keep_original = o.preprocess.keep_original;
  p.threads = o.threads;
  p.skip_bad = o.skip_bad;
  p.strict = o.strict;
  p.overwrite = o.overwrite;
  p.follow_symlinks = o.follow_symlinks;
  p.split = o.split;
  p.image_root = o.image_root;
  p.compression = o.compression;
  p.max_file_bytes = o.max_file_bytes;
  p.labels.tokenizer_dir = o.labels.tokenizer_dir;
  p.labels.target_field = o.labels.target_field;
  p.labels.target.start_token = o.labels.task_token;
  p.labels.target.prompt_end_token = o.labels.prompt_end_token;
  p.labels.target.recipe = ToInternal(o.labels.recipe);
  p.labels.max_length = o.labels.max_length;
  p.labels.pad_to_max_length = o.labels.pad_to_max_length;
  p.labels.strict = o.labels.strict;
  p.documents.dpi = o.pdf_dpi;
  p.documents.pages = o.pages;
  p.part.index = o.part_index;
  p.part.count = o.part_count;
  p.chat_labels = o.chat_labels;
  p.on_progress = o.on_progress;
  p.env = o.env;
  return p;
}

// A public SampleSource with the listing parsed from its rows.
class ListedSource final : public internal::SampleSource {
 public:
  ListedSource(internal::ImageFolder listing, docfeed::SampleSource* images)
      : listing_(std::move(listing)), images_(images) {}

  const internal::ImageFolder& listing() const override { return listing_; }
  Result<std::vector<uint8_t>> ReadImage(size_t i) override { return images_->ReadImage(i); }
  std::string Where(size_t i) const override {
    return images_->Where(i) + " (" + listing_.samples[i].relative_path + ")";
  }
  std::string Name() const override { return images_->Name(); }

 private:
  const internal::ImageFolder listing_;
  docfeed::SampleSource* images_;  // not owned
};

}  // namespace

Result<PackValidation> ParsePackValidation(std::string_view name) {
  DOCFEED_ASSIGN_OR_RETURN(internal::ValidationMode mode, internal::ParseValidationMode(name));
  switch (mode) {
    case internal::ValidationMode::kStructure:
      return PackValidation::kStructure;
    case internal::ValidationMode::kAuto:
      return PackValidation::kAuto;
    case internal::ValidationMode::kFull:
      break;
  }
  return PackValidation::kFull;
}

Result<PackCodec> ParsePackCodec(std::string_view name) {
  DOCFEED_ASSIGN_OR_RETURN(internal::CodecChoice codec, internal::ParseCodecChoice(name));
  switch (codec) {
    case internal::CodecChoice::kPng:
      return PackCodec::kPng;
    case internal::CodecChoice::kWebp:
      return PackCodec::kWebp;
    case internal::CodecChoice::kJpeg:
      return PackCodec::kJpeg;
    case internal::CodecChoice::kKeep:
      break;
  }
  return PackCodec::kKeep;
}

Result<LabelRecipe> ParseLabelRecipe(std::string_view name) {
  DOCFEED_ASSIGN_OR_RETURN(internal::TargetRecipe recipe, internal::ParseTargetRecipe(name));
  return recipe == internal::TargetRecipe::kDonut ? LabelRecipe::kDonut : LabelRecipe::kNotebook;
}

Result<PackPages> ParsePackPages(std::string_view name) {
  if (name == "auto") return PackPages::kAuto;
  if (name == "all") return PackPages::kAll;
  if (name == "1") return PackPages::kFirst;
  return InvalidArgumentError("unknown pages choice \"" + std::string(name) +
                              "\" (expected auto, all or 1)");
}

Status ParsePackPart(std::string_view text, uint32_t* index, uint32_t* count) {
  DOCFEED_ASSIGN_OR_RETURN(internal::PackPart part, internal::ParsePackPart(std::string(text)));
  *index = part.index;
  *count = part.count;
  return Status::Ok();
}

Result<PackSummary> Pack(const PackOptions& options) {
  DOCFEED_ASSIGN_OR_RETURN(internal::PackOptions p, ToInternal(options));
  return internal::Pack(p);
}

Result<PackSummary> PackFrom(std::string_view rows, SampleSource& source,
                             const PackOptions& options) {
  DOCFEED_ASSIGN_OR_RETURN(internal::ImageFolder listing, internal::ParseSampleRows(rows));
  ListedSource listed(std::move(listing), &source);
  DOCFEED_ASSIGN_OR_RETURN(internal::PackOptions p, ToInternal(options));
  return internal::PackFrom(listed, p);
}

}  // namespace docfeed
