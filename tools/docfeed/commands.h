// The docfeed subcommands. Each returns the process exit code: 0 success, 1 the operation
// failed (bad input, corrupt dataset), 2 usage error.
#ifndef DOCFEED_TOOLS_COMMANDS_H_
#define DOCFEED_TOOLS_COMMANDS_H_

#include <string_view>
#include <vector>

namespace docfeed {
class Env;
}  // namespace docfeed

namespace docfeed::tools {

using Args = std::vector<std::string_view>;

int RunPack(const Args& args);
// docfeed merge; every file through `env` (null: Env::Default()), for the fault tests.
int RunMerge(const Args& args, Env* env = nullptr);
int RunInspect(const Args& args);
int RunVerify(const Args& args);
// `env` (Env::Default() when null) is where preprocess reads IMAGE and writes OUT, and bench
// reads DATASET: the fault sweeps of tests/tools/ run them through a FaultInjectionEnv.
int RunPreprocess(const Args& args, Env* env = nullptr);
int RunSynth(const Args& args);
int RunBench(const Args& args, Env* env = nullptr);
int RunDoctor(const Args& args);

}  // namespace docfeed::tools

#endif  // DOCFEED_TOOLS_COMMANDS_H_
