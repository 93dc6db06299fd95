#include "args.h"

#include <charconv>

namespace docfeed::tools {

Result<ParsedArgs> ParseArgs(const std::vector<std::string_view>& args,
                             const std::set<std::string>& flags,
                             const std::set<std::string>& options) {
  ParsedArgs out;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string arg(args[i]);
    if (arg.size() < 2 || arg[0] != '-') {
      out.positional.push_back(arg);
      continue;
    }
    std::string value;
    bool has_value = false;
    if (size_t eq = arg.find('='); eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
      has_value = true;
    }
    if (flags.count(arg) > 0 && !has_value) {
      out.flags.insert(arg);
    } else if (options.count(arg) > 0) {
      if (!has_value) {
        if (i + 1 >= args.size()) return InvalidArgumentError(arg + " needs a value");
        value = std::string(args[++i]);
      }
      out.options[arg] = value;
    } else {
      return InvalidArgumentError("unknown option " + arg);
    }
  }
  return out;
}

Result<int64_t> ParseInt64(const std::string& name, const std::string& text, int64_t min,
                           int64_t max) {
  int64_t v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size() || v < min || v > max) {
    return InvalidArgumentError(name + " must be an integer from " + std::to_string(min) + " to " +
                                std::to_string(max) + ", got \"" + text + "\"");
  }
  return v;
}

Result<int> ParseInt(const std::string& name, const std::string& text, int min, int max) {
  DOCFEED_ASSIGN_OR_RETURN(const int64_t v, ParseInt64(name, text, min, max));
  return static_cast<int>(v);
}

Result<Generation> ParseGeneration(const ParsedArgs& parsed) {
  Generation g;
  DOCFEED_ASSIGN_OR_RETURN(g.hf_version,
                           ParseInt("--hf-version", parsed.Get("--hf-version", "4"), 4, 5));
  g.backend = parsed.Get("--backend", "pil");
  if (g.backend != "pil" && g.backend != "torchvision") {
    return InvalidArgumentError("--backend must be pil or torchvision, got \"" + g.backend + "\"");
  }
  if (g.backend == "torchvision" && g.hf_version != 5) {
    return InvalidArgumentError(
        "--backend torchvision needs --hf-version 5 (transformers 4's fast processor is not "
        "reproduced)");
  }
  return g;
}

}  // namespace docfeed::tools
