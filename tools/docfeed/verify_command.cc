// docfeed verify: prints what was checked, or every problem found; exit 1 on any problem.
#include <cstdio>

#include "args.h"
#include "commands.h"
#include "docfeed/dataset.h"
#include "progress.h"

namespace docfeed::tools {

int RunVerify(const Args& args) {
  Result<ParsedArgs> parsed = ParseArgs(args, {"--help", "-h"}, {});
  if (!parsed.ok() || parsed->positional.size() != 1 || parsed->Has("--help")) {
    std::fputs("usage: docfeed verify OUT\n",
               parsed.ok() && parsed->Has("--help") ? stdout : stderr);
    return parsed.ok() && parsed->Has("--help") ? 0 : 2;
  }
  const std::string& dir = parsed->positional[0];
  Result<VerifyReport> report = VerifyDatasetReport(dir);
  if (!report.ok()) {
    std::fprintf(stderr, "docfeed verify: %s\n", report.status().ToString().c_str());
    return 1;
  }
  if (!report->ok()) {
    std::fprintf(stderr, "docfeed verify: %s is damaged:\n", dir.c_str());
    for (const std::string& p : report->problems) std::fprintf(stderr, "  %s\n", p.c_str());
    if (report->truncated) std::fprintf(stderr, "  (more problems not listed)\n");
    return 1;
  }
  std::printf("%s: OK (%llu samples, %s checked)\n", dir.c_str(),
              static_cast<unsigned long long>(report->samples_checked),
              FormatBytes(report->bytes_checked).c_str());
  return 0;
}

}  // namespace docfeed::tools
