#include "synth/fonts.h"

#include <fontconfig/fontconfig.h>
#include <pango/pangocairo.h>
#include <pango/pangofc-fontmap.h>

#include <algorithm>

namespace docfeed::internal {
namespace {

constexpr FontFamily kSans[] = {{"Liberation Sans", "fonts-liberation2"},
                                {"DejaVu Sans", "fonts-dejavu-core"},
                                {"Carlito", "fonts-crosextra-carlito"}};
constexpr FontFamily kSerif[] = {{"Liberation Serif", "fonts-liberation2"},
                                 {"DejaVu Serif", "fonts-dejavu-core"}};
constexpr FontFamily kMono[] = {{"Liberation Mono", "fonts-liberation2"},
                                {"DejaVu Sans Mono", "fonts-dejavu-core"}};

// Upright, normal-width regular and bold faces: the only ones the layouts ask for. Leaving out
// the rest (DejaVu's condensed, extra-light and oblique faces from fonts-dejavu-extra, italics)
// makes the private configuration the same whichever of those packages are installed.
bool IsUsedFace(FcPattern* font) {
  int slant = -1, weight = -1, width = -1;
  FcPatternGetInteger(font, FC_SLANT, 0, &slant);
  FcPatternGetInteger(font, FC_WEIGHT, 0, &weight);
  FcPatternGetInteger(font, FC_WIDTH, 0, &width);
  return slant == FC_SLANT_ROMAN && width == FC_WIDTH_NORMAL &&
         (weight == FC_WEIGHT_REGULAR || weight == FC_WEIGHT_BOLD);
}

// Files of the used faces of `family` (exact family name) in the system configuration.
std::vector<std::string> FilesOfFamily(FcConfig* system, const char* family) {
  std::vector<std::string> files;
  FcPattern* pattern = FcPatternCreate();
  FcPatternAddString(pattern, FC_FAMILY, reinterpret_cast<const FcChar8*>(family));
  FcObjectSet* objects = FcObjectSetBuild(FC_FILE, FC_SLANT, FC_WEIGHT, FC_WIDTH, nullptr);
  FcFontSet* set = FcFontList(system, pattern, objects);
  if (set != nullptr) {
    for (int i = 0; i < set->nfont; ++i) {
      FcChar8* file = nullptr;
      if (IsUsedFace(set->fonts[i]) &&
          FcPatternGetString(set->fonts[i], FC_FILE, 0, &file) == FcResultMatch) {
        files.emplace_back(reinterpret_cast<const char*>(file));
      }
    }
    FcFontSetDestroy(set);
  }
  FcObjectSetDestroy(objects);
  FcPatternDestroy(pattern);
  return files;
}

}  // namespace

std::span<const FontFamily> SansFamilies() { return kSans; }
std::span<const FontFamily> SerifFamilies() { return kSerif; }
std::span<const FontFamily> MonoFamilies() { return kMono; }

Result<std::shared_ptr<const FontSet>> FontSet::Load() {
  FcConfig* system = FcInitLoadConfigAndFonts();
  if (system == nullptr) return InternalError("fontconfig failed to load its configuration");
  std::vector<std::string> files;
  Status status;
  for (auto list : {SansFamilies(), SerifFamilies(), MonoFamilies()}) {
    for (const FontFamily& f : list) {
      std::vector<std::string> found = FilesOfFamily(system, f.family);
      if (found.empty() && status.ok()) {
        status = NotFoundError(std::string("font family \"") + f.family +
                               "\" is not installed; install the Debian package " + f.package +
                               " (scripts/install-deps.sh does)");
      }
      files.insert(files.end(), found.begin(), found.end());
    }
  }
  FcConfigDestroy(system);
  DOCFEED_RETURN_IF_ERROR(status);
  std::sort(files.begin(), files.end());
  files.erase(std::unique(files.begin(), files.end()), files.end());
  std::shared_ptr<FontSet> set(new FontSet());
  set->config_ = FcConfigCreate();
  for (const std::string& file : files) {
    if (!FcConfigAppFontAddFile(set->config_, reinterpret_cast<const FcChar8*>(file.c_str()))) {
      return IOError("fontconfig could not load font file " + file);
    }
  }
  set->files_ = std::move(files);
  return std::shared_ptr<const FontSet>(std::move(set));
}

Result<std::shared_ptr<const FontSet>> FontSet::Get() {
  // Thread-safe initialisation of a function-local static (C++11 [stmt.dcl]).
  static const Result<std::shared_ptr<const FontSet>> loaded = Load();
  return loaded;
}

FontSet::~FontSet() {
  if (config_ != nullptr) FcConfigDestroy(config_);
}

std::mutex& FontLock() {
  static std::mutex mu;
  return mu;
}

TextEngine::TextEngine(std::shared_ptr<const FontSet> fonts) : fonts_(std::move(fonts)) {
  std::lock_guard lock(FontLock());
  font_map_ = pango_cairo_font_map_new_for_font_type(CAIRO_FONT_TYPE_FT);
  pango_fc_font_map_set_config(PANGO_FC_FONT_MAP(font_map_), fonts_->config());
}

TextEngine::~TextEngine() {
  std::lock_guard lock(FontLock());
  // Shutting down first drops the font map's caches (fontsets, patterns), which otherwise keep
  // it, and through it the FontSet's configuration, alive after the last unref.
  pango_fc_font_map_shutdown(PANGO_FC_FONT_MAP(font_map_));
  g_object_unref(font_map_);
}

}  // namespace docfeed::internal
