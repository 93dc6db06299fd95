// Scan and photo effects applied to a rendered page: blur, paper texture (low-frequency
// brightness variation), sensor noise and grayscale conversion. They make the pixels, and so the
// JPEG sizes and decode costs, resemble scanned paper rather than clean renders.
//
// Deterministic: all randomness comes from `noise_seed`. Thread-safe (no shared state).
#ifndef DOCFEED_SYNTH_EFFECTS_H_
#define DOCFEED_SYNTH_EFFECTS_H_

#include <cstdint>

#include "codec/codec.h"

namespace docfeed::internal {

struct ScanEffects {
  int blur_passes = 0;           // passes of the separable [1 2 1] / 4 kernel (0 = sharp)
  int noise_amplitude = 0;       // per-pixel noise in [-a, a] levels (triangular), 0..64
  double texture_amplitude = 0;  // brightness variation of the paper, fraction (0..0.2)
  int texture_cell_px = 64;      // size of the texture's grid cells
  bool grayscale = false;        // convert to one channel (L) at the end
};

// REQUIRES: image.channels == 3 and a consistent pixel buffer. Returns an RGB image, or an L image
// when effects.grayscale.
Image ApplyScanEffects(Image image, const ScanEffects& effects, uint64_t noise_seed);

}  // namespace docfeed::internal

#endif  // DOCFEED_SYNTH_EFFECTS_H_
