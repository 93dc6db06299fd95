// Minimal argument parsing for the subcommands: positional arguments, --flags and
// --options with a value ("--codec png" or "--codec=png").
#ifndef DOCFEED_TOOLS_ARGS_H_
#define DOCFEED_TOOLS_ARGS_H_

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "docfeed/status.h"

namespace docfeed::tools {

struct ParsedArgs {
  std::vector<std::string> positional;
  std::set<std::string> flags;
  std::map<std::string, std::string> options;

  bool Has(const std::string& flag) const { return flags.count(flag) > 0; }
  std::string Get(const std::string& option, const std::string& fallback) const {
    auto it = options.find(option);
    return it == options.end() ? fallback : it->second;
  }
};

// `flags` take no value; `options` take one. Unknown names are an error.
Result<ParsedArgs> ParseArgs(const std::vector<std::string_view>& args,
                             const std::set<std::string>& flags,
                             const std::set<std::string>& options);

Result<int> ParseInt(const std::string& name, const std::string& text, int min, int max);

}  // namespace docfeed::tools

#endif  // DOCFEED_TOOLS_ARGS_H_
