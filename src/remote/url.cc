#include "remote/url.h"

#include <cctype>

namespace docfeed::internal {
namespace {

bool StartsWithNoCase(std::string_view text, std::string_view prefix) {
  if (text.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(text[i])) != prefix[i]) return false;
  }
  return true;
}

// S3's bucket naming rules (the part a client can check): 3-63 characters, lowercase letters,
// digits, '.' and '-', beginning and ending with a letter or digit.
bool ValidBucketName(std::string_view bucket) {
  if (bucket.size() < 3 || bucket.size() > 63) return false;
  for (char c : bucket) {
    if (!std::islower(static_cast<unsigned char>(c)) &&
        !std::isdigit(static_cast<unsigned char>(c)) && c != '.' && c != '-') {
      return false;
    }
  }
  return std::isalnum(static_cast<unsigned char>(bucket.front())) &&
         std::isalnum(static_cast<unsigned char>(bucket.back()));
}

Result<RemoteUrl> ParseS3(std::string_view url, std::string_view rest) {
  RemoteUrl out;
  out.scheme = RemoteUrl::Scheme::kS3;
  out.original = std::string(url);
  const size_t slash = rest.find('/');
  out.authority = std::string(rest.substr(0, slash));
  if (slash != std::string_view::npos) out.path = std::string(rest.substr(slash + 1));
  if (!ValidBucketName(out.authority)) {
    return InvalidArgumentError(std::string(url) + ": \"" + out.authority +
                                "\" is not an S3 bucket name (3-63 characters of a-z, 0-9, '.' "
                                "and '-')");
  }
  return out;
}

Result<RemoteUrl> ParseHttp(std::string_view url, std::string_view rest, bool tls) {
  RemoteUrl out;
  out.scheme = tls ? RemoteUrl::Scheme::kHttps : RemoteUrl::Scheme::kHttp;
  out.original = std::string(url);
  const size_t slash = rest.find('/');
  out.authority = std::string(rest.substr(0, slash));
  out.path = slash == std::string_view::npos ? "/" : std::string(rest.substr(slash));
  if (out.authority.empty()) {
    return InvalidArgumentError(std::string(url) + ": no host in the URL");
  }
  return out;
}

}  // namespace

bool IsRemotePath(std::string_view path) {
  return StartsWithNoCase(path, "s3://") || StartsWithNoCase(path, "http://") ||
         StartsWithNoCase(path, "https://");
}

Result<RemoteUrl> ParseRemoteUrl(std::string_view url) {
  if (StartsWithNoCase(url, "s3://")) return ParseS3(url, url.substr(5));
  if (StartsWithNoCase(url, "http://")) return ParseHttp(url, url.substr(7), false);
  if (StartsWithNoCase(url, "https://")) return ParseHttp(url, url.substr(8), true);
  return InvalidArgumentError(std::string(url) +
                              ": not a URL docfeed reads (s3://, http:// or https://)");
}

std::string UriEncode(std::string_view text, bool keep_slash) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u) || c == '-' || c == '_' || c == '.' || c == '~' ||
        (keep_slash && c == '/')) {
      out += c;
    } else {
      out += '%';
      out += kHex[u >> 4];
      out += kHex[u & 15];
    }
  }
  return out;
}

}  // namespace docfeed::internal
