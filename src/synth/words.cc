// Word lists for synthetic invoices and receipts. Invented for docfeed: the names are generic
// English words and common surnames; any resemblance to a real business is accidental.
#include "synth/words.h"

namespace docfeed::internal::words {
namespace {

constexpr const char* kCompanyStems[] = {
    "Northwind", "Bluebird", "Summit",     "Riverside", "Evergreen",   "Oakridge", "Silverline",
    "Harbor",    "Pinnacle", "Redwood",    "Granite",   "Maple",       "Crescent", "Lakeside",
    "Sterling",  "Horizon",  "Ironbridge", "Westfield", "Brightwater", "Kestrel",  "Juniper",
    "Falcon",    "Atlas",    "Meridian",   "Cobalt",    "Willow",      "Highland", "Cedar",
    "Orchard",   "Beacon",   "Copperleaf", "Stonegate", "Blue Ridge",  "Fairview", "Greenway",
    "Keystone",  "Larkspur", "Mariner",    "Northgate", "Quarry Hill"};

constexpr const char* kCompanyTrades[] = {
    "Supplies",         "Trading",       "Logistics", "Consulting",         "Engineering",
    "Office Solutions", "Design Studio", "Hardware",  "Electrical",         "Plumbing",
    "Print & Copy",     "Software",      "Catering",  "Building Materials", "Stationery",
    "Systems",          "Imports",       "Marketing", "Analytics",          "Facilities",
    "Industrial",       "Interiors",     "Networks",  "Packaging",          "Services"};

constexpr const char* kCompanySuffixes[] = {"Ltd", "Ltd.", "LLC",   "Inc.",    "GmbH",
                                            "Co.", "S.A.", "B.V.",  "Pty Ltd", "SDN BHD",
                                            "PLC", "AG",   "& Co.", "Group",   "Limited"};

constexpr const char* kSurnames[] = {
    "Smith",    "Patel",    "Nguyen", "Garcia", "Mueller", "Tan",       "Okafor",   "Rossi",
    "Kowalski", "Andersen", "Lim",    "Haddad", "Dubois",  "Santos",    "Yamamoto", "Brown",
    "Chen",     "Fischer",  "Murphy", "Silva",  "Novak",   "Johansson", "Ibrahim",  "Kim",
    "Martin",   "Walker",   "Ahmed",  "Costa",  "Schmidt", "O'Brien"};

constexpr const char* kGivenNames[] = {
    "Anna", "James", "Priya", "Minh",  "Lucia", "Tomasz", "Grace", "Omar", "Sofia", "Daniel",
    "Mei",  "Ahmed", "Laura", "Kenji", "Chloe", "Peter",  "Aisha", "Lars", "Rosa",  "David"};

constexpr const char* kStoreAdjectives[] = {"Sunny",  "Little", "Golden",   "Green",   "Happy",
                                            "Corner", "Urban",  "Old Town", "Fresh",   "Daily",
                                            "Lucky",  "Red",    "Family",   "Central", "Royal"};

constexpr const char* kStoreNouns[] = {"Bean",    "Leaf",   "Spoon",   "Oven",      "Basket",
                                       "Lantern", "Bowl",   "Harvest", "Pepper",    "Mango",
                                       "Kettle",  "Garden", "Wok",     "Bakehouse", "Pantry"};

constexpr const char* kStoreTypes[] = {"Cafe",       "Bakery", "Mart",        "Kitchen",
                                       "Deli",       "Grocer", "Restaurant",  "Food Court",
                                       "Minimarket", "Bistro", "Supermarket", "Noodle House"};

constexpr const char* kStreetNames[] = {
    "Oak",           "Maple",      "High",     "Church",   "Station", "Market",
    "King",          "Queen",      "Victoria", "Park",     "Mill",    "Bridge",
    "Elm",           "Cedar",      "Harbour",  "Lake",     "Hill",    "Garden",
    "Chapel",        "Riverside",  "Orchard",  "Meadow",   "Union",   "Commerce",
    "Mountain View", "Industrial", "Jubilee",  "Kingsway", "Sunset",  "Pine"};

constexpr const char* kStreetTypes[] = {"Street", "Road",  "Avenue", "Lane", "Boulevard",
                                        "Drive",  "Way",   "Place",  "St.",  "Rd.",
                                        "Ave.",   "Court", "Terrace"};

constexpr Place kPlaces[] = {
    {"Springfield", "IL", "#####", "$", "Sales tax", true},
    {"Portland", "OR", "#####", "$", "Sales tax", true},
    {"Austin", "TX", "#####", "$", "Sales tax", true},
    {"Columbus", "OH", "#####", "USD", "Sales tax", true},
    {"Leeds", "", "LS# #AA", "GBP", "VAT", true},
    {"Bristol", "", "BS# #AA", "GBP", "VAT", true},
    {"Manchester", "", "M## #AA", "GBP", "VAT", true},
    {"Kuala Lumpur", "Wilayah Persekutuan", "#####", "RM", "GST", true},
    {"Johor Bahru", "Johor", "#####", "RM", "GST", true},
    {"Petaling Jaya", "Selangor", "#####", "RM", "SST", true},
    {"Munich", "", "#####", "EUR", "MwSt", false},
    {"Hamburg", "", "#####", "EUR", "MwSt", false},
    {"Lyon", "", "#####", "EUR", "TVA", false},
    {"Rotterdam", "", "#### AA", "EUR", "BTW", false},
    {"Toronto", "ON", "A#A #A#", "CAD", "HST", true},
    {"Vancouver", "BC", "A#A #A#", "CAD", "GST", true},
    {"Sydney", "NSW", "####", "AUD", "GST", true},
    {"Melbourne", "VIC", "####", "AUD", "GST", true},
    {"Auckland", "", "####", "NZD", "GST", true},
    {"Singapore", "", "######", "S$", "GST", true},
    {"Dublin", "", "D## A##A", "EUR", "VAT", true},
    {"Cape Town", "Western Cape", "####", "R", "VAT", true},
};

constexpr PricedItem kInvoiceItems[] = {
    {"Website maintenance (monthly)", 20000, 150000, 3},
    {"Consulting services (hours)", 6000, 22000, 40},
    {"Office chair, ergonomic", 8000, 45000, 12},
    {"A4 copier paper, box of 5 reams", 2000, 4500, 20},
    {"Toner cartridge, black", 3000, 12000, 10},
    {"Laptop stand, aluminium", 2500, 7000, 10},
    {"USB-C docking station", 9000, 25000, 8},
    {"Software licence, annual", 12000, 90000, 25},
    {"Cloud hosting, 12 months", 24000, 240000, 2},
    {"Graphic design (hours)", 4500, 12000, 30},
    {"Translation, per 1000 words", 6000, 15000, 12},
    {"Freight and handling", 1500, 30000, 1},
    {"Installation labour (hours)", 4000, 9500, 16},
    {"LED panel light 60x60", 2500, 9000, 30},
    {"Copper pipe 15 mm x 3 m", 1200, 3500, 40},
    {"Cable management kit", 1500, 6000, 10},
    {"Whiteboard markers (12 pack)", 900, 2500, 10},
    {"Catering, business lunch", 1500, 4500, 40},
    {"Training workshop (half day)", 45000, 180000, 2},
    {"Network switch, 24-port", 15000, 60000, 4},
    {"Ethernet cable Cat6, 5 m", 500, 1800, 50},
    {"Desk lamp", 2000, 8000, 10},
    {"Filing cabinet, 3 drawers", 9000, 30000, 6},
    {"Security audit", 150000, 900000, 1},
    {"Search engine optimisation", 30000, 200000, 1},
    {"Logo redesign", 40000, 250000, 1},
    {"Photography session", 25000, 120000, 2},
    {"External hard drive 2 TB", 6000, 14000, 10},
    {"Wireless keyboard and mouse", 2500, 9000, 15},
    {"Monitor 27 inch", 18000, 60000, 8},
    {"Cleaning services (monthly)", 30000, 150000, 1},
    {"Safety gloves (pair)", 300, 1500, 100},
    {"Courier delivery", 800, 6000, 5},
    {"Repair parts and labour", 5000, 80000, 1},
    {"Interior paint, white, 10 L", 3500, 9000, 20},
    {"Timber 2x4, 2.4 m", 400, 1200, 80},
    {"Steel bolts M8 (100 pcs)", 900, 3000, 20},
    {"Coffee beans 1 kg", 1800, 4500, 12},
    {"Data backup service", 5000, 30000, 12},
    {"Annual maintenance contract", 50000, 400000, 1},
};

constexpr PricedItem kReceiptItems[] = {
    {"Cappuccino", 280, 650, 3},
    {"Latte", 300, 690, 3},
    {"Espresso", 200, 450, 2},
    {"Green tea", 180, 450, 2},
    {"Croissant", 180, 420, 4},
    {"Blueberry muffin", 220, 480, 3},
    {"Chicken sandwich", 550, 1150, 2},
    {"Caesar salad", 650, 1300, 2},
    {"Nasi lemak", 450, 1200, 2},
    {"Fried rice", 550, 1300, 3},
    {"Beef noodles", 650, 1500, 2},
    {"Orange juice", 250, 600, 3},
    {"Mineral water 500ml", 80, 250, 6},
    {"Milk 1L", 120, 320, 4},
    {"Wholemeal bread", 180, 450, 2},
    {"Eggs (10)", 250, 550, 2},
    {"Bananas 1kg", 120, 350, 2},
    {"Apples 1kg", 250, 550, 2},
    {"Cheddar cheese 200g", 280, 650, 2},
    {"Butter 250g", 220, 520, 2},
    {"Pasta 500g", 90, 280, 4},
    {"Tomato sauce", 150, 380, 3},
    {"Rice 5kg", 900, 2200, 1},
    {"Toothpaste", 220, 650, 2},
    {"Shampoo 400ml", 350, 950, 2},
    {"Batteries AA (4)", 350, 950, 2},
    {"Notebook A5", 150, 650, 5},
    {"Ballpoint pen", 50, 250, 10},
    {"Dish soap", 150, 450, 2},
    {"Paper towels (2)", 250, 650, 2},
    {"Chocolate bar", 90, 350, 4},
    {"Potato chips", 120, 380, 3},
    {"Soft drink can", 90, 250, 6},
    {"Iced lemon tea", 180, 450, 3},
    {"Cheeseburger", 450, 1100, 3},
    {"French fries", 250, 550, 3},
    {"Pizza slice", 300, 650, 4},
    {"Donut", 120, 320, 6},
    {"Bagel, cream cheese", 280, 600, 2},
    {"Spring rolls (4)", 350, 800, 2},
    {"Masking tape", 150, 450, 4},
    {"Screws assorted", 250, 950, 3},
    {"Plastic storage box", 450, 1500, 3},
    {"Extension cord 3m", 750, 2200, 2},
};

constexpr const char* kMonthNames[] = {"January",   "February", "March",    "April",
                                       "May",       "June",     "July",     "August",
                                       "September", "October",  "November", "December"};

constexpr const char* kPaymentMethods[] = {"CASH", "VISA",     "MASTERCARD", "DEBIT CARD",
                                           "AMEX", "E-WALLET", "CONTACTLESS"};

}  // namespace

std::span<const char* const> CompanyStems() { return kCompanyStems; }
std::span<const char* const> CompanyTrades() { return kCompanyTrades; }
std::span<const char* const> CompanySuffixes() { return kCompanySuffixes; }
std::span<const char* const> Surnames() { return kSurnames; }
std::span<const char* const> GivenNames() { return kGivenNames; }
std::span<const char* const> StoreAdjectives() { return kStoreAdjectives; }
std::span<const char* const> StoreNouns() { return kStoreNouns; }
std::span<const char* const> StoreTypes() { return kStoreTypes; }
std::span<const char* const> StreetNames() { return kStreetNames; }
std::span<const char* const> StreetTypes() { return kStreetTypes; }
std::span<const Place> Places() { return kPlaces; }
std::span<const PricedItem> InvoiceItems() { return kInvoiceItems; }
std::span<const PricedItem> ReceiptItems() { return kReceiptItems; }
std::span<const char* const> MonthNames() { return kMonthNames; }
std::span<const char* const> PaymentMethods() { return kPaymentMethods; }

}  // namespace docfeed::internal::words
