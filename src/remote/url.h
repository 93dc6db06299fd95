// Remote locations as docfeed names them: s3://BUCKET/KEY, http://HOST[:PORT]/PATH and
// https://HOST[:PORT]/PATH. Parsing only; what a URL resolves to (endpoint, addressing, signing)
// is remote_env's, with s3_config's settings.
#ifndef DOCFEED_REMOTE_URL_H_
#define DOCFEED_REMOTE_URL_H_

#include <string>
#include <string_view>

#include "docfeed/status.h"

namespace docfeed::internal {

// True for a path that names a remote object or prefix (s3://, http://, https://, compared
// case-insensitively as RFC 3986 says of schemes); everything else is a local path.
bool IsRemotePath(std::string_view path);

struct RemoteUrl {
  enum class Scheme { kS3, kHttp, kHttps };
  Scheme scheme = Scheme::kS3;
  // s3: the bucket; http(s): "host[:port]" as written.
  std::string authority;
  // s3: the object key or prefix, without a leading '/' (empty for the bucket itself);
  // http(s): the path including its leading '/' (and any query), "/" when none was written.
  std::string path;
  std::string original;  // the URL as given, for messages
};

// Parses `url`. Errors: InvalidArgument naming the URL for a scheme docfeed does not read, an
// empty bucket or host, or an S3 bucket name that S3 would refuse (3-63 characters of a-z, 0-9,
// '.', '-').
Result<RemoteUrl> ParseRemoteUrl(std::string_view url);

// RFC 3986 percent-encoding of everything outside the unreserved set (A-Z a-z 0-9 - _ . ~), as
// SigV4's canonical request requires; '/' is kept when `keep_slash` (object keys in paths).
std::string UriEncode(std::string_view text, bool keep_slash);

}  // namespace docfeed::internal

#endif  // DOCFEED_REMOTE_URL_H_
