// docfeed::Json's number rules (src/base/json.h): a JSON number converts to an arithmetic type
// only when its value is exactly that type's, never by nlohmann's static_cast.
#include "base/json.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace docfeed {
namespace {

Json Field(const std::string& value) { return Json::parse("{\"n\": " + value + "}"); }

// The message of the exception get<T>() throws for {"n": value}, or "" when it converts.
template <typename T>
std::string Refusal(const std::string& value) {
  try {
    (void)Field(value).at("n").get<T>();
    return "";
  } catch (const Json::exception& e) {
    return e.what();
  }
}

TEST(JsonNumbers, IntegersConvertWithinTheirRange) {
  EXPECT_EQ(Field("0").at("n").get<uint64_t>(), 0u);
  EXPECT_EQ(Field("18446744073709551615").at("n").get<uint64_t>(), UINT64_MAX);
  EXPECT_EQ(Field("-9223372036854775808").at("n").get<int64_t>(), INT64_MIN);
  EXPECT_EQ(Field("2147483647").at("n").get<int32_t>(), INT32_MAX);
  EXPECT_EQ(Field("-2147483648").at("n").get<int32_t>(), INT32_MIN);
  EXPECT_EQ(Field("255").at("n").get<uint8_t>(), 255);
}

TEST(JsonNumbers, OutOfRangeIsRefusedNamingTheField) {
  for (const char* v : {"-1", "-9223372036854775808"}) {
    const std::string why = Refusal<uint64_t>(v);
    EXPECT_NE(why.find("out_of_range"), std::string::npos) << v << ": " << why;
    EXPECT_NE(why.find("(/n)"), std::string::npos) << why;
  }
  EXPECT_NE(Refusal<int32_t>("2147483648"), "");
  EXPECT_NE(Refusal<int32_t>("-2147483649"), "");
  EXPECT_NE(Refusal<int64_t>("9223372036854775808"), "");
  EXPECT_NE(Refusal<uint8_t>("256"), "");
  EXPECT_NE(Refusal<int>("18446744073709551615"), "");
}

TEST(JsonNumbers, FractionsExponentsAndBooleansAreNotIntegers) {
  // 1e47 as uint64_t was undefined behaviour (the fuzzer's find); 1.5 and 3.0 were truncated;
  // true was 1; a number too big for uint64_t parses as a float.
  for (const char* v : {"1e47", "1.5", "3.0", "-0.5", "1e3", "18446744073709551616", "true",
                        "\"7\"", "null", "[1]"}) {
    const std::string why = Refusal<uint64_t>(v);
    EXPECT_NE(why.find("type_error"), std::string::npos) << v << ": " << why;
    EXPECT_NE(why.find("(/n)"), std::string::npos) << why;
    EXPECT_NE(Refusal<int32_t>(v), "") << v;
  }
}

TEST(JsonNumbers, FloatingPointTakesAnyNumberButNoBoolean) {
  EXPECT_EQ(Field("0").at("n").get<double>(), 0.0);
  EXPECT_EQ(Field("-3").at("n").get<double>(), -3.0);
  EXPECT_EQ(Field("18446744073709551615").at("n").get<double>(), 18446744073709551615.0);
  EXPECT_EQ(Field("0.485").at("n").get<double>(), 0.485);
  EXPECT_EQ(Field("1e300").at("n").get<double>(), 1e300);
  EXPECT_EQ(Field("0.25").at("n").get<float>(), 0.25f);
  EXPECT_NE(Refusal<float>("1e300"), "");  // beyond float: refused, not infinity
  EXPECT_NE(Refusal<double>("true"), "");
  EXPECT_NE(Refusal<double>("\"0.5\""), "");
}

TEST(JsonNumbers, ContainersConvertTheirElementsTheSameWay) {
  const Json j = Json::parse(R"({"v": [1, 2, 3.5], "m": {"png": -1}, "a": [1, 2], "ok": [4, 5]})");
  EXPECT_THROW((void)j.at("v").get<std::vector<int32_t>>(), Json::exception);
  EXPECT_THROW((void)(j.at("m").get<std::map<std::string, uint64_t>>()), Json::exception);
  EXPECT_EQ((j.at("a").get<std::array<uint64_t, 2>>()), (std::array<uint64_t, 2>{1, 2}));
  EXPECT_EQ(j.at("ok").get<std::vector<int32_t>>(), (std::vector<int32_t>{4, 5}));
  try {
    (void)j.at("v").get<std::vector<int32_t>>();
  } catch (const Json::exception& e) {
    EXPECT_NE(std::string(e.what()).find("(/v/2)"), std::string::npos) << e.what();
  }
}

TEST(JsonNumbers, BooleansAndStringsAreUnchanged) {
  const Json j = Json::parse(R"({"b": true, "s": "x"})");
  EXPECT_TRUE(j.at("b").get<bool>());
  EXPECT_EQ(j.at("s").get<std::string>(), "x");
  EXPECT_THROW((void)j.at("s").get<bool>(), Json::exception);
}

}  // namespace
}  // namespace docfeed
