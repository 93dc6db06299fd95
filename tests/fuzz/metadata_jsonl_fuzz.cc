// libFuzzer target for metadata.jsonl parsing (ScanImageFolder, src/pack/image_folder.h): the
// input is the metadata.jsonl of a folder, held in a MemEnv, that also contains a.png, sub/b.jpg
// and c.webp (their bytes are never decoded here) and a directory d/. Rows may name those files
// or anything else. A scan that succeeds lists each row either as a sample that is a file of the
// folder, with one value per column, or as a problem (malformed, missing, a duplicate, outside
// the folder) whose error names metadata.jsonl:LINE; the packer never reads a problem row's
// image. Any crash, sanitizer report, hang or abort is a bug.
//
// Build and run: tests/fuzz/run_format_fuzz.sh [seconds]
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "base/mem_env.h"
#include "pack/image_folder.h"

namespace {

using docfeed::internal::ImageFolder;
using docfeed::internal::MemEnv;

MemEnv* MakeFolder() {
  auto* env = new MemEnv();
  env->CreateDirectory("/root").IgnoreError();
  env->CreateDirectory("/root/sub").IgnoreError();
  env->CreateDirectory("/root/d").IgnoreError();
  for (const char* name : {"/root/a.png", "/root/sub/b.jpg", "/root/c.webp"}) {
    env->WriteTextFile(name, "not decoded").IgnoreError();
  }
  return env;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static MemEnv* env = MakeFolder();
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (!env->WriteTextFile("/root/metadata.jsonl", text).ok()) std::abort();
  auto folder = docfeed::internal::ScanImageFolder("/root", env);
  if (!folder.ok()) return 0;
  for (const auto& sample : folder->samples) {
    if (!sample.problem.ok()) {
      // "metadata.jsonl:LINE:": every problem reads "<path>:LINE: why", and without the colon
      // line 1 would match a message about line 12. Formatted on the stack: most rows of most
      // inputs are problems.
      constexpr std::string_view kPrefix = "metadata.jsonl:";
      char where[kPrefix.size() + 24];
      kPrefix.copy(where, kPrefix.size());
      char* end = std::to_chars(where + kPrefix.size(), where + sizeof(where) - 1, sample.line).ptr;
      *end++ = ':';
      const std::string_view message = sample.problem.message();
      if (message.find(std::string_view(where, end - where)) == std::string_view::npos) {
        std::abort();
      }
      continue;
    }
    if (sample.values.size() != folder->columns.size()) std::abort();
    // MemEnv holds regular files and directories only: a missing path or a directory fails this.
    if (env->GetFileType("/root/" + sample.relative_path) != docfeed::FileType::kRegular) {
      std::abort();
    }
  }
  return 0;
}
