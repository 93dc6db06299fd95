#include "progress.h"

#include <unistd.h>

#include <cstdio>

namespace docfeed::tools {

ProgressBar::ProgressBar(std::string label)
    : label_(std::move(label)), enabled_(::isatty(STDERR_FILENO) == 1) {}

void ProgressBar::Update(uint64_t done, uint64_t total, uint64_t bytes, double elapsed_seconds) {
  if (!enabled_ || total == 0) return;
  if (done < total && elapsed_seconds - last_draw_seconds_ < 0.1) return;
  last_draw_seconds_ = elapsed_seconds;
  constexpr int kWidth = 30;
  int filled = static_cast<int>(kWidth * done / total);
  std::string bar(static_cast<size_t>(filled), '#');
  bar.resize(kWidth, '.');
  double rate = elapsed_seconds > 0 ? static_cast<double>(done) / elapsed_seconds : 0;
  double eta = rate > 0 ? static_cast<double>(total - done) / rate : 0;
  std::fprintf(stderr, "\r%s [%s] %llu/%llu  %s read  %.1f samples/s  ETA %s   ", label_.c_str(),
               bar.c_str(), static_cast<unsigned long long>(done),
               static_cast<unsigned long long>(total), FormatBytes(bytes).c_str(), rate,
               FormatSeconds(eta).c_str());
  std::fflush(stderr);
  drawn_ = true;
}

void ProgressBar::Finish() {
  if (drawn_) std::fputc('\n', stderr);
  drawn_ = false;
}

std::string FormatBytes(uint64_t bytes) {
  const char* units[] = {"B", "KB", "MB", "GB", "TB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1000 && u < 4) {
    v /= 1000;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), u == 0 ? "%.0f %s" : "%.1f %s", v, units[u]);
  return buf;
}

std::string FormatSeconds(double seconds) {
  char buf[32];
  if (seconds < 60) {
    std::snprintf(buf, sizeof(buf), "%.2f s", seconds);
  } else {
    auto s = static_cast<long long>(seconds);
    std::snprintf(buf, sizeof(buf), "%lld:%02lld", s / 60, s % 60);
  }
  return buf;
}

void PrintUpload(uint64_t objects, uint64_t bytes, uint64_t requests, uint64_t retries,
                 double seconds) {
  std::printf(
      "  uploaded   %llu object(s), %s sent (%llu bytes) in %llu request(s), %llu "
      "retried, in %s\n",
      static_cast<unsigned long long>(objects), FormatBytes(bytes).c_str(),
      static_cast<unsigned long long>(bytes), static_cast<unsigned long long>(requests),
      static_cast<unsigned long long>(retries), FormatSeconds(seconds).c_str());
}

}  // namespace docfeed::tools
