// Minimal argument parsing for the subcommands: positional arguments, --flags and
// --options with a value ("--codec png" or "--codec=png").
#ifndef DOCFEED_TOOLS_ARGS_H_
#define DOCFEED_TOOLS_ARGS_H_

#include <cstdint>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
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
Result<int64_t> ParseInt64(const std::string& name, const std::string& text, int64_t min,
                           int64_t max);

// --hf-version 4|5 (default 4) and --backend pil|torchvision (default pil; torchvision needs 5):
// which DonutImageProcessor generation and backend the Donut preset reproduces
// (docfeed/preprocess.h DonutBackend). Errors: InvalidArgument naming the option.
struct Generation {
  int32_t hf_version = 4;
  std::string backend = "pil";
};
Result<Generation> ParseGeneration(const ParsedArgs& parsed);

// The help lines of those two options (a literal, to concatenate into a usage text).
#define DOCFEED_GENERATION_HELP                                                             \
  "  --hf-version 4|5       the transformers generation to reproduce (default 4: the 4.x\n" \
  "                         DonutImageProcessor; 5: transformers 5.x)\n"                    \
  "  --backend pil|torchvision  with --hf-version 5: DonutImageProcessorPil (pil, the\n"    \
  "                         default) or the torchvision DonutImageProcessor on the CPU\n"

// The start every option-taking subcommand shares: parses `args` (`flags` and `options` as
// ParseArgs; "--help" and "-h" are accepted whatever `flags` says) and converts them with
// `convert`. Returns the converted options, or the exit code to
// return at once: 0 after printing `help` to stdout for --help/-h; 2 after printing
// "docfeed COMMAND: <message>" and `help` to stderr for a bad argument.
template <typename T>
std::variant<int, T> StartCommand(const char* command, const std::vector<std::string_view>& args,
                                  std::set<std::string> flags, const std::set<std::string>& options,
                                  const char* help, Result<T> (*convert)(const ParsedArgs&)) {
  flags.insert({"--help", "-h"});
  Result<ParsedArgs> parsed = ParseArgs(args, flags, options);
  if (parsed.ok() && (parsed->Has("--help") || parsed->Has("-h"))) {
    std::fputs(help, stdout);
    return 0;
  }
  Result<T> converted = parsed.ok() ? convert(*parsed) : Result<T>(parsed.status());
  if (!converted.ok()) {
    std::fprintf(stderr, "docfeed %s: %s\n\n%s", command,
                 std::string(converted.status().message()).c_str(), help);
    return 2;
  }
  return std::move(*converted);
}

}  // namespace docfeed::tools

#endif  // DOCFEED_TOOLS_ARGS_H_
