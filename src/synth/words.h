// Built-in word lists for synthetic documents (written for docfeed; no external source).
#ifndef DOCFEED_SYNTH_WORDS_H_
#define DOCFEED_SYNTH_WORDS_H_

#include <span>

namespace docfeed::internal::words {

// A product or service with the range of plausible unit prices, in cents.
struct PricedItem {
  const char* name;
  int min_cents;
  int max_cents;
  int max_count;  // the largest plausible quantity on one line
};

// A city with its region and a postcode pattern ('#' a digit, 'A' a capital letter).
struct Place {
  const char* city;
  const char* region;  // may be empty
  const char* postcode;
  const char* currency;
  const char* tax_name;  // "VAT", "GST", "Sales tax", ...
  bool number_first;     // "12 High Street" (true) or "Hauptstrasse 12" (false)
};

std::span<const char* const> CompanyStems();
std::span<const char* const> CompanyTrades();
std::span<const char* const> CompanySuffixes();
std::span<const char* const> Surnames();
std::span<const char* const> GivenNames();
std::span<const char* const> StoreAdjectives();
std::span<const char* const> StoreNouns();
std::span<const char* const> StoreTypes();
std::span<const char* const> StreetNames();
std::span<const char* const> StreetTypes();
std::span<const Place> Places();
std::span<const PricedItem> InvoiceItems();
std::span<const PricedItem> ReceiptItems();
std::span<const char* const> MonthNames();  // "January".."December"
std::span<const char* const> PaymentMethods();

}  // namespace docfeed::internal::words

#endif  // DOCFEED_SYNTH_WORDS_H_
