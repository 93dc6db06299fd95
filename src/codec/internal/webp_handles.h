// RAII ownership for libwebp state: a WebPPicture and the WebPMemoryWriter it writes to, and the
// demuxer and animation decoder of libwebpdemux.
#ifndef DOCFEED_CODEC_INTERNAL_WEBP_HANDLES_H_
#define DOCFEED_CODEC_INTERNAL_WEBP_HANDLES_H_

#include <webp/demux.h>
#include <webp/encode.h>

#include <memory>

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

struct WebpAnimDecoderDeleter {
  void operator()(WebPAnimDecoder* decoder) const { WebPAnimDecoderDelete(decoder); }
};
// A WebPAnimDecoder; it reads (never copies) the WebPData it was created over, which must outlive
// it. Null when WebPAnimDecoderNew failed.
using WebpAnimDecoder = std::unique_ptr<WebPAnimDecoder, WebpAnimDecoderDeleter>;

struct WebpDemuxerDeleter {
  void operator()(WebPDemuxer* demuxer) const { WebPDemuxDelete(demuxer); }
};
// A WebPDemuxer over caller-owned bytes, which must outlive it. Null when WebPDemux failed.
using WebpDemuxer = std::unique_ptr<WebPDemuxer, WebpDemuxerDeleter>;

}  // namespace docfeed::internal

#endif  // DOCFEED_CODEC_INTERNAL_WEBP_HANDLES_H_
