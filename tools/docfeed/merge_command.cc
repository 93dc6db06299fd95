// docfeed merge: joins the parts of a split pack (docfeed pack --part I/N) into one dataset.
#include <cstdio>
#include <string>

#include "args.h"
#include "commands.h"
#include "docfeed/merge.h"
#include "progress.h"

namespace docfeed::tools {
namespace {

constexpr char kMergeHelp[] =
    "usage: docfeed merge PART... -o OUT [--overwrite]\n"
    "\n"
    "Joins the N parts of a split pack (docfeed pack SRC --part I/N -o PARTS/I, for I = 0..N-1)\n"
    "into the dataset `docfeed pack SRC -o OUT` writes: the same sample ids, order, rows and\n"
    "image bytes. The parts may be given in any order (e.g. PARTS/*); every part must be there,\n"
    "once, from the same source with the same settings, else the error names the part and the\n"
    "field. OUT's data files are hard links to the parts' (no image bytes are copied), or copies\n"
    "when the parts lie on another file system; the parts may be deleted afterwards. OUT is\n"
    "written as pack writes it (OUT.lock, OUT.partial-PID, verified, then renamed): a reader sees\n"
    "no dataset or a complete one. A rerun finding OUT already merged from the same parts checks\n"
    "it and keeps it.\n"
    "\n"
    "OUT may be s3://BUCKET/PREFIX (the merge made in a staging directory and uploaded, manifest\n"
    "last). Parts on S3 (s3://BUCKET/PARTS/I, packed with -o s3://...) merge to an s3:// OUT\n"
    "inside the store: their data objects are copied by the server (CopyObject), only the index\n"
    "and manifests are sent.\n"
    "\n"
    "options:\n"
    "  -o, --output OUT       output directory (written atomically)\n"
    "  --overwrite            replace OUT if it is a docfeed dataset or an empty directory\n";

Result<MergeOptions> ToOptions(const ParsedArgs& parsed) {
  MergeOptions o;
  o.parts = parsed.positional;
  if (o.parts.empty()) return InvalidArgumentError("merge needs the part directories");
  o.output = parsed.Get("-o", parsed.Get("--output", ""));
  if (o.output.empty()) return InvalidArgumentError("merge needs -o OUT");
  o.overwrite = parsed.Has("--overwrite");
  return o;
}

}  // namespace

int RunMerge(const Args& args, Env* env) {
  auto start =
      StartCommand("merge", args, {"--overwrite"}, {"-o", "--output"}, kMergeHelp, &ToOptions);
  if (const int* exit_code = std::get_if<int>(&start)) return *exit_code;
  MergeOptions* options = &std::get<MergeOptions>(start);
  options->env = env;
  Result<MergeSummary> s = Merge(*options);
  if (!s.ok()) {
    std::fprintf(stderr, "docfeed merge: %s\n", s.status().ToString().c_str());
    return 1;
  }
  if (s->already_complete) {
    std::printf("%s is already the merge of these %u parts (verified; kept)\n",
                options->output.c_str(), s->parts);
    return 0;
  }
  std::printf("merged %u parts into %s in %s\n", s->parts, options->output.c_str(),
              FormatSeconds(s->seconds).c_str());
  std::printf("  samples    %llu\n", static_cast<unsigned long long>(s->samples));
  if (s->rejected > 0) {
    std::printf("  rejected   %llu sample(s), listed in %s/rejects.jsonl\n",
                static_cast<unsigned long long>(s->rejected), options->output.c_str());
  }
  std::printf("  files      %llu data file(s): %llu linked, %llu copied",
              static_cast<unsigned long long>(s->data_files),
              static_cast<unsigned long long>(s->linked_files),
              static_cast<unsigned long long>(s->copied_files));
  if (s->server_copied_files > 0) {
    std::printf(", %llu copied inside the store (CopyObject)",
                static_cast<unsigned long long>(s->server_copied_files));
  }
  std::printf("\n");
  std::printf("  bytes out  %s\n", FormatBytes(s->output_bytes).c_str());
  if (s->uploaded_objects > 0) {
    PrintUpload(s->uploaded_objects, s->uploaded_bytes, s->upload_requests, s->upload_retries,
                s->upload_seconds);
  }
  return 0;
}

}  // namespace docfeed::tools
