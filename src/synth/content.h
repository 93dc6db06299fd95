// The text of a synthetic invoice or receipt and its ground truth.
//
// GenerateContent draws a company, address, date, line items and amounts from built-in word
// lists (words.cc). Money is kept in integer cents so the sums are exact:
//   subtotal = sum(count * unit price), tax = round_half_up(subtotal * rate), total = subtotal +
//   tax.
// Every string in the ground truth is exactly the string printed on the page.
#ifndef DOCFEED_SYNTH_CONTENT_H_
#define DOCFEED_SYNTH_CONTENT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "synth/rng.h"

namespace docfeed::internal {

enum class DocKind { kInvoice, kReceipt };

struct LineItem {
  std::string name;
  int count = 1;
  int64_t unit_cents = 0;  // price of one unit
  int64_t amount_cents() const { return count * unit_cents; }
};

struct DocContent {
  DocKind kind = DocKind::kInvoice;
  std::string company;
  std::vector<std::string> address_lines;  // printed one per line; joined by ", " in the label
  std::string phone;
  std::string date;      // as printed
  std::string number;    // invoice or receipt number, as printed
  std::string customer;  // invoices: the "bill to" name
  std::vector<std::string> customer_address;
  std::string currency;  // printed symbol or code, e.g. "$", "EUR", "RM"
  std::vector<LineItem> items;
  int tax_rate_bp = 0;    // basis points: 825 = 8.25 %
  std::string tax_label;  // "VAT 20%", "GST 6%", ...
  int64_t subtotal_cents = 0;
  int64_t tax_cents = 0;
  int64_t total_cents = 0;
  std::string payment;  // receipts: "CASH", "VISA **** 1234", ...
};

// REQUIRES: kind is a single kind (not mixed). Deterministic in `rng`.
DocContent GenerateContent(DocKind kind, Rng& rng);

// "1234.56"; negative values are not produced by the generator.
std::string FormatCents(int64_t cents);

// The address as one string, lines joined with ", ".
std::string JoinedAddress(const DocContent& doc);

// The Donut/CORD-style ground truth as a compact JSON string:
//   {"gt_parse": {"company": .., "date": .., "address": .., "items": [{"name": .., "count": ..,
//    "price": ..}, ..], "subtotal": .., "tax": .., "total": ..}}
// with every value a string exactly as printed ("price" is the unit price) and keys in that order.
std::string GroundTruthJson(const DocContent& doc);

}  // namespace docfeed::internal

#endif  // DOCFEED_SYNTH_CONTENT_H_
