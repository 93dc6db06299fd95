// docfeed/remote.h: the public entry points of the remote Env.
#include "docfeed/remote.h"
#include "remote/remote_env.h"
#include "remote/url.h"

namespace docfeed {

bool IsRemotePath(std::string_view path) { return internal::IsRemotePath(path); }

Env* EnvForPath(const std::string& path) {
  return internal::IsRemotePath(path) ? internal::RemoteEnv::Default() : Env::Default();
}

RemoteStats GetRemoteStats() { return internal::RemoteEnv::Default()->stats(); }

}  // namespace docfeed
