// Standard base64 (RFC 4648, '=' padding), as JSON files hold binary blobs (tokenizer.json's
// Precompiled normalizer) and as pyarrow stores the Arrow schema in a Parquet file's metadata
// ("ARROW:schema").
//
// Thread safety: a pure function.
#ifndef DOCFEED_BASE_BASE64_H_
#define DOCFEED_BASE_BASE64_H_

#include <string>
#include <string_view>

#include "docfeed/status.h"

namespace docfeed::internal {

// The decoded bytes. InvalidArgument on any character outside the alphabet, misplaced padding
// or a length that is not a multiple of 4.
Result<std::string> DecodeBase64(std::string_view text);

}  // namespace docfeed::internal

#endif  // DOCFEED_BASE_BASE64_H_
