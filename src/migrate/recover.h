// Exact uint8 recovery from normalized float pixel_values, and detection of baked-in padding.
//
// DonutImageProcessor turns every uint8 pixel value v of channel c into one float through the
// 256-entry table of src/imaging/normalize.h (rescale, then (x - mean) / std, in float32; float16
// is that float32 rounded to nearest-even). A stored value therefore identifies v exactly when it
// equals table[c][v]: GridInverter finds that v for every value, or reports the value as off the
// grid with its distance to the nearest grid value.
//
// Padding: the processor pads with uint8 0 before normalizing, so a padded pixel is 0 in every
// channel. TightContentBox finds the border rows/columns that are entirely (0, 0, 0); CentredBox
// widens that box to the smallest one the processor's centred padding could have produced, so
// padding the stored box centred gives back the tensor exactly (src/migrate/README.md discusses
// content whose own border is black).
//
// Thread safety: a GridInverter is immutable after Create(); share it freely.
#ifndef DOCFEED_MIGRATE_RECOVER_H_
#define DOCFEED_MIGRATE_RECOVER_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "docfeed/migrate.h"
#include "docfeed/status.h"
#include "imaging/normalize.h"

namespace docfeed::internal::migrate {

// The element type of a pixel_values column (docfeed/migrate.h).
using FloatType = docfeed::TensorFloatType;
std::string_view FloatTypeName(FloatType type);  // "float16", "float32", "float64"
size_t FloatTypeBytes(FloatType type);

// A mean/std pair the tensors may have been normalized with (rescale 1/255 always;
// docfeed/migrate.h).
using NormalizeCandidate = docfeed::MigrateNormalization;

// IMAGENET_STANDARD (0.5 / 0.5, Donut's Hub configs) then IMAGENET_DEFAULT (0.485, 0.456, 0.406 /
// 0.229, 0.224, 0.225, the Donut authors' code), the constants of transformers.image_utils.
std::vector<NormalizeCandidate> DefaultCandidates();

// `candidates` with numpy's arithmetic (kPil), followed by each of them again with torchvision's:
// a float dataset made by transformers 5's torchvision processor is found on the second grid.
std::vector<NormalizeCandidate> WithBothArithmetics(std::vector<NormalizeCandidate> candidates);

// The candidate's name, with " (torchvision)" for that arithmetic (messages, summaries).
std::string CandidateLabel(const NormalizeCandidate& candidate);

// What recovering some values found.
struct RecoveryStats {
  uint64_t values = 0;
  uint64_t off_grid = 0;        // values equal to no table entry
  double max_deviation = 0;     // largest |value - nearest table entry| (infinity for NaN/inf)
  int64_t first_off_grid = -1;  // index (within the call) of the first off-grid value, or -1
  double first_off_grid_value = 0;
  int first_off_grid_nearest = 0;  // the uint8 value chosen for it

  // Folds `other` (a later call) in; first_off_grid keeps the earliest, offset by `base`.
  void Merge(const RecoveryStats& other, int64_t base);
};

class GridInverter {
 public:
  // Errors: InvalidArgument for a mean/std that ValidateDonutConfig refuses (std 0, non-finite).
  static Result<GridInverter> Create(const NormalizeCandidate& candidate);

  // Recovers `count` little-endian values of `type` starting at `values` (any alignment), all of
  // channel `channel` (0..2), into out[i * out_step]. Off-grid values get the nearest grid value.
  // REQUIRES: values holds count * FloatTypeBytes(type) bytes; out holds
  // (count - 1) * out_step + 1 bytes.
  RecoveryStats Recover(int channel, FloatType type, const uint8_t* values, size_t count,
                        uint8_t* out, size_t out_step) const;

  const NormalizeCandidate& candidate() const { return candidate_; }
  // The float the processor gives uint8 `v` of `channel` (float16 widened for kFloat16).
  double GridValue(int channel, FloatType type, int v) const;

 private:
  GridInverter() = default;
  RecoveryStats RecoverFloat32(int channel, const uint8_t* values, size_t count, uint8_t* out,
                               size_t out_step) const;
  template <typename Load>
  RecoveryStats RecoverWith(int channel, const Load& load, FloatType type, size_t count,
                            uint8_t* out, size_t out_step) const;

  NormalizeCandidate candidate_;
  NormalizeTable table_{};
  std::array<double, 3> scale_{};   // 255 * std: value -> approximate v
  std::array<double, 3> offset_{};  // 255 * mean
  // float16 bits -> v, or -1 when the bits are no table entry (per channel).
  std::vector<int16_t> half_inverse_;
};

// IEEE binary16 bits to float (exact).
float HalfToFloat(uint16_t bits);

// A rectangle in a height x width canvas.
struct Box {
  int32_t top = 0;
  int32_t left = 0;
  int32_t height = 0;
  int32_t width = 0;
  bool operator==(const Box&) const = default;
};

// The smallest box holding every pixel of the interleaved uint8 image (`channels` per pixel,
// rows of width * channels bytes) that is not 0 in all channels. height == width == 0 when every
// pixel is 0.
Box TightContentBox(const uint8_t* pixels, int32_t height, int32_t width, int channels);

// The smallest box containing `tight` that the processor's centred padding places at
// top = (height - h) // 2, left = (width - w) // 2. Equal to `tight` when the padding around it
// is centred already. An empty `tight` (all padding) gives the whole canvas.
Box CentredBox(const Box& tight, int32_t height, int32_t width);

// True when `box` sits where centred padding puts a box of its size.
bool IsCentred(const Box& box, int32_t height, int32_t width);

}  // namespace docfeed::internal::migrate

#endif  // DOCFEED_MIGRATE_RECOVER_H_
