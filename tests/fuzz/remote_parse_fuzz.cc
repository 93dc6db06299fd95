// libFuzzer target for what src/remote parses from outside: S3 responses (ErrorSummary and
// ParseListObjectsV2, src/remote/s3_xml.h: a server's bytes), the AWS shared files (ParseIni,
// src/remote/s3_config.h: a user's ~/.aws/config) and URLs (ParseRemoteUrl). Every page that
// parses must hold a continuation token when truncated; any crash, sanitizer report or abort is
// a bug.
//
// Build and run: tests/fuzz/run_format_fuzz.sh [seconds]
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "remote/s3_config.h"
#include "remote/s3_xml.h"
#include "remote/url.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)docfeed::internal::ErrorSummary(text);
  auto page = docfeed::internal::ParseListObjectsV2(text, "s3://fuzz/ds");
  if (page.ok() && page->truncated && page->next_token.empty()) std::abort();
  (void)docfeed::internal::ParseIni(text, "fuzz.ini");
  (void)docfeed::internal::ParseRemoteUrl(text);
  return 0;
}
