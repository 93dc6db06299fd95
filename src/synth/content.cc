#include "synth/content.h"

#include <cstdio>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "synth/words.h"

namespace docfeed::internal {
namespace {

std::string Str(const char* s) { return std::string(s); }

// Concatenation whose parts are evaluated left to right (a braced list is sequenced; the
// operands of + are not), so the draws from the Rng happen in the same order on every compiler.
std::string Cat(std::initializer_list<std::string_view> parts) {
  std::string out;
  for (std::string_view p : parts) out += p;
  return out;
}

// Replaces '#' with a digit and 'A' with a capital letter.
std::string FillPattern(const char* pattern, Rng& rng) {
  std::string out;
  for (const char* p = pattern; *p != '\0'; ++p) {
    if (*p == '#') {
      out += static_cast<char>('0' + rng.IntIn(0, 9));
    } else if (*p == 'A') {
      out += static_cast<char>('A' + rng.IntIn(0, 25));
    } else {
      out += *p;
    }
  }
  return out;
}

std::string CompanyName(Rng& rng) {
  std::string name;
  switch (rng.IntIn(0, 3)) {
    case 0:
      name = Cat({rng.Pick(words::Surnames()), " & ", rng.Pick(words::Surnames())});
      break;
    case 1:
      name = Cat({rng.Pick(words::Surnames()), " ", rng.Pick(words::CompanyTrades())});
      break;
    default:
      name = Cat({rng.Pick(words::CompanyStems()), " ", rng.Pick(words::CompanyTrades())});
      break;
  }
  if (rng.Chance(0.8)) name += " " + Str(rng.Pick(words::CompanySuffixes()));
  return name;
}

std::string StoreName(Rng& rng) {
  std::string name = Cat({rng.Pick(words::StoreAdjectives()), " ", rng.Pick(words::StoreNouns()),
                          " ", rng.Pick(words::StoreTypes())});
  if (rng.Chance(0.3)) name += " " + Str(rng.Pick(words::CompanySuffixes()));
  return name;
}

std::string PersonName(Rng& rng) {
  return Cat({rng.Pick(words::GivenNames()), " ", rng.Pick(words::Surnames())});
}

// Two or three address lines in the place's conventions.
std::vector<std::string> Address(const words::Place& place, Rng& rng) {
  std::string street = Cat({rng.Pick(words::StreetNames()), " ", rng.Pick(words::StreetTypes())});
  std::string number = std::to_string(rng.IntIn(1, rng.Chance(0.5) ? 99 : 2400));
  std::vector<std::string> lines;
  if (rng.Chance(0.25)) {
    const char* kind = rng.Chance(0.5) ? "Unit " : "Suite ";
    lines.push_back(kind + std::to_string(rng.IntIn(1, 40)));
  }
  lines.push_back(place.number_first ? number + " " + street : street + " " + number);
  std::string postcode = FillPattern(place.postcode, rng);
  std::string city;
  if (place.number_first) {
    city = Str(place.city);
    if (place.region[0] != '\0') city += std::string(", ") + place.region;
    city += " " + postcode;
  } else {
    city = postcode + " " + place.city;
  }
  lines.push_back(city);
  return lines;
}

std::string Phone(Rng& rng) {
  const std::string country = std::to_string(rng.IntIn(1, 99));
  return "+" + country + " " + FillPattern("### ### ####", rng);
}

std::string TwoDigits(int v) {
  char buf[8];
  std::snprintf(buf, sizeof(buf), "%02d", v);
  return buf;
}

// A date between 2015 and 2026 in one of several common printed forms.
std::string DateText(Rng& rng) {
  const int year = rng.IntIn(2015, 2026);
  const int month = rng.IntIn(1, 12);
  const int day = rng.IntIn(1, 28);
  const std::string month_name = rng.Pick(words::MonthNames());
  const std::string y = std::to_string(year), m = TwoDigits(month), d = TwoDigits(day);
  switch (rng.IntIn(0, 6)) {
    case 0:
      return y + "-" + m + "-" + d;
    case 1:
      return d + "/" + m + "/" + y;
    case 2:
      return m + "/" + d + "/" + y;
    case 3:
      return d + "." + m + "." + y;
    case 4:
      return std::to_string(day) + " " + month_name.substr(0, 3) + " " + y;
    case 5:
      return month_name + " " + std::to_string(day) + ", " + y;
    default:
      return d + "-" + m + "-" + y.substr(2);
  }
}

std::vector<LineItem> Items(std::span<const words::PricedItem> list, int n, bool cents, Rng& rng) {
  // A partial Fisher-Yates shuffle of the indices: n distinct items.
  std::vector<size_t> order(list.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::vector<LineItem> items;
  for (int i = 0; i < n && static_cast<size_t>(i) < order.size(); ++i) {
    const auto pick = static_cast<size_t>(rng.Int(i, static_cast<int64_t>(order.size()) - 1));
    std::swap(order[static_cast<size_t>(i)], order[pick]);
    const words::PricedItem& w = list[order[static_cast<size_t>(i)]];
    LineItem item;
    item.name = w.name;
    item.count = rng.Chance(0.5) ? 1 : rng.IntIn(1, w.max_count);
    item.unit_cents = rng.Int(w.min_cents, w.max_cents);
    // Round to whole units or tens of cents the way price lists usually are.
    item.unit_cents = cents ? item.unit_cents / 10 * 10 : item.unit_cents / 100 * 100;
    if (item.unit_cents == 0) item.unit_cents = 10;
    items.push_back(item);
  }
  return items;
}

constexpr int kTaxRatesBp[] = {0, 500, 600, 700, 800, 825, 1000, 1500, 1900, 2000};

std::string TaxLabel(const char* tax_name, int rate_bp, Rng& rng) {
  std::string rate = std::to_string(rate_bp / 100);
  if (rate_bp % 100 != 0) rate += "." + TwoDigits(rate_bp % 100);
  return rng.Chance(0.2) ? std::string(tax_name) : std::string(tax_name) + " " + rate + "%";
}

}  // namespace

std::string FormatCents(int64_t cents) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%lld.%02lld", static_cast<long long>(cents / 100),
                static_cast<long long>(cents % 100));
  return buf;
}

DocContent GenerateContent(DocKind kind, Rng& rng) {
  DocContent doc;
  doc.kind = kind;
  const words::Place& place = rng.Pick(words::Places());
  const bool invoice = kind == DocKind::kInvoice;
  doc.company = invoice ? CompanyName(rng) : StoreName(rng);
  doc.address_lines = Address(place, rng);
  doc.phone = Phone(rng);
  doc.date = DateText(rng);
  doc.currency = place.currency;
  if (invoice) {
    doc.number =
        rng.Chance(0.5) ? "INV-" + FillPattern("####-#####", rng) : FillPattern("######", rng);
    doc.customer = rng.Chance(0.5) ? PersonName(rng) : CompanyName(rng);
    const words::Place& customer_place = rng.Pick(words::Places());
    doc.customer_address = Address(customer_place, rng);
    const int n = rng.IntIn(1, 12);
    const bool cents = rng.Chance(0.6);
    doc.items = Items(words::InvoiceItems(), n, cents, rng);
  } else {
    doc.number = FillPattern(rng.Chance(0.5) ? "######" : "A####-###", rng);
    const int n = rng.IntIn(1, 14);
    doc.items = Items(words::ReceiptItems(), n, true, rng);
    doc.payment = rng.Pick(words::PaymentMethods());
    if (doc.payment != "CASH") doc.payment += FillPattern(" **** ####", rng);
  }
  for (const LineItem& item : doc.items) doc.subtotal_cents += item.amount_cents();
  doc.tax_rate_bp = rng.Pick(std::span<const int>(kTaxRatesBp));
  doc.tax_label = TaxLabel(place.tax_name, doc.tax_rate_bp, rng);
  // Round half up, in integer arithmetic.
  doc.tax_cents = (doc.subtotal_cents * doc.tax_rate_bp + 5000) / 10000;
  doc.total_cents = doc.subtotal_cents + doc.tax_cents;
  return doc;
}

std::string JoinedAddress(const DocContent& doc) {
  std::string out;
  for (const std::string& line : doc.address_lines) {
    if (!out.empty()) out += ", ";
    out += line;
  }
  return out;
}

std::string GroundTruthJson(const DocContent& doc) {
  nlohmann::ordered_json parse;
  parse["company"] = doc.company;
  parse["date"] = doc.date;
  parse["address"] = JoinedAddress(doc);
  nlohmann::ordered_json items = nlohmann::ordered_json::array();
  for (const LineItem& item : doc.items) {
    nlohmann::ordered_json row;
    row["name"] = item.name;
    row["count"] = std::to_string(item.count);
    row["price"] = FormatCents(item.unit_cents);
    items.push_back(std::move(row));
  }
  parse["items"] = std::move(items);
  parse["subtotal"] = FormatCents(doc.subtotal_cents);
  parse["tax"] = FormatCents(doc.tax_cents);
  parse["total"] = FormatCents(doc.total_cents);
  nlohmann::ordered_json gt;
  gt["gt_parse"] = std::move(parse);
  return gt.dump();
}

}  // namespace docfeed::internal
