// AssumeRole: remote/assume_role.h says what is sent and read.
#include "remote/assume_role.h"

#include <chrono>
#include <span>
#include <string_view>
#include <vector>

#include "remote/s3_xml.h"
#include "remote/url.h"

namespace docfeed::internal {

std::string AssumeRoleBody(const AssumeRoleConfig& role) {
  std::string session = role.session_name;
  if (session.empty()) {
    const auto now = std::chrono::system_clock::now().time_since_epoch();
    session =
        "docfeed-" + std::to_string(std::chrono::duration_cast<std::chrono::seconds>(now).count());
  }
  std::string body =
      "Action=AssumeRole&Version=2011-06-15&RoleArn=" + UriEncode(role.role_arn, false) +
      "&RoleSessionName=" + UriEncode(session, false) +
      "&DurationSeconds=" + std::to_string(role.duration_seconds);
  if (!role.external_id.empty()) body += "&ExternalId=" + UriEncode(role.external_id, false);
  return body;
}

Result<ProcessCredentials> ParseAssumeRoleResponse(std::string_view xml, const std::string& what) {
  // Only the one <AssumeRoleResult><Credentials> counts (AssumedRoleUser and the rest are
  // elsewhere in the answer).
  std::string_view credentials;
  for (const char* tag : {"AssumeRoleResult", "Credentials"}) {
    const std::vector<std::string_view> found =
        XmlElements(credentials.empty() ? xml : credentials, tag);
    if (found.size() != 1) {
      return CorruptionError(what + ": the AssumeRole answer has " + std::to_string(found.size()) +
                             " <" + tag + "> where one was expected");
    }
    credentials = found.front();
  }
  ProcessCredentials c;
  c.access_key_id = XmlElementText(credentials, "AccessKeyId");
  c.secret_access_key = XmlElementText(credentials, "SecretAccessKey");
  c.session_token = XmlElementText(credentials, "SessionToken");
  const std::string expiration = XmlElementText(credentials, "Expiration");
  for (const auto& [name, value] :
       {std::pair<const char*, const std::string*>{"AccessKeyId", &c.access_key_id},
        {"SecretAccessKey", &c.secret_access_key},
        {"SessionToken", &c.session_token},
        {"Expiration", &expiration}}) {
    if (value->empty()) {
      return CorruptionError(what + ": the AssumeRole answer has no <" + name + ">");
    }
  }
  Result<SystemTime> at = ParseIso8601(expiration);
  if (!at.ok()) {
    return CorruptionError(what + ": the AssumeRole answer's <Expiration> " + expiration +
                           " is not a time");
  }
  c.expiration = *at;
  return c;
}

Result<ProcessCredentials> AssumeRole(HttpClient* client, const std::string& sts_url,
                                      const AssumeRoleConfig& role, const HttpSigning& source,
                                      const std::string& ca_file) {
  const std::string what =
      role.where + " role_arn " + role.role_arn + " (AssumeRole at " + sts_url + ")";
  const std::string body = AssumeRoleBody(role);
  auto signing = std::make_shared<HttpSigning>(source);
  signing->service = "sts";
  HttpRequest request;
  request.method = "POST";
  request.url = sts_url + "/";
  request.name = what;
  request.upload = std::span(reinterpret_cast<const uint8_t*>(body.data()), body.size());
  request.headers = {"Content-Type: application/x-www-form-urlencoded; charset=utf-8"};
  request.signing = std::move(signing);
  request.ca_file = ca_file;
  request.max_body_bytes = 1 << 20;
  Result<HttpResponse> r = client->Perform(request);
  if (!r.ok()) return r.status().WithContext(what);
  const std::string_view answer(reinterpret_cast<const char*>(r->body.data()), r->body.size());
  if (r->status < 200 || r->status >= 300) {
    return InvalidArgumentError(what + ": HTTP " + std::to_string(r->status) + " " +
                                ErrorSummary(answer));
  }
  return ParseAssumeRoleResponse(answer, what);
}

Result<ProcessCredentials> AssumeRoleChain(HttpClient* client, const S3Config& config,
                                           const std::string& ca_file,
                                           std::chrono::milliseconds process_timeout) {
  // The chain's source: its keys, or its own command's (run for the first role).
  ProcessCredentials out{config.access_key_id, config.secret_access_key, config.session_token,
                         std::nullopt};
  if (!config.credential_process.empty()) {
    DOCFEED_ASSIGN_OR_RETURN(
        out, RunCredentialProcess(config.credential_process,
                                  config.roles.front().where + " source credential_process",
                                  process_timeout));
  }
  for (const AssumeRoleConfig& role : config.roles) {
    DOCFEED_ASSIGN_OR_RETURN(out, AssumeRole(client, config.sts_endpoint_url, role,
                                             SigningOf(out, config.region), ca_file));
  }
  return out;
}

}  // namespace docfeed::internal
