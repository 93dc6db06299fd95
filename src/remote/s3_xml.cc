#include "remote/s3_xml.h"

#include <charconv>

namespace docfeed::internal {
namespace {

// Appends the UTF-8 encoding of `cp` (a numeric character reference).
void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    *out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    *out += static_cast<char>(0xC0 | (cp >> 6));
    *out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    *out += static_cast<char>(0xE0 | (cp >> 12));
    *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    *out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    *out += static_cast<char>(0xF0 | (cp >> 18));
    *out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    *out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// One entity (`ref` is what lies between '&' and ';'); false when it is not one XML defines.
bool DecodeEntity(std::string_view ref, std::string* out) {
  static constexpr std::pair<std::string_view, char> kNamed[] = {
      {"amp", '&'}, {"lt", '<'}, {"gt", '>'}, {"quot", '"'}, {"apos", '\''}};
  for (const auto& [name, c] : kNamed) {
    if (ref == name) {
      *out += c;
      return true;
    }
  }
  if (ref.size() < 2 || ref[0] != '#') return false;
  const bool hex = ref[1] == 'x' || ref[1] == 'X';
  const std::string_view digits = ref.substr(hex ? 2 : 1);
  uint32_t cp = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), cp, hex ? 16 : 10);
  if (ec != std::errc() || end != digits.data() + digits.size() || cp > 0x10FFFF) return false;
  AppendUtf8(cp, out);
  return true;
}

std::string DecodeXmlText(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  while (!text.empty()) {
    const size_t amp = text.find('&');
    out += text.substr(0, amp);
    if (amp == std::string_view::npos) break;
    const size_t semi = text.find(';', amp);
    if (semi == std::string_view::npos ||
        !DecodeEntity(text.substr(amp + 1, semi - amp - 1), &out)) {
      out += '&';  // not an entity: kept as written
      text.remove_prefix(amp + 1);
      continue;
    }
    text.remove_prefix(semi + 1);
  }
  return out;
}

}  // namespace

std::vector<std::string_view> XmlElements(std::string_view xml, std::string_view tag) {
  const std::string open = "<" + std::string(tag) + ">";
  const std::string close = "</" + std::string(tag) + ">";
  std::vector<std::string_view> out;
  size_t pos = 0;
  while ((pos = xml.find(open, pos)) != std::string_view::npos) {
    const size_t begin = pos + open.size();
    const size_t end = xml.find(close, begin);
    if (end == std::string_view::npos) break;
    out.push_back(xml.substr(begin, end - begin));
    pos = end + close.size();
  }
  return out;
}

std::string XmlElementText(std::string_view xml, std::string_view tag) {
  std::vector<std::string_view> found = XmlElements(xml, tag);
  return found.empty() ? "" : DecodeXmlText(found.front());
}

std::string ErrorSummary(std::string_view body) {
  const std::string code = XmlElementText(body, "Code");
  if (!code.empty()) {
    const std::string message = XmlElementText(body, "Message");
    return message.empty() ? code : code + ": " + message;
  }
  std::string text(body.substr(0, 200));
  for (char& c : text) {
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  }
  return text;
}

Result<S3ListPage> ParseListObjectsV2(std::string_view xml, const std::string& name) {
  S3ListPage page;
  for (std::string_view contents : XmlElements(xml, "Contents")) {
    std::string key = XmlElementText(contents, "Key");
    const std::string size = XmlElementText(contents, "Size");
    uint64_t size_bytes = 0;
    auto [end, ec] = std::from_chars(size.data(), size.data() + size.size(), size_bytes);
    if (key.empty() || ec != std::errc() || end != size.data() + size.size()) {
      return CorruptionError(name +
                             ": a ListObjectsV2 <Contents> without a <Key> or with a <Size> "
                             "that is not a number");
    }
    page.objects.emplace_back(std::move(key), size_bytes);
  }
  for (std::string_view prefix : XmlElements(xml, "CommonPrefixes")) {
    page.common_prefixes.push_back(XmlElementText(prefix, "Prefix"));
  }
  page.truncated = XmlElementText(xml, "IsTruncated") == "true";
  page.next_token = XmlElementText(xml, "NextContinuationToken");
  if (page.truncated && page.next_token.empty()) {
    return CorruptionError(name +
                           ": a truncated ListObjectsV2 page without a "
                           "NextContinuationToken");
  }
  return page;
}

Result<S3UploadsPage> ParseListMultipartUploads(std::string_view xml, const std::string& name) {
  S3UploadsPage page;
  for (std::string_view upload : XmlElements(xml, "Upload")) {
    std::string key = XmlElementText(upload, "Key"), id = XmlElementText(upload, "UploadId");
    if (key.empty() || id.empty()) {
      return CorruptionError(name +
                             ": a ListMultipartUploads <Upload> without a <Key> or an "
                             "<UploadId>");
    }
    page.uploads.emplace_back(std::move(key), std::move(id));
  }
  page.truncated = XmlElementText(xml, "IsTruncated") == "true";
  page.next_key_marker = XmlElementText(xml, "NextKeyMarker");
  page.next_upload_id_marker = XmlElementText(xml, "NextUploadIdMarker");
  if (page.truncated && page.next_key_marker.empty() && page.next_upload_id_marker.empty()) {
    return CorruptionError(name + ": a truncated ListMultipartUploads page without markers");
  }
  return page;
}

}  // namespace docfeed::internal
