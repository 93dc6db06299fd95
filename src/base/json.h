// docfeed::Json: nlohmann's ordered JSON with checked number conversions.
//
// nlohmann's get<T>() converts any JSON number (and a boolean) to any arithmetic T with a
// static_cast: 1.5 read as uint64_t is 1, -1 is 18446744073709551615, and 1e47 is undefined
// behaviour. Every file docfeed reads back (manifest, index metadata, piece files, tokenizer
// files, metadata.jsonl) may have been edited or corrupted, so here a number converts to T only
// when its value is exactly representable in T:
//   - an integer T accepts a JSON integer within T's range; a float (even 3.0) or a boolean is a
//     type error, an integer outside the range an out_of_range error;
//   - a floating T accepts any JSON number (a float, or an integer, as "mean": [0, 0, 0]), but no
//     boolean;
//   - bool accepts only a boolean, as nlohmann already does.
// The errors are nlohmann's own exception types (Json::exception), so every reader that catches
// those turns a bad number into its usual Corruption error naming the file. Containers
// (std::vector<int32_t>, std::map<std::string, uint64_t>, std::array) convert their elements
// through the same rules.
//
// JSON_DIAGNOSTICS is on for this type: every exception names the JSON pointer of the value
// ("(/data_files/0/num_rows) expected an integer, ..."), so an error names the field. nlohmann
// puts diagnostic and plain builds in different inline ABI namespaces, so translation units that
// use plain nlohmann::json elsewhere do not clash; this header must be the first to include
// nlohmann in a translation unit that uses it.
#ifndef DOCFEED_BASE_JSON_H_
#define DOCFEED_BASE_JSON_H_

#include <cmath>
#include <cstdint>
#include <limits>
#ifdef NLOHMANN_JSON_VERSION_MAJOR
#if !JSON_DIAGNOSTICS
#error "include base/json.h before <nlohmann/json.hpp> (it turns on JSON_DIAGNOSTICS)"
#endif
#else
#define JSON_DIAGNOSTICS 1
#endif
#include <nlohmann/json.hpp>
#include <string>
#include <type_traits>
#include <utility>

namespace docfeed {

template <typename T, typename = void>
struct CheckedJsonSerializer : nlohmann::adl_serializer<T> {};

template <typename T>
struct CheckedJsonSerializer<T,
                             std::enable_if_t<std::is_arithmetic_v<T> && !std::is_same_v<T, bool>>>
    : nlohmann::adl_serializer<T> {
  template <typename BasicJson>
  static void from_json(const BasicJson& j, T& out) {
    if (const auto* u = j.template get_ptr<const typename BasicJson::number_unsigned_t*>()) {
      out = Narrow(j, *u);
    } else if (const auto* i = j.template get_ptr<const typename BasicJson::number_integer_t*>()) {
      out = Narrow(j, *i);
    } else if (const auto* f = j.template get_ptr<const typename BasicJson::number_float_t*>()) {
      if constexpr (!std::is_floating_point_v<T>) {
        throw BasicJson::type_error::create(
            302, "expected an integer, found the fraction or exponent " + j.dump(), &j);
      } else {
        if (std::isfinite(*f) && std::abs(*f) > std::numeric_limits<T>::max()) throw OutOfRange(j);
        out = static_cast<T>(*f);
      }
    } else {
      throw BasicJson::type_error::create(
          302, std::string("expected a number, found ") + j.type_name(), &j);
    }
  }

 private:
  template <typename BasicJson, typename V>
  static T Narrow(const BasicJson& j, V v) {
    if constexpr (std::is_floating_point_v<T>) {
      return static_cast<T>(v);  // Any 64-bit integer is within double's (and float's) range.
    } else {
      if (!std::in_range<T>(v)) throw OutOfRange(j);
      return static_cast<T>(v);
    }
  }

  template <typename BasicJson>
  static typename BasicJson::out_of_range OutOfRange(const BasicJson& j) {
    return BasicJson::out_of_range::create(
        406, "number " + j.dump() + " is outside the range of the field's type", &j);
  }
};

using Json = nlohmann::basic_json<nlohmann::ordered_map, std::vector, std::string, bool, int64_t,
                                  uint64_t, double, std::allocator, CheckedJsonSerializer>;

}  // namespace docfeed

#endif  // DOCFEED_BASE_JSON_H_
