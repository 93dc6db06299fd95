// credential_process: remote/credential_process.h says what runs and when.
#include "remote/credential_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <utility>

#include "base/json.h"  // the first nlohmann include: it turns on its diagnostics

extern char** environ;

namespace docfeed::internal {
namespace {

constexpr size_t kMaxStdoutBytes = size_t{1} << 20;
constexpr size_t kKeptStderrBytes = 1024;
// The SDKs' windows (botocore's RefreshableCredentials): run again when less than the advisory
// time is left; keep using the old credentials after a failed run until the mandatory time.
constexpr std::chrono::minutes kAdvisoryRefresh{15};
constexpr std::chrono::minutes kMandatoryRefresh{10};

bool IsBlank(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// Parses exactly `n` decimal digits at text[*pos].
bool Digits(std::string_view text, size_t* pos, int n, int* out) {
  if (text.size() < *pos + static_cast<size_t>(n)) return false;
  int v = 0;
  for (int i = 0; i < n; ++i) {
    const char c = text[*pos + static_cast<size_t>(i)];
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  *pos += static_cast<size_t>(n);
  *out = v;
  return true;
}

bool Expect(std::string_view text, size_t* pos, char c) {
  if (*pos >= text.size() || (text[*pos] != c && !(c == 'T' && text[*pos] == 't'))) return false;
  ++*pos;
  return true;
}

// A pipe whose ends close on exec (the child gets only what posix_spawn dup2s).
struct Pipe {
  int read = -1;
  int write = -1;
  Pipe() {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) == 0) {
      read = fds[0];
      write = fds[1];
    }
  }
  ~Pipe() {
    if (read >= 0) close(read);
    if (write >= 0) close(write);
  }
  void CloseWrite() {
    if (write >= 0) close(write);
    write = -1;
  }
  Pipe(const Pipe&) = delete;
  Pipe& operator=(const Pipe&) = delete;
};

std::string Quoted(const std::string& s) { return "\"" + s + "\""; }

}  // namespace

Result<std::vector<std::string>> SplitCommandLine(std::string_view command) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  for (size_t i = 0; i < command.size(); ++i) {
    const char c = command[i];
    if (IsBlank(c)) {
      if (in_word) words.push_back(std::move(word));
      word.clear();
      in_word = false;
      continue;
    }
    in_word = true;
    if (c == '\\') {
      if (++i < command.size()) word += command[i];
      continue;
    }
    if (c == '\'' || c == '"') {
      bool closed = false;
      for (++i; i < command.size(); ++i) {
        if (command[i] == c) {
          closed = true;
          break;
        }
        // Inside "...", a backslash escapes only these (POSIX 2.2.3).
        if (c == '"' && command[i] == '\\' && i + 1 < command.size() &&
            std::string_view("\"\\$`").find(command[i + 1]) != std::string_view::npos) {
          ++i;
        }
        word += command[i];
      }
      if (!closed) {
        return InvalidArgumentError("unterminated " + std::string(1, c) + " quote in " +
                                    Quoted(std::string(command)));
      }
      continue;
    }
    word += c;
  }
  if (in_word) words.push_back(std::move(word));
  if (words.empty()) return InvalidArgumentError("the command is empty");
  return words;
}

Result<SystemTime> ParseIso8601(std::string_view text) {
  auto bad = [&] {
    return InvalidArgumentError(Quoted(std::string(text)) +
                                " is not an ISO 8601 time such as 2026-12-04T12:00:00Z");
  };
  size_t pos = 0;
  std::tm tm{};
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  if (!Digits(text, &pos, 4, &year) || !Expect(text, &pos, '-') || !Digits(text, &pos, 2, &month) ||
      !Expect(text, &pos, '-') || !Digits(text, &pos, 2, &day) || !Expect(text, &pos, 'T') ||
      !Digits(text, &pos, 2, &hour) || !Expect(text, &pos, ':') ||
      !Digits(text, &pos, 2, &minute) || !Expect(text, &pos, ':') ||
      !Digits(text, &pos, 2, &second)) {
    return bad();
  }
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60) {
    return bad();
  }
  if (pos < text.size() && text[pos] == '.') {  // fractional seconds: ignored
    ++pos;
    const size_t start = pos;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') ++pos;
    if (pos == start) return bad();
  }
  int offset_minutes = 0;
  if (pos < text.size() && (text[pos] == 'Z' || text[pos] == 'z')) {
    ++pos;
  } else if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) {
    const int sign = text[pos] == '-' ? -1 : 1;
    ++pos;
    int oh = 0, om = 0;
    if (!Digits(text, &pos, 2, &oh)) return bad();
    if (pos < text.size() && text[pos] == ':') ++pos;
    if (!Digits(text, &pos, 2, &om) || oh > 23 || om > 59) return bad();
    offset_minutes = sign * (oh * 60 + om);
  } else {
    return bad();  // a time without a zone is ambiguous
  }
  if (pos != text.size()) return bad();
  tm.tm_year = year - 1900;
  tm.tm_mon = month - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = minute;
  tm.tm_sec = second;
  const time_t utc = timegm(&tm);
  return std::chrono::system_clock::from_time_t(utc) - std::chrono::minutes(offset_minutes);
}

Result<ProcessCredentials> ParseCredentialProcessOutput(std::string_view json,
                                                        const std::string& what) {
  Json j;
  try {
    j = Json::parse(json);
  } catch (const Json::exception& e) {
    return InvalidArgumentError(what + " printed no JSON object: " + e.what());
  }
  if (!j.is_object()) return InvalidArgumentError(what + " printed JSON that is not an object");
  auto version = j.find("Version");
  if (version == j.end() || !version->is_number_integer() || version->get<int64_t>() != 1) {
    return InvalidArgumentError(what + " printed \"Version\": " +
                                (version == j.end() ? std::string("(none)") : version->dump()) +
                                "; the format is version 1");
  }
  ProcessCredentials out;
  auto field = [&](const char* name, bool required, std::string* into) -> Status {
    auto it = j.find(name);
    if (it == j.end() || it->is_null()) {
      return required ? InvalidArgumentError(what + " printed no \"" + std::string(name) + "\"")
                      : Status::Ok();
    }
    if (!it->is_string() || (required && it->get<std::string>().empty())) {
      return InvalidArgumentError(what + " printed \"" + std::string(name) +
                                  "\" that is not a non-empty string");
    }
    *into = it->get<std::string>();
    return Status::Ok();
  };
  DOCFEED_RETURN_IF_ERROR(field("AccessKeyId", true, &out.access_key_id));
  DOCFEED_RETURN_IF_ERROR(field("SecretAccessKey", true, &out.secret_access_key));
  DOCFEED_RETURN_IF_ERROR(field("SessionToken", false, &out.session_token));
  std::string expiration;
  DOCFEED_RETURN_IF_ERROR(field("Expiration", false, &expiration));
  if (!expiration.empty()) {
    Result<SystemTime> t = ParseIso8601(expiration);
    if (!t.ok()) {
      return InvalidArgumentError(what +
                                  " printed \"Expiration\": " + std::string(t.status().message()));
    }
    out.expiration = *t;
  }
  return out;
}

Result<ProcessCredentials> RunCredentialProcess(const std::string& command, const std::string& what,
                                                std::chrono::milliseconds timeout) {
  Result<std::vector<std::string>> words = SplitCommandLine(command);
  if (!words.ok()) {
    return InvalidArgumentError(what + ": " + std::string(words.status().message()));
  }
  std::vector<char*> argv;
  for (std::string& w : *words) argv.push_back(w.data());
  argv.push_back(nullptr);

  Pipe out, err;
  if (out.read < 0 || err.read < 0) {
    return IOError(what + ": cannot make a pipe: " + std::strerror(errno));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out.write, 1);
  posix_spawn_file_actions_adddup2(&actions, err.write, 2);
  pid_t pid = -1;
  const int spawned = posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) {
    return InvalidArgumentError(what + ": cannot run " + Quoted((*words)[0]) + ": " +
                                std::strerror(spawned));
  }
  out.CloseWrite();
  err.CloseWrite();

  std::string stdout_text, stderr_text;
  bool too_long = false, timed_out = false;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  pollfd fds[2] = {{out.read, POLLIN, 0}, {err.read, POLLIN, 0}};
  int open_fds = 2;
  while (open_fds > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    const int ready = poll(fds, 2, static_cast<int>(std::min<int64_t>(left.count(), 1000)));
    if (ready < 0 && errno != EINTR) {
      const int e = errno;
      kill(pid, SIGKILL);
      while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
      }
      return IOError(what + ": waiting for " + Quoted(command) + ": " + std::strerror(e));
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      char buffer[4096];
      const ssize_t n = read(fds[i].fd, buffer, sizeof(buffer));
      if (n <= 0) {
        if (n < 0 && errno == EINTR) continue;
        fds[i].fd = -1;
        --open_fds;
        continue;
      }
      std::string& into = i == 0 ? stdout_text : stderr_text;
      const size_t keep = i == 0 ? kMaxStdoutBytes + 1 : kKeptStderrBytes;
      into.append(buffer, std::min(static_cast<size_t>(n), keep - std::min(keep, into.size())));
      if (i == 0 && stdout_text.size() > kMaxStdoutBytes) {
        too_long = true;
        open_fds = 0;
      }
    }
  }
  // Its output is closed; it must also exit before the deadline (a command that closes stdout
  // and keeps running is killed like one that hangs).
  int wstatus = 0;
  while (!timed_out && !too_long) {
    const pid_t done = waitpid(pid, &wstatus, WNOHANG);
    if (done == pid) break;
    if (done < 0 && errno != EINTR) break;
    if (std::chrono::steady_clock::now() >= deadline) {
      timed_out = true;
      break;
    }
    usleep(2000);
  }
  if (timed_out || too_long) {
    kill(pid, SIGKILL);
    while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
    }
  }
  const std::string stderr_note = stderr_text.empty() ? "" : "; it wrote to stderr: " + stderr_text;
  if (timed_out) {
    return IOError(what + ": " + Quoted(command) + " was still running after " +
                   std::to_string(timeout.count()) + " ms and was killed");
  }
  if (too_long) {
    return InvalidArgumentError(what + ": " + Quoted(command) + " printed more than " +
                                std::to_string(kMaxStdoutBytes) + " bytes");
  }
  if (WIFSIGNALED(wstatus)) {
    return InvalidArgumentError(what + ": " + Quoted(command) + " was killed by signal " +
                                std::to_string(WTERMSIG(wstatus)) + stderr_note);
  }
  if (!WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0) {
    return InvalidArgumentError(what + ": " + Quoted(command) + " exited with status " +
                                std::to_string(WEXITSTATUS(wstatus)) + stderr_note);
  }
  return ParseCredentialProcessOutput(stdout_text, what + " (" + Quoted(command) + ")");
}

RefreshingCredentials::RefreshingCredentials(Fetch fetch, std::string what, std::string region,
                                             std::function<SystemTime()> clock)
    : fetch_(std::move(fetch)),
      what_(std::move(what)),
      region_(std::move(region)),
      clock_(clock ? std::move(clock) : [] { return std::chrono::system_clock::now(); }) {}

Result<std::shared_ptr<const HttpSigning>> RefreshingCredentials::Current() {
  MutexLock lock(&mu_);
  const SystemTime now = clock_();
  if (current_ != nullptr && (!expiration_ || now + kAdvisoryRefresh < *expiration_)) {
    return current_;
  }
  // In the advisory window, one run a minute at most (a command whose credentials are short
  // would otherwise run for every request).
  if (current_ != nullptr && now + kMandatoryRefresh < *expiration_ &&
      now - last_run_ < std::chrono::minutes(1)) {
    return current_;
  }
  ++runs_;
  last_run_ = now;
  Result<ProcessCredentials> fresh = fetch_();
  if (!fresh.ok()) {
    // A failed refresh: the old credentials while they have the mandatory margin left.
    if (current_ != nullptr && expiration_ && now + kMandatoryRefresh < *expiration_) {
      return current_;
    }
    return fresh.status();
  }
  if (fresh->expiration && *fresh->expiration <= now + kMandatoryRefresh) {
    return InvalidArgumentError(what_ + " gave credentials that expire within " +
                                std::to_string(kMandatoryRefresh.count()) + " minutes");
  }
  current_ = std::make_shared<const HttpSigning>(SigningOf(*fresh, region_));
  expiration_ = fresh->expiration;
  return current_;
}

int RefreshingCredentials::runs() const {
  MutexLock lock(&mu_);
  return runs_;
}

}  // namespace docfeed::internal
