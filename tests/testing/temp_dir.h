// A temporary directory for a test, removed with everything in it when the object dies.
#ifndef DOCFEED_TESTS_TESTING_TEMP_DIR_H_
#define DOCFEED_TESTS_TESTING_TEMP_DIR_H_

#include <stdlib.h>

#include <string>

#include "base/check.h"
#include "base/file.h"

namespace docfeed::testing {

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/docfeed_test_XXXXXX";
    DOCFEED_CHECK(mkdtemp(tmpl) != nullptr);
    path_ = tmpl;
  }
  ~TempDir() { internal::RemoveAll(path_).IgnoreError(); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string Join(const std::string& name) const { return internal::JoinPath(path_, name); }

 private:
  std::string path_;
};

}  // namespace docfeed::testing

#endif  // DOCFEED_TESTS_TESTING_TEMP_DIR_H_
