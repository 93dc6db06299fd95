// docfeed: the command-line tool. Thin over the library: argument parsing, progress display and
// printing. Subcommands: pack, merge, inspect, verify, preprocess, synth, bench, doctor.
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "commands.h"

namespace {

constexpr char kUsage[] =
    "usage: docfeed <command> [options]\n"
    "\n"
    "commands:\n"
    "  pack SRC -o OUT [--codec keep|png|webp|jpeg] [--quality Q] [--threads N]\n"
    "       [--skip-bad] [--overwrite] [--compression none|zstd|lz4_frame]\n"
    "                      pack an image folder (imagefolder layout) into a docfeed dataset\n"
    "       [--part I/N]   pack only part I of N (a contiguous slice), for docfeed merge\n"
    "  merge PART... -o OUT  join the parts of a split pack into the dataset one pack writes\n"
    "  inspect OUT [--json]  describe a packed dataset\n"
    "  verify OUT            re-check every checksum and the index; exit 1 if anything is wrong\n"
    "  preprocess IMAGE --preset donut -o OUT  Donut pixel_values as .npy/.png (see --help)\n"
    "  synth -o OUT --n N [--seed S] [--kind invoice|receipt|mixed]\n"
    "                      synthetic invoices and receipts with ground truth (image folder)\n"
    "  bench DATASET [--batch-size 8] [--threads N] [--epochs E] [--json]\n"
    "                      run the loader with no consumer: pages/s, stage times, memory\n"
    "  doctor PATH [--json FILE] [--report DIR]  where a training input pipeline's time goes\n"
    "                      (save_to_disk dataset, image folder or docfeed dataset; runs in "
    "Python)\n"
    "\n"
    "docfeed <command> --help shows the command's options.\n";

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string_view> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::fputs(kUsage, args.empty() ? stderr : stdout);
    return args.empty() ? 2 : 0;
  }
  if (args[0] == "--version") {
    std::puts("docfeed 0.1.0");
    return 0;
  }
  std::string_view command = args[0];
  args.erase(args.begin());
  if (command == "pack") return docfeed::tools::RunPack(args);
  if (command == "merge") return docfeed::tools::RunMerge(args);
  if (command == "inspect") return docfeed::tools::RunInspect(args);
  if (command == "verify") return docfeed::tools::RunVerify(args);
  if (command == "preprocess") return docfeed::tools::RunPreprocess(args);
  if (command == "synth") return docfeed::tools::RunSynth(args);
  if (command == "bench") return docfeed::tools::RunBench(args);
  if (command == "doctor") return docfeed::tools::RunDoctor(args);
  std::fprintf(stderr, "docfeed: unknown command \"%.*s\"\n\n%s", static_cast<int>(command.size()),
               command.data(), kUsage);
  return 2;
}
