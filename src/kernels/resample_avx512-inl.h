// AVX-512BW kernels of resample.cc (targets AVX3 and AVX3_DL): the horizontal pass by word
// permutes instead of gathers, and the vertical pass with 16-bit multiply-adds over tap pairs.
// Bit-identical to resample_reference.cc (exactness argument below; tested per target).
//
// Included by resample.cc inside its per-target namespace (Highway's foreach_target compiles it
// once per target), hence no include guard; it relies on the declarations before the include.
// NOLINT(llvm-header-guard)

// ------------------------------------------------------------------ horizontal pass, AVX-512BW

// Instead of gathers, each group of output samples loads one window of <= 64 source bytes,
// widens it to 16 bits and picks each lane's tap pair with a two-register word permute
// (vpermt2w). Lane j of a group is output sample (byte) out_bytes + j of the row, i.e. pixel
// (out_bytes + j) / channels, channel (out_bytes + j) % channels; a group may start and end
// inside a pixel, so that RGB groups fill all 16 lanes. i16 lanes 2j, 2j + 1 hold its taps 2p,
// 2p + 1 for pair p.
//
// Exactness of the 16-bit multiplies: each weight is split as k = kh * 2^16 + kl with kh, kl in
// int16 (kh = (k + 2^15) >> 16); vpmaddwd gives p_a * kh_a + p_b * kh_b exactly (pixels are
// 0..255, so its one overflow case, two -2^15 * -2^15 products, cannot occur). The result
// (sum kh-part << 16) + sum kl-part + 2^21 then equals the reference's int32 accumulator modulo
// 2^32, because every step (madd, add, shift) is exact modulo 2^32; the reference's accumulator
// is an int32, so both hold the same value and the shift and clamp agree.
// acc + pairwise a * b (16-bit lanes, 32-bit sums); AVX3_DL fuses it (AVX512-VNNI vpdpwssd).
// Highway 1.0's AVX3_DL target string names "avxvnni", not "avx512vnni", so the intrinsic does
// not compile there; the instruction is emitted directly.
HWY_INLINE __m512i MulAdd16(__m512i acc, __m512i a, __m512i b) {
#if HWY_TARGET == HWY_AVX3_DL
  asm("vpdpwssd %2, %1, %0" : "+v"(acc) : "v"(a), "v"(b));
  return acc;
#else
  return _mm512_add_epi32(acc, _mm512_madd_epi16(a, b));
#endif
}

// ((hi << 16) + lo) >> 22: the accumulator of the split weights, shifted (not yet clamped).
HWY_INLINE __m512i Combine(__m512i hi, __m512i lo) {
  return _mm512_srai_epi32(_mm512_add_epi32(_mm512_slli_epi32(hi, 16), lo), kPrecisionBits);
}

// Splits k into int16 halves, k = kh * 2^16 + kl (see above): returns kh, stores kl.
inline int16_t SplitWeight(int32_t k, int16_t* kl) {
  const int32_t kh = (k + 0x8000) >> 16;
  *kl = static_cast<int16_t>(k - kh * 65536);
  return static_cast<int16_t>(kh);
}

struct PermuteGroup {
  int32_t base_bytes;     // First window byte, relative to the row.
  int32_t out_bytes;      // First output byte, relative to the row.
  uint32_t out_mask;      // One bit per output byte of the group.
  int32_t pairs;          // Tap pairs.
  uint64_t load_mask;     // One bit per window byte that exists in the row.
  uint64_t load_mask_hi;  // The same for bytes 64..127 of a 128-byte window (else 0).
  size_t table;           // Index of the group's first vector in PermuteTables::vectors.
};

// Per pair: word indices, kh, kl (3 vectors of 32 x int16).
struct PermuteTables {
  std::vector<PermuteGroup> groups;
  hwy::AlignedFreeUniquePtr<int16_t[]> vectors;
};

constexpr int32_t kWindowBytes = 64;
constexpr int32_t kGroupLanes = 16;

// Load mask of window bytes [from, from + 64) when the window has `span` bytes.
inline uint64_t WindowMask(int32_t span, int32_t from) {
  const int32_t n = std::clamp(span - from, 0, 64);
  return n == 64 ? ~uint64_t{0} : (uint64_t{1} << n) - 1;
}

// Greedy grouping over output samples: extend a group while it has at most 16 samples and the
// source pixels they read span at most `window_bytes` (64, or 128 for vpermt2b). Greedy gives
// the fewest groups, since any part of a group that fits also fits. Each group gets ceil(taps /
// taps_per_unit) units of `vectors_per_unit` table vectors (stored in `pairs`). Returns false if
// a single output pixel's taps span more than the window.
bool PlanGroups(const CoeffTable& x, int32_t channels, std::vector<PermuteGroup>* groups,
                size_t* vectors, int32_t taps_per_unit = 2, int32_t vectors_per_unit = 3,
                int32_t window_bytes = kWindowBytes) {
  *vectors = 0;
  groups->clear();
  const int32_t samples = x.out_size * channels;
  for (int32_t s = 0; s < samples;) {
    const int32_t o = s / channels;
    int32_t lo = x.first(o), hi = x.first(o) + x.taps(o), taps = x.taps(o), m = 1;
    if ((hi - lo) * channels > window_bytes) return false;
    for (; m < kGroupLanes && s + m < samples; ++m) {
      const int32_t n = (s + m) / channels;
      if (n == (s + m - 1) / channels) continue;  // Same pixel as the previous lane.
      const int32_t nlo = std::min(lo, x.first(n));
      const int32_t nhi = std::max(hi, x.first(n) + x.taps(n));
      if ((nhi - nlo) * channels > window_bytes) break;
      lo = nlo, hi = nhi, taps = std::max(taps, x.taps(n));
    }
    const int32_t span = (hi - lo) * channels;
    groups->push_back(PermuteGroup{.base_bytes = lo * channels,
                                   .out_bytes = s,
                                   .out_mask = static_cast<uint32_t>((uint64_t{1} << m) - 1),
                                   .pairs = (taps + taps_per_unit - 1) / taps_per_unit,
                                   .load_mask = WindowMask(span, 0),
                                   .load_mask_hi = WindowMask(span, 64),
                                   .table = *vectors});
    *vectors += static_cast<size_t>(groups->back().pairs) * static_cast<size_t>(vectors_per_unit);
    s += m;
  }
  return true;
}

// Word index, in the (lo, hi) register pair of PermuteGroupRows, of window byte `byte`:
// unpacklo/hi_epi8 interleave bytes 0..7 / 8..15 of each 128-bit block.
int32_t InterleavedWord(int32_t byte) {
  const int32_t block = byte / 16, within = byte % 16;
  return within < 8 ? 8 * block + within : 32 + 8 * block + within - 8;
}

void FillPermuteGroup(const CoeffTable& x, int32_t channels, const PermuteGroup& g, int16_t* v) {
  const int32_t base_pixel = g.base_bytes / channels;
  for (int32_t p = 0; p < g.pairs; ++p, v += 3 * 32) {
    for (int32_t j = 0; j < kGroupLanes; ++j) {
      const bool lane_used = ((g.out_mask >> j) & 1) != 0;
      const int32_t o = lane_used ? (g.out_bytes + j) / channels : 0;
      const int32_t c = (g.out_bytes + j) % channels;
      for (int32_t s = 0; s < 2; ++s) {
        const int32_t t = 2 * p + s;
        const bool used = lane_used && t < x.taps(o);
        const int32_t k = used ? x.row(o)[t] : 0;
        const int32_t byte = used ? (x.first(o) + t - base_pixel) * channels + c : 0;
        v[2 * j + s] = static_cast<int16_t>(InterleavedWord(byte));
        v[32 + 2 * j + s] = SplitWeight(k, &v[64 + 2 * j + s]);
      }
    }
  }
}

bool BuildPermuteTables(const CoeffTable& x, int32_t channels, PermuteTables* t) {
  size_t vectors = 0;
  if (!PlanGroups(x, channels, &t->groups, &vectors)) return false;
  t->vectors = hwy::AllocateAligned<int16_t>(vectors * 32 + 32);
  for (const PermuteGroup& g : t->groups) {
    FillPermuteGroup(x, channels, g, t->vectors.get() + g.table * 32);
  }
  return true;
}

HWY_INLINE void StoreGroup(__m512i acc_hi, __m512i acc_lo, const PermuteGroup& g, uint8_t* out) {
  const __m512i acc = _mm512_max_epi32(Combine(acc_hi, acc_lo), _mm512_setzero_si512());
  _mm_mask_storeu_epi8(out + g.out_bytes, g.out_mask, _mm512_cvtusepi32_epi8(acc));
}

// One group on two rows a, b. Their windows are byte-interleaved (word = a | b << 8) so that one
// permute serves both rows; unpacklo/hi work per 128-bit block, which the word indices undo.
HWY_INLINE void PermuteGroupRows(const PermuteTables& /*t*/, const uint8_t* src_a,
                                 const uint8_t* src_b, const PermuteGroup& g, const __m512i* v,
                                 uint8_t* out_a, uint8_t* out_b) {
  const __m512i a = _mm512_maskz_loadu_epi8(g.load_mask, src_a + g.base_bytes);
  const __m512i b = _mm512_maskz_loadu_epi8(g.load_mask, src_b + g.base_bytes);
  const __m512i lo = _mm512_unpacklo_epi8(a, b);
  const __m512i hi = _mm512_unpackhi_epi8(a, b);
  const __m512i low_byte = _mm512_set1_epi16(0xFF);
  __m512i hi_a = _mm512_setzero_si512(), hi_b = _mm512_setzero_si512();
  __m512i lo_a = _mm512_set1_epi32(kRoundingBias), lo_b = lo_a;
  for (int32_t p = 0; p < g.pairs; ++p, v += 3) {
    const __m512i px = _mm512_permutex2var_epi16(lo, _mm512_load_si512(v), hi);
    const __m512i pa = _mm512_and_si512(px, low_byte);
    const __m512i pb = _mm512_srli_epi16(px, 8);
    const __m512i kh = _mm512_load_si512(v + 1);
    const __m512i kl = _mm512_load_si512(v + 2);
    hi_a = MulAdd16(hi_a, pa, kh);
    lo_a = MulAdd16(lo_a, pa, kl);
    hi_b = MulAdd16(hi_b, pb, kh);
    lo_b = MulAdd16(lo_b, pb, kl);
  }
  StoreGroup(hi_a, lo_a, g, out_a);
  if (out_b != nullptr) StoreGroup(hi_b, lo_b, g, out_b);
}

// Rows go in blocks so that a group's vectors are read from L2 once per block, two at a time;
// kGroupRows does one group of one or two rows (PermuteGroupRows, QuadGroupRows).
template <auto kGroupRows, typename Tables>
void GroupsOverRowPairs(const Tables& t, const uint8_t* src, ptrdiff_t src_stride, int32_t rows,
                        uint8_t* dst, ptrdiff_t dst_stride) {
  const auto* vectors = reinterpret_cast<const __m512i*>(t.vectors.get());
  constexpr int32_t kRowBlock = 4;
  for (int32_t r0 = 0; r0 < rows; r0 += kRowBlock) {
    const int32_t r1 = std::min(rows, r0 + kRowBlock);
    for (const PermuteGroup& g : t.groups) {
      for (int32_t r = r0; r < r1; r += 2) {
        const bool pair = r + 1 < r1;
        const uint8_t* a = src + r * src_stride;
        kGroupRows(t, a, pair ? a + src_stride : a, g, vectors + g.table, dst + r * dst_stride,
                   pair ? dst + (r + 1) * dst_stride : nullptr);
      }
    }
  }
}

void PermuteRows(const PermuteTables& t, const uint8_t* src, ptrdiff_t src_stride, int32_t rows,
                 uint8_t* dst, ptrdiff_t dst_stride) {
  GroupsOverRowPairs<PermuteGroupRows>(t, src, src_stride, rows, dst, dst_stride);
}
#if HWY_TARGET == HWY_AVX3_DL
// ------------------------------------------------------------------ horizontal pass, VBMI + VNNI
//
// AVX3_DL adds byte permutes (vpermb) and 8-bit dot products (vpdpbusd: four unsigned-byte by
// signed-byte products summed into each int32 lane, without saturation). Groups are planned as
// above, but each 32-bit lane now takes four taps at once: per "quad" of taps, one vpermb picks
// lane j's four source bytes from the 64-byte window, and each weight is split into three signed
// bytes, k = w2 * 2^16 + w1 * 2^8 + w0 (w0, w1 in [-128, 127], w2 what remains, which must fit
// a signed byte: |k| < 2^23 - 2^15 suffices; Pillow's 8-bit weights are at most ~2^22). Then
// sum_t p_t k_t = (S2 << 16) + (S1 << 8) + S0 with S_d = sum_t p_t w_d,t, each S_d exact in
// int32, and the sum is taken modulo 2^32 like the reference's int32 accumulator: same value,
// same shift and clamp. Tables per quad: byte indices, w0, w1, w2 (4 vectors of 64 bytes).

HWY_INLINE __m512i DotBytes(__m512i acc, __m512i pixels, __m512i weights) {
  // Highway 1.0's AVX3_DL target string lacks avx512vnni (see MulAdd16): emitted directly.
  asm("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(pixels), "v"(weights));
  return acc;
}

// Splits k into signed bytes (see above); false if w2 does not fit.
bool SplitWeightBytes(int32_t k, int8_t w[3]) {
  const int32_t w0 = ((k + 128) & 255) - 128;
  const int32_t k1 = (k - w0) / 256;  // Exact: k - w0 is a multiple of 256.
  const int32_t w1 = ((k1 + 128) & 255) - 128;
  const int32_t w2 = (k1 - w1) / 256;
  if (w2 < -128 || w2 > 127) return false;
  w[0] = static_cast<int8_t>(w0), w[1] = static_cast<int8_t>(w1), w[2] = static_cast<int8_t>(w2);
  return true;
}

// `high`: per quad, one bit per lane byte whose window byte is 64..127 (128-byte windows).
bool FillQuadGroup(const CoeffTable& x, int32_t channels, const PermuteGroup& g, int8_t* v,
                   uint64_t* high) {
  const int32_t base_pixel = g.base_bytes / channels;
  for (int32_t q = 0; q < g.pairs; ++q, v += 4 * 64) {
    high[q] = 0;
    for (int32_t j = 0; j < kGroupLanes; ++j) {
      const bool lane_used = ((g.out_mask >> j) & 1) != 0;
      const int32_t o = lane_used ? (g.out_bytes + j) / channels : 0;
      const int32_t c = (g.out_bytes + j) % channels;
      for (int32_t s = 0; s < 4; ++s) {
        const int32_t t = 4 * q + s;
        const bool used = lane_used && t < x.taps(o);
        const int32_t k = used ? x.row(o)[t] : 0;
        const int32_t byte = used ? (x.first(o) + t - base_pixel) * channels + c : 0;
        v[4 * j + s] = static_cast<int8_t>(byte & 63);  // vpermb reads the low 6 bits.
        if (byte >= 64) high[q] |= uint64_t{1} << (4 * j + s);
        int8_t w[3];
        if (!SplitWeightBytes(k, w)) return false;
        for (int32_t d = 0; d < 3; ++d) v[64 * (d + 1) + 4 * j + s] = w[d];
      }
    }
  }
  return true;
}

// Groups as PermuteTables, over 64- or 128-byte windows; `vectors` holds 4 x 64 bytes per quad.
struct QuadTables {
  std::vector<PermuteGroup> groups;
  hwy::AlignedFreeUniquePtr<int8_t[]> vectors;
  std::vector<uint64_t> high;  // Per quad (vector / 4): FillQuadGroup's `high`.
  bool wide = false;           // 128-byte windows, two registers.
};

// p0/p5 micro-ops (the 512-bit ports; vpdpbusd takes either, vpermb only p5) per row of a plan:
// per quad three dot products and one vpermb (two for a 128-byte window), per group ~8 to
// combine, clamp and narrow. vpermt2b would cost three (measured on Sapphire Rapids).
int64_t QuadPlanCost(const std::vector<PermuteGroup>& groups, bool wide) {
  int64_t cost = 0;
  for (const PermuteGroup& g : groups) cost += g.pairs * (wide ? 5 : 4) + 8;
  return cost;
}

// Where groups of 16 samples read more than 64 bytes (RGB downscales by ~2.5x and more, e.g.
// LANCZOS 1536 -> 512: 2 pixels, 6 lanes in 64 bytes), 128-byte windows fill more lanes per
// quad for a second vpermb (merged by a mask) and load per row. The cheaper plan wins.
bool BuildQuadTables(const CoeffTable& x, int32_t channels, QuadTables* t) {
  size_t vectors = 0, wide_vectors = 0;
  const bool narrow_ok = PlanGroups(x, channels, &t->groups, &vectors, 4, 4);
  std::vector<PermuteGroup> wide_groups;
  if (!PlanGroups(x, channels, &wide_groups, &wide_vectors, 4, 4, 2 * kWindowBytes)) return false;
  if (!narrow_ok || QuadPlanCost(wide_groups, true) < QuadPlanCost(t->groups, false)) {
    t->groups = std::move(wide_groups);
    t->wide = true;
    vectors = wide_vectors;
  }
  t->vectors = hwy::AllocateAligned<int8_t>(vectors * 64 + 64);
  t->high.resize(vectors / 4);
  for (const PermuteGroup& g : t->groups) {
    if (!FillQuadGroup(x, channels, g, t->vectors.get() + g.table * 64, &t->high[g.table / 4])) {
      return false;
    }
  }
  return true;
}

// (S2 << 16) + (S1 << 8) + S0 (S0 holds the bias), shifted; not yet clamped.
HWY_INLINE __m512i CombineQuad(__m512i s0, __m512i s1, __m512i s2) {
  const __m512i sum =
      _mm512_add_epi32(_mm512_add_epi32(s0, _mm512_slli_epi32(s1, 8)), _mm512_slli_epi32(s2, 16));
  return _mm512_srai_epi32(sum, kPrecisionBits);
}

// Clamps and stores one group's bytes for rows a and b (nullptr: a only). Two saturating packs
// clamp both rows to 0..255 at once (acc >> 22 fits int16) and a vpermb puts row a's 16 bytes in
// block 0 and row b's in block 1: four p5 micro-ops for two rows, where max + vpmovusdb take
// three per row (the group's epilogue is a third of a BILINEAR row's micro-ops).
HWY_INLINE void StoreQuadPair(__m512i acc_a, __m512i acc_b, const PermuteGroup& g, uint8_t* out_a,
                              uint8_t* out_b) {
  // packus_epi32 then packus_epi16 leave, in 128-bit block L, a[4L..4L+3] at bytes 0..3 and
  // b[4L..4L+3] at bytes 4..7.
  const __m512i words = _mm512_packus_epi32(acc_a, acc_b);
  const __m512i bytes = _mm512_packus_epi16(words, words);
  // Bytes 0..15: row a, 16..31: row b (the rest unused).
  alignas(64) static constexpr uint8_t kOrder[64] = {0,  1,  2,  3,  16, 17, 18, 19, 32, 33, 34,
                                                     35, 48, 49, 50, 51, 4,  5,  6,  7,  20, 21,
                                                     22, 23, 36, 37, 38, 39, 52, 53, 54, 55};
  const __m512i order = _mm512_load_si512(kOrder);
  const __m512i rows = _mm512_permutexvar_epi8(order, bytes);
  _mm_mask_storeu_epi8(out_a + g.out_bytes, g.out_mask, _mm512_castsi512_si128(rows));
  if (out_b != nullptr) {
    _mm_mask_storeu_epi8(out_b + g.out_bytes, g.out_mask, _mm512_extracti32x4_epi32(rows, 1));
  }
}

// One group on two rows a, b (the tables are read once for both); kWide: 128-byte windows.
template <bool kWide>
HWY_INLINE void QuadGroupRows(const QuadTables& t, const uint8_t* src_a, const uint8_t* src_b,
                              const PermuteGroup& g, const __m512i* v, uint8_t* out_a,
                              uint8_t* out_b) {
  const uint64_t* high = t.high.data() + g.table / 4;
  const __m512i a = _mm512_maskz_loadu_epi8(g.load_mask, src_a + g.base_bytes);
  const __m512i b = _mm512_maskz_loadu_epi8(g.load_mask, src_b + g.base_bytes);
  __m512i a_hi = a, b_hi = b;
  if constexpr (kWide) {
    a_hi = _mm512_maskz_loadu_epi8(g.load_mask_hi, src_a + g.base_bytes + 64);
    b_hi = _mm512_maskz_loadu_epi8(g.load_mask_hi, src_b + g.base_bytes + 64);
  }
  const __m512i zero = _mm512_setzero_si512();
  __m512i a0 = _mm512_set1_epi32(kRoundingBias), a1 = zero, a2 = zero;
  __m512i b0 = a0, b1 = zero, b2 = zero;
  for (int32_t q = 0; q < g.pairs; ++q, v += 4) {
    const __m512i index = _mm512_load_si512(v);
    __m512i pa = _mm512_permutexvar_epi8(index, a);
    __m512i pb = _mm512_permutexvar_epi8(index, b);
    if constexpr (kWide) {  // Two vpermb: vpermt2b is three micro-ops.
      pa = _mm512_mask_permutexvar_epi8(pa, high[q], index, a_hi);
      pb = _mm512_mask_permutexvar_epi8(pb, high[q], index, b_hi);
    }
    const __m512i w0 = _mm512_load_si512(v + 1);
    a0 = DotBytes(a0, pa, w0);
    b0 = DotBytes(b0, pb, w0);
    const __m512i w1 = _mm512_load_si512(v + 2);
    a1 = DotBytes(a1, pa, w1);
    b1 = DotBytes(b1, pb, w1);
    const __m512i w2 = _mm512_load_si512(v + 3);
    a2 = DotBytes(a2, pa, w2);
    b2 = DotBytes(b2, pb, w2);
  }
  StoreQuadPair(CombineQuad(a0, a1, a2), CombineQuad(b0, b1, b2), g, out_a, out_b);
}

void QuadRows(const QuadTables& t, const uint8_t* src, ptrdiff_t src_stride, int32_t rows,
              uint8_t* dst, ptrdiff_t dst_stride) {
  if (t.wide) {
    GroupsOverRowPairs<QuadGroupRows<true>>(t, src, src_stride, rows, dst, dst_stride);
  } else {
    GroupsOverRowPairs<QuadGroupRows<false>>(t, src, src_stride, rows, dst, dst_stride);
  }
}
#endif  // HWY_TARGET == HWY_AVX3_DL

// ------------------------------------------------------------------ vertical pass, AVX-512BW

// Taps go in pairs (t, t + 1): bytes of the two rows are interleaved and zero-extended so that
// each 32-bit lane holds (row_t[i], row_t+1[i]) as int16, and vpmaddwd applies both weights, split
// into int16 halves as in the horizontal pass (same exactness argument). The unpacks work per
// 128-bit block; packs_epi32/packus_epi16 work per block too and restore the byte order, and
// their saturation is Pillow's clamp to 0..255 (acc >> 22 lies well inside int16).
struct VerticalPairs {
  std::vector<int32_t> start;    // out_size + 1 entries: first pair of each output row.
  std::vector<int32_t> weights;  // Per pair: kh_t | kh_t+1 << 16, then kl_t | kl_t+1 << 16.
};

VerticalPairs BuildVerticalPairs(const CoeffTable& y) {
  VerticalPairs v;
  v.start.push_back(0);
  for (int32_t o = 0; o < y.out_size; ++o) {
    for (int32_t t = 0; t < y.taps(o); t += 2) {
      int16_t kl[2] = {0, 0}, kh[2] = {0, 0};
      kh[0] = SplitWeight(y.row(o)[t], &kl[0]);
      if (t + 1 < y.taps(o)) kh[1] = SplitWeight(y.row(o)[t + 1], &kl[1]);
      for (const int16_t* k : {kh, kl}) {
        v.weights.push_back(
            static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint16_t>(k[0])) |
                                 static_cast<uint32_t>(static_cast<uint16_t>(k[1])) << 16));
      }
    }
    v.start.push_back(static_cast<int32_t>(v.weights.size() / 2));
  }
  return v;
}

// Bytes [i, i + 64) of one output row (fewer where `mask` says so). Named accumulators, not
// arrays: GCC keeps arrays of vectors on the stack.
HWY_INLINE void VerticalChunk(const uint8_t* src, ptrdiff_t stride, int32_t taps,
                              const int32_t* weights, __mmask64 mask, uint8_t* out) {
  const __m512i zero = _mm512_setzero_si512();
  const __m512i bias = _mm512_set1_epi32(kRoundingBias);
  __m512i h0 = zero, h1 = zero, h2 = zero, h3 = zero;
  __m512i l0 = bias, l1 = bias, l2 = bias, l3 = bias;
  for (int32_t t = 0; t < taps; t += 2, weights += 2, src += 2 * stride) {
    const __m512i a = _mm512_maskz_loadu_epi8(mask, src);
    const __m512i b = _mm512_maskz_loadu_epi8(mask, t + 1 < taps ? src + stride : src);
    const __m512i ab_lo = _mm512_unpacklo_epi8(a, b);
    const __m512i ab_hi = _mm512_unpackhi_epi8(a, b);
    const __m512i kh = _mm512_set1_epi32(weights[0]);
    const __m512i kl = _mm512_set1_epi32(weights[1]);
    const __m512i p0 = _mm512_unpacklo_epi8(ab_lo, zero);
    h0 = MulAdd16(h0, p0, kh);
    l0 = MulAdd16(l0, p0, kl);
    const __m512i p1 = _mm512_unpackhi_epi8(ab_lo, zero);
    h1 = MulAdd16(h1, p1, kh);
    l1 = MulAdd16(l1, p1, kl);
    const __m512i p2 = _mm512_unpacklo_epi8(ab_hi, zero);
    h2 = MulAdd16(h2, p2, kh);
    l2 = MulAdd16(l2, p2, kl);
    const __m512i p3 = _mm512_unpackhi_epi8(ab_hi, zero);
    h3 = MulAdd16(h3, p3, kh);
    l3 = MulAdd16(l3, p3, kl);
  }
  const __m512i bytes = _mm512_packus_epi16(_mm512_packs_epi32(Combine(h0, l0), Combine(h1, l1)),
                                            _mm512_packs_epi32(Combine(h2, l2), Combine(h3, l3)));
  _mm512_mask_storeu_epi8(out, mask, bytes);
}

// Output rows [o0, o1) at dst + (o - o0) * dst_stride; `src` starts at source row `src_row0`.
void VerticalRowsAvx3(const VerticalPairs& v, const uint8_t* src, ptrdiff_t src_stride,
                      int32_t src_row0, int32_t row_bytes, const CoeffTable& y, int32_t o0,
                      int32_t o1, uint8_t* dst, ptrdiff_t dst_stride) {
  for (int32_t o = o0; o < o1; ++o) {
    const uint8_t* rows = src + (y.first(o) - src_row0) * src_stride;
    const int32_t* weights = v.weights.data() + 2 * static_cast<size_t>(v.start[o]);
    uint8_t* out = dst + (o - o0) * dst_stride;
    for (int32_t i = 0; i < row_bytes; i += 64) {
      const int32_t n = row_bytes - i;
      const __mmask64 mask = n >= 64 ? ~__mmask64{0} : (__mmask64{1} << n) - 1;
      VerticalChunk(rows + i, src_stride, y.taps(o), weights, mask, out + i);
    }
  }
}
