#include "format/value.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>

#include "base/check.h"
#include "base/hash.h"

namespace docfeed::internal {
namespace {

// Appends little-endian integers; docfeed only targets little-endian hosts (checked below).
static_assert(std::endian::native == std::endian::little, "docfeed assumes a little-endian host");

template <typename T>
void Put(Hasher64& h, T v) {
  h.Update(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(&v), sizeof(v)));
}

void PutString(Hasher64& h, std::string_view s) {
  Put<uint64_t>(h, s.size());
  h.Update(s);
}

struct ValueHasher {
  Hasher64& h;
  void operator()(std::monostate) const {}
  void operator()(const std::string& s) const { PutString(h, s); }
  void operator()(int64_t v) const { Put(h, v); }
  void operator()(double v) const { Put(h, std::bit_cast<uint64_t>(v)); }
  void operator()(bool v) const { Put<uint8_t>(h, v ? 1 : 0); }
  void operator()(const std::vector<int64_t>& v) const {
    Put<uint64_t>(h, v.size());
    for (int64_t x : v) Put(h, x);
  }
  void operator()(const std::vector<double>& v) const {
    Put<uint64_t>(h, v.size());
    for (double x : v) Put(h, std::bit_cast<uint64_t>(x));
  }
  void operator()(const std::vector<std::string>& v) const {
    Put<uint64_t>(h, v.size());
    for (const std::string& s : v) PutString(h, s);
  }
};

}  // namespace

std::string_view ColumnTypeName(ColumnType type) {
  switch (type) {
    case ColumnType::kString:
      return "string";
    case ColumnType::kInt64:
      return "int64";
    case ColumnType::kFloat64:
      return "float64";
    case ColumnType::kBool:
      return "bool";
    case ColumnType::kInt64List:
      return "list<int64>";
    case ColumnType::kFloat64List:
      return "list<float64>";
    case ColumnType::kStringList:
      return "list<string>";
    case ColumnType::kArrow:
      return "arrow";
  }
  return "unknown";
}

uint64_t HashLabels(const std::vector<ColumnSpec>& columns, const std::vector<Value>& values) {
  DOCFEED_CHECK(columns.size() == values.size());
  Hasher64 h;
  for (size_t i = 0; i < columns.size(); ++i) {
    PutString(h, columns[i].name);
    Put<uint8_t>(h, static_cast<uint8_t>(columns[i].type));
    bool is_null = std::holds_alternative<std::monostate>(values[i]);
    Put<uint8_t>(h, is_null ? 0 : 1);
    std::visit(ValueHasher{h}, values[i]);
  }
  return h.Digest();
}

uint32_t LabelLength(const Value& value) {
  auto clamp = [](size_t n) {
    return static_cast<uint32_t>(std::min<size_t>(n, std::numeric_limits<uint32_t>::max()));
  };
  if (const auto* s = std::get_if<std::string>(&value)) return clamp(s->size());
  if (const auto* v = std::get_if<std::vector<int64_t>>(&value)) {
    // Trailing ignore-index padding (-100, what Donut `labels` are padded with) is not label.
    size_t n = v->size();
    while (n > 0 && (*v)[n - 1] == kIgnoreIndex) --n;
    return clamp(n);
  }
  if (const auto* v = std::get_if<std::vector<double>>(&value)) return clamp(v->size());
  if (const auto* v = std::get_if<std::vector<std::string>>(&value)) return clamp(v->size());
  return 0;
}

}  // namespace docfeed::internal
