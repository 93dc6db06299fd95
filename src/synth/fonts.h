// The fonts synthetic documents are set in, and the per-thread text engine that uses them.
//
// Determinism: the families below are looked up once per process in the system's fontconfig
// setup, only to find their files; those files (sorted by path) are then loaded into a private,
// rule-free FcConfig that every font map of the run uses. So the output does not depend on user
// fontconfig rules, on fallback to whatever other fonts are installed, or on fontconfig caches,
// only on the font files themselves (Debian packages fonts-dejavu-core, fonts-liberation2 and
// fonts-crosextra-carlito, see README.md).
#ifndef DOCFEED_SYNTH_FONTS_H_
#define DOCFEED_SYNTH_FONTS_H_

#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "docfeed/status.h"

typedef struct _FcConfig FcConfig;
typedef struct _PangoFontMap PangoFontMap;

namespace docfeed::internal {

// A font family the generator uses and the Debian package that provides it.
struct FontFamily {
  const char* family;
  const char* package;
};

// Proportional sans, proportional serif and monospace families (receipts use the last).
std::span<const FontFamily> SansFamilies();
std::span<const FontFamily> SerifFamilies();
std::span<const FontFamily> MonoFamilies();

// The resolved font files in a private fontconfig configuration. Immutable once loaded; shared
// by all threads (fontconfig >= 2.10 configurations are thread-safe to read).
class FontSet {
 public:
  // Loads the process-wide set on first use (later calls return the same set or the same error).
  // Errors: NotFound naming the missing family and the Debian package to install.
  static Result<std::shared_ptr<const FontSet>> Get();

  FontSet(const FontSet&) = delete;
  FontSet& operator=(const FontSet&) = delete;
  ~FontSet();

  FcConfig* config() const { return config_; }
  const std::vector<std::string>& files() const { return files_; }

 private:
  FontSet() = default;
  static Result<std::shared_ptr<const FontSet>> Load();

  FcConfig* config_ = nullptr;
  std::vector<std::string> files_;
};

// The lock every use of fonts through Pango and cairo takes (shaping, measuring, drawing text,
// creating or destroying contexts, layouts, font maps and cairo contexts that hold fonts).
// cairo 1.16's FreeType backend shares one process-wide pool of at most 10 open FT_Faces and
// closes faces another thread is still reading: two threads drawing text in our 14 faces crashed
// in cairo_scaled_font_glyph_extents while the other reopened a face in FT_New_Face. Pixel work
// (fills, effects, encoding) runs outside it.
std::mutex& FontLock();

// A PangoCairo font map over a FontSet. One per thread: Pango font maps are not meant to be
// shared across threads. Not copyable; owns the font map.
class TextEngine {
 public:
  explicit TextEngine(std::shared_ptr<const FontSet> fonts);
  TextEngine(const TextEngine&) = delete;
  TextEngine& operator=(const TextEngine&) = delete;
  ~TextEngine();

  PangoFontMap* font_map() const { return font_map_; }

 private:
  std::shared_ptr<const FontSet> fonts_;
  PangoFontMap* font_map_ = nullptr;
};

}  // namespace docfeed::internal

#endif  // DOCFEED_SYNTH_FONTS_H_
