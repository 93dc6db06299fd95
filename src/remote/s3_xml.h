// The two S3 XML documents docfeed reads: error responses (<Error><Code>, <Message>) and
// ListObjectsV2 results. Both have a fixed, flat shape, so a small element scanner with XML's
// entity decoding reads them; anything it does not find is reported as malformed, naming the
// request.
#ifndef DOCFEED_REMOTE_S3_XML_H_
#define DOCFEED_REMOTE_S3_XML_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "docfeed/status.h"

namespace docfeed::internal {

// The raw (undecoded) contents of each <tag>...</tag> in `xml`, in document order.
std::vector<std::string_view> XmlElements(std::string_view xml, std::string_view tag);

// The decoded text of the first <tag>...</tag> in `xml` ("" when absent; <tag/> is empty).
std::string XmlElementText(std::string_view xml, std::string_view tag);

// "CODE: MESSAGE" of an S3 error document; otherwise up to 200 bytes of the body as text (what a
// plain HTTP server sends), or "" for an empty body.
std::string ErrorSummary(std::string_view body);

// One page of a ListObjectsV2 response.
struct S3ListPage {
  std::vector<std::pair<std::string, uint64_t>> objects;  // key, size
  std::vector<std::string> common_prefixes;               // with their trailing delimiter
  bool truncated = false;
  std::string next_token;  // NextContinuationToken when truncated
};

// Errors: Corruption naming `name` when a <Contents> has no <Key> or a <Size> that is not a
// number, or a truncated page has no continuation token.
Result<S3ListPage> ParseListObjectsV2(std::string_view xml, const std::string& name);

// One page of ListMultipartUploads: the uploads in progress (key, upload id).
struct S3UploadsPage {
  std::vector<std::pair<std::string, std::string>> uploads;
  bool truncated = false;
  std::string next_key_marker, next_upload_id_marker;  // when truncated
};

// Errors: Corruption naming `name` when an <Upload> lacks its <Key> or <UploadId>, or a
// truncated page has no markers.
Result<S3UploadsPage> ParseListMultipartUploads(std::string_view xml, const std::string& name);

}  // namespace docfeed::internal

#endif  // DOCFEED_REMOTE_S3_XML_H_
