// RAII ownership for libspng contexts and the buffers libspng hands back.
#ifndef DOCFEED_CODEC_INTERNAL_SPNG_CTX_H_
#define DOCFEED_CODEC_INTERNAL_SPNG_CTX_H_

#include <spng.h>

#include <cstdlib>
#include <memory>

namespace docfeed::internal {

struct SpngCtxDeleter {
  void operator()(spng_ctx* ctx) const { spng_ctx_free(ctx); }
};
// A libspng decoder or encoder context; null when spng_ctx_new failed (out of memory).
using SpngCtx = std::unique_ptr<spng_ctx, SpngCtxDeleter>;

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};
// The encoded PNG from spng_get_png_buffer(), which the caller must free().
using SpngBuffer = std::unique_ptr<void, FreeDeleter>;

}  // namespace docfeed::internal

#endif  // DOCFEED_CODEC_INTERNAL_SPNG_CTX_H_
