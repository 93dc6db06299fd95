// docfeed doctor: the diagnosis is Python (the package python/docfeed/doctor/: pyarrow,
// datasets, torch, and docfeed's loader through the binding, in that process), so the CLI hands
// over to `${DOCFEED_PYTHON:-python3}` with DOCFEED_CLI set to this binary (doctor packs its
// sample with `docfeed pack` through it). The Python process replaces this one (exec), so its
// exit code and output are the command's.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "commands.h"

namespace docfeed::tools {
namespace {

// Runs in the Python: imports docfeed.doctor (else explains how to get it, exit 2) and runs it
// on the arguments (python -c puts them at sys.argv[1:]).
constexpr char kBootstrap[] =
    "import sys\n"
    "try:\n"
    "    from docfeed import doctor\n"
    "except ImportError as e:\n"
    "    sys.stderr.write(\n"
    "        'docfeed doctor: ' + sys.executable + ' cannot import docfeed (' + str(e) + ').\\n'\n"
    "        'doctor runs in Python: install the package with `pip install .` at the docfeed\\n'\n"
    "        'repository root (or `make python-install`), or point DOCFEED_PYTHON at a Python\\n'\n"
    "        'that has it, e.g. DOCFEED_PYTHON=.venv/train/bin/python docfeed doctor PATH\\n')\n"
    "    sys.exit(2)\n"
    "sys.exit(doctor.main(sys.argv[1:]))\n";

// This executable's own path (/proc/self/exe), or "" if it cannot be read.
std::string SelfPath() {
  std::vector<char> buf(4096);
  const ssize_t n = readlink("/proc/self/exe", buf.data(), buf.size() - 1);
  if (n <= 0) return "";
  return std::string(buf.data(), static_cast<size_t>(n));
}

}  // namespace

int RunDoctor(const Args& args) {
  const char* env_python = std::getenv("DOCFEED_PYTHON");
  const std::string python = env_python != nullptr && *env_python != '\0' ? env_python : "python3";
  const std::string self = SelfPath();
  if (!self.empty()) setenv("DOCFEED_CLI", self.c_str(), 1);
  std::vector<std::string> argv_store = {python, "-c", kBootstrap};
  for (std::string_view a : args) argv_store.emplace_back(a);
  std::vector<char*> argv;
  argv.reserve(argv_store.size() + 1);
  for (std::string& s : argv_store) argv.push_back(s.data());
  argv.push_back(nullptr);
  execvp(python.c_str(), argv.data());
  // Only reached when the exec failed.
  std::fprintf(stderr,
               "docfeed doctor: cannot run %s (%s). doctor runs in Python: install docfeed with "
               "`pip install .` and set DOCFEED_PYTHON to that Python (default python3).\n",
               python.c_str(), std::strerror(errno));
  return 2;
}

}  // namespace docfeed::tools
