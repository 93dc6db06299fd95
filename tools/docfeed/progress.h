// A one-line terminal progress bar on stderr, drawn only when stderr is a terminal.
#ifndef DOCFEED_TOOLS_PROGRESS_H_
#define DOCFEED_TOOLS_PROGRESS_H_

#include <cstdint>
#include <string>

namespace docfeed::tools {

class ProgressBar {
 public:
  explicit ProgressBar(std::string label);
  // Redraws at most ~10 times a second (and always at done == total).
  void Update(uint64_t done, uint64_t total, uint64_t bytes, double elapsed_seconds);
  // Ends the line if anything was drawn.
  void Finish();

 private:
  std::string label_;
  bool enabled_;
  bool drawn_ = false;
  double last_draw_seconds_ = -1;
};

std::string FormatBytes(uint64_t bytes);    // "12.3 MB"
std::string FormatSeconds(double seconds);  // "1:02" / "0.41 s"
// The "uploaded" line of pack and merge with an s3:// output: objects, bytes sent (exact count
// too, retries included), requests, retries, seconds.
void PrintUpload(uint64_t objects, uint64_t bytes, uint64_t requests, uint64_t retries,
                 double seconds);

}  // namespace docfeed::tools

#endif  // DOCFEED_TOOLS_PROGRESS_H_
