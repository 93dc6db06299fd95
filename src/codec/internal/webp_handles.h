// RAII ownership for libwebp encoder state: a WebPPicture and the WebPMemoryWriter it writes to.
#ifndef DOCFEED_CODEC_INTERNAL_WEBP_HANDLES_H_
#define DOCFEED_CODEC_INTERNAL_WEBP_HANDLES_H_

#include <webp/encode.h>

namespace docfeed::internal {

// A WebPPicture wired to an in-memory writer. Not movable: `picture.custom_ptr` points at
// `writer`. Check `ok()` after construction (WebPPictureInit fails only on ABI mismatch).
class WebpEncodeTarget {
 public:
  WebpEncodeTarget() {
    ok_ = WebPPictureInit(&picture) != 0;
    WebPMemoryWriterInit(&writer);
    picture.writer = WebPMemoryWrite;
    picture.custom_ptr = &writer;
  }
  ~WebpEncodeTarget() {
    WebPPictureFree(&picture);
    WebPMemoryWriterClear(&writer);
  }
  WebpEncodeTarget(const WebpEncodeTarget&) = delete;
  WebpEncodeTarget& operator=(const WebpEncodeTarget&) = delete;

  bool ok() const { return ok_; }

  WebPPicture picture{};
  WebPMemoryWriter writer{};

 private:
  bool ok_ = false;
};

}  // namespace docfeed::internal

#endif  // DOCFEED_CODEC_INTERNAL_WEBP_HANDLES_H_
